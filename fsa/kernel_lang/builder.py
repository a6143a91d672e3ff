"""The kernel language's builder: :class:`KernelBuilder` (memory layout,
SRAM rows, semaphores and the instructions a kernel emits, built into a
:class:`~fsa.program.Program`), :class:`Semaphore`, and the ISA's field
limits the builder checks (from fsa/hw/isa.py).  :mod:`fsa.kernel_lang`
describes the language.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from fsa import config as fconfig
from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.hw import isa as _hwisa
from fsa.isa import Dma, DmaFunc, Fence, Instruction, Matrix, MxFunc
from fsa.program import Program, TensorInfo, View
from fsa.tiles import (AccTile, KernelError, MemTile, SpadTile, SramTile, format_name,
                       with_article)

__all__ = ["Semaphore", "KernelBuilder", "STRIDE_RANGE", "MEM_STRIDE_RANGE", "SIZE_MAX",
           "REPEAT_MAX", "SEM_IDS", "SEM_VALUES"]

# field ranges from the ISA field table (fsa/hw/isa.py)
STRIDE_RANGE = _hwisa.field("MATRIX", "spad_stride").range     # spad / acc / sram row stride
MEM_STRIDE_RANGE = _hwisa.field("DMA", "mem_stride").range     # signed byte stride
SIZE_MAX = _hwisa.field("DMA", "size").range[1]                # DMA bytes per row
REPEAT_MAX = _hwisa.field("DMA", "repeat").range[1]            # DMA rows
SEM_IDS = _hwisa.SEM_IDS
SEM_VALUES = 1 << _hwisa.SEM_VALUE_BITS


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
        kernel may fill, copied into the Program), settings (setting
        registers for the host to write, ``Program.settings``).
    """

    def __init__(self, cfg: "FSAConfig | str", name: str = "kernel"):
        if not isinstance(cfg, (str, FSAConfig)):
            raise KernelError(f"KernelBuilder: cfg must be a preset name or an FSAConfig, got "
                              f"{type(cfg).__name__} {cfg!r}")
        self.cfg = fconfig.get(cfg)
        self.name = name
        self.R, self.C = self.cfg.sa_rows, self.cfg.sa_cols
        self.instructions: list[Instruction] = []
        self.meta: dict = {}
        self.settings: dict[str, int] = {}
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
        if name is None:            # the first free default name
            n = len(self._tensors)
            while f"t{n}" in self._tensors or f"t{n}" in self._views:
                n += 1
            name = f"t{n}"
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
        f = format_name(fmt, self.cfg, what)
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
                raise KernelError(f"{what}: {with_article(cls.KIND)} row holds {unit} = {width} elements; "
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
        if (tile.addr, tile.shape, tile.fmt, tile.row_stride) != (t.addr, t.shape, t.fmt,
                                                                  t.row_stride):
            raise KernelError(f"output(): {tile.label} is not this kernel's whole tensor {t.name!r} "
                              f"{t.shape} (a part of it, or a tensor of another kernel build)")
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

    def _with_sem(self, what: str, sem: "Semaphore | None", acquire: Any, release: Any, make):
        """`make(semaphore fields)`; a refused instruction (KernelError from
        its checks) leaves the semaphore's tracked value and holder as they were."""
        saved = (sem.value, sem.holder) if isinstance(sem, Semaphore) else None
        try:
            return make(self._sem_fields(what, sem, acquire, release))
        except Exception:
            if saved is not None:
                sem.value, sem.holder = saved
            raise

    # ------------------------------------------------------------ emission
    def emit(self, ins: Instruction) -> Instruction:
        """Append a raw instruction (no semaphore tracking)."""
        if not isinstance(ins, (Fence, Matrix, Dma)):
            raise KernelError(f"emit: not an instruction: {ins!r}")
        if self._stopped:
            raise KernelError(f"{self.name}: instruction {len(self.instructions)} follows "
                              f"fence(stop=True) and would never run; move the stop fence to the end")
        self.instructions.append(ins)
        if isinstance(ins, Fence) and ins.stop:
            self._stopped = True        # as fence(stop=True): nothing may follow
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

    def _sram_owned(self, what: str, tile: SramTile) -> None:
        """`tile`'s rows lie in this kernel's allocations (a tile of another
        build or config would address rows this kernel never allocated)."""
        spad = isinstance(tile, SpadTile)
        regions = self._spad if spad else self._acc
        want = (self.R, self.cfg.e_type) if spad else (self.C, self.cfg.a_type)
        if (tile.width, tile.fmt) != want:
            raise KernelError(f"{what}: {tile.KIND} tile {tile.label} has rows of {tile.width} "
                              f"{tile.fmt}, this config's of {want[0]} {want[1]} (a tile of "
                              f"another config?); allocate tiles with this builder")
        used = sum(g.rows for g in regions)     # allocations are contiguous from row 0
        last = tile.first + (tile.rows - 1) * tile.stride
        for r in (tile.first, last):
            if not 0 <= r < used:
                raise KernelError(f"{what}: {tile.KIND} tile {tile.label} reaches row {r}, which "
                                  f"this kernel did not allocate (a tile of another kernel build "
                                  f"or config?); allocate tiles with this builder")

    def _mem_owned(self, what: str, tile: MemTile) -> None:
        """`tile` is a view of a tensor this kernel allocated (same name,
        format, and inside its bytes)."""
        t = self._tensors.get(tile.tensor)
        inside = t is not None and tile.fmt == t.fmt and tile.rows >= 1 and all(
            t.addr <= a and a + tile.row_bytes <= t.addr + t.shape[0] * t.row_stride
            for a in (tile.addr, tile.addr + (tile.rows - 1) * tile.row_stride))
        if not inside:
            raise KernelError(f"{what}: memory tile {tile.label} is not a view of a tensor this "
                              f"kernel allocated (a tile of another kernel build?); allocate it "
                              f"with this builder's alloc_mem")

    def _sram(self, what: str, arg: str, tile: Any, cls: type, rows: int | None, unit: str = "") -> SramTile:
        if not isinstance(tile, cls):
            raise KernelError(f"{what}: {arg} must be {with_article(cls.KIND)} tile ({cls.__name__}, from "
                              f"alloc_{'spad' if cls is SpadTile else 'accumulator'}), got "
                              f"{type(tile).__name__} {getattr(tile, 'label', tile)!r}")
        self._sram_owned(what, tile)
        if rows is not None and tile.rows != rows:
            raise KernelError(f"{what}: {arg} {tile.label} must be {unit} = {rows} "
                              f"row{'s' if rows != 1 else ''} of {tile.width} elements, got "
                              f"{tile.rows} rows")
        return tile

    def _dma(self, what: str, func: DmaFunc, sram: SramTile, mem: MemTile, sem_fields: dict) -> Dma:
        cfg = self.cfg
        acc = isinstance(sram, AccTile)
        self._sram_owned(what, sram)
        self._mem_owned(what, mem)
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
                              f"elements but {with_article(sram.KIND)} row holds {sram.width}; use a memory "
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
        return self._with_sem(what, sem, acquire, release,
                              lambda f: self._dma(what, DmaFunc.LOAD, dst, src, f))

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
        return self._with_sem(what, sem, acquire, release,
                              lambda f: self._dma(what, DmaFunc.STORE, src, dst, f))

    def _check_ready(self, what: str) -> None:
        if self._stopped:
            raise KernelError(f"{what}: follows fence(stop=True) and would never run; move the stop "
                              f"fence to the end")

    def _mx(self, what: str, func: MxFunc, sem: Semaphore | None, acquire: Any, release: Any,
            **f: Any) -> Matrix:
        self._check_ready(what)
        return self._with_sem(what, sem, acquire, release,
                              lambda sf: self._make(what, Matrix, dict(func=func, **f, **sf)))

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
                      acquire: Any = None, release: Any = None,
                      mask_keys: bool = False) -> Matrix:
        """ATTENTION_SCORE of one key block (R rows of K) against the stationary
        queries; updates the running max and the running sum in `l` (1 acc
        row). ``accumulate=False`` (first key block) reads l_old as 0;
        ``causal`` masks key k > query c (the diagonal block, R == C);
        ``mask_keys`` masks keys k >= the ``key_limit`` setting."""
        what = f"mx_attn_score({getattr(k, 'label', k)})"
        kt = self._sram(what, "the K tile", k, SpadTile, self.R, "R")
        lt = self._sram(what, "the l tile", l, AccTile, 1, "one")
        if causal and self.R != self.C:
            raise KernelError(f"{what}: causal masking needs a square array (R == C), this config "
                              f"is {self.R}x{self.C}; use causal=False")
        return self._mx(what, MxFunc.ATTENTION_SCORE, sem, acquire, release, spad_addr=kt.first,
                        spad_stride=self._stride(what, "spad_stride", kt), rev_input=True,
                        rev_output=True, delay_output=True, acc_addr=lt.first,
                        zero=not accumulate, causal=bool(causal), mask_keys=bool(mask_keys))

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
        fence, and (with `check`) prove it free of deadlocks and semaphore
        races in the cycle model's dispatcher (:func:`check_dispatch`).

        Raises:
            KernelError: a semaphore still held, a deadlock, a race.
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
                       semaphores={i: s.value for i, s in self._sems.items()},
                       settings=self.settings)
        if check:
            try:
                prog.check_dispatch()
            except KernelError as e:
                raise KernelError(f"{self.name}: {e}") from None
        return prog
