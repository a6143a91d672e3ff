"""Tiles of the kernel language (:mod:`fsa.kernel_lang`): 2-D views of memory
tensors and of scratchpad / accumulator rows, and :class:`KernelError`.

* :class:`MemTile` -- a 2-D view of a tensor in the memory window (byte
  address, shape ``(rows, cols)`` in elements, element format, signed row
  stride in bytes), made by ``KernelBuilder.alloc_mem``.
* :class:`SpadTile` / :class:`AccTile` -- rows of the scratchpad (``R``
  elements of the element format E each) or of the accumulator (``C``
  elements of the accumulate format A): first row, number of rows, row stride.

All tiles support ``split(size, axis)`` (blocks of ``size``), indexing /
slicing (``t[4:8]``, ``t[:, 8:12]`` for memory tiles, ``t[::2]``) and
``reverse()`` (a negative-stride walk: the first row becomes the last).
Tiles are plain values: whether a tile's strides fit the ISA is checked by
the builder when an instruction uses it.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.formats import FORMATS, FPFormat

__all__ = ["KernelError", "MemTile", "SramTile", "SpadTile", "AccTile", "format_name",
           "bits_dtype", "with_article"]


class KernelError(ValueError):
    """A kernel that cannot be built; the message says what to change."""


# ------------------------------------------------------------------ formats
_NP_FMT = {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32"}


def format_name(fmt: Any, cfg: FSAConfig, what: str) -> str:
    """Normalise a format given as a name, an FPFormat, a numpy dtype, or
    "E"/"A" (the config's element / accumulate format)."""
    if fmt is None:
        return cfg.e_type
    if isinstance(fmt, FPFormat):
        return fmt.name
    if isinstance(fmt, str):
        f = fmt.lower()
        if f in FORMATS:
            return f
        if f in ("e", "elem", "element"):
            return cfg.e_type
        if f in ("a", "acc", "accumulate"):
            return cfg.a_type
    else:
        try:
            dt = np.dtype(fmt)
        except TypeError:
            dt = None
        if dt in _NP_FMT:
            return _NP_FMT[dt]
    raise KernelError(f"{what}: unknown format {fmt!r}; use one of {sorted(FORMATS)} "
                      f"(or 'E' / 'A' for the config's {cfg.e_type} / {cfg.a_type})")


def bits_dtype(fmt: str) -> type:
    """The numpy unsigned type that holds raw bits of format `fmt`."""
    return np.uint16 if nx.get_format(fmt).width == 16 else np.uint32


# ------------------------------------------------------------------ tiles
def with_article(word: str) -> str:
    """The word with its indefinite article."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def _axis(axis: int, what: str) -> int:
    if axis in (0, -2):
        return 0
    if axis in (1, -1):
        return 1
    raise KernelError(f"{what}: axis must be 0 (rows) or 1 (columns) (or -2 / -1), got {axis!r}")


def _index(key: Any, n: int, what: str) -> range:
    """A row/column key (int or slice) -> the range of indices it selects."""
    if isinstance(key, slice):
        try:
            r = range(*key.indices(n))
        except (TypeError, ValueError) as e:        # a zero step, non-integer bounds
            raise KernelError(f"{what}: bad slice {_key_label(key)} ({e})") from None
        if len(r) == 0:
            raise KernelError(f"{what}: the slice {key} selects nothing out of {n}")
        return r
    try:
        i = operator.index(key)
    except TypeError:
        raise KernelError(f"{what}: index must be an int or a slice, got {key!r}") from None
    if not -n <= i < n:
        raise KernelError(f"{what}: index {i} is out of range for {n}")
    i %= n
    return range(i, i + 1)


def _key_label(key: Any) -> str:
    if isinstance(key, slice):
        a = "" if key.start is None else str(key.start)
        b = "" if key.stop is None else str(key.stop)
        s = "" if key.step is None else f":{key.step}"
        return f"{a}:{b}{s}"
    return str(key)


@dataclass(frozen=True)
class MemTile:
    """A 2-D view of a tensor in the memory window.

    Attributes:
        tensor: name of the allocated tensor this is a view of.
        addr: byte address of element ``[0, 0]`` of the view.
        shape: ``(rows, cols)`` in elements.
        fmt: element format name ("fp16", "bf16", "fp32").
        row_stride: signed byte distance between consecutive rows.
        label: a readable name for messages (``"Q[4:8, :]"``).
    """

    tensor: str
    addr: int
    shape: tuple[int, int]
    fmt: str
    row_stride: int
    label: str

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[1]

    @property
    def elem_bytes(self) -> int:
        return nx.get_format(self.fmt).bytes

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of the view (what one DMA beat train moves)."""
        return self.cols * self.elem_bytes

    def __getitem__(self, key: Any) -> "MemTile":
        if isinstance(key, tuple) and len(key) != 2:
            raise KernelError(f"{self.label}: a memory tile has 2 axes, got {len(key)} indices")
        rk, ck = key if isinstance(key, tuple) else (key, slice(None))
        what = f"{self.label}[{_key_label(rk)}, {_key_label(ck)}]"
        rr = _index(rk, self.rows, what)
        cr = _index(ck, self.cols, what)
        if cr.step != 1:
            raise KernelError(f"{what}: the column step must be 1 (a DMA row is a contiguous "
                              f"run of bytes), got {cr.step}")
        return MemTile(self.tensor, self.addr + rr.start * self.row_stride + cr.start * self.elem_bytes,
                       (len(rr), len(cr)), self.fmt, self.row_stride * rr.step, what)

    def split(self, size: int, axis: int = 0, *, dim: int | None = None) -> list["MemTile"]:
        """Blocks of `size` rows (axis 0) or columns (axis 1), in order.

        Raises:
            KernelError: the axis length is not a multiple of `size`.
        """
        ax = _axis(axis if dim is None else dim, f"{self.label}.split")
        n = self.shape[ax]
        _check_split(self.label, n, size, ax)
        if ax == 0:
            return [self[i:i + size, :] for i in range(0, n, size)]
        return [self[:, i:i + size] for i in range(0, n, size)]

    def reverse(self, axis: int = 0, *, dim: int | None = None) -> "MemTile":
        """The rows in reverse order (negative row stride)."""
        if _axis(axis if dim is None else dim, f"{self.label}.reverse") != 0:
            raise KernelError(f"{self.label}.reverse: only rows can be reversed (axis 0); a DMA "
                              f"row is a contiguous run of bytes")
        return MemTile(self.tensor, self.addr + (self.rows - 1) * self.row_stride, self.shape,
                       self.fmt, -self.row_stride, f"{self.label}.reverse()")


def _check_split(label: str, n: int, size: Any, ax: int) -> None:
    try:
        size = operator.index(size)
    except TypeError:
        raise KernelError(f"{label}.split: the block size must be an int, got {size!r}") from None
    if size <= 0:
        raise KernelError(f"{label}.split: the block size must be >= 1, got {size}")
    if n % size:
        what = "rows" if ax == 0 else "columns"
        raise KernelError(f"{label}.split: {n} {what} are not a multiple of the block size {size}; "
                          f"use a size that divides {n}")


@dataclass(frozen=True)
class SramTile:
    """Rows of an on-chip SRAM (use :class:`SpadTile` / :class:`AccTile`).

    Attributes:
        first: SRAM row of the tile's row 0.
        rows: number of rows.
        stride: signed row step (row ``i`` is ``first + i * stride``).
        width: elements per row (R for the scratchpad, C for the accumulator).
        fmt: element format of the SRAM.
        label: readable name for messages.
    """

    first: int
    rows: int
    stride: int
    width: int
    fmt: str
    label: str

    KIND = "sram"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.width)

    @property
    def row_list(self) -> list[int]:
        return [self.first + i * self.stride for i in range(self.rows)]

    def _new(self, first: int, rows: int, stride: int, label: str) -> "SramTile":
        return type(self)(first, rows, stride, self.width, self.fmt, label)

    def __getitem__(self, key: Any) -> "SramTile":
        if isinstance(key, tuple) and len(key) != 2:
            raise KernelError(f"{self.label}: a tile has 2 axes, got {len(key)} indices")
        rk, ck = key if isinstance(key, tuple) else (key, slice(None))
        what = f"{self.label}[{_key_label(rk)}]"
        if isinstance(key, tuple):
            if _index(ck, self.width, what) != range(self.width):
                raise KernelError(f"{what}: an SRAM tile always spans whole rows of {self.width} "
                                  f"elements; slice rows only")
        rr = _index(rk, self.rows, what)
        return self._new(self.first + rr.start * self.stride, len(rr), self.stride * rr.step, what)

    def split(self, size: int, axis: int = 0, *, dim: int | None = None) -> list["SramTile"]:
        """Blocks of `size` rows, in order (SRAM tiles split by rows only)."""
        if _axis(axis if dim is None else dim, f"{self.label}.split") != 0:
            raise KernelError(f"{self.label}.split: SRAM tiles split by rows only (axis 0)")
        _check_split(self.label, self.rows, size, 0)
        return [self[i:i + size] for i in range(0, self.rows, size)]

    def reverse(self, axis: int = 0, *, dim: int | None = None) -> "SramTile":
        """The rows in reverse order: a negative-stride walk from the last row."""
        if _axis(axis if dim is None else dim, f"{self.label}.reverse") != 0:
            raise KernelError(f"{self.label}.reverse: only rows can be reversed (axis 0)")
        return self._new(self.first + (self.rows - 1) * self.stride, self.rows, -self.stride,
                         f"{self.label}.reverse()")


class SpadTile(SramTile):
    """Scratchpad rows (R elements of the element format each)."""

    KIND = "scratchpad"


class AccTile(SramTile):
    """Accumulator rows (C elements of the accumulate format each)."""

    KIND = "accumulator"
