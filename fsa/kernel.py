"""The FSA kernel language: tiles, instructions and semaphores, built into a
:class:`Program` (architecture.md section 11).

Nothing here is global: a :class:`KernelBuilder` is made against an explicit
:class:`~fsa.config.FSAConfig` and owns everything a kernel allocates (memory
layout, scratchpad and accumulator rows, semaphores) and emits (the
instruction list). :func:`kernel` turns a function ``fn(k, *tiles, **params)``
into a reusable :class:`KernelDef` whose :meth:`KernelDef.build` makes a fresh
builder each time.

Tiles:

* :class:`MemTile` -- a 2-D view of a tensor in the memory window (byte
  address, shape ``(rows, cols)`` in elements, element format, signed row
  stride in bytes). ``alloc_mem`` lays tensors out from ``cfg.mem_base``,
  each aligned to ``cfg.mem_align`` with rows padded to a multiple of it.
* :class:`SpadTile` / :class:`AccTile` -- rows of the scratchpad (``R``
  elements of the element format E each) or of the accumulator (``C``
  elements of the accumulate format A): first row, number of rows, row stride.

All tiles support ``split(size, axis)`` (blocks of ``size``), indexing /
slicing (``t[4:8]``, ``t[:, 8:12]`` for memory tiles, ``t[::2]``) and
``reverse()`` (a negative-stride walk: the first row becomes the last).

Instructions (each returns the emitted :mod:`fsa.isa` object):
``load_tile(dst, src)`` (DMA memory -> scratchpad/accumulator),
``store_tile(dst, src)`` (DMA accumulator -> memory),
``mx_load_stationary(q)``, ``mx_attn_score(k, l, accumulate, causal=)``,
``mx_attn_value(vt, o, accumulate)``, ``mx_reciprocal(l)``
(ATTENTION_LSE_NORM_SCALE), ``mx_attn_lse_norm(o)``,
``fence(mx=, dma=, stop=)`` and ``emit(instr)`` for a raw instruction.

Semaphores: ``Semaphore(id, n)`` (or ``k.semaphore(id, n)``) tracks the
semaphore's value in program order. An instruction given ``sem=s`` acquires
the current value and releases the next one, ``(value + 1) % n``, by
default; ``acquire=False`` / ``release=False`` leave either out (an
acquire-only instruction holds the semaphore until a later release-only
one), an integer gives the value explicitly. Each use thus passes a token
along a ring: ``load (0 -> 1)``, ``consume (1 -> 0)``, ``load (0 -> 1)`` ...

Every mistake raises :class:`KernelError` (a ValueError) whose message names
the instruction, the field or tile, and what to change. :meth:`KernelBuilder.build`
also runs the program through a model of the hardware's in-order dispatcher
(one pending instruction per engine, :func:`check_dispatch`) and refuses a
program that can deadlock.

Example::

    >>> from fsa import config
    >>> from fsa.kernel import KernelBuilder
    >>> k = KernelBuilder(config.get("FSA4X4Fp16Config"))
    >>> x = k.alloc_mem((4, 4), "fp16", "X", role="input")
    >>> s = k.alloc_spad(4)
    >>> _ = k.load_tile(s, x)
    >>> prog = k.build()
    >>> [type(i).__name__ for i in prog.instructions]
    ['Dma', 'Fence']
"""
from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fsa import config as fconfig
from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.formats import FORMATS, FPFormat
from fsa.hw import isa as _hwisa
from fsa.isa import (Dma, DmaFunc, Fence, Instruction, Matrix, MxFunc, disassemble, encode)

__all__ = [
    "KernelError", "MemTile", "SramTile", "SpadTile", "AccTile", "Semaphore", "KernelBuilder",
    "Program", "TensorInfo", "View", "KernelDef", "kernel", "Input", "check_dispatch",
    "memory_reader",
]

# field ranges from the ISA field table (fsa/hw/isa.py)
STRIDE_RANGE = _hwisa.field("MATRIX", "spad_stride").range     # spad / acc / sram row stride
MEM_STRIDE_RANGE = _hwisa.field("DMA", "mem_stride").range     # signed byte stride
SIZE_MAX = _hwisa.field("DMA", "size").range[1]                # DMA bytes per row
REPEAT_MAX = _hwisa.field("DMA", "repeat").range[1]            # DMA rows
SEM_IDS = _hwisa.SEM_IDS
SEM_VALUES = 1 << _hwisa.SEM_VALUE_BITS


class KernelError(ValueError):
    """A kernel that cannot be built; the message says what to change."""


# ------------------------------------------------------------------ formats
_NP_FMT = {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32"}


def _fmt_name(fmt: Any, cfg: FSAConfig, what: str) -> str:
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


def _uint(fmt: str) -> type:
    return np.uint16 if nx.get_format(fmt).width == 16 else np.uint32


# ------------------------------------------------------------------ tiles
def _art(word: str) -> str:
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
        r = range(*key.indices(n))
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
        rk, ck = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(key, tuple) and len(key) != 2:
            raise KernelError(f"{self.label}: a memory tile has 2 axes, got {len(key)} indices")
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
        rk, ck = key if isinstance(key, tuple) else (key, slice(None))
        what = f"{self.label}[{_key_label(rk)}]"
        if isinstance(key, tuple):
            if len(key) != 2:
                raise KernelError(f"{self.label}: a tile has 2 axes, got {len(key)} indices")
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


# ------------------------------------------------------------------ semaphores
class Semaphore:
    """One of the 32 hardware semaphores, with its value tracked in program order.

    Args:
        id: semaphore id, 0..31.
        n: values cycle modulo `n` (1..8: the values are 3 bits).

    A release hands out ``(value + 1) % n`` (see the module docstring). A
    semaphore belongs to the first builder that uses it.

    Raises:
        KernelError: id or n out of range.
    """

    def __init__(self, id: int, n: int = 2):
        for name, v, lo, hi in (("id", id, 0, SEM_IDS - 1), ("n", n, 1, SEM_VALUES)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                extra = " (semaphore values are 3 bits)" if name == "n" else ""
                raise KernelError(f"Semaphore {name} must be an integer in {lo}..{hi}{extra}, got {v!r}")
        self.id, self.n = int(id), int(n)
        self.value = 0            # the value after the last release, in program order
        self.holder: int | None = None   # instruction that acquired without releasing
        self._owner: object | None = None

    def __repr__(self) -> str:
        held = f", held by instruction {self.holder}" if self.holder is not None else ""
        return f"Semaphore(id={self.id}, n={self.n}, value={self.value}{held})"


# ------------------------------------------------------------------ program
@dataclass(frozen=True)
class TensorInfo:
    """A tensor in the memory layout.

    Attributes:
        name: its name (unique in the program).
        role: "input", "output" or "scratch".
        addr: byte address of element [0, 0].
        shape: (rows, cols) as stored in memory.
        fmt: element format.
        row_stride: bytes between rows (a multiple of mem_align, >= a row).
    """

    name: str
    role: str
    addr: int
    shape: tuple[int, int]
    fmt: str
    row_stride: int

    @property
    def row_bytes(self) -> int:
        return self.shape[1] * nx.get_format(self.fmt).bytes

    @property
    def nbytes(self) -> int:
        """Bytes the tensor spans in memory (padding included)."""
        return self.shape[0] * self.row_stride

    @property
    def dtype(self) -> type:
        return _uint(self.fmt)


@dataclass(frozen=True)
class View:
    """Another name for a tensor, seen transposed (e.g. "V" for the stored "Vt").

    Attributes:
        name: the view's name.
        base: the tensor's name.
        transpose: the view is the transpose of the stored tensor.
    """

    name: str
    base: str
    transpose: bool = True


def memory_reader(mem: Any) -> Callable[[int, int], bytes]:
    """A memory image -> read(addr, n). Accepts a callable, an object with
    ``.read(addr, n)`` (fsa.golden.machine.Memory) or (addr, bytes) segments."""
    if callable(mem):
        return mem
    if hasattr(mem, "read"):
        return mem.read
    segs = sorted((int(a), bytes(b)) for a, b in (mem.items() if isinstance(mem, dict) else mem))

    def read(addr: int, n: int) -> bytes:
        out = bytearray(n)
        for a, b in segs:
            lo, hi = max(a, addr), min(a + len(b), addr + n)
            if lo < hi:
                out[lo - addr:hi - addr] = b[lo - a:hi - a]
        return bytes(out)
    return read


class Program:
    """A built kernel: instructions, memory layout and I/O helpers.

    Attributes:
        cfg: the config it was built for.
        name: the kernel's name.
        instructions: tuple of :mod:`fsa.isa` instructions.
        tensors: name -> :class:`TensorInfo` (the memory layout).
        views: name -> :class:`View` (e.g. "V" / "O" seen transposed).
        meta: free-form facts from the kernel (e.g. seq_q, seq_kv, causal).
        spad_rows, acc_rows: SRAM rows the kernel allocated.
        semaphores: id -> value at the end of the program (program order).
    """

    def __init__(self, cfg: FSAConfig, name: str, instructions: Sequence[Instruction],
                 tensors: dict[str, TensorInfo], views: dict[str, View] | None = None,
                 meta: dict | None = None, spad_rows: int = 0, acc_rows: int = 0,
                 semaphores: dict[int, int] | None = None):
        self.cfg = cfg
        self.name = name
        self.instructions = tuple(instructions)
        self.tensors = dict(tensors)
        self.views = dict(views or {})
        self.meta = dict(meta or {})
        self.spad_rows, self.acc_rows = spad_rows, acc_rows
        self.semaphores = dict(semaphores or {})

    # ------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.instructions)

    def __repr__(self) -> str:
        c = self.counts()
        return (f"<Program {self.name} for {self.cfg.name}: {c['matrix']} matrix, {c['dma']} DMA, "
                f"{c['fence']} fence instructions; tensors {list(self.tensors)}>")

    def words(self) -> list[int]:
        """The instruction stream as 32-bit words."""
        return encode(self.instructions)

    def disassemble(self) -> str:
        return disassemble(self.words())

    def counts(self) -> dict[str, int]:
        """Instructions of each kind, each matrix/DMA function, and words."""
        out: dict[str, int] = {"matrix": 0, "dma": 0, "fence": 0}
        for ins in self.instructions:
            if isinstance(ins, Matrix):
                out["matrix"] += 1
                key = ins.func.name
            elif isinstance(ins, Dma):
                out["dma"] += 1
                key = f"DMA_{ins.func.name}"
            else:
                out["fence"] += 1
                continue
            out[key] = out.get(key, 0) + 1
        out["words"] = len(self.words())
        return out

    @property
    def inputs(self) -> list[str]:
        return [n for n, t in self.tensors.items() if t.role == "input"]

    @property
    def outputs(self) -> list[str]:
        return [n for n, t in self.tensors.items() if t.role == "output"]

    def shape_of(self, name: str) -> tuple[int, int]:
        """The shape a caller sees for a tensor or view name."""
        if name in self.views:
            v = self.views[name]
            s = self.tensors[v.base].shape
            return (s[1], s[0]) if v.transpose else s
        if name in self.tensors:
            return self.tensors[name].shape
        raise KernelError(f"{self.name}: no tensor or view called {name!r}; known: "
                          f"{sorted(self.tensors) + sorted(self.views)}")

    # ------------------------------------------------------------ inputs
    def to_bits(self, name: str, array: Any) -> tuple[str, np.ndarray]:
        """Convert a caller's array for tensor or view `name` to the stored
        tensor's raw bits, in stored orientation.

        Floating-point arrays are rounded (RNE) to the tensor's format with
        :func:`fsa.numerics.from_float64`; integer arrays are taken as raw bit
        patterns of that format.

        Returns:
            (stored tensor name, bits array of the stored shape).

        Raises:
            KernelError: unknown name, wrong shape, integer bits of the wrong
                width or out of range.
        """
        shape = self.shape_of(name)
        base, transpose = (self.views[name].base, self.views[name].transpose) \
            if name in self.views else (name, False)
        t = self.tensors[base]
        a = np.asarray(array)
        if a.shape != shape:
            via = f" (the transpose of stored {base!r} {t.shape})" if transpose else ""
            raise KernelError(f"{self.name}: input {name!r} must have shape {shape}{via}, "
                              f"got {a.shape}")
        if a.dtype.kind == "f":
            bits = nx.from_float64(a.astype(np.float64), t.fmt)
        elif a.dtype.kind in "ui":
            width = nx.get_format(t.fmt).width
            if a.dtype.kind == "u" and a.dtype.itemsize * 8 != width:
                raise KernelError(f"{self.name}: input {name!r} is raw bits of dtype {a.dtype} but "
                                  f"{t.fmt} bits are {np.dtype(t.dtype).name}; pass floats (they are "
                                  f"rounded to {t.fmt}) or {t.fmt} bit patterns")
            if a.size and (a.min() < 0 or a.max() >= (1 << width)):
                raise KernelError(f"{self.name}: input {name!r} holds integers outside the "
                                  f"{width}-bit patterns of {t.fmt}; pass floats to have them "
                                  f"rounded, or raw {t.fmt} bits")
            bits = a.astype(t.dtype)
        else:
            raise KernelError(f"{self.name}: input {name!r} must be a float array (rounded to "
                              f"{t.fmt}) or raw {t.fmt} bits, got dtype {a.dtype}")
        if transpose:
            bits = bits.T
        return base, np.ascontiguousarray(bits, dtype=t.dtype)

    def memory_image(self, inputs: dict[str, Any]) -> list[tuple[int, bytes]]:
        """The memory segments that hold the inputs: [(address, bytes)].

        Args:
            inputs: name (tensor or view) -> array; every input tensor once.

        Raises:
            KernelError: a missing, duplicated or unknown input, or one that
                :meth:`to_bits` rejects.
        """
        got: dict[str, np.ndarray] = {}
        for name, arr in inputs.items():
            base, bits = self.to_bits(name, arr)
            if self.tensors[base].role != "input":
                raise KernelError(f"{self.name}: {name!r} is an {self.tensors[base].role} tensor, "
                                  f"not an input; inputs: {self.inputs}")
            if base in got:
                raise KernelError(f"{self.name}: input {base!r} given twice (as {base!r} and via a view)")
            got[base] = bits
        missing = [n for n in self.inputs if n not in got]
        if missing:
            alias = {v.base: n for n, v in self.views.items()}
            names = [f"{m!r}" + (f" (or {alias[m]!r})" if m in alias else "") for m in missing]
            raise KernelError(f"{self.name}: missing inputs {', '.join(names)}")
        segs = []
        for base, bits in got.items():
            t = self.tensors[base]
            buf = bytearray(t.nbytes)
            raw = bits.view(np.uint8).reshape(t.shape[0], t.row_bytes)
            for r in range(t.shape[0]):
                buf[r * t.row_stride:r * t.row_stride + t.row_bytes] = raw[r].tobytes()
            segs.append((t.addr, bytes(buf)))
        return segs

    def write_inputs(self, mem: Any, inputs: dict[str, Any]) -> None:
        """Write the inputs into a memory with ``.write(addr, bytes)``."""
        for addr, b in self.memory_image(inputs):
            mem.write(addr, b)

    # ------------------------------------------------------------ outputs
    def read_tensor(self, name: str, mem: Any) -> np.ndarray:
        """Raw bits of a tensor (stored orientation) or a view, read from `mem`
        (a callable read(addr, n), an object with ``.read``, or segments)."""
        read = memory_reader(mem)
        base = self.views[name].base if name in self.views else name
        if base not in self.tensors:
            raise KernelError(f"{self.name}: no tensor or view called {name!r}")
        t = self.tensors[base]
        rows = [np.frombuffer(read(t.addr + r * t.row_stride, t.row_bytes), t.dtype)
                for r in range(t.shape[0])]
        a = np.stack(rows)
        if name in self.views and self.views[name].transpose:
            a = np.ascontiguousarray(a.T)
        return a

    def output_regions(self) -> list[tuple[int, int]]:
        """(address, bytes) of every output tensor: what to read back (dump)
        from a device's memory after the run."""
        return [(self.tensors[n].addr, self.tensors[n].nbytes) for n in self.outputs]

    def read_outputs(self, mem: Any) -> dict[str, np.ndarray]:
        """Every output tensor and every view of one, as raw bits."""
        out = {n: self.read_tensor(n, mem) for n in self.outputs}
        for n, v in self.views.items():
            if v.base in out:
                out[n] = self.read_tensor(n, mem)
        return out

    # ------------------------------------------------------------ checks
    def check_dispatch(self, latencies: Iterable[tuple[int, int]] = ((1, 1), (1, 9), (9, 1)),
                       slots: Iterable[int | None] = (1, None)) -> None:
        """Run :func:`check_dispatch` for each (matrix, DMA) latency pair with
        one pending slot per engine (the hardware) and with unbounded queues
        (the golden model's view), which exposes ambiguous semaphore values."""
        for n in slots:
            for mx, dma in latencies:
                check_dispatch(self.instructions, mx_latency=mx, dma_latency=dma, slots=n)


# ------------------------------------------------------------------ dispatcher model
def check_dispatch(instructions: Sequence[Instruction], mx_latency: int = 1,
                   dma_latency: int = 1, slots: int | None = 1,
                   max_cycles: int | None = None) -> int:
    """Model the hardware's in-order dispatcher and report a deadlock or race.

    Instructions are decoded in program order into per-engine queues of
    `slots` entries (the hardware holds ONE pending instruction per engine,
    and the decoder waits while the slot of the next instruction's engine is
    full; ``slots=None`` models unbounded queues, as the golden model does); an
    engine's queue head issues when its acquire succeeds (value equal and not
    held) and the engine's previous instruction has completed; it completes
    `latency` cycles later and then releases. A fence waits until the engines
    it names are idle; ``stop`` waits for both and ends.

    Returns:
        The number of modelled cycles.

    Raises:
        KernelError: the program deadlocks (the message says which
            instructions wait for which semaphore values), or both engines
            could take the same semaphore value in the same cycle (a race:
            which one runs first would depend on timing).
    """
    lat = {"mx": max(1, mx_latency), "dma": max(1, dma_latency)}
    cap = slots if slots is not None else len(instructions) + 1
    val = [0] * SEM_IDS
    held = [False] * SEM_IDS
    queue: dict[str, list[tuple[int, Any]]] = {"mx": [], "dma": []}
    running: dict[str, tuple[int, Any, int] | None] = {"mx": None, "dma": None}
    pc, now = 0, 0
    limit = max_cycles or (len(instructions) + 10) * (max(lat.values()) + 2) * 4

    def idle(e: str) -> bool:
        return not queue[e] and running[e] is None

    while True:
        progressed = False
        # completions (release)
        for e in ("mx", "dma"):
            r = running[e]
            if r is not None and r[2] <= now:
                ins = r[1]
                if ins.release_valid:
                    val[ins.sem_id], held[ins.sem_id] = ins.release_value, False
                running[e] = None
                progressed = True
        # issue
        ok = {}
        for e in ("mx", "dma"):
            if not queue[e] or running[e] is not None:
                continue
            ins = queue[e][0][1]
            if ins.acquire_valid and (held[ins.sem_id] or val[ins.sem_id] != ins.acquire_value):
                continue
            ok[e] = queue[e][0]
        if len(ok) == 2:
            a, b = ok["mx"][1], ok["dma"][1]
            if a.acquire_valid and b.acquire_valid and a.sem_id == b.sem_id:
                raise KernelError(
                    f"semaphore race: matrix instruction {ok['mx'][0]} and DMA instruction "
                    f"{ok['dma'][0]} can both acquire semaphore {a.sem_id} = {a.acquire_value} at "
                    f"once, so their order depends on timing; give the semaphore more values "
                    f"(a larger n) so that each waiting instruction has its own value")
        for e, (idx, ins) in ok.items():
            if ins.acquire_valid:
                held[ins.sem_id] = True
            running[e] = (idx, ins, now + lat[e])
            queue[e].pop(0)
            progressed = True
        # decode
        while pc < len(instructions):
            ins = instructions[pc]
            if isinstance(ins, Fence):
                if (ins.mx or ins.stop) and not idle("mx"):
                    break
                if (ins.dma or ins.stop) and not idle("dma"):
                    break
                pc += 1
                progressed = True
                if ins.stop:
                    return now
                continue
            e = "mx" if isinstance(ins, Matrix) else "dma"
            if len(queue[e]) >= cap:
                break
            queue[e].append((pc, ins))
            pc += 1
            progressed = True
        if pc >= len(instructions) and idle("mx") and idle("dma"):
            return now
        if not progressed and running["mx"] is None and running["dma"] is None:
            waits = []
            for e, name in (("mx", "matrix"), ("dma", "DMA")):
                if queue[e]:
                    idx, ins = queue[e][0]
                    waits.append(f"{name} instruction {idx} waits for semaphore {ins.sem_id} == "
                                 f"{ins.acquire_value} (it is {val[ins.sem_id]}"
                                 f"{', held' if held[ins.sem_id] else ''})")
            rule = "one-pending-instruction-per-engine rule" if slots == 1 else \
                f"{slots}-entry engine queues" if slots else "unbounded engine queues"
            nxt = f"; the decoder is stuck at instruction {pc}" if pc < len(instructions) else ""
            raise KernelError(f"deadlock under the {rule}: " + "; ".join(waits) + nxt +
                              ". Emit the instruction that releases the awaited value earlier in "
                              "the program (before the next instruction of the waiting engine)")
        if progressed:
            now += 1
        else:                    # jump to the next completion
            now = max(now + 1, min(r[2] for r in running.values() if r is not None))
        if now > limit:
            raise KernelError(f"dispatcher model did not finish in {limit} cycles")


# ------------------------------------------------------------------ builder
@dataclass
class _Region:
    name: str
    first: int
    rows: int


class KernelBuilder:
    """Builds one program for one config. See the module docstring.

    Args:
        cfg: an :class:`FSAConfig` or a preset name.
        name: the kernel's name (used in messages and the Program).

    Attributes:
        cfg, R (= sa_rows), C (= sa_cols), instructions, meta (a dict the
        kernel may fill, copied into the Program).
    """

    def __init__(self, cfg: "FSAConfig | str", name: str = "kernel"):
        self.cfg = fconfig.get(cfg)
        self.name = name
        self.R, self.C = self.cfg.sa_rows, self.cfg.sa_cols
        self.instructions: list[Instruction] = []
        self.meta: dict = {}
        self._tensors: dict[str, TensorInfo] = {}
        self._views: dict[str, View] = {}
        self._mem_next = self.cfg.mem_base
        self._spad: list[_Region] = []
        self._acc: list[_Region] = []
        self._sems: dict[int, Semaphore] = {}
        self._stopped = False

    # ------------------------------------------------------------ allocation
    def alloc_mem(self, shape: Sequence[int], fmt: Any = None, name: str | None = None, *,
                  role: str = "scratch") -> MemTile:
        """Allocate a tensor in the memory window.

        Args:
            shape: (rows, cols) in elements.
            fmt: element format (name, FPFormat, numpy float16/float32, or
                "E"/"A"); default the config's element format.
            name: unique name (default "t<n>").
            role: "input", "output" or "scratch" (tiles returned by a
                :func:`kernel` function become outputs).

        Returns:
            A :class:`MemTile` of the whole tensor.

        Raises:
            KernelError: a bad shape, format, name or role, or the memory
                window is full.
        """
        name = name if name is not None else f"t{len(self._tensors)}"
        what = f"alloc_mem({name!r})"
        if not isinstance(name, str) or not name.isidentifier():
            raise KernelError(f"{what}: the name must be an identifier, got {name!r}")
        if name in self._tensors or name in self._views:
            raise KernelError(f"{what}: a tensor called {name!r} already exists; pick another name")
        if role not in ("input", "output", "scratch"):
            raise KernelError(f"{what}: role must be 'input', 'output' or 'scratch', got {role!r}")
        try:
            rows, cols = (operator.index(x) for x in shape)
        except (TypeError, ValueError):
            raise KernelError(f"{what}: shape must be (rows, cols) of ints, got {shape!r}") from None
        if rows < 1 or cols < 1:
            raise KernelError(f"{what}: shape must be positive, got {(rows, cols)}")
        f = _fmt_name(fmt, self.cfg, what)
        align = self.cfg.mem_align
        row_bytes = cols * nx.get_format(f).bytes
        stride = -(-row_bytes // align) * align
        addr = -(-self._mem_next // align) * align
        end = addr + rows * stride
        top = self.cfg.mem_base + self.cfg.mem_size
        if end > top:
            raise KernelError(f"{what}: {rows * stride} bytes do not fit the memory window: "
                              f"{max(0, top - addr)} of {self.cfg.mem_size} bytes are left; use "
                              f"smaller tensors or a config with a larger mem_size")
        self._mem_next = end
        self._tensors[name] = TensorInfo(name, role, addr, (rows, cols), f, stride)
        return MemTile(name, addr, (rows, cols), f, stride, name)

    def _alloc_sram(self, kind: str, rows: Any, name: str | None) -> SramTile:
        cfg = self.cfg
        if kind == "spad":
            total, width, fmt, regions, cls, what = cfg.spad_rows, self.R, cfg.e_type, self._spad, \
                SpadTile, "alloc_spad"
        else:
            total, width, fmt, regions, cls, what = cfg.acc_rows, self.C, cfg.a_type, self._acc, \
                AccTile, "alloc_accumulator"
        if isinstance(rows, (tuple, list)):
            if len(rows) != 2:
                raise KernelError(f"{what}: give rows, or a shape (rows, {width}), got {rows!r}")
            if rows[1] != width:
                unit = "R" if kind == "spad" else "C"
                raise KernelError(f"{what}: {_art(cls.KIND)} row holds {unit} = {width} elements; "
                                  f"shape {tuple(rows)} must be (rows, {width})")
            rows = rows[0]
        try:
            n = operator.index(rows)
        except TypeError:
            raise KernelError(f"{what}: rows must be an int, got {rows!r}") from None
        if n < 1:
            raise KernelError(f"{what}: rows must be >= 1, got {n}")
        used = sum(r.rows for r in regions)
        left = total - used
        if n > left:
            have = ", ".join(f"{r.name} {r.first}..{r.first + r.rows - 1}" for r in regions) or "nothing"
            field_ = "spad_rows" if kind == "spad" else "acc_rows"
            raise KernelError(f"{what}: {n} rows do not fit the {cls.KIND}: {left} of {total} rows "
                              f"are left (allocated: {have}); allocate fewer rows or use a config "
                              f"with more {field_}")
        label = name or f"{kind}{len(regions)}"
        regions.append(_Region(label, used, n))
        return cls(used, n, 1, width, fmt, label)

    def alloc_spad(self, rows: "int | tuple[int, int]", name: str | None = None) -> SpadTile:
        """Allocate `rows` scratchpad rows (or a shape ``(rows, R)``).

        Raises:
            KernelError: they do not fit (the message says how many are left).
        """
        return self._alloc_sram("spad", rows, name)

    def alloc_accumulator(self, rows: "int | tuple[int, int]", name: str | None = None) -> AccTile:
        """Allocate `rows` accumulator rows (or a shape ``(rows, C)``).

        Raises:
            KernelError: they do not fit (the message says how many are left).
        """
        return self._alloc_sram("acc", rows, name)

    def semaphore(self, id: int, n: int = 2) -> Semaphore:
        """A new :class:`Semaphore` owned by this builder."""
        s = Semaphore(id, n)
        self._own(s, "semaphore()")
        return s

    def view(self, name: str, tile: MemTile, transpose: bool = True) -> None:
        """Name a whole tensor seen transposed (inputs may be given, outputs are
        returned, under this name too)."""
        if not isinstance(tile, MemTile) or tile.tensor not in self._tensors:
            raise KernelError(f"view({name!r}): needs a memory tile from alloc_mem")
        t = self._tensors[tile.tensor]
        if tile.addr != t.addr or tile.shape != t.shape or tile.row_stride != t.row_stride:
            raise KernelError(f"view({name!r}): needs the whole tensor {t.name!r}, not {tile.label}")
        if not isinstance(name, str) or not name.isidentifier() or name in self._tensors \
                or name in self._views:
            raise KernelError(f"view({name!r}): the name must be a new identifier")
        self._views[name] = View(name, t.name, bool(transpose))

    def output(self, tile: MemTile) -> MemTile:
        """Mark a whole tensor as an output."""
        if not isinstance(tile, MemTile) or tile.tensor not in self._tensors:
            raise KernelError(f"output(): needs a memory tile from alloc_mem, got {tile!r}")
        t = self._tensors[tile.tensor]
        if t.role == "input":
            raise KernelError(f"output(): {t.name!r} is an input tensor; allocate a separate output")
        self._tensors[t.name] = TensorInfo(t.name, "output", t.addr, t.shape, t.fmt, t.row_stride)
        return tile

    # ------------------------------------------------------------ semaphores
    def _own(self, sem: Semaphore, what: str) -> None:
        if not isinstance(sem, Semaphore):
            raise KernelError(f"{what}: sem must be a Semaphore, got {sem!r}")
        if sem._owner is None:
            other = self._sems.get(sem.id)
            if other is not None and other is not sem:
                raise KernelError(f"{what}: semaphore id {sem.id} is already used by another "
                                  f"Semaphore in this kernel; use one object per id (or another id)")
            sem._owner = self
            self._sems[sem.id] = sem
        elif sem._owner is not self:
            raise KernelError(f"{what}: {sem!r} belongs to another kernel build; create semaphores "
                              f"inside the kernel (k.semaphore(id, n)) so each build starts at 0")

    def _sem_fields(self, what: str, sem: Semaphore | None, acquire: Any, release: Any) -> dict:
        if sem is None:
            if acquire not in (None, False) or release not in (None, False):
                raise KernelError(f"{what}: acquire/release need a semaphore: pass sem=Semaphore(...)")
            return {}
        self._own(sem, what)
        idx = len(self.instructions)
        acq = True if acquire is None else acquire
        rel = True if release is None else release

        def value(v: Any, which: str) -> int | None:
            if v is False:
                return None
            if v is True:
                return -1
            try:
                iv = operator.index(v)
            except TypeError:
                raise KernelError(f"{what}: {which} must be a bool or a value 0..{sem.n - 1}, "
                                  f"got {v!r}") from None
            if not 0 <= iv < sem.n:
                raise KernelError(f"{what}: {which} value {iv} is outside 0..{sem.n - 1} of "
                                  f"semaphore {sem.id} (n = {sem.n})")
            return iv

        av, rv = value(acq, "acquire"), value(rel, "release")
        out = {"sem_id": sem.id}
        if av is not None:
            if sem.holder is not None:
                raise KernelError(f"{what}: semaphore {sem.id} is still held by instruction "
                                  f"{sem.holder} (acquired without release), so this acquire would "
                                  f"wait forever; release it first (release=True on a later use of "
                                  f"the holder's engine) or use acquire=False here")
            av = sem.value if av == -1 else av
            out.update(acquire_valid=True, acquire_value=av)
        if rv is not None:
            if av is None and sem.holder is None:
                raise KernelError(f"{what}: releases semaphore {sem.id}, which no earlier "
                                  f"instruction holds; acquire it here (acquire=True) or in an "
                                  f"earlier instruction with release=False")
            base = av if av is not None else sem.value
            rv = (base + 1) % sem.n if rv == -1 else rv
            out.update(release_valid=True, release_value=rv)
            sem.value = rv
            sem.holder = None
        elif av is not None:
            sem.holder = idx
            sem.value = av
        return out

    # ------------------------------------------------------------ emission
    def emit(self, ins: Instruction) -> Instruction:
        """Append a raw instruction (no semaphore tracking)."""
        if not isinstance(ins, (Fence, Matrix, Dma)):
            raise KernelError(f"emit: not an instruction: {ins!r}")
        if self._stopped:
            raise KernelError(f"{self.name}: instruction {len(self.instructions)} follows "
                              f"fence(stop=True) and would never run; move the stop fence to the end")
        self.instructions.append(ins)
        return ins

    def _make(self, what: str, cls: type, fields_: dict) -> Instruction:
        try:
            ins = cls(**fields_)
        except ValueError as e:
            raise KernelError(f"{what}: {e}") from None
        return self.emit(ins)

    def _stride(self, what: str, field_: str, tile: SramTile) -> int:
        lo, hi = STRIDE_RANGE
        if not lo <= tile.stride <= hi:
            raise KernelError(f"{what}: {field_} = {tile.stride} (row step of {tile.label}) does not "
                              f"fit the ISA's 5-bit signed field ({lo}..{hi}); use a tile whose row "
                              f"step is within {lo}..{hi}")
        return tile.stride

    def _sram(self, what: str, arg: str, tile: Any, cls: type, rows: int | None, unit: str = "") -> SramTile:
        if not isinstance(tile, cls):
            raise KernelError(f"{what}: {arg} must be {_art(cls.KIND)} tile ({cls.__name__}, from "
                              f"alloc_{'spad' if cls is SpadTile else 'accumulator'}), got "
                              f"{type(tile).__name__} {getattr(tile, 'label', tile)!r}")
        if rows is not None and tile.rows != rows:
            raise KernelError(f"{what}: {arg} {tile.label} must be {unit} = {rows} "
                              f"row{'s' if rows != 1 else ''} of {tile.width} elements, got "
                              f"{tile.rows} rows")
        return tile

    def _dma(self, what: str, func: DmaFunc, sram: SramTile, mem: MemTile, sem_fields: dict) -> Dma:
        cfg = self.cfg
        acc = isinstance(sram, AccTile)
        if mem.fmt != sram.fmt:
            which = (f"the accumulator holds {cfg.a_type} (the config's accumulate format)" if acc
                     else f"the scratchpad holds {cfg.e_type} (the config's element format)")
            raise KernelError(f"{what}: memory tile {mem.label} is {mem.fmt} but {which}; allocate "
                              f"it with fmt={sram.fmt!r}")
        if mem.rows != sram.rows:
            raise KernelError(f"{what}: shape mismatch: memory tile {mem.label} has {mem.rows} rows "
                              f"but {sram.KIND} tile {sram.label} has {sram.rows}; use tiles of "
                              f"equal rows")
        if mem.cols != sram.width:
            raise KernelError(f"{what}: shape mismatch: memory tile {mem.label} rows have {mem.cols} "
                              f"elements but {_art(sram.KIND)} row holds {sram.width}; use a memory "
                              f"tile of shape ({mem.rows}, {sram.width})")
        if mem.rows > REPEAT_MAX:
            raise KernelError(f"{what}: {mem.rows} rows exceed the DMA repeat field (1..{REPEAT_MAX});"
                              f" split the tile into blocks of at most {REPEAT_MAX} rows")
        size = mem.row_bytes
        if size > SIZE_MAX:
            raise KernelError(f"{what}: DMA size = {size} bytes per row exceeds the ISA's 10-bit "
                              f"size field (1..{SIZE_MAX}); this config's {sram.KIND} rows are too "
                              f"wide for one DMA row (use a smaller array or element format)")
        align = cfg.mem_align
        if size % align:
            raise KernelError(f"{what}: DMA size = {size} bytes per row is not a multiple of the "
                              f"{align}-byte AXI beat (mem_align); this config's rows are too narrow "
                              f"for the DMA")
        if mem.addr % align or (mem.rows > 1 and mem.row_stride % align):
            raise KernelError(f"{what}: memory tile {mem.label} starts at 0x{mem.addr:x} with row "
                              f"stride {mem.row_stride}: both must be multiples of mem_align = {align}")
        lo, hi = MEM_STRIDE_RANGE
        ms = mem.row_stride if mem.rows > 1 else 0
        if not lo <= ms <= hi:
            raise KernelError(f"{what}: mem_stride = {ms} bytes (row stride of {mem.label}) does not "
                              f"fit the ISA's 21-bit signed field ({lo}..{hi}); use a tensor with "
                              f"shorter rows (e.g. store it transposed or split it)")
        stride = self._stride(what, "sram_stride", sram) if sram.rows > 1 else 0
        return self._make(what, Dma, dict(func=func, repeat=mem.rows, sram_addr=sram.first,
                                          sram_stride=stride, is_accum=acc, mem_addr=mem.addr,
                                          mem_stride=ms, size=size, **sem_fields))

    def load_tile(self, dst: SramTile, src: MemTile, sem: Semaphore | None = None, *,
                  acquire: Any = None, release: Any = None) -> Dma:
        """DMA LOAD: memory tile `src` -> scratchpad (or accumulator) tile `dst`.

        Raises:
            KernelError: swapped arguments, shape or format mismatch, a field
                that does not fit the ISA, semaphore misuse.
        """
        what = f"load_tile({getattr(dst, 'label', dst)} <- {getattr(src, 'label', src)})"
        if isinstance(dst, MemTile) and isinstance(src, SramTile):
            raise KernelError(f"{what}: load_tile(dst, src) copies memory -> SRAM; the arguments "
                              f"look swapped (for SRAM -> memory use store_tile)")
        if not isinstance(dst, SramTile):
            raise KernelError(f"{what}: dst must be a scratchpad or accumulator tile, got "
                              f"{type(dst).__name__}")
        if not isinstance(src, MemTile):
            raise KernelError(f"{what}: src must be a memory tile (from alloc_mem), got "
                              f"{type(src).__name__}")
        self._check_ready(what)
        return self._dma(what, DmaFunc.LOAD, dst, src, self._sem_fields(what, sem, acquire, release))

    def store_tile(self, dst: MemTile, src: AccTile, sem: Semaphore | None = None, *,
                   acquire: Any = None, release: Any = None) -> Dma:
        """DMA STORE: accumulator tile `src` -> memory tile `dst`.

        Raises:
            KernelError: as :meth:`load_tile`; `src` must be an accumulator tile.
        """
        what = f"store_tile({getattr(dst, 'label', dst)} <- {getattr(src, 'label', src)})"
        if isinstance(dst, SramTile) and isinstance(src, MemTile):
            raise KernelError(f"{what}: store_tile(dst, src) copies accumulator -> memory; the "
                              f"arguments look swapped")
        if not isinstance(dst, MemTile):
            raise KernelError(f"{what}: dst must be a memory tile (from alloc_mem), got "
                              f"{type(dst).__name__}")
        if not isinstance(src, AccTile):
            raise KernelError(f"{what}: src must be an accumulator tile (the DMA stores from the "
                              f"accumulator only), got {type(src).__name__}")
        self._check_ready(what)
        return self._dma(what, DmaFunc.STORE, src, dst, self._sem_fields(what, sem, acquire, release))

    def _check_ready(self, what: str) -> None:
        if self._stopped:
            raise KernelError(f"{what}: follows fence(stop=True) and would never run; move the stop "
                              f"fence to the end")

    def _mx(self, what: str, func: MxFunc, sem: Semaphore | None, acquire: Any, release: Any,
            **f: Any) -> Matrix:
        self._check_ready(what)
        return self._make(what, Matrix, dict(func=func, **f, **self._sem_fields(what, sem, acquire, release)))

    def mx_load_stationary(self, q: SpadTile, sem: Semaphore | None = None, *,
                           acquire: Any = None, release: Any = None) -> Matrix:
        """LOAD_STATIONARY: shift C scratchpad rows (one query each) into the
        array; read ``i`` lands in column ``C-1-i``. Pass the Q tile reversed
        (``q.reverse()``) so that column ``c`` holds query ``c``."""
        what = f"mx_load_stationary({getattr(q, 'label', q)})"
        t = self._sram(what, "the Q tile", q, SpadTile, self.C, "C")
        return self._mx(what, MxFunc.LOAD_STATIONARY, sem, acquire, release, spad_addr=t.first,
                        spad_stride=self._stride(what, "spad_stride", t))

    def mx_attn_score(self, k: SpadTile, l: AccTile, accumulate: bool = False,
                      sem: Semaphore | None = None, causal: bool = False, *,
                      acquire: Any = None, release: Any = None) -> Matrix:
        """ATTENTION_SCORE of one key block (R rows of K) against the stationary
        queries; updates the running max and the running sum in `l` (1 acc
        row). ``accumulate=False`` (first key block) reads l_old as 0;
        ``causal`` masks key k > query c (the diagonal block, R == C)."""
        what = f"mx_attn_score({getattr(k, 'label', k)})"
        kt = self._sram(what, "the K tile", k, SpadTile, self.R, "R")
        lt = self._sram(what, "the l tile", l, AccTile, 1, "one")
        if causal and self.R != self.C:
            raise KernelError(f"{what}: causal masking needs a square array (R == C), this config "
                              f"is {self.R}x{self.C}; use causal=False")
        return self._mx(what, MxFunc.ATTENTION_SCORE, sem, acquire, release, spad_addr=kt.first,
                        spad_stride=self._stride(what, "spad_stride", kt), rev_input=True,
                        rev_output=True, delay_output=True, acc_addr=lt.first,
                        zero=not accumulate, causal=bool(causal))

    def mx_attn_value(self, vt: SpadTile, o: AccTile, accumulate: bool = False,
                      sem: Semaphore | None = None, *, acquire: Any = None,
                      release: Any = None) -> Matrix:
        """ATTENTION_VALUE: O^T <- scale * O^T + P V for one key block (R rows
        of V transposed in the scratchpad, R rows of O^T in the accumulator)."""
        what = f"mx_attn_value({getattr(vt, 'label', vt)})"
        vtt = self._sram(what, "the V^T tile", vt, SpadTile, self.R, "R")
        ot = self._sram(what, "the O^T tile", o, AccTile, self.R, "R")
        return self._mx(what, MxFunc.ATTENTION_VALUE, sem, acquire, release, spad_addr=vtt.first,
                        spad_stride=self._stride(what, "spad_stride", vtt), rev_input=True,
                        delay_output=True, acc_addr=ot.first,
                        acc_stride=self._stride(what, "acc_stride", ot), zero=not accumulate)

    def mx_reciprocal(self, l: AccTile, sem: Semaphore | None = None, *, acquire: Any = None,
                      release: Any = None) -> Matrix:
        """ATTENTION_LSE_NORM_SCALE: scale <- 1 / l (1 acc row)."""
        what = f"mx_reciprocal({getattr(l, 'label', l)})"
        lt = self._sram(what, "the l tile", l, AccTile, 1, "one")
        return self._mx(what, MxFunc.ATTENTION_LSE_NORM_SCALE, sem, acquire, release,
                        acc_addr=lt.first)

    def mx_attn_lse_norm(self, o: AccTile, sem: Semaphore | None = None, *, acquire: Any = None,
                         release: Any = None) -> Matrix:
        """ATTENTION_LSE_NORM: O^T <- scale * O^T (R acc rows); resets the max."""
        what = f"mx_attn_lse_norm({getattr(o, 'label', o)})"
        ot = self._sram(what, "the O^T tile", o, AccTile, self.R, "R")
        return self._mx(what, MxFunc.ATTENTION_LSE_NORM, sem, acquire, release, acc_addr=ot.first,
                        acc_stride=self._stride(what, "acc_stride", ot))

    def fence(self, mx: bool = False, dma: bool = False, stop: bool = False) -> Fence:
        """Wait until the named engines are idle; ``stop`` ends the program."""
        what = f"fence(mx={mx}, dma={dma}, stop={stop})"
        if not (mx or dma or stop):
            raise KernelError(f"{what}: waits for nothing; set mx=True, dma=True or stop=True")
        self._check_ready(what)
        f = self._make(what, Fence, dict(mx=mx, dma=dma, stop=stop))
        if stop:
            self._stopped = True
        return f

    # ------------------------------------------------------------ build
    def build(self, outputs: Any = None, *, check: bool = True) -> Program:
        """Finish: mark `outputs` (a MemTile, or a tuple/list/dict of them),
        append ``Fence(mx, dma, stop)`` unless the kernel ended with a stop
        fence, and (with `check`) prove the program deadlock-free under the
        one-pending-per-engine dispatcher (:func:`check_dispatch`).

        Raises:
            KernelError: a semaphore still held, no instructions, a deadlock.
        """
        if outputs is not None:
            items = outputs.values() if isinstance(outputs, dict) else \
                outputs if isinstance(outputs, (tuple, list)) else [outputs]
            for t in items:
                self.output(t)
        for s in self._sems.values():
            if s.holder is not None:
                raise KernelError(f"{self.name}: semaphore {s.id} acquired by instruction {s.holder} "
                                  f"is never released; give a later use release=True")
        if not self._stopped:
            self.fence(mx=True, dma=True, stop=True)
        prog = Program(self.cfg, self.name, self.instructions, self._tensors, self._views, self.meta,
                       spad_rows=sum(r.rows for r in self._spad),
                       acc_rows=sum(r.rows for r in self._acc),
                       semaphores={i: s.value for i, s in self._sems.items()})
        if check:
            try:
                prog.check_dispatch()
            except KernelError as e:
                raise KernelError(f"{self.name}: {e}") from None
        return prog


# ------------------------------------------------------------------ @kernel
@dataclass(frozen=True)
class Input:
    """Declares one memory input of a :class:`KernelDef`: its shape, format
    (default the config's element format) and, optionally, a name."""

    shape: tuple[int, int]
    fmt: Any = None
    name: str | None = None


class KernelDef:
    """A reusable kernel: ``fn(k, *tiles, **params)`` -> output tile(s).

    :meth:`build` makes a fresh :class:`KernelBuilder`, allocates one input
    tensor per positional :class:`Input` (named after the function's
    parameters unless the Input names it), calls `fn`, marks what it returns
    as outputs and builds the :class:`Program`.
    """

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        params = list(inspect.signature(fn).parameters.values())
        if not params:
            raise KernelError(f"@kernel {self.name}: the function must take the builder as its "
                              f"first argument: def {self.name}(k, *tiles)")
        pos = [p for p in params[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._tile_params = [p.name for p in pos]
        self._required = sum(1 for p in pos if p.default is p.empty)

    def build(self, cfg: "FSAConfig | str", *inputs: "Input | tuple", check: bool = True,
              **params: Any) -> Program:
        """Build the program for `cfg`.

        Args:
            cfg: config or preset name.
            inputs: one :class:`Input` (or a ``(shape, fmt)`` / shape tuple)
                per tile parameter of the function.
            check: run the dispatcher deadlock check.
            params: keyword arguments passed to the function.

        Raises:
            KernelError: wrong number of inputs, or anything the kernel raises.
        """
        k = KernelBuilder(cfg, self.name)
        if not self._required <= len(inputs) <= len(self._tile_params):
            raise KernelError(f"{self.name}: takes {len(self._tile_params)} tiles "
                              f"({', '.join(self._tile_params)}), got {len(inputs)} inputs; pass "
                              f"one Input(shape, fmt) per tile")
        tiles = []
        for pname, spec in zip(self._tile_params, inputs):
            if not isinstance(spec, Input):
                if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], (tuple, list)):
                    spec = Input(tuple(spec[0]), spec[1])
                else:
                    spec = Input(tuple(spec))
            tiles.append(k.alloc_mem(spec.shape, spec.fmt, spec.name or pname, role="input"))
        out = self.fn(k, *tiles, **params)
        return k.build(out, check=check)

    __call__ = build

    def __repr__(self) -> str:
        return f"<kernel {self.name}({', '.join(self._tile_params)})>"


def kernel(fn: Callable[..., Any]) -> KernelDef:
    """Decorator: turn ``fn(k, *tiles, **params)`` into a :class:`KernelDef`."""
    return KernelDef(fn)
