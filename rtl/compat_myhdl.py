"""Every patch of MyHDL's internals, in one place, applied only while a unit
is converted (:func:`conversion`, entered by :func:`rtl.convert.convert_block`);
importing ``rtl`` patches nothing.

MyHDL has no public way to ask for what these do, so each reaches into a
private name of the version it was written for (:data:`WRITTEN_FOR`):

* **sorted registers** (``myhdl._always_seq._AlwaysSeq.__init__``): an
  ``always_seq`` block's registers (the order of its reset assignments in
  the Verilog) are collected from a set of names, whose order follows
  Python's string hashing, new in every process; the patch lists them
  sorted by name, so the same design gives the same text in every process
  (and the simulator build cache keyed on the text stays effective).
* **fresh names** (``myhdl._block._name_set``, ``_inst_name_set``,
  ``myhdl._simulator._blocks``): MyHDL makes every block and instance name
  unique against all names handed out earlier in the process; forgetting
  them before each conversion makes a module's wire names independent of
  what was converted before it.
* **fast stack** (``inspect.stack``, ``inspect.getsourcelines`` and
  ``myhdl._util._dedent``, while converting): MyHDL calls
  ``inspect.stack()`` a few times per block and generator instance and uses
  only each record's frame and function name; the standard version resolves
  every frame's source (minutes for a 128x128 array).  The stand-in returns
  the same records without source context, made when first indexed, and
  source lookups are cached per code object.  Speed only: the text is the
  same without it.

A different MyHDL version is refused for the first two (the text would no
longer be canonical: :class:`MyHDLVersionError` names what to check) and
falls back to the standard stack and source lookups, with a warning, for
the third.  ``tests/test_compat.py`` fails when the installed MyHDL no
longer has what the patches replace.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import warnings
from collections.abc import Sequence

import myhdl
from myhdl import _util as _myhdl_util

__all__ = ["WRITTEN_FOR", "MyHDLVersionError", "supported", "conversion"]

#: the MyHDL version the patches were written for (pyproject.toml pins it)
WRITTEN_FOR = "0.11.52"


class MyHDLVersionError(RuntimeError):
    """The installed MyHDL is not the one the patches were written for."""


def supported(version: "str | None" = None) -> bool:
    """Whether MyHDL `version` (default: the installed one) is the one the
    patches were written for."""
    return (myhdl.__version__ if version is None else version) == WRITTEN_FOR


def _require() -> None:
    if not supported():
        raise MyHDLVersionError(
            f"rtl.compat_myhdl: written for MyHDL {WRITTEN_FOR}, found {myhdl.__version__}: "
            f"check _AlwaysSeq.__init__ (register order) and the name sets "
            f"(_block._name_set, _inst_name_set, _simulator._blocks) against the new version, "
            f"then update WRITTEN_FOR")


# --------------------------------------------------------------- sorted registers
def _sorted_init(init):
    """``_AlwaysSeq.__init__`` that lists the registers sorted by name."""
    from myhdl import _always_seq as seq

    @functools.wraps(init)
    def sorted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.sigregs, self.varregs = [], []
        for n in sorted(self.outputs):          # (MyHDL's own loop, in sorted order)
            reg = self.symdict[n]
            if isinstance(reg, seq._Signal):
                self.sigregs.append(reg)
            elif isinstance(reg, seq.intbv):
                self.varregs.append((n, reg, int(reg)))
            else:
                self.sigregs.extend(reg)
    return sorted_init


@contextlib.contextmanager
def _sorted_registers():
    from myhdl import _always_seq as seq

    init = seq._AlwaysSeq.__init__
    seq._AlwaysSeq.__init__ = _sorted_init(init)
    try:
        yield
    finally:
        seq._AlwaysSeq.__init__ = init


# ------------------------------------------------------------------- fresh names
def _forget_names() -> None:
    """Forget the block and instance names MyHDL has handed out in this
    process (and its call counter per block function)."""
    import myhdl._block as mblock
    import myhdl._simulator as msim

    mblock._name_set.clear()
    mblock._inst_name_set.clear()
    for b in msim._blocks:
        b.calls = 0


# -------------------------------------------------------------------- fast stack
class _LazyStack(Sequence):
    """The records of ``inspect.stack()`` from `frame` outwards (without
    source context), each made when first indexed."""

    def __init__(self, frame):
        self._frames = []
        while frame is not None:
            self._frames.append(frame)
            frame = frame.f_back
        self._records: list = [None] * len(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self._frames)))]
        rec = self._records[i]
        if rec is None:
            f = self._frames[i]
            code = f.f_code
            rec = self._records[i] = inspect.FrameInfo(f, code.co_filename, f.f_lineno,
                                                      code.co_name, None, None)
        return rec


#: (file name, code object) -> (source lines, first line number): what
#: ``inspect.getsourcelines`` gave for a function or frame of that code
_SOURCE_LINES: dict = {}
#: the standard ``inspect.getsourcelines``
_GETSOURCELINES = inspect.getsourcelines


def _cached_getsourcelines(obj):
    """``inspect.getsourcelines`` (the original, saved at import), once per
    code object and process.  MyHDL reads a generator function's source for
    every generator *instance* and a block function's for every ``@block``
    decoration, each call tokenizing the source in Python; a mux tree's
    hundreds of 2-way muxes, or the array's PEs, repeat a few functions.
    The lines of a code object do not change within a process (its module is
    not re-imported), and the key holds the file name too."""
    target = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
    if inspect.isfunction(target):
        code = target.__code__
    elif inspect.isframe(target):
        code = target.f_code
    else:
        return _GETSOURCELINES(obj)
    key = (code.co_filename, code)
    hit = _SOURCE_LINES.get(key)
    if hit is None:
        lines, lnum = _GETSOURCELINES(obj)
        hit = _SOURCE_LINES[key] = (tuple(lines), lnum)
    return list(hit[0]), hit[1]


@functools.lru_cache(maxsize=None)
def _cached_dedent(text):
    """MyHDL's ``_dedent`` (which tokenizes the text in Python), cached by text."""
    return _DEDENT(text)


#: MyHDL's ``_dedent``
_DEDENT = _myhdl_util._dedent


@contextlib.contextmanager
def _fast_stack():
    if not supported():
        warnings.warn(f"rtl.compat_myhdl: MyHDL {myhdl.__version__} is not {WRITTEN_FOR}: "
                      f"converting with the standard inspect.stack (slower)", RuntimeWarning)
        yield
        return
    def stack(context=1):
        return _LazyStack(sys._getframe(1))

    saved = inspect.stack, inspect.getsourcelines, _myhdl_util._dedent
    inspect.stack = stack
    inspect.getsourcelines = _cached_getsourcelines
    _myhdl_util._dedent = _cached_dedent
    try:
        yield
    finally:
        inspect.stack, inspect.getsourcelines, _myhdl_util._dedent = saved


# ---------------------------------------------------------------------- together
@contextlib.contextmanager
def conversion():
    """While converting one unit: fresh names, sorted registers, the fast
    stack (see the module docstring); MyHDL is restored on exit.

    Raises:
        MyHDLVersionError: the installed MyHDL is not :data:`WRITTEN_FOR`.
    """
    _require()
    _forget_names()
    with _sorted_registers(), _fast_stack():
        yield
