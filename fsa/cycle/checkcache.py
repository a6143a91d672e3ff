"""The dispatch check's verdict cache: a program checked once is not checked again.

:func:`fsa.cycle.dispatch.check_dispatch` runs the cycle model six times
(two dispatch modes x three DMA timings); its verdict (the predicted cycles,
or the KernelError's message) is a deterministic function of

* the instructions, every field of every one (the model reads the matrix
  functions, semaphores, SRAM rows and strides -- the bank conflicts --,
  the DMA's sizes, rows and memory ranges -- ``fsa.hw.dmarules`` compares
  them --, the fences' flags; nothing is normalised away, so no argument
  about which fields matter is needed),
* the config (every field: the plans, banks, ports, DMA timings of
  :func:`fsa.cycle.dispatch.check_timings` and the calibrated timing come
  from it and from the code),
* the modes checked,
* the code: every ``.py`` file of the ``fsa`` package (the model, the
  plans, the DMA rules, the ISA; a change anywhere gives another key).

The key is the SHA-256 of all four (:func:`key`); nothing else enters the
check (no randomness, no clock, no environment), so a hit gives exactly the
verdict the six runs would.  Programs of the same shape are the same
instructions (the kernels build them from the shape and config; the scale
and ``key_limit`` are setting registers, not instructions), so repeated calls
of one shape -- the usual case in inference -- are checked once.

Verdicts are kept in memory (this process) and on disk (``<cache>/dispatch/``
of :func:`fsa.paths.cache_dir`, one small JSON file per key, for programs
of at least :data:`DISK_MIN` instructions; set
``FSA_DISPATCH_CACHE=0`` to keep them in memory only), so a later process
reuses them too.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Iterable, Sequence

from fsa.config import FSAConfig

__all__ = ["key", "lookup", "store", "clear_memory", "source_digest", "disk_folder", "DISK_MIN"]

_MEMORY: dict[str, dict] = {}
_MEMORY_MAX = 256
#: programs from this many instructions are kept on disk too (a smaller one
#: is checked in well under a second; the folder stays small)
DISK_MIN = 2000


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 of every ``.py`` file of the ``fsa`` package (path and bytes)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _fields(x) -> tuple:
    return (type(x).__name__,) + tuple(int(v) if isinstance(v, (bool, int)) else v
                                       for v in (getattr(x, f.name) for f in fields(x)))


def key(cfg: FSAConfig, instructions: Sequence, modes: Iterable[str]) -> str:
    """The cache key of a check (see the module docstring)."""
    h = hashlib.sha256()
    h.update(f"fsa-dispatch-1\0{source_digest()}\0{cfg!r}\0{tuple(modes)!r}\0".encode())
    h.update(repr([_fields(x) for x in instructions]).encode())
    return h.hexdigest()


def disk_folder() -> "Path | None":
    """Where verdicts are kept on disk, or None (``FSA_DISPATCH_CACHE=0``)."""
    if os.environ.get("FSA_DISPATCH_CACHE", "1") == "0":
        return None
    from fsa.paths import cache_dir
    return cache_dir() / "dispatch"


def lookup(k: str) -> "dict | None":
    """The verdict stored under `k` (``{"cycles": n}`` or ``{"error": msg}``), or None."""
    v = _MEMORY.get(k)
    if v is not None:
        return v
    folder = disk_folder()
    if folder is None:
        return None
    try:
        v = json.loads((folder / f"{k}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(v, dict) or not (isinstance(v.get("cycles"), int)
                                       or isinstance(v.get("error"), str)):
        return None
    _remember(k, v)
    return v


def _remember(k: str, v: dict) -> None:
    if len(_MEMORY) >= _MEMORY_MAX:
        _MEMORY.pop(next(iter(_MEMORY)))
    _MEMORY[k] = v


def store(k: str, verdict: dict, disk: bool = True) -> None:
    """Keep `verdict` under `k` (in memory; with `disk` on disk too when
    possible: a folder that cannot be written only loses the disk copy)."""
    _remember(k, verdict)
    folder = disk_folder() if disk else None
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(verdict, f)
        os.replace(tmp, folder / f"{k}.json")
    except OSError:
        pass


def clear_memory() -> None:
    """Forget the verdicts kept in memory (the disk copies stay)."""
    _MEMORY.clear()
