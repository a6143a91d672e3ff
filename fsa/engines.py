"""Engines run a :class:`~fsa.kernel_lang.Program` and return a :class:`Result`.

:class:`Engine` does everything that does not depend on what executes the
program: it checks the config, converts the caller's inputs (floats are
rounded to each tensor's format, raw bits are checked), lays them out as a
memory image, and reads the outputs back. A subclass implements only
:meth:`Engine.execute`: take the instruction words and the memory image,
run, and return an :class:`Execution` (a memory reader, counters, cycles).

* :class:`GoldenEngine` -- the bit-exact golden model: attention programs
  built by :func:`fsa.kernels.attention` (``meta["kind"] == "attention"``,
  one head or several) run on the vectorised model
  :func:`fsa.golden.fast.attention` (all heads at once, on its heads axis), anything
  else (or with ``machine=True``) on the instruction-level model
  (:class:`fsa.golden.machine.Machine`); both give the same bits and apply
  the program's ``settings`` (the setting registers) as the host would. No cycle
  count (``fsa run --sim golden`` takes its cycles from :mod:`fsa.cycle.model`).
* :class:`SimEngine` -- the RTL (``fsa_top``) in Verilator or Icarus, driven
  over AXI by cocotb (:func:`fsa.simdev.run_on_device`, ``fsa/harness/tb_top.py``):
  ``execute`` loads the image into the AXI RAM, writes the program's
  ``settings`` registers, places the program in memory and starts the device
  in fetch mode (it reads the words itself; with ``push=True`` the words are
  pushed into the instruction queue instead, what does not fit during the
  run),
  waits for done (or error: :class:`DeviceError`), dumps the program's output
  regions and returns them with the device counters (``exec`` = cycles,
  ``bubble``, ``mx_active`` ...).

A :class:`Result` derives FLOPs and utilisation from the program's ``meta``
with the one definition in :mod:`fsa.kernels` (:func:`fsa.kernels.attention_flops`:
useful FLOPs, ``4 d`` per (query, key) pair the causal mask keeps).

Example::

    >>> import numpy as np
    >>> from fsa import config
    >>> from fsa.kernels import attention
    >>> from fsa.engines import GoldenEngine
    >>> cfg = config.get("FSA4X4Fp16Config")
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    >>> res = GoldenEngine(cfg).run(attention(cfg, 8, 8), {"Q": q, "K": k, "V": v})
    >>> res.o.shape
    (8, 4)
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from fsa import config as fconfig
from fsa import kernels
from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.fastmem import MEMORIES
from fsa.golden import fast
from fsa.golden.machine import Machine
from fsa.hw.regs import setting_defaults
from fsa.isa import Dma, Fence, Matrix, MxFunc
from fsa.kernel_lang import KernelError, Program, memory_reader
from fsa.kernels import attention_signature
from fsa.simdev import run_on_device

__all__ = ["Result", "Execution", "Engine", "GoldenEngine", "SimEngine", "DeviceError"]


@dataclass
class Execution:
    """What :meth:`Engine.execute` returns.

    Attributes:
        read: ``read(addr, n) -> bytes`` over the memory after the run.
        counters: device or model counters (name -> int).
        cycles: execution cycles, or None for an untimed model.
    """

    read: Callable[[int, int], bytes]
    counters: dict[str, int] = field(default_factory=dict)
    cycles: int | None = None

    @classmethod
    def from_segments(cls, segments: "list[tuple[int, bytes]] | dict[int, bytes]",
                      counters: dict[str, int] | None = None,
                      cycles: int | None = None) -> "Execution":
        """An Execution whose memory is (address, bytes) segments, e.g. the
        regions dumped from a device (see Program.output_regions)."""
        return cls(memory_reader(segments), dict(counters or {}), cycles)


@dataclass
class Result:
    """The outcome of one run.

    Attributes:
        program: the program that ran.
        outputs: name -> raw bits (numpy uint16/uint32), every output tensor
            in stored orientation and every view of one (e.g. "Ot" and "O").
        counters: engine counters.
        cycles: execution cycles (None when the engine is untimed).
    """

    program: Program
    outputs: dict[str, np.ndarray]
    counters: dict[str, int] = field(default_factory=dict)
    cycles: int | None = None

    @property
    def o(self) -> np.ndarray | None:
        """The attention output O [seq_q, d] as float64 (None if the program
        has no "O" output)."""
        if "O" not in self.outputs:
            return None
        base = self.program.views["O"].base if "O" in self.program.views else "O"
        return nx.to_float64(self.outputs["O"], self.program.tensors[base].fmt)

    def as_float(self, name: str) -> np.ndarray:
        """An output (or view) decoded to float64."""
        base = self.program.views[name].base if name in self.program.views else name
        return nx.to_float64(self.outputs[name], self.program.tensors[base].fmt)

    @property
    def instruction_counts(self) -> dict[str, int]:
        """The program's instruction counts (see Program.counts)."""
        return self.program.counts()

    @property
    def flops(self) -> int | None:
        """Useful attention FLOPs (:func:`fsa.kernels.attention_flops`:
        ``4 seq_q seq_kv d``, only the unmasked pairs when causal, times the
        program's heads); None for a program that is not attention."""
        m = self.program.meta
        if m.get("kind") != "attention":
            return None
        return m.get("heads", 1) * kernels.attention_flops(m["seq_q"], m["seq_kv"], m["d"],
                                                           m["causal"])

    @property
    def utilisation(self) -> float | None:
        """:attr:`flops` / (cycles * 2 * R * C): the fraction of the array's
        peak (:func:`fsa.kernels.utilisation`); None when untimed."""
        if self.cycles is None or self.flops is None or self.cycles <= 0:
            return None
        cfg = self.program.cfg
        return kernels.utilisation(self.flops, self.cycles, cfg.sa_rows, cfg.sa_cols)

    @property
    def cycles_per_key_block(self) -> float | None:
        """Cycles per (query block, key block) step of the kernel (all heads)."""
        n = self.program.meta.get("key_blocks")
        if self.cycles is None or not n:
            return None
        return self.cycles / n

    def summary(self) -> dict[str, Any]:
        """The derived figures as a plain dict (for JSON records)."""
        return {"program": self.program.name, "config": self.program.cfg.name,
                "meta": {k: v for k, v in self.program.meta.items() if k != "buffers"},
                "cycles": self.cycles, "flops": self.flops, "utilisation": self.utilisation,
                "cycles_per_key_block": self.cycles_per_key_block,
                "counters": dict(self.counters), "instructions": self.instruction_counts}


class Engine:
    """Base class: prepares inputs and parses outputs around :meth:`execute`.

    Args:
        cfg: the config the engine runs (a program built for another config
            is refused).
    """

    name = "engine"

    def __init__(self, cfg: "FSAConfig | str"):
        self.cfg = fconfig.get(cfg)

    def run(self, program: Program, inputs: dict[str, Any]) -> Result:
        """Run `program` on `inputs` (name -> float array or raw bits; views
        such as "V" accepted).

        Raises:
            KernelError: a program for another config, missing/unknown inputs,
                wrong shapes or bit widths (the message says what to change).
        """
        if not isinstance(program, Program):
            raise TypeError(f"{self.name}.run: expected a fsa.kernel_lang.Program, got "
                            f"{type(program).__name__}")
        if program.cfg != self.cfg:
            raise KernelError(f"{self.name}.run: the program was built for {program.cfg.name} but "
                              f"this engine runs {self.cfg.name}; rebuild it for {self.cfg.name}")
        image = self.prepare(program, inputs)
        ex = self.execute(program, self.words_for(program), image)
        return Result(program, program.read_outputs(ex.read), dict(ex.counters), ex.cycles)

    def prepare(self, program: Program, inputs: dict[str, Any]) -> list[tuple[int, bytes]]:
        """The memory image (address, bytes) segments holding the inputs."""
        return program.memory_image(inputs)

    def words_for(self, program: Program) -> list[int]:
        """The words :meth:`execute` is given: the encoded program."""
        return program.words()

    def execute(self, program: Program, words: list[int],
                image: list[tuple[int, bytes]]) -> Execution:
        """Run the words against the memory image. Subclasses implement this."""
        raise NotImplementedError


class GoldenEngine(Engine):
    """The golden model (bit-exact, untimed).

    Args:
        cfg: the config.
        progress: optional callable(str), told how far a long run is.
        machine: always use the instruction-level model, also for attention
            programs (the fast path is then not used).
        ticks: optional callable(done, total): the same progress as numbers
            (key-block steps of the vectorised model, instructions of the
            instruction-level one), e.g. a :mod:`fsa.progress` bar.
        built: the caller vouches that every program it runs comes straight
            from :func:`fsa.kernels.attention` and was not changed since
            (:func:`fsa.api.prepare` builds it and runs it): the fast path's
            signature, computed there from the program, is not computed
            again (that encodes the whole program); the other conditions of
            :meth:`fast_path_applies` are still checked.

    Attributes:
        last_path: "fast" or "machine": which model the last run used.
    """

    name = "golden"

    def __init__(self, cfg: "FSAConfig | str", progress=None, machine: bool = False,
                 ticks=None, built: bool = False):
        super().__init__(cfg)
        self.progress, self.ticks, self.built = progress, ticks, bool(built)
        self.machine = bool(machine)
        self.last_path: str | None = None

    def words_for(self, program: Program) -> list[int]:
        """No words: both models run ``program.instructions`` (the decoded
        form), so the program is not encoded (that costs more than the
        vectorised model itself)."""
        return []

    @staticmethod
    def fast_path_applies(program: Program, built: bool = False) -> bool:
        """True for a program of :func:`fsa.kernels.attention` (one head or
        several), which :func:`fsa.golden.fast.attention` models: its
        ``meta["fast_signature"]`` must match the program as it is (the words,
        config, memory layout and meta facts it was built with), so a user's
        kernel that merely records attention facts in its meta, or a program
        changed after the build, runs on the instruction-level model.
        (`built`: the program is known to be unchanged since the build, see
        the engine's argument: a signature is required but not recomputed.)"""
        m, t, R = program.meta, program.tensors, program.cfg.sa_rows
        if m.get("kind") != "attention" or not all(n in t for n in ("Q", "K", "Vt", "Ot")):
            return False
        if "fast_signature" not in m or (
                not built and m["fast_signature"] != attention_signature(program)):
            return False
        sq, skv, h = m.get("seq_q"), m.get("seq_kv"), m.get("heads", 1)
        kv_map = tuple(m.get("kv_map", range(h)))
        g = m.get("kv_heads", h)
        return (len(kv_map) == h and all(0 <= x < g for x in kv_map)
                and t["Q"].shape == (h * sq, R) and t["K"].shape == (g * skv, R)
                and t["Vt"].shape == (R, g * skv) and t["Ot"].shape == (R, h * sq)
                and GoldenEngine._mask_keys_on_last_blocks(program))

    @staticmethod
    def _mask_keys_on_last_blocks(program: Program) -> bool:
        """The fast model masks keys (``mask_keys``) exactly on the scores of
        the last key block: True if the program's ATTENTION_SCOREs (in the
        kernel's (query block, key block) order, head after head) set the
        flag there and only there, or nowhere."""
        flags = [i.mask_keys for i in program.instructions
                 if isinstance(i, Matrix) and i.func == MxFunc.ATTENTION_SCORE]
        if not any(flags):
            return True
        m, cfg = program.meta, program.cfg
        n_qb, n_kb = m["seq_q"] // cfg.sa_cols, m["seq_kv"] // cfg.sa_rows
        js = [j for i in range(n_qb)
              for j in range((min(i, n_kb - 1) if m.get("causal") else n_kb - 1) + 1)]
        js *= m.get("heads", 1)
        return len(js) == len(flags) and all(f == (j == n_kb - 1) for f, j in zip(flags, js))

    def execute(self, program: Program, words: list[int],
                image: list[tuple[int, bytes]]) -> Execution:
        if not self.machine and self.fast_path_applies(program, self.built):
            return self._execute_fast(program, image)
        self.last_path = "machine"
        m = Machine(self.cfg)
        for name, value in program.settings.items():     # the host's writes before the start
            m.write_setting(name, value)
        for addr, b in image:
            m.mem.write(addr, b)
        tick = self._tick("instructions")
        counters = m.run(list(program.instructions), progress=tick)
        return Execution(m.mem.read, counters, None)

    def _tick(self, what: str):
        """The progress callback(done, total) of a run: the message to
        `progress`, the numbers to `ticks` (None when neither is set)."""
        say, ticks = self.progress, self.ticks
        if say is None and ticks is None:
            return None

        def tick(done: int, total: int) -> None:
            if say is not None:
                say(f"golden model: {done}/{total} {what} ({100 * done / max(total, 1):.0f}%)")
            if ticks is not None:
                ticks(done, total)
        return tick

    def _execute_fast(self, program: Program, image: list[tuple[int, bytes]]) -> Execution:
        """The vectorised attention model: Q, K, Vt read from the image, Ot
        written to a memory of its own (the machine's counters: the program
        runs to its stop fence)."""
        self.last_path = "fast"
        read = memory_reader(image)

        def tensor(name: str) -> np.ndarray:
            t = program.tensors[name]
            raw = np.frombuffer(read(t.addr, t.nbytes), np.uint8).reshape(t.shape[0], t.row_stride)
            return raw[:, :t.row_bytes].copy().view(t.dtype)

        tick = self._tick("key-block steps")
        m = program.meta
        R, sq, skv, h = self.cfg.sa_rows, m["seq_q"], m["seq_kv"], m.get("heads", 1)
        kv_map = list(m.get("kv_map", range(h)))
        # heads on a leading axis (each computed exactly as alone); query head
        # i reads kv head kv_map[i], as the program's DMA addresses do
        q = tensor("Q").reshape(h, sq, R)
        k = tensor("K").reshape(-1, skv, R)[kv_map]
        v = tensor("Vt").T.reshape(-1, skv, R)[kv_map]
        st = dict(setting_defaults(self.cfg), **program.settings)
        masks = any(isinstance(i, Matrix) and i.mask_keys for i in program.instructions)
        o = fast.attention(self.cfg, q, k, v, causal=m["causal"], progress=tick,
                           scale_bits=(st["scale_e"], st["scale_a"]),
                           key_limit=st["key_limit"] if masks else None)
        o = o.reshape(h * sq, R)
        t = program.tensors["Ot"]
        buf = np.zeros((t.shape[0], t.row_stride), np.uint8)
        buf[:, :t.row_bytes] = np.ascontiguousarray(o.T).view(np.uint8).reshape(t.shape[0], -1)
        ins = program.instructions
        counters = {"matrix": sum(isinstance(i, Matrix) for i in ins),
                    "dma": sum(isinstance(i, Dma) for i in ins),
                    "fence": sum(isinstance(i, Fence) for i in ins)}
        return Execution.from_segments([(t.addr, buf.tobytes())], counters, None)


class DeviceError(RuntimeError):
    """The device ended in its error state (or did not finish)."""

    def __init__(self, message: str, status: dict):
        super().__init__(message)
        self.status = status


class SimEngine(Engine):
    """The RTL device (``fsa_top``) in an HDL simulator, driven over AXI by
    cocotb (``fsa/harness/tb_top.py``): the memory image goes into the AXI RAM, the
    program too (program fetch; or, with `push`, the words go through the
    control port); the outputs are read back from memory.

    Args:
        cfg: the config (Verilog generated and the simulator built on first
            use, then reused by content hash under ``sims/``).
        sim: "verilator" or "icarus".
        max_cycles: cycle limit of a run (the device must finish by then).
        pauses: probability of random pauses on every AXI channel.
        progress: callable(str) for progress messages (default: none).
        waves: dump waveforms (FST / VCD) into the run folder.
        push: push the words over the control port (the reference's way)
            instead of program fetch (the default: the program is placed at
            :func:`fsa.cycle.fetch.program_address` and the device reads it).
        memory: "axi" (default): cocotbext-axi memories on the device's
            ports; "fast": the memory inside the simulation (fsa/fastmem.py,
            Verilator only, no pauses): the same bits and cycles, faster on
            long runs.
        keep: keep the run folder (log, results, waves; ``last_run["run_dir"]``)
            after a successful run; False removes it then
            (``last_run["run_dir_kept"]`` says which).  A run that ends in
            the error state keeps it and names it in the DeviceError.
    """

    name = "sim"
    SIMS = ("verilator", "icarus")

    def __init__(self, cfg: "FSAConfig | str", sim: str = "verilator", max_cycles: int = 5_000_000,
                 pauses: float = 0.0, progress=None, waves: bool = False, seed: int = 1,
                 push: bool = False, memory: str = "axi", keep: bool = True):
        super().__init__(cfg)
        if sim not in self.SIMS:
            raise ValueError(f"SimEngine: sim must be one of {self.SIMS}, got {sim!r}")
        if memory not in MEMORIES:
            raise ValueError(f"SimEngine: memory must be one of {MEMORIES}, got {memory!r}")
        self.sim, self.max_cycles, self.pauses = sim, max_cycles, pauses
        self.progress, self.waves, self.seed = progress, waves, seed
        self.push, self.memory, self.keep = push, memory, keep
        self.last_run: dict | None = None

    def execute(self, program: Program, words: list[int],
                image: list[tuple[int, bytes]]) -> Execution:

        old = os.environ.get("WAVES")
        if self.waves:
            os.environ["WAVES"] = "1"
        try:
            regions = program.output_regions()
            res = run_on_device(self.cfg, words, image, regions, sim=self.sim,
                                max_cycles=self.max_cycles, pauses=self.pauses, seed=self.seed,
                                progress=self.progress, settings=program.settings,
                                fetch=not self.push, mem_model=self.memory)
        finally:
            if self.waves:
                if old is None:
                    os.environ.pop("WAVES", None)
                else:
                    os.environ["WAVES"] = old
        self.last_run = res
        run = res["runs"][-1]
        if run["state"] != "done":
            raise DeviceError(f"the device ended in state {run['state']} with error {run['error']} "
                              f"at instruction {run['error_index']} (run folder {res['run_dir']})", run)
        res["run_dir_kept"] = self.keep
        if not self.keep:
            shutil.rmtree(res["run_dir"], ignore_errors=True)
        counters = dict(run["counters"])
        segments = [(a, d) for (a, _), d in zip(regions, res["dumps"])]
        return Execution.from_segments(segments, counters, counters["exec"])
