"""Progress bars with an ETA for long calls (the API, the engines, ``fsa run``).

One :class:`Progress` per call: :meth:`Progress.stage` opens a bar for one
stage of the work (building and dispatch-checking the program, the golden
model's key-block steps, a simulation), :meth:`Bar.update` moves it; a bar
is drawn only once its stage has run :data:`DELAY` seconds (short calls
print nothing), on stderr, with tqdm when it is installed and otherwise
with the small bar below (``stage: 42% 17/40 [00:12<00:16]``).

Whether bars are drawn: ``progress=None`` (the default of
:func:`fsa.scaled_dot_product_attention`) only when stderr is a terminal;
True always; False never.  The code that reports (e.g.
:func:`fsa.cycle.dispatch.check_dispatch`, deep inside a kernel's build)
finds the call's :class:`Progress` with :func:`current` (a context
variable set by :meth:`Progress.active`), so no signature in between needs
a progress argument; without one it reports nothing.
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from typing import Iterator, TextIO

__all__ = ["DELAY", "Progress", "Bar", "current", "enabled", "fmt_seconds"]

#: seconds a stage runs before its bar is drawn
DELAY = 2.0
_CURRENT: contextvars.ContextVar["Progress | None"] = contextvars.ContextVar(
    "fsa_progress", default=None)


def enabled(progress: "bool | None", stream: "TextIO | None" = None) -> bool:
    """The ``progress`` argument resolved: None -> `stream` (default stderr)
    is a terminal; True/False as given.  TypeError for anything else."""
    if progress is None:
        s = sys.stderr if stream is None else stream
        return bool(getattr(s, "isatty", lambda: False)())
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__} "
                        f"{progress!r}")
    return progress


def fmt_seconds(t: float) -> str:
    """``mm:ss`` (``h:mm:ss`` from an hour)."""
    t = max(0, int(round(t)))
    h, m, s = t // 3600, t // 60 % 60, t % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def current() -> "Progress | None":
    """The Progress of the call in progress (None: report nothing)."""
    return _CURRENT.get()


class Bar:
    """One stage's bar: ``update(done)`` (absolute), ``close()``.

    Drawn on `stream` once :data:`DELAY` seconds have passed (or never when
    `show` is False): the stage, percent, done/total and ``[elapsed<ETA]``
    (the ETA from the rate so far).  Redrawn at most 5 times a second."""

    def __init__(self, desc: str, total: int, stream: TextIO, show: bool, unit: str = ""):
        self.desc, self.total, self.stream, self.show, self.unit = desc, max(int(total), 0), \
            stream, show, unit
        self.done, self.t0, self._drawn, self._last = 0, time.monotonic(), False, 0.0
        self._tqdm = None
        self._stop: "threading.Event | None" = None

    def clock(self) -> "Bar":
        """Redraw every half second from a thread (for a stage that reports
        nothing while it runs, e.g. a simulator: the bar shows the elapsed
        time, and the ETA when `total` is a time estimate in seconds set
        through :meth:`update`)."""
        if self.show and self._stop is None:
            self._stop = threading.Event()

            def run() -> None:
                while not self._stop.wait(0.5):
                    self.update(self.done)
            threading.Thread(target=run, daemon=True).start()
        return self

    def _line(self, now: float) -> str:
        el = now - self.t0
        if self.total:
            frac = min(1.0, self.done / self.total)
            eta = fmt_seconds(el / frac - el) if frac > 0 else "?"
            return (f"{self.desc}: {100 * frac:3.0f}% {self.done}/{self.total}{self.unit} "
                    f"[{fmt_seconds(el)}<{eta}]")
        return f"{self.desc}: {self.done}{self.unit} [{fmt_seconds(el)}]"

    def update(self, done: int, total: "int | None" = None) -> None:
        """`done` units of the stage finished (of `total`, when it changes)."""
        if total is not None:
            self.total = max(int(total), 0)
        self.done = int(done)
        if not self.show:
            return
        now = time.monotonic()
        if now - self.t0 < DELAY or (now - self._last < 0.2 and self.done < self.total):
            return
        self._last = now
        if self._tqdm is None and not self._drawn:
            self._tqdm = _tqdm_bar(self.desc, self.total, self.stream, self.unit)
        if self._tqdm is not None:
            self._tqdm.total = self.total or None
            self._tqdm.n = self.done
            self._tqdm.refresh()
            return
        self.stream.write("\r" + self._line(now) + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the stage (the bar, if drawn, is finished with a newline)."""
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        if self._tqdm is not None:
            self._tqdm.n = self.done
            self._tqdm.close()
        elif self._drawn:
            self.stream.write("\r" + self._line(time.monotonic()) + "\x1b[K\n")
            self.stream.flush()
        self._drawn, self._tqdm = False, None


def _tqdm_bar(desc: str, total: int, stream: TextIO, unit: str):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total or None, desc=desc, file=stream, unit=unit.strip() or "it",
                leave=True)


class Progress:
    """The bars of one call (see the module docstring).

    Args:
        show: draw bars (:func:`enabled` resolves the API's argument).
        stream: where (default stderr).
    """

    def __init__(self, show: bool, stream: "TextIO | None" = None):
        self.show = bool(show)
        self.stream = sys.stderr if stream is None else stream

    def stage(self, desc: str, total: int = 0, unit: str = "") -> Bar:
        """A new bar for a stage of `total` units."""
        return Bar(desc, total, self.stream, self.show, unit)

    @contextlib.contextmanager
    def active(self) -> Iterator["Progress"]:
        """Make this the :func:`current` Progress inside the block."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

