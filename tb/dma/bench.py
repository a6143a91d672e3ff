"""The DMA bench's driver and checker (:class:`Bench`, used by
tb/dma/tb_dma.py): the memory (:class:`fsa.harness.axi_faults.FaultyAxiRam`
on every ``m_axi*`` port, one shared sparse memory and fault list), the
SRAM models and AXI monitors of tb/dma/models.py, one coroutine that drives
at the falling edge and samples in ``ReadOnly`` every cycle, and the
comparison with ``fsa.golden.machine.Machine.dma`` run from the same
initial state.  Every wait has a cycle limit and names what it waited for."""
from __future__ import annotations

import json
import logging
import os
import random

import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus

from fsa.config import FSAConfig
from fsa.golden.machine import Machine, MachineError, Memory
from fsa.harness.axi_faults import FaultList, FaultyAxiRam
from fsa.isa import Dma, DmaFunc
from rtl import fsa_dma
from tb.dma.models import AxiMonitor, Burst, SramModel, expected_bursts
from tb.dma.scenarios import LOW


#: the size of the AXI memory models' one shared memory (the window maps onto it)
RAM_SIZE = 1 << 20
#: how many problems a failure message lists
SHOW = 12


def bench_seed() -> int:
    return int(os.environ.get("COCOTB_RANDOM_SEED", "1"))


def bench_params() -> dict:
    return json.loads(os.environ["FSA_DMA_PARAMS"])


def bench_config() -> FSAConfig:
    return FSAConfig.from_dict(bench_params()["config"])


class Bench:
    def __init__(self, dut, cfg: FSAConfig, rng: random.Random, stalls: float = 0.0):
        self.dut, self.cfg, self.rng = dut, cfg, rng
        self.bb = cfg.axi_data_bits // 8
        self.prefixes = fsa_dma.axi_prefixes(cfg)
        self.rams: list[FaultyAxiRam] = []
        self.faults = FaultList()
        mem = None
        for pre in self.prefixes:
            ram = FaultyAxiRam(AxiBus.from_prefix(dut, pre), dut.clk, dut.rst, size=RAM_SIZE,
                               mem=mem, faults=self.faults)
            mem = ram.mem
            for lg in (ram.write_if.log, ram.read_if.log):
                lg.setLevel(logging.WARNING)
            self.rams.append(ram)
        self.ram = self.rams[0]
        g = fsa_dma.geometry(cfg)
        self.spad = SramModel(dut, "spad", cfg.spad_rows, cfg.spad_row_bytes, self.bb, rng,
                              cfg.spad_banks if g["spad_bp"] else 1)
        self.acc = SramModel(dut, "acc", cfg.acc_rows, cfg.acc_row_bytes, self.bb, rng,
                             cfg.acc_banks if g["acc_bp"] else 1)
        self.mons = [AxiMonitor(dut, pre, cfg) for pre in self.prefixes]
        self.set_stalls(stalls)
        self.cyc = 0
        self.queue: list[Dma] = []
        self.pending: Dma | None = None
        self.accepted = 0
        self.dones = 0
        self.errors: list[str] = []
        self.done_cycles: list[int] = []
        self.accept_cycles: list[int] = []

    # ---- setup
    def set_stalls(self, p: float) -> None:
        """Random pauses with probability `p` on every AXI channel of every
        port and on both SRAM ports (0: none)."""
        for s in (self.spad, self.acc):
            s.stall_p = p
        for k, ram in enumerate(self.rams):
            chans = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                     ram.read_if.ar_channel, ram.read_if.r_channel)
            for j, ch in enumerate(chans):
                if p > 0:
                    r = random.Random(f"pause-{bench_seed()}-{k}-{j}-{p}")
                    ch.set_pause_generator(pause_stream(r, p))
                else:
                    # (clearing the generator leaves the channel's last pause
                    # value: a channel paused then would stay paused)
                    ch.clear_pause_generator()
                    ch.pause = False

    def window(self, off: int) -> int:
        """Address of window offset `off` (negative: from the window's end)."""
        cfg = self.cfg
        return cfg.mem_base + (off if off >= 0 else cfg.mem_size + off)

    def randomize(self) -> None:
        """Random SRAM contents and random bytes in the two memory regions."""
        self.spad.randomize()
        self.acc.randomize()
        for lo, hi in self.regions():
            self.ram.write(lo % RAM_SIZE, bytes(self.rng.getrandbits(8) for _ in range(hi - lo)))

    def regions(self) -> list[tuple[int, int]]:
        return [(self.window(LOW[0]), self.window(LOW[1])), (self.window(-0x1000),
                                                             self.window(-0x1000) + 0x1000)]

    def golden(self) -> Machine:
        """A golden model holding the bench's current state."""
        m = Machine(self.cfg, Memory(self.cfg.mem_base, self.cfg.mem_size))
        for r, row in enumerate(self.spad.data):
            m.spad[r] = np.frombuffer(bytes(row), m.ue)
        for r, row in enumerate(self.acc.data):
            m.acc[r] = np.frombuffer(bytes(row), m.ua)
        for lo, hi in self.regions():
            m.mem.write(lo, self.ram.read(lo % RAM_SIZE, hi - lo))
        return m

    async def reset(self) -> None:
        d = self.dut
        await FallingEdge(d.clk)
        d.cmd_valid.value = 0
        d.aborting.value = 0
        for s in ("func", "repeat", "sram_addr", "sram_stride", "is_accum", "mem_addr",
                  "mem_stride", "size"):
            getattr(d, f"cmd_{s}").value = 0
        for s in (self.spad, self.acc):
            s.reset()
        d.rst.value = 1
        for _ in range(3):
            await RisingEdge(d.clk)
        await FallingEdge(d.clk)
        d.rst.value = 0
        self.pending = None
        self.queue = []

    # ---- one cycle
    def _drive_cmd(self, ins: Dma) -> None:
        d = self.dut
        d.cmd_func.value = int(ins.func)
        d.cmd_repeat.value = ins.repeat
        d.cmd_sram_addr.value = ins.sram_addr
        d.cmd_sram_stride.value = ins.sram_stride & 0x1F
        d.cmd_is_accum.value = int(ins.is_accum)
        d.cmd_mem_addr.value = ins.mem_addr
        d.cmd_mem_stride.value = ins.mem_stride & 0x1F_FFFF
        d.cmd_size.value = ins.size

    async def cycle(self) -> None:
        d = self.dut
        await FallingEdge(d.clk)
        self.cyc += 1
        self.spad.drive()
        self.acc.drive()
        if self.pending is None and self.queue:
            self.pending = self.queue.pop(0)
            self._drive_cmd(self.pending)
        d.cmd_valid.value = int(self.pending is not None)
        await ReadOnly()
        self.spad.sample(self.cyc)
        self.acc.sample(self.cyc)
        for mon in self.mons:
            mon.sample(self.cyc)
        busy, done, ready = d.busy.value, d.done.value, d.cmd_ready.value
        if not (busy.is_resolvable and done.is_resolvable and ready.is_resolvable):
            self.errors.append(f"cycle {self.cyc}: busy/done/cmd_ready = {busy}/{done}/{ready}")
            return
        # idle (not busy) means ready; while busy, ready only with room in the
        # in-flight queue (one port: up to INFLIGHT LOADs into one SRAM)
        if not int(busy) and not int(ready):
            self.errors.append(f"cycle {self.cyc}: cmd_ready low while not busy")
        if int(done):
            self.dones += 1
            self.done_cycles.append(self.cyc)
            if int(busy) and self.accepted == self.dones:
                self.errors.append(f"cycle {self.cyc}: busy high in the done cycle of the "
                                   f"last instruction accepted")
        in_flight = self.accepted - self.dones
        if int(ready) and in_flight >= fsa_dma.inflight_depth(self.cfg.mem_ports):
            self.errors.append(f"cycle {self.cyc}: cmd_ready with {in_flight} instructions "
                               f"in flight")
        if self.pending is not None and int(ready):
            self.pending = None
            self.accepted += 1
            self.accept_cycles.append(self.cyc)

    async def run(self, instrs: list[Dma], limit: int, what: str = "instructions") -> None:
        """Issue `instrs` back to back; wait (at most `limit` cycles) until
        each has pulsed done and the DMA is idle."""
        want = self.dones + len(instrs)
        self.queue = list(instrs)
        start = self.cyc
        while self.dones < want or self.pending is not None or self.queue:
            if self.cyc - start > limit:
                raise AssertionError(
                    f"timeout after {limit} cycles waiting for done of {what}: {self.dones} of "
                    f"{want} done pulses, {self.accepted} accepted, busy="
                    f"{self.dut.busy.value}, err={self.dut.err.value}")
            await self.cycle()
        # one more cycle: busy must be low, nothing else pending
        await self.cycle()
        if int(self.dut.busy.value):
            raise AssertionError(f"busy still high after the last done of {what}")

    # ---- checks
    def problems(self) -> list[str]:
        out = list(self.errors) + self.spad.errors + self.acc.errors
        for m in self.mons:
            out += m.errors
        return out

    def compare(self, m: Machine, what: str) -> list[str]:
        """Differences between the bench's SRAMs/memory and the golden model."""
        diffs = []
        for name, sram, gold in (("spad", self.spad, m.spad), ("acc", self.acc, m.acc)):
            for r in range(sram.rows):
                g = gold[r].tobytes()
                if bytes(sram.data[r]) != g:
                    diffs.append(f"{what}: {name} row {r}: got {bytes(sram.data[r]).hex()} "
                                 f"expected {g.hex()}")
        for lo, hi in self.regions():
            got = self.ram.read(lo % RAM_SIZE, hi - lo)
            exp = m.mem.read(lo, hi - lo)
            if got != exp:
                for off in range(0, hi - lo, 16):
                    if got[off:off + 16] != exp[off:off + 16]:
                        diffs.append(f"{what}: memory 0x{lo + off:x}: got {got[off:off + 16].hex()}"
                                     f" expected {exp[off:off + 16].hex()}")
                        if len(diffs) > SHOW:
                            break
        return diffs

    def check_bursts(self, instrs: list[Dma], before: list[tuple[int, int]], what: str) -> list[str]:
        """The AR/AW bursts of `instrs` (all successful) follow the policy."""
        out = []
        exp_ar: list[list[Burst]] = [[] for _ in self.mons]
        exp_aw: list[list[Burst]] = [[] for _ in self.mons]
        for ins in instrs:
            for p, bl in enumerate(expected_bursts(self.cfg, ins)):
                (exp_aw if ins.func == DmaFunc.STORE else exp_ar)[p] += bl
        for p, mon in enumerate(self.mons):
            got_ar, got_aw = mon.ar[before[p][0]:], mon.aw[before[p][1]:]
            for ch, got, exp in (("AR", got_ar, exp_ar[p]), ("AW", got_aw, exp_aw[p])):
                if got != exp:
                    out.append(f"{what}: {mon.prefix} {ch} bursts {burst_list(got)} "
                               f"expected {burst_list(exp)}")
        return out

    def marks(self) -> list[tuple[int, int]]:
        return [(len(m.ar), len(m.aw)) for m in self.mons]


def burst_list(bursts: list[Burst]) -> str:
    s = " ".join(f"{b.addr:x}/{b.beats}" for b in bursts[:8])
    return f"[{s}{' ...' if len(bursts) > 8 else ''}] ({len(bursts)})"


def pause_stream(rng: random.Random, p: float):
    while True:
        yield rng.random() < p


def cycle_limit(cfg: FSAConfig, instrs: list[Dma], stalls: float) -> int:
    """A generous cycle bound for `instrs`."""
    bb = cfg.axi_data_bits // 8
    beats = sum(ins.repeat * max(1, ins.size // bb) + 2 * ins.repeat for ins in instrs)
    k = 1 if stalls == 0 else 8
    return 200 + 40 * len(instrs) + k * 6 * beats


def fail(problems: list[str], what: str) -> None:
    if problems:
        raise AssertionError(f"{what}: {len(problems)} problems; first {min(len(problems), SHOW)}:"
                             f"\n  " + "\n  ".join(problems[:SHOW]))


async def start_bench(dut, stalls: float = 0.0, tag: str = "") -> Bench:
    cfg = bench_config()
    assert cfg.mem_base % RAM_SIZE == 0, (
        f"the bench maps the window with the memory's address % {RAM_SIZE:#x}: mem_base "
        f"{cfg.mem_base:#x} must be a multiple of it")
    # reset from the first edge on: Icarus starts with every register X, and
    # cocotbext-axi samples valid/ready from the first edge
    dut.rst.value = 1
    dut.cmd_valid.value = 0
    Clock(dut.clk, 10, unit="ns").start()
    b = Bench(dut, cfg, random.Random(f"dma-{bench_seed()}-{cfg.name}-{tag}"), stalls)
    await b.reset()
    return b


async def run_and_compare(b: Bench, instrs: list[Dma], what: str, stalls: float,
                          bursts: bool = True) -> None:
    m = b.golden()
    for i, ins in enumerate(instrs):
        m.dma(ins, i)               # every instruction is legal: MachineError is a bench bug
    before = b.marks()
    c0 = b.cyc
    await b.run(instrs, cycle_limit(b.cfg, instrs, stalls), what)
    problems = b.problems() + b.compare(m, what)
    if bursts:
        problems += b.check_bursts(instrs, before, what)
    if int(b.dut.err.value):
        problems.append(f"{what}: err set, code {int(b.dut.err_code.value)}")
    b.dut._log.info("%s: %d instructions in %d cycles (spad %d w %d r, acc %d w %d r, "
                    "%d SRAM stalls)", what, len(instrs), b.cyc - c0, b.spad.writes, b.spad.reads,
                    b.acc.writes, b.acc.reads, b.spad.stalls + b.acc.stalls)
    fail(problems, what)


async def run_pairs(b: Bench, cases, expected) -> tuple[list[str], int]:
    """Run each (name, first, second) of `cases` back to back, without and
    with pauses on every channel: the two are in flight together exactly
    when ``expected(cfg, first, second)`` says (never against it with
    pauses), and the SRAMs and memory end as in the golden model, which
    runs them one after the other.  Returns the problems and how many
    pairs were in flight together."""
    cfg = b.cfg
    problems, together = [], 0
    for stalls in (0.0, 0.5):
        b.set_stalls(stalls)
        for what, first, second in cases:
            what = f"{what} (stalls {stalls})"
            b.randomize()
            m = b.golden()
            m.dma(first, 0)
            m.dma(second, 1)
            await b.run([first, second], cycle_limit(cfg, [first, second], stalls), what)
            both = b.accept_cycles[-1] < b.done_cycles[-2]
            want = expected(cfg, first, second)
            together += both
            if stalls == 0.0 and both != want:
                problems.append(f"{what}: second accepted in cycle {b.accept_cycles[-1]}, "
                                f"first done in {b.done_cycles[-2]}: in flight together "
                                f"{both}, expected {want}")
            if both and not want:
                problems.append(f"{what}: the two were in flight together")
            problems += b.compare(m, what)
    return problems, together


async def pair_with_fault(b: Bench, instrs: list[Dma], fault, name: str, limit: int):
    """After a reset, run the two `instrs` back to back with `fault` in the
    memory; returns (in flight together, err, its code name, err_slot, the
    faults the memory injected)."""
    await b.reset()
    b.randomize()
    b.faults.add(fault)
    try:
        await b.run(instrs, limit, name)
        injected = list(b.faults.injected)
    finally:
        b.faults.clear()
    both = b.accept_cycles[-1] < b.done_cycles[-2]
    err, hw = int(b.dut.err.value), fsa_dma.ERR_NAMES.get(int(b.dut.err_code.value), "?")
    return both, err, hw, int(b.dut.err_slot.value), injected
