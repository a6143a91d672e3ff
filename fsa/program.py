"""Programs of the kernel language (:mod:`fsa.kernel_lang`): the instructions a
:class:`~fsa.kernel_lang.KernelBuilder` emitted, the memory layout of their
tensors, input/output conversion.

* :class:`TensorInfo` / :class:`View` -- a tensor in the memory window, and
  another name for one seen transposed (e.g. "V" for the stored "Vt").
* :class:`Program` -- instructions (:mod:`fsa.isa`), tensors, views,
  ``meta`` (facts the kernel recorded, e.g. ``seq_q``) and ``settings`` (the
  setting registers of ``fsa.hw.regs`` the host writes before the start);
  converts a caller's arrays to the memory image
  (:meth:`Program.memory_image`), reads the outputs back from any memory
  (:meth:`Program.read_outputs`), and has a JSON form
  (:meth:`Program.to_json` / :meth:`Program.from_json`).
* :meth:`Program.check_dispatch` -- the dispatch check of
  :mod:`fsa.cycle.dispatch` (deadlocks, semaphore races) on this program.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.cycle.dispatch import check_dispatch
from fsa.hw.regs import SETTINGS, check_setting
from fsa.isa import Dma, Instruction, Matrix, decode, disassemble, encode
from fsa.tiles import KernelError, bits_dtype

__all__ = ["TensorInfo", "View", "Program", "memory_reader"]


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
        return bits_dtype(self.fmt)


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
        settings: setting register name (``fsa.hw.regs.SETTINGS``: scale_e,
            scale_a, key_limit) -> value, written by the host before the
            start (the golden engines apply them too); a register not named
            keeps its value (after a reset: ``fsa.hw.regs.setting_defaults``).
            Not part of the instruction words (``inst.bin``).

    Raises:
        KernelError: a setting that is not a register or a value the device
            would refuse.
    """

    def __init__(self, cfg: FSAConfig, name: str, instructions: Sequence[Instruction],
                 tensors: dict[str, TensorInfo], views: dict[str, View] | None = None,
                 meta: dict | None = None, spad_rows: int = 0, acc_rows: int = 0,
                 semaphores: dict[int, int] | None = None,
                 settings: dict[str, int] | None = None):
        self.cfg = cfg
        self.name = name
        self.instructions = tuple(instructions)
        self.tensors = dict(tensors)
        self.views = dict(views or {})
        self.meta = dict(meta or {})
        self.spad_rows, self.acc_rows = spad_rows, acc_rows
        self.semaphores = dict(semaphores or {})
        self.settings: dict[str, int] = {}
        for k, v in dict(settings or {}).items():
            if k not in SETTINGS:
                raise KernelError(f"{name}: {k!r} is not a setting register; settings: "
                                  f"{', '.join(SETTINGS)}")
            try:
                self.settings[k] = check_setting(cfg, k, v)
            except ValueError as e:
                raise KernelError(f"{name}: {e}") from None

    # ------------------------------------------------------------ JSON form
    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON values: the config (:meth:`FSAConfig.to_dict`),
        name, the instruction words, tensors, views, meta, SRAM rows,
        semaphores and settings.

        Raises:
            KernelError: a ``meta`` value that is not a JSON value.
        """
        try:
            meta = json.loads(json.dumps(self.meta))
        except (TypeError, ValueError) as e:
            raise KernelError(f"{self.name}: meta is not JSON-serialisable: {e}") from None
        return {"cfg": self.cfg.to_dict(), "name": self.name, "words": self.words(),
                "tensors": {n: asdict(t) for n, t in self.tensors.items()},
                "views": {n: asdict(v) for n, v in self.views.items()}, "meta": meta,
                "spad_rows": self.spad_rows, "acc_rows": self.acc_rows,
                "semaphores": {str(i): v for i, v in self.semaphores.items()},
                "settings": dict(self.settings)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Program":
        """The program :meth:`to_dict` described (``settings`` optional)."""
        cfg = FSAConfig.from_dict(d["cfg"])
        tensors = {n: TensorInfo(**{**t, "shape": tuple(t["shape"])})
                   for n, t in d["tensors"].items()}
        views = {n: View(**v) for n, v in d.get("views", {}).items()}
        return cls(cfg, d["name"], decode(d["words"]), tensors, views, d.get("meta", {}),
                   d.get("spad_rows", 0), d.get("acc_rows", 0),
                   {int(i): v for i, v in d.get("semaphores", {}).items()},
                   d.get("settings", {}))

    def to_json(self, path: "str | None" = None) -> str:
        """The JSON text of :meth:`to_dict` (also written to `path` if given)."""
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, text_or_path: str) -> "Program":
        """A program from :meth:`to_json` text or a file holding it."""
        s = str(text_or_path)
        if not s.lstrip().startswith("{"):
            with open(s) as f:
                s = f.read()
        return cls.from_dict(json.loads(s))

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
    def check_dispatch(self, modes: Iterable[str] | None = None) -> int:
        """:func:`fsa.cycle.dispatch.check_dispatch` on this program's
        instructions and config."""
        return check_dispatch(self.cfg, self.instructions, modes)
