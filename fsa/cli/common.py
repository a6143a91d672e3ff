"""Helpers every ``fsa`` command shares: progress lines, argument types,
reading the user's arrays, the golden model's cost estimate, and the output
files (checked before the work, written whole or not at all, and kept
elsewhere when the write fails after the work)."""
from __future__ import annotations

import argparse
import math
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["say", "warn", "positive_int", "positive_float", "nonnegative_int", "path_arg",
           "csv_list", "json_safe", "read_real_npy", "refuse_generator_options", "golden_estimate", "check_golden_fits",
           "Outputs", "OutputError", "save_with", "PUSH_HELP", "FORCE_HELP",
           "GOLDEN_BYTES_PER_STEP", "GOLDEN_SECONDS_PER_STEP", "GOLDEN_MAX_SECONDS"]

PUSH_HELP = ("push the instruction words over the control port (the reference's way) "
             "instead of program fetch (the default: the program is placed at the top of the "
             "memory window and the device reads it)")
FORCE_HELP = "replace output files that exist already"


def say(msg: str) -> None:
    """A progress line on stdout."""
    print(f"[fsa] {msg}", flush=True)


def warn(msg: str) -> None:
    """An error line on stderr (the command goes on or ends with its code)."""
    print(f"error: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------ argument types
def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the argument on error)."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return v


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {v}")
    return v


def path_arg(text: str) -> str:
    """argparse type: a file name, not empty (an empty one would be ignored)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty file name")
    return text


def csv_list(item):
    """argparse type: a comma-separated list of `item`."""
    def parse(text: str) -> list:
        parts = [t.strip() for t in text.split(",") if t.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        return [item(t) for t in parts]
    return parse


def json_safe(x):
    """The report with non-finite floats as null (strict JSON has no NaN/Infinity)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


# ------------------------------------------------------------------- inputs
def refuse_generator_options(args) -> None:
    """With --q/--k/--v the files give the shapes and values: ValueError
    naming the options of generated inputs that were given anyway (they
    would be ignored)."""
    given = [f"--{name.replace('_', '-')}" for name in ("seq_q", "seq_kv", "batch", "heads", "seed")
             if getattr(args, name, None) is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: only for generated inputs (with --q/--k/--v the "
                         "files give the shapes and the values)")


def read_real_npy(name: str, path: str):
    """The array in the .npy file `path` given as ``--<name>``; ValueError
    naming the argument for an unreadable or empty file, an object, complex
    or non-numeric values.  Non-native byte orders are converted."""
    import numpy as np

    try:
        a = np.load(path)
    except (OSError, ValueError, EOFError) as e:
        why = e if str(e) else "the file is empty or truncated"
        raise ValueError(f"--{name} {path}: cannot read a .npy file ({why})") from None
    if not isinstance(a, np.ndarray):
        if hasattr(a, "close"):
            a.close()
        raise ValueError(f"--{name} {path}: holds {type(a).__name__}, not one array")
    if a.dtype.kind == "c":
        raise ValueError(f"--{name} {path}: complex values (dtype {a.dtype}) are not "
                         "supported: attention inputs are real numbers")
    if a.dtype.kind not in "iuf":
        raise ValueError(f"--{name} {path}: dtype {a.dtype} is not a real number type "
                         "(use float16/32/64 or integers)")
    return a


def read_user_qkv(args, check_shape: Callable[[str, str, object], None]):
    """Q, K, V as float64 arrays from the user's --q/--k/--v .npy files, or
    None when none of the three is given.  ValueError when only some are
    given, with options of generated inputs, or for a file that
    ``check_shape(name, path, array)`` (the command's shape rule) refuses."""
    import numpy as np

    if not (args.q or args.k or args.v):
        return None
    if not (args.q and args.k and args.v):
        raise ValueError("give all three of --q, --k and --v (or none, to generate inputs)")
    refuse_generator_options(args)
    arrs = []
    for name, path in (("q", args.q), ("k", args.k), ("v", args.v)):
        a = read_real_npy(name, path)
        check_shape(name, path, a)
        arrs.append(np.asarray(a, np.float64))
    return tuple(arrs)


# ------------------------------------------------------ golden-model estimate
#: approximate cost of a golden-model run per key-block step, measured on this
#: project's 2-core machines (wall time, idle machine, the dispatch check's
#: verdict cache off: FSA_DISPATCH_CACHE=0). Memory: the program's Python
#: objects (2.2-2.7 KB a step while it is built and checked); the vectorised
#: model (fsa/golden/fast.py) needs only O((seq_q + seq_kv) d), the `data`
#: term. Time, with the cycle model's period skipping (fsa/cycle/skip.py) and
#: the float32 MAC chains of the fast path: 0.28 ms a step at 8x8 (2048^2:
#: 65,536 steps in 18.6 s), 0.33 ms at 16x16 (2048^2: 5.4 s), 1.7 ms at 64x64
#: (4096^2: 4,096 steps in 6.8 s; the size scale below gives 6.4 ms). The
#: constant is 0.4 ms, above every measured point (it was 4 ms before the
#: period skipping, which made the estimate 14-40x too long).
GOLDEN_BYTES_PER_STEP = 3_000
GOLDEN_SECONDS_PER_STEP = 0.0004
GOLDEN_MAX_SECONDS = 3600


def _key_block_steps(cfg, seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query block, key block) steps of the attention kernel."""
    n_qb, n_kb = -(-seq_q // cfg.sa_cols), -(-seq_kv // cfg.sa_rows)
    if not causal:
        return n_qb * n_kb
    full = max(0, n_qb - n_kb)                       # query blocks that see every key block
    tri = min(n_qb, n_kb)
    return tri * (tri + 1) // 2 + full * n_kb


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def golden_estimate(cfg, seq_q: int, seq_kv: int, causal: bool, heads: int = 1) -> dict:
    """Rough memory (bytes) and time (seconds) of a golden-model attention run
    (`heads` heads of seq_q x seq_kv)."""
    steps = heads * _key_block_steps(cfg, seq_q, seq_kv, causal)
    scale = max(1.0, cfg.sa_rows * cfg.sa_cols / 256)
    data = 8 * 6 * heads * (seq_q + 2 * seq_kv) * cfg.sa_rows   # inputs, images, outputs, torch
    return {"steps": steps, "bytes": steps * GOLDEN_BYTES_PER_STEP + data,
            "seconds": steps * GOLDEN_SECONDS_PER_STEP * scale}


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _fmt_seconds(t: float) -> str:
    if t < 120:
        return f"{t:.0f} s"
    if t < 7200:
        return f"{t / 60:.0f} min"
    if t < 2 * 86400:
        return f"{t / 3600:.1f} h"
    return f"{t / 86400:.0f} days"


def check_golden_fits(cfg, seq_q: int, seq_kv: int, causal: bool, force: bool,
                      heads: int = 1, what: str = "the golden model",
                      override: str = "--force", tell=None) -> None:
    """Refuse (ValueError with the figures) a golden run that would not fit in
    memory or would take more than an hour, unless `force`.  (Building and
    checking the program alone costs about as much: `what` says which.)
    `override`: how the message says to force it; `tell`: callable(str) for
    the estimate of a run over 30 s (default :func:`say`)."""
    est = golden_estimate(cfg, seq_q, seq_kv, causal, heads)
    avail = _available_memory()
    figures = (f"{est['steps']:,} key-block steps, about {_fmt_bytes(est['bytes'])} of memory and "
               f"{_fmt_seconds(est['seconds'])} for {what}"
               + (f"; this machine has {_fmt_bytes(avail)} available" if avail else ""))
    too_big = avail is not None and est["bytes"] > 0.8 * avail
    too_long = est["seconds"] > GOLDEN_MAX_SECONDS
    if (too_big or too_long) and not force:
        many = f"{heads} heads of " if heads > 1 else ""
        raise ValueError(f"attention {many}{seq_q} x {seq_kv} on {cfg.name}: {figures}. "
                         f"{'It would not fit in memory. ' if too_big else ''}"
                         f"{'It would take more than an hour. ' if too_long else ''}"
                         f"Use shorter sequences, or {override} to run anyway")
    if est["seconds"] > 30:
        (say if tell is None else tell)(f"estimate: {figures}")


# ------------------------------------------------------------------ outputs
class OutputError(ValueError):
    """An output that cannot be written (found before the work)."""


def _probe_folder(folder: Path) -> "str | None":
    """Why no file can be created in `folder`, or None: tried by creating
    (and removing) a file there (permission bits do not tell for root, nor
    for /proc or a read-only mount)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".fsa-probe-", dir=folder)
    except OSError as e:
        return e.strerror or str(e)
    os.close(fd)
    os.unlink(name)
    return None


def _new_file_mode(p: Path) -> int:
    """The mode `p` has (replaced) or a new file would get (0666 less the umask)."""
    try:
        return stat.S_IMODE(p.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


class Outputs:
    """The output files of one command.

    :meth:`file` / :meth:`folder` check a path before the work: its folder
    exists and takes new files, it is not a folder (a file), not a device or
    other special file, and it does not exist yet unless `force`.
    :meth:`write` writes a file whole (into a temporary file beside it, then
    renamed, so a failed write leaves no half file and the old one intact);
    when it fails it says so on stderr in one line, saves the content in
    the temporary folder instead (naming it), and :attr:`failed` makes the
    command end with exit 2.
    """

    def __init__(self, force: bool = False):
        self.force = force
        self.failed: list[str] = []

    def file(self, path: "str | None", option: str, *, create: bool = False) -> "Path | None":
        """The checked path of an output file given as `option` (None when
        not given); with `create`, missing folders may be created later."""
        if path is None:
            return None
        what = f"{option} {path}"
        p = Path(path).expanduser()
        if p.is_dir():
            raise OutputError(f"{what}: is a folder; give a file name")
        if p.exists() or p.is_symlink():
            try:
                mode = p.stat().st_mode
            except OSError as e:
                raise OutputError(f"{what}: {e.strerror or e}") from None
            if not stat.S_ISREG(mode):
                raise OutputError(f"{what}: is not a regular file (a device, pipe or socket); "
                                  "give a file name")
            if not self.force:
                raise OutputError(f"{what}: exists; give another name, or --force to replace it")
        self._folder_ok(p.parent if str(p.parent) else Path("."), what, create)
        return p

    def folder(self, path: "str | None", option: str) -> "Path | None":
        """The checked path of an output folder (created later if missing)."""
        if path is None:
            return None
        what = f"{option} {path}"
        p = Path(path).expanduser()
        if p.exists() and not p.is_dir():
            raise OutputError(f"{what}: is a file; give a folder")
        self._folder_ok(p, what, True)
        return p

    @staticmethod
    def _folder_ok(folder: Path, what: str, create: bool) -> None:
        up = folder
        if not create and not up.exists():
            raise OutputError(f"{what}: the folder {up} does not exist")
        while not up.exists() and up != up.parent:
            up = up.parent
        if not up.is_dir():
            raise OutputError(f"{what}: {up} is not a folder")
        why = _probe_folder(up)
        if why is not None:
            raise OutputError(f"{what}: {up} is not a writable folder ({why})")

    def write(self, path: "str | Path", option: str, data: "bytes | str",
              what: str = "output") -> bool:
        """Write `data` to `path` whole; False (reported, kept elsewhere) when
        it fails."""
        p = Path(path).expanduser()
        raw = data.encode() if isinstance(data, str) else bytes(data)
        tmp = None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            os.chmod(tmp, _new_file_mode(p))       # (mkstemp's file is private: 0600)
            os.replace(tmp, p)
            return True
        except OSError as e:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            self._keep(p, option, raw, what, e.strerror or str(e))
            return False

    def _keep(self, p: Path, option: str, raw: bytes, what: str, why: str) -> None:
        """Report a failed write and save its content where it can go."""
        self.failed.append(str(p))
        try:
            fd, kept = tempfile.mkstemp(prefix="fsa-", suffix=f"-{p.name}")
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            warn(f"{option} {p}: cannot write it ({why}); the {what} is saved in {kept}")
        except OSError as e2:
            if isinstance(raw, bytes) and p.suffix in (".json", ".csv", ".md", ".txt"):
                warn(f"{option} {p}: cannot write it ({why}), nor a copy in the temporary "
                     f"folder ({e2.strerror}); the {what} follows on stdout")
                sys.stdout.write(raw.decode(errors="replace"))
            else:
                warn(f"{option} {p}: cannot write it ({why}), nor a copy in the temporary "
                     f"folder ({e2.strerror}): the {what} is lost")

    def code(self, ok: int) -> int:
        """The command's exit code: 2 when a write failed, else `ok`."""
        return 2 if self.failed else ok


def save_with(writer: Callable[[object], None]) -> bytes:
    """The bytes `writer(file)` writes (e.g. ``np.save``)."""
    import io

    buf = io.BytesIO()
    writer(buf)
    return buf.getvalue()

