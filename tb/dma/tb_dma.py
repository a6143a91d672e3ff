"""cocotb bench of the DMA engine ``rtl/fsa_dma.py`` (driven from
``tb/test_dma.py``).

Parameters come in ``$FSA_DMA_PARAMS`` (JSON: ``config``, the FSAConfig as
``to_dict()``; ``random_instrs``, instructions of the random test); the seed
is cocotb's (``$COCOTB_RANDOM_SEED``).

Parts (cocotb's matrix_multiplier split):

* Memory: :class:`axi_faults.FaultyAxiRam` (cocotbext-axi's ``AxiRam``
  behaviour plus injectable error responses) on every ``m_axi*`` port, all
  sharing one 1 MiB sparse memory and one fault list.  It maps address ``a`` to ``a % size``, so
  the config's window ``[mem_base, mem_base + mem_size)`` (mem_base a
  multiple of 1 MiB) lands at offset ``a - mem_base`` (modulo 1 MiB; the
  tests use the window's first 64 KiB and its last 4 KiB, which do not
  alias).  Optional random ``set_pause_generator`` pauses on all five
  channels; SLVERR / DECERR injection through the memory's fault list
  (``Bench.faults``).
* :class:`SramModel`: the scratchpad and the accumulator behind their
  narrow ports (``n_ready`` random when stalling, read data one cycle after
  acceptance, as rtl/fsa_sram.py); it checks the valid/ready rule (a request
  not accepted is held unchanged) and the address / lane ranges.
* :class:`AxiMonitor`: every AR/AW handshake of every port (ID 0, INCR, full
  beat size, no 4 KiB crossing, full write strobes), so that the bursts can be
  compared with the expected policy (:func:`expected_bursts`).
* Driver and checker (:class:`Bench`): one coroutine does every cycle: drive
  at the falling edge (command, SRAM outputs), sample in ``ReadOnly``.
  Commands are issued back to back; the results (SRAM and memory bytes,
  error code) are compared with ``fsa.golden.machine.Machine.dma`` run from
  the same initial state.

Tests: ``dma_directed`` (no stalls) and ``dma_directed_stalls`` (pauses on
every channel, SRAM stalls), ``dma_random`` (random legal instructions, light
then heavy stalls), ``dma_throughput`` (rows overlap: about a cycle per
one-beat row), ``dma_errors`` (each check error: the golden model's code and
state, busy low, a later command done in 3 cycles without traffic),
``dma_axi_errors`` (SLVERR / DECERR on a read beat / a write response, on
the beat in a range or the first / last beat of a burst; with two LOADs in
flight, ``err_slot`` names the one whose beat failed), ``dma_second_load``
(two LOADs in flight exactly when ``fsa/dmarules.py`` allows it; the later
one wins a row both write).

Every wait has a cycle limit and names what it waited for.
"""
from __future__ import annotations

import json
import logging
import os
import random
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus

from fsa.config import FSAConfig
from fsa.golden.machine import Machine, MachineError, Memory
from fsa.isa import Dma, DmaFunc
from rtl import fsa_dma

from fsa.harness.axi_faults import Fault, FaultList, FaultyAxiRam

RAM_SIZE = 1 << 20
#: the regions of the window the tests initialise and compare (offsets)
LOW = (0, 0x10000)
SHOW = 12


def _seed() -> int:
    return int(os.environ.get("COCOTB_RANDOM_SEED", "1"))


def _params() -> dict:
    return json.loads(os.environ["FSA_DMA_PARAMS"])


def _cfg() -> FSAConfig:
    return FSAConfig.from_dict(_params()["config"])


# ------------------------------------------------------------------ models
class SramModel:
    """One SRAM behind its narrow port(s): rows of bytes, lane l = bytes
    [l*BB, (l+1)*BB) (little-endian lane value).  With `banks` > 1 the SRAM
    has a narrow port per bank (rtl/fsa_sram_bp.py: each signal is `banks`
    fields, bank b's at [b*w +: w], the address the row's index in its
    bank), each stalled and checked on its own."""

    def __init__(self, dut, name: str, rows: int, row_bytes: int, beat_bytes: int,
                 rng: random.Random, banks: int = 1):
        self.dut, self.name, self.rng = dut, name, rng
        self.rows, self.row_bytes, self.bb = rows, row_bytes, beat_bytes
        self.banks = banks
        self.lanes = row_bytes // beat_bytes
        self.data = [bytearray(row_bytes) for _ in range(rows)]
        self.h = {s: getattr(dut, f"{name}_{s}") for s in
                  ("n_valid", "n_ready", "n_we", "n_addr", "n_lane", "n_wdata", "n_rvalid",
                   "n_rdata")}
        self.w = {s: len(self.h[s]) // banks for s in self.h}
        self.stall_p = 0.0
        self.ready = [1] * banks
        self.rd: list = [None] * banks          # lane value to return this cycle
        self.held: list = [None] * banks        # a request seen but not accepted
        self.errors: list[str] = []
        self.writes = self.reads = self.stalls = 0

    def reset(self) -> None:
        self.h["n_ready"].value = (1 << self.banks) - 1
        self.h["n_rvalid"].value = 0
        self.h["n_rdata"].value = 0
        self.rd = [None] * self.banks
        self.held = [None] * self.banks

    def randomize(self) -> None:
        for r in range(self.rows):
            self.data[r] = bytearray(self.rng.getrandbits(8) for _ in range(self.row_bytes))

    def _field(self, name: str, b: int) -> int:
        w = self.w[name]
        return (int(self.h[name].value) >> (b * w)) & ((1 << w) - 1)

    def drive(self) -> None:
        h, B, W = self.h, self.banks, self.w["n_rdata"]
        self.ready = [0 if self.rng.random() < self.stall_p else 1 for _ in range(B)]
        h["n_ready"].value = sum(r << b for b, r in enumerate(self.ready))
        h["n_rvalid"].value = sum(1 << b for b in range(B) if self.rd[b] is not None)
        h["n_rdata"].value = sum((self.rd[b] or 0) << (b * W) for b in range(B))
        self.rd = [None] * B

    def sample(self, cyc: int) -> None:
        v = self.h["n_valid"].value
        if not v.is_resolvable:
            self.errors.append(f"cycle {cyc}: {self.name}_n_valid is {v}")
            return
        for b in range(self.banks):
            self._sample_bank(cyc, b)

    def _sample_bank(self, cyc: int, b: int) -> None:
        what = self.name if self.banks == 1 else f"{self.name} bank {b}"
        if not self._field("n_valid", b):
            if self.held[b] is not None:
                self.errors.append(f"cycle {cyc}: {what} request {self.held[b]} withdrawn "
                                   f"before it was accepted")
            self.held[b] = None
            return
        try:
            we = self._field("n_we", b)
            req = (we, self._field("n_addr", b), self._field("n_lane", b),
                   self._field("n_wdata", b) if we else 0)
        except ValueError:
            self.errors.append(f"cycle {cyc}: {what} request fields not 0/1 while n_valid")
            return
        if self.held[b] is not None and req != self.held[b]:
            self.errors.append(f"cycle {cyc}: {what} request changed from {self.held[b]} to "
                               f"{req} before it was accepted")
        if not self.ready[b]:
            self.held[b] = req
            self.stalls += 1
            return
        self.held[b] = None
        we, addr, lane, wdata = req
        row = addr * self.banks + b
        if row >= self.rows or lane >= self.lanes:
            self.errors.append(f"cycle {cyc}: {what} access row {row} lane {lane} outside "
                               f"{self.rows} x {self.lanes}")
            return
        lo = lane * self.bb
        if we:
            self.data[row][lo:lo + self.bb] = wdata.to_bytes(self.bb, "little")
            self.writes += 1
        else:
            self.rd[b] = int.from_bytes(self.data[row][lo:lo + self.bb], "little")
            self.reads += 1


@dataclass
class Burst:
    addr: int
    beats: int


class AxiMonitor:
    """Address handshakes of one port, plus W strobe and R/B sanity."""

    def __init__(self, dut, prefix: str, cfg: FSAConfig):
        self.prefix, self.cfg = prefix, cfg
        g = lambda s: getattr(dut, f"{prefix}_{s}")  # noqa: E731
        self.h = {s: g(s) for s in ("arvalid", "arready", "araddr", "arlen", "arsize", "arburst",
                                    "arid", "awvalid", "awready", "awaddr", "awlen", "awsize",
                                    "awburst", "awid", "wvalid", "wready", "wstrb",
                                    "rvalid", "rready")}
        self.ar: list[Burst] = []
        self.aw: list[Burst] = []
        self.wbeats = 0
        self.rbeats = 0
        self.errors: list[str] = []
        self.lb = (cfg.axi_data_bits // 8).bit_length() - 1

    def _addr(self, ch: str, cyc: int) -> None:
        h = self.h
        addr, ln = int(h[f"{ch}addr"].value), int(h[f"{ch}len"].value)
        size, burst, aid = (int(h[f"{ch}size"].value), int(h[f"{ch}burst"].value),
                            int(h[f"{ch}id"].value))
        bb = 1 << self.lb
        if size != self.lb or burst != 1 or aid != 0:
            self.errors.append(f"cycle {cyc}: {self.prefix} {ch} size {size} burst {burst} id "
                               f"{aid} (expected {self.lb}, INCR, 0)")
        if (addr & 0xFFF) + (ln + 1) * bb > 0x1000:
            self.errors.append(f"cycle {cyc}: {self.prefix} {ch} burst 0x{addr:x} len {ln} "
                               f"crosses 4 KiB")
        (self.ar if ch == "ar" else self.aw).append(Burst(addr, ln + 1))

    def sample(self, cyc: int) -> None:
        h = self.h
        if int(h["arvalid"].value) and int(h["arready"].value):
            self._addr("ar", cyc)
        if int(h["awvalid"].value) and int(h["awready"].value):
            self._addr("aw", cyc)
        if int(h["rvalid"].value) and int(h["rready"].value):
            self.rbeats += 1
        if int(h["wvalid"].value) and int(h["wready"].value):
            self.wbeats += 1
            strb = int(h["wstrb"].value)
            if strb != (1 << (1 << self.lb)) - 1:
                self.errors.append(f"cycle {cyc}: {self.prefix} wstrb 0x{strb:x} not all ones")


# ------------------------------------------------------------------ policy
def burst_port(cfg: FSAConfig, ins: Dma, j: int) -> int:
    """The port of burst `j` (a row, or rows merged): round-robin, or 0
    when the rows overlap."""
    from fsa.dmarules import rows_on_port0
    P = cfg.mem_ports
    return 0 if P > 1 and rows_on_port0(ins) else j % P


def expected_bursts(cfg: FSAConfig, ins: Dma) -> list[list[Burst]]:
    """Per port, the bursts of a successful `ins`: rows merged where
    ``dma_burst_beats`` allows (:func:`fsa.dmarules.bursts`), else one row
    each, split at 4 KiB boundaries."""
    from fsa.dmarules import bursts
    bb = cfg.axi_data_bits // 8
    out: list[list[Burst]] = [[] for _ in range(cfg.mem_ports)]
    for j, (i, n) in enumerate(bursts(ins, bb, cfg.dma_burst_beats)):
        a = ins.mem_addr + i * ins.mem_stride
        p = burst_port(cfg, ins, j)
        if n > 1:
            assert a // 0x1000 == (a + n * ins.size - 1) // 0x1000, (ins, i, n)
            out[p].append(Burst(a, n * ins.size // bb))
            continue
        first = min(ins.size, 0x1000 - (a & 0xFFF))
        out[p].append(Burst(a, first // bb))
        if first < ins.size:
            out[p].append(Burst(a + first, (ins.size - first) // bb))
    return out


# ------------------------------------------------------------------ bench
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
                    r = random.Random(f"pause-{_seed()}-{k}-{j}-{p}")
                    ch.set_pause_generator(_pauses(r, p))
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
                    out.append(f"{what}: {mon.prefix} {ch} bursts {_bl(got)} expected {_bl(exp)}")
        return out

    def marks(self) -> list[tuple[int, int]]:
        return [(len(m.ar), len(m.aw)) for m in self.mons]


def _bl(bursts: list[Burst]) -> str:
    s = " ".join(f"{b.addr:x}/{b.beats}" for b in bursts[:8])
    return f"[{s}{' ...' if len(bursts) > 8 else ''}] ({len(bursts)})"


def _pauses(rng: random.Random, p: float):
    while True:
        yield rng.random() < p


def _limit(cfg: FSAConfig, instrs: list[Dma], stalls: float) -> int:
    """A generous cycle bound for `instrs`."""
    bb = cfg.axi_data_bits // 8
    beats = sum(ins.repeat * max(1, ins.size // bb) + 2 * ins.repeat for ins in instrs)
    k = 1 if stalls == 0 else 8
    return 200 + 40 * len(instrs) + k * 6 * beats


def _fail(problems: list[str], what: str) -> None:
    if problems:
        raise AssertionError(f"{what}: {len(problems)} problems; first {min(len(problems), SHOW)}:"
                             f"\n  " + "\n  ".join(problems[:SHOW]))


async def _start(dut, stalls: float = 0.0, tag: str = "") -> Bench:
    cfg = _cfg()
    assert cfg.mem_base % RAM_SIZE == 0, (
        f"the bench maps the window with the memory's address % {RAM_SIZE:#x}: mem_base "
        f"{cfg.mem_base:#x} must be a multiple of it")
    # reset from the first edge on: Icarus starts with every register X, and
    # cocotbext-axi samples valid/ready from the first edge
    dut.rst.value = 1
    dut.cmd_valid.value = 0
    Clock(dut.clk, 10, unit="ns").start()
    b = Bench(dut, cfg, random.Random(f"dma-{_seed()}-{cfg.name}-{tag}"), stalls)
    await b.reset()
    return b


# ------------------------------------------------------------------ scenarios
def directed(cfg: FSAConfig) -> list[Dma]:
    """Loads and stores of several rows, strides of every sign, both SRAMs,
    partial rows, 4 KiB crossings and overlapping rows."""
    bb = cfg.axi_data_bits // 8
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base = cfg.mem_base
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    half_a = max(bb, arb // 2 // bb * bb)
    out = [
        # spad loads: positive stride, 4 rows, full rows
        Dma(L, repeat=4, sram_addr=0, sram_stride=1, mem_addr=base + 0x100, mem_stride=srb,
            size=srb),
        # negative SRAM stride, memory stride larger than a row
        Dma(L, repeat=5, sram_addr=12, sram_stride=-2, mem_addr=base + 0x400, mem_stride=3 * srb,
            size=srb),
        # negative memory stride
        Dma(L, repeat=3, sram_addr=4, sram_stride=1, mem_addr=base + 0x800, mem_stride=-2 * srb,
            size=srb),
        # memory stride 0: one memory row into several SRAM rows
        Dma(L, repeat=3, sram_addr=8, sram_stride=1, mem_addr=base + 0x900, mem_stride=0,
            size=srb),
        # SRAM stride 0: several memory rows into one SRAM row (the last wins)
        Dma(L, repeat=4, sram_addr=2, sram_stride=0, mem_addr=base + 0xA00, mem_stride=srb,
            size=srb),
        # acc loads: full rows, then partial rows (size < row)
        Dma(L, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
            mem_addr=base + 0x1000, mem_stride=arb, size=arb),
        Dma(L, repeat=2, sram_addr=cfg.acc_rows - 1, sram_stride=-1, is_accum=True,
            mem_addr=base + 0x2000, mem_stride=arb + bb, size=half_a),
        # acc stores: positive, negative, partial
        Dma(S, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
            mem_addr=base + 0x3000, mem_stride=arb, size=arb),
        Dma(S, repeat=3, sram_addr=3, sram_stride=-1, is_accum=True, mem_addr=base + 0x3800,
            mem_stride=-arb, size=half_a),
        # store with memory stride 0 (the last row wins) and overlapping rows
        Dma(S, repeat=3, sram_addr=0, sram_stride=1, is_accum=True, mem_addr=base + 0x3C00,
            mem_stride=0, size=arb),
        Dma(S, repeat=3, sram_addr=1, sram_stride=1, is_accum=True, mem_addr=base + 0x3D00,
            mem_stride=bb, size=arb),
        # spad store, SRAM stride 0 (one row to several places)
        Dma(S, repeat=3, sram_addr=5, sram_stride=0, mem_addr=base + 0x4000, mem_stride=srb,
            size=srb),
        # rows crossing 4 KiB boundaries (split bursts), load and store
        Dma(L, repeat=3, sram_addr=1, sram_stride=1, is_accum=True,
            mem_addr=base + 0x5000 - bb, mem_stride=0x1000, size=arb),
        Dma(S, repeat=2, sram_addr=2, sram_stride=1, is_accum=True,
            mem_addr=base + 0x7000 - arb + bb, mem_stride=0x1000, size=arb),
        # the last bytes of the window
        Dma(S, repeat=2, sram_addr=0, sram_stride=1, mem_addr=base + cfg.mem_size - 2 * srb,
            mem_stride=srb, size=srb),
        Dma(L, repeat=2, sram_addr=20, sram_stride=1, mem_addr=base + cfg.mem_size - 2 * srb,
            mem_stride=srb, size=srb),
        # many one-beat rows back to back
        Dma(L, repeat=16, sram_addr=cfg.spad_rows - 16, sram_stride=1, mem_addr=base + 0x8000,
            mem_stride=bb, size=bb),
        Dma(S, repeat=16, sram_addr=cfg.spad_rows - 16, sram_stride=1, mem_addr=base + 0x9000,
            mem_stride=bb, size=bb),
    ]
    return out


def random_instrs(cfg: FSAConfig, rng: random.Random, n: int) -> list[Dma]:
    """`n` random legal instructions inside the low test region."""
    bb = cfg.axi_data_bits // 8
    out = []
    while len(out) < n:
        accum = rng.random() < 0.5
        func = DmaFunc.STORE if rng.random() < 0.45 else DmaFunc.LOAD
        rows = cfg.acc_rows if accum else cfg.spad_rows
        rb = cfg.acc_row_bytes if accum else cfg.spad_row_bytes
        size = bb * rng.randint(1, rb // bb)
        rep = rng.randint(1, min(12, rows))
        sstr = rng.choice([0, 1, 1, -1, 2, -2, 3])
        lo_r = max(0, -sstr * (rep - 1))
        hi_r = rows - 1 - max(0, sstr * (rep - 1))
        if hi_r < lo_r:
            continue
        saddr = rng.randint(lo_r, hi_r)
        mstr = rng.choice([size, size, -size, 0, bb, 2 * size, 0x1000 - bb, -0x1000 + bb,
                           size + bb * rng.randint(0, 8)])
        span = abs(mstr) * (rep - 1) + size
        if span > LOW[1] - LOW[0] - 64:
            continue
        start = rng.randrange(0, LOW[1] - span, bb)
        maddr = cfg.mem_base + start + (abs(mstr) * (rep - 1) if mstr < 0 else 0)
        out.append(Dma(func, repeat=rep, sram_addr=saddr, sram_stride=sstr, is_accum=accum,
                       mem_addr=maddr, mem_stride=mstr, size=size))
    return out


async def run_and_compare(b: Bench, instrs: list[Dma], what: str, stalls: float,
                          bursts: bool = True) -> None:
    m = b.golden()
    for i, ins in enumerate(instrs):
        m.dma(ins, i)               # every instruction is legal: MachineError is a bench bug
    before = b.marks()
    c0 = b.cyc
    await b.run(instrs, _limit(b.cfg, instrs, stalls), what)
    problems = b.problems() + b.compare(m, what)
    if bursts:
        problems += b.check_bursts(instrs, before, what)
    if int(b.dut.err.value):
        problems.append(f"{what}: err set, code {int(b.dut.err_code.value)}")
    b.dut._log.info("%s: %d instructions in %d cycles (spad %d w %d r, acc %d w %d r, "
                    "%d SRAM stalls)", what, len(instrs), b.cyc - c0, b.spad.writes, b.spad.reads,
                    b.acc.writes, b.acc.reads, b.spad.stalls + b.acc.stalls)
    _fail(problems, what)


# ------------------------------------------------------------------ tests
@cocotb.test()
async def dma_directed(dut):
    """Directed loads and stores, no stalls; contents and bursts vs the golden model."""
    b = await _start(dut, 0.0, "directed")
    b.randomize()
    await run_and_compare(b, directed(b.cfg), "directed", 0.0)


@cocotb.test()
async def dma_directed_stalls(dut):
    """The directed list with random pauses on every AXI channel and SRAM stalls."""
    b = await _start(dut, 0.3, "stalls")
    b.randomize()
    await run_and_compare(b, directed(b.cfg), "directed+stalls", 0.3)


@cocotb.test()
async def dma_random(dut):
    """Random legal instructions back to back vs the golden model: with light
    pauses / SRAM stalls (p = 0.25), then heavy ones (p = 0.6)."""
    b = await _start(dut, 0.25, "random")
    n = int(_params().get("random_instrs", 40))
    for p in (0.25, 0.6):
        b.set_stalls(p)
        b.randomize()
        instrs = random_instrs(b.cfg, b.rng, n)
        await run_and_compare(b, instrs, f"random (stalls {p})", p)


@cocotb.test()
async def dma_throughput(dut):
    """Rows overlap: with a slave that answers at once, a transfer of one-beat
    rows takes about one cycle per row (several bursts in flight), not one
    AXI round trip per row (with ``dma_outstanding`` below 8: at most
    8 / dma_outstanding cycles a row)."""
    b = await _start(dut, 0.0, "throughput")
    b.randomize()
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    n = 32
    cases = [
        ("load 1-beat rows, SRAM stride 0", Dma(DmaFunc.LOAD, repeat=n, sram_addr=0,
                                                sram_stride=0, mem_addr=base + 0x100,
                                                mem_stride=bb, size=bb)),
        ("load 1-beat rows, SRAM stride 1", Dma(DmaFunc.LOAD, repeat=16, sram_addr=0,
                                                sram_stride=1, mem_addr=base + 0x100,
                                                mem_stride=bb, size=bb)),
        ("store 1-beat rows", Dma(DmaFunc.STORE, repeat=n, sram_addr=0, sram_stride=0,
                                  mem_addr=base + 0x800, mem_stride=bb, size=bb)),
        ("load full acc rows", Dma(DmaFunc.LOAD, repeat=cfg.acc_rows, sram_addr=0,
                                   sram_stride=1, is_accum=True, mem_addr=base + 0x1000,
                                   mem_stride=cfg.acc_row_bytes, size=cfg.acc_row_bytes)),
        ("store full acc rows", Dma(DmaFunc.STORE, repeat=cfg.acc_rows, sram_addr=0,
                                    sram_stride=1, is_accum=True, mem_addr=base + 0x2000,
                                    mem_stride=cfg.acc_row_bytes, size=cfg.acc_row_bytes)),
    ]
    problems = []
    for what, ins in cases:
        m = b.golden()
        m.dma(ins)
        await b.run([ins], _limit(cfg, [ins], 0), what)
        cycles = b.done_cycles[-1] - b.accept_cycles[-1]
        beats = ins.repeat * (ins.size // bb)
        dut._log.info("%s: %d rows, %d beats in %d cycles (accept to done)", what, ins.repeat,
                      beats, cycles)
        # one beat per cycle per port at best (an SRAM port shared by all),
        # plus the command / AXI / slave latency; with fewer than 8 bursts in
        # flight (dma_outstanding) a burst of one beat waits for one issued
        # dma_outstanding bursts before, so at most 8 / dma_outstanding
        # cycles a beat (8 cycles covers the slave's AR-to-R and AW-to-B
        # round trips)
        per_beat = max(1, 8 // cfg.dma_outstanding)
        bound = beats * per_beat + 16
        if cycles > bound:
            problems.append(f"{what}: {beats} beats took {cycles} cycles (> {bound})")
        problems += b.compare(m, what)
    _fail(problems + b.problems(), "throughput")


def second_load_expected(cfg: FSAConfig, first: Dma, second: Dma) -> bool:
    """Whether the DMA accepts LOAD `second` while LOAD `first` is in
    flight (fsa/dmarules.py): one port, rows of one beat; several ports (or
    one port with per-port beats, ``per_port_dma``), an SRAM with a narrow
    port per bank and disjoint rows."""
    from fsa.dmarules import second_load_ok, several_port_rules, sram_bank_ports
    bb = cfg.axi_data_bits // 8
    if not several_port_rules(cfg):
        return first.size <= bb and second.size <= bb
    banks = cfg.acc_banks if second.is_accum else cfg.spad_banks
    return sram_bank_ports(cfg, banks) and second_load_ok(first, second)


@cocotb.test()
async def dma_second_load(dut):
    """Two LOADs back to back into the scratchpad: the second is in flight
    with the first exactly when fsa/dmarules.py allows it (disjoint rows,
    overlapping rows, a negative stride, whole rows of several beats); the
    SRAM ends as in the golden model (the later LOAD wins a row both
    write), without and with pauses on every channel."""
    b = await _start(dut, 0.0, "second load")
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    R, srb = min(8, cfg.spad_rows // 4), cfg.spad_row_bytes

    def ld(sa, n, stride=1, size=bb, mem=0x400):
        return Dma(DmaFunc.LOAD, repeat=n, sram_addr=sa, sram_stride=stride,
                   mem_addr=base + mem, mem_stride=srb, size=size)
    cases = [("disjoint", ld(0, R), ld(R, R, mem=0x4000)),
             ("overlapping", ld(0, R), ld(R // 2, R, mem=0x4000)),
             ("negative stride, disjoint", ld(2 * R - 1, R, -1), ld(2 * R, R, mem=0x4000)),
             ("negative stride, overlapping", ld(2 * R - 1, R, -1), ld(R + 1, R, mem=0x4000)),
             ("whole rows, disjoint", ld(0, R, size=srb), ld(R, R, size=srb, mem=0x4000)),
             ("whole rows, same rows", ld(0, R, size=srb), ld(0, R, size=srb, mem=0x4000)),
             ("one row over and over, then disjoint", ld(0, R, 0), ld(R, R, mem=0x4000)),
             ("disjoint, then one row over and over", ld(0, R), ld(R, R, 0, mem=0x4000))]
    problems, _ = await _run_pairs(b, cases, second_load_expected)
    _fail(problems + b.problems(), "second load")


async def _run_pairs(b: Bench, cases, expected) -> tuple[list[str], int]:
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
            await b.run([first, second], _limit(cfg, [first, second], stalls), what)
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


def load_store_expected(cfg: FSAConfig, first: Dma, second: Dma) -> bool:
    """Whether the DMA accepts `second` while `first` is in flight, one a
    LOAD and the other a STORE: only with the config's ``dma_rw_overlap``,
    and then as :func:`fsa.dmarules.load_store_ok` says (other SRAM,
    disjoint memory bytes)."""
    from fsa.dmarules import load_store_ok
    return bool(cfg.dma_rw_overlap) and load_store_ok(first, second)


@cocotb.test()
async def dma_load_store(dut):
    """A LOAD and a STORE back to back, in both orders: in flight together
    exactly when ``load_store_expected`` says (other SRAM and disjoint
    bytes, bytes that touch without overlapping; not the same SRAM, not
    overlapping bytes, not a LOAD of the bytes the STORE before it writes,
    not a STORE over bytes the LOAD before it reads, with positive and
    negative strides); the SRAMs and the memory end as in the golden model,
    which runs them one after the other, without and with pauses on every
    channel."""
    b = await _start(dut, 0.0, "load store")
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    R = min(8, cfg.spad_rows // 4, cfg.acc_rows // 2)
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes

    def op(func, acc, mem, stride=None, sa=0, n=R):
        rb = arb if acc else srb
        st = rb if stride is None else stride
        return Dma(func, repeat=n, sram_addr=sa + (n - 1 if st < 0 else 0), sram_stride=1
                   if st >= 0 else -1, is_accum=acc, mem_addr=base + mem, mem_stride=st, size=rb)
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    far = 0x4000
    cases = [
        ("load spad, store acc, disjoint", op(L, False, 0x400), op(S, True, far)),
        ("store acc, load spad, disjoint", op(S, True, far), op(L, False, 0x400)),
        ("load acc, store spad, disjoint", op(L, True, 0x400), op(S, False, far)),
        ("load spad, store acc, touching", op(L, False, 0x400),
         op(S, True, 0x400 + R * srb)),
        ("store acc, load spad below it, negative stride", op(S, True, 0x400 + R * arb),
         op(L, False, 0x400, stride=-srb)),
        ("load spad, store acc, same SRAM side", op(L, False, 0x400), op(S, False, far, sa=R)),
        ("load spad, store acc over its bytes", op(L, False, 0x400), op(S, True, 0x400 + srb)),
        ("store acc, load spad of its bytes", op(S, True, 0x400), op(L, False, 0x400 + bb)),
        ("store acc, load spad of its bytes, negative strides", op(S, True, 0x800, stride=-arb),
         op(L, False, 0x800 - 2 * arb, stride=-srb)),
        ("load spad, store acc, last byte shared", op(L, False, 0x400),
         op(S, True, 0x400 + R * srb - bb)),
    ]
    problems, together = await _run_pairs(b, cases, load_store_expected)
    if cfg.dma_rw_overlap and not together:
        problems.append("no LOAD and STORE were ever in flight together")
    _fail(problems + b.problems(), "load store")


async def _pair_with_fault(b: Bench, instrs: list[Dma], fault, name: str, limit: int):
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


def _error_cases(cfg: FSAConfig) -> list[tuple[str, Dma, str]]:
    """(name, instruction, expected code name); the golden model must agree."""
    bb = cfg.axi_data_bits // 8
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base, end = cfg.mem_base, cfg.mem_base + cfg.mem_size
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    return [
        ("mem_range_end", Dma(L, repeat=4, sram_addr=0, sram_stride=1, mem_addr=end - 2 * srb,
                              mem_stride=srb, size=srb), "MEM_RANGE"),
        ("mem_range_below", Dma(S, repeat=4, sram_addr=0, sram_stride=1, is_accum=True,
                                mem_addr=base + arb, mem_stride=-arb, size=arb), "MEM_RANGE"),
        ("mem_range_first", Dma(L, repeat=2, sram_addr=0, sram_stride=1,
                                mem_addr=base - 0x1000, mem_stride=srb, size=srb), "MEM_RANGE"),
        ("align_row1", Dma(L, repeat=3, sram_addr=0, sram_stride=1, is_accum=True,
                           mem_addr=base + 0x200, mem_stride=arb + bb // 2, size=arb),
         "DMA_ALIGN"),
        # (0x204 for beats of 8 bytes and more; 0x202 for 4-byte beats)
        ("align_row0", Dma(S, repeat=2, sram_addr=3, sram_stride=1,
                           mem_addr=base + 0x200 + min(4, bb // 2),
                           mem_stride=srb, size=srb), "DMA_ALIGN"),
        ("align_size", Dma(L, repeat=2, sram_addr=3, sram_stride=1, is_accum=True,
                           mem_addr=base + 0x200, mem_stride=arb, size=bb // 2), "DMA_ALIGN"),
        ("size_gt_row", Dma(L, repeat=1, sram_addr=0, sram_stride=1, mem_addr=base + 0x200,
                            mem_stride=0, size=srb + bb), "DMA_SIZE"),
        ("sram_range_last", Dma(L, repeat=3, sram_addr=cfg.spad_rows - 4, sram_stride=2,
                                mem_addr=base + 0x200, mem_stride=srb, size=srb), "DMA_SRAM_RANGE"),
        ("sram_range_neg", Dma(S, repeat=3, sram_addr=1, sram_stride=-1, is_accum=True,
                               mem_addr=base + 0x200, mem_stride=arb, size=arb), "DMA_SRAM_RANGE"),
        ("sram_range_first", Dma(S, repeat=1, sram_addr=cfg.acc_rows, sram_stride=0,
                                 is_accum=True, mem_addr=base + 0x200, mem_stride=0, size=arb),
         "DMA_SRAM_RANGE"),
    ]


@cocotb.test()
async def dma_errors(dut):
    """Each check error sets err with the golden model's code within a bounded
    number of cycles, leaves busy low, and leaves the SRAMs and memory as the
    golden model (rows before the failing one done); a later command is
    accepted and completes without traffic."""
    b = await _start(dut, 0.2, "errors")
    problems = []
    names = fsa_dma.ERR_NAMES
    for name, ins, code in _error_cases(b.cfg):
        await b.reset()
        b.randomize()
        m = b.golden()
        try:
            m.dma(ins, 0)
            got_gold = "NONE"
        except MachineError as e:
            got_gold = e.code
        if got_gold != code:
            problems.append(f"{name}: the golden model says {got_gold}, the case expects {code}")
        before = b.marks()
        await b.run([ins], 300 + 20 * ins.repeat * max(1, ins.size // b.bb), name)
        err, hw = int(b.dut.err.value), names.get(int(b.dut.err_code.value), "?")
        if not err or hw != code:
            problems.append(f"{name}: err={err} code={hw}, expected {code}")
        problems += b.compare(m, name)
        # a later (legal) command completes at once, no traffic, the code stays
        marks = b.marks()
        code0 = int(b.dut.err_code.value)
        t0 = b.cyc
        await b.run([Dma(DmaFunc.LOAD, repeat=2, mem_addr=b.cfg.mem_base, mem_stride=b.bb,
                         size=b.bb)], 20, f"{name}: command after the error")
        if b.marks() != marks:
            problems.append(f"{name}: bursts issued after the error")
        if b.done_cycles[-1] - b.accept_cycles[-1] != 3:
            problems.append(f"{name}: the command after the error took "
                            f"{b.done_cycles[-1] - b.accept_cycles[-1]} cycles to done, not 3")
        if int(b.dut.err_code.value) != code0 or not int(b.dut.err.value):
            problems.append(f"{name}: err/err_code changed by the next command")
        dut._log.info("%s: %s after %d bursts; next command done in %d cycles", name, hw,
                      sum(len(m1.ar) + len(m1.aw) for m1 in b.mons) -
                      sum(a + w for a, w in before), b.cyc - t0)
    _fail(problems + b.problems(), "error cases")


@cocotb.test()
async def dma_axi_errors(dut):
    """SLVERR / DECERR on a read beat and on a write burst: err with AXI_RD_ERR /
    AXI_WR_ERR, every owed beat and response drained, busy low, no hang; the
    injected error really was answered (the memory's log).  Two LOADs in
    flight with an error in the first / the second, and a LOAD and a STORE in
    either order with an error on either: ``err_slot`` names it."""
    b = await _start(dut, 0.2, "axierr")
    cfg = b.cfg
    problems = []
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base = cfg.mem_base
    rd = Dma(DmaFunc.LOAD, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
             mem_addr=base + 0x1000, mem_stride=arb, size=arb)
    wr = Dma(DmaFunc.STORE, repeat=8, sram_addr=0, sram_stride=1, mem_addr=base + 0x2000,
             mem_stride=srb, size=srb)
    bad_rd = base + 0x1000 + 2 * arb + b.bb * (arb // b.bb - 1)    # last beat of row 2
    bad_wr = base + 0x2000 + 3 * srb                                # first beat of row 3
    cases = [   # name, instruction, fault, expected code
        ("slverr_read", rd, Fault("read", bad_rd, bad_rd + b.bb), "AXI_RD_ERR"),
        ("slverr_write", wr, Fault("write", bad_wr, bad_wr + b.bb), "AXI_WR_ERR"),
        ("decerr_read_first_beat", rd, Fault("read", bad_rd, bad_rd + b.bb, resp="DECERR",
                                             beat="first"), "AXI_RD_ERR"),
        ("decerr_write_last_beat", wr, Fault("write", bad_wr, bad_wr + b.bb, resp="DECERR",
                                             beat="last"), "AXI_WR_ERR"),
    ]
    for name, ins, fault, code in cases:
        await b.reset()
        b.randomize()
        b.faults.add(fault)
        try:
            await b.run([ins], 400 + 40 * ins.repeat * max(1, ins.size // b.bb), name)
            injected = list(b.faults.injected)
        finally:
            b.faults.clear()
        if not injected or any(x[4] != fault.resp for x in injected):
            problems.append(f"{name}: the memory injected {injected}, expected {fault.resp}")
        err, hw = int(b.dut.err.value), fsa_dma.ERR_NAMES.get(int(b.dut.err_code.value), "?")
        if not err or hw != code:
            problems.append(f"{name}: err={err} code={hw}, expected {code}")
        # drained: every issued burst's data went through
        for mon, ram in zip(b.mons, b.rams):
            beats_aw = sum(x.beats for x in mon.aw)
            if mon.wbeats != beats_aw:
                problems.append(f"{name}: {mon.prefix}: {mon.wbeats} W beats for {beats_aw} "
                                f"AW beats")
        marks = b.marks()
        await b.run([ins], 20, f"{name}: command after the error")
        if b.marks() != marks:
            problems.append(f"{name}: bursts issued after the error")
        dut._log.info("%s: %s", name, hw)
    # two LOADs in flight (when fsa/dmarules.py allows it; disjoint rows): an
    # AXI error names the queue slot of the instruction whose beat it was
    # (slots are taken in turn from 0 after a reset: the first LOAD has 0)
    R = min(8, cfg.spad_rows // 4)
    l1 = Dma(DmaFunc.LOAD, repeat=R, sram_addr=0, sram_stride=1, mem_addr=base + 0x1000,
             mem_stride=srb, size=srb)
    l2 = Dma(DmaFunc.LOAD, repeat=R, sram_addr=R, sram_stride=1, mem_addr=base + 0x3000,
             mem_stride=srb, size=srb)
    want_both = second_load_expected(cfg, l1, l2)
    limit = 400 + 40 * 2 * R * max(1, srb // b.bb)     # cycles for a pair of R-row instructions
    b.set_stalls(0.0)
    for which, addr, slot in (("first", base + 0x1000 + R * srb - b.bb, 0),
                              ("second", base + 0x3000, 1)):
        name = f"two loads, SLVERR in the {which}"
        both, err, hw, got_slot, injected = await _pair_with_fault(
            b, [l1, l2], Fault("read", addr, addr + b.bb), name, limit)
        if not injected:
            problems.append(f"{name}: the memory injected nothing")
        if both != want_both:
            problems.append(f"{name}: in flight together {both}, expected {want_both}")
        if not err or hw != "AXI_RD_ERR" or got_slot != slot:
            problems.append(f"{name}: err={err} code={hw} err_slot={got_slot}, expected "
                            f"AXI_RD_ERR in slot {slot}")
        for mon in b.mons:
            if mon.rbeats != sum(x.beats for x in mon.ar):
                problems.append(f"{name}: {mon.prefix}: {mon.rbeats} R beats for "
                                f"{sum(x.beats for x in mon.ar)} AR beats")
        dut._log.info("%s: %s slot %d (in flight together: %s)", name, hw, got_slot, both)
    # a LOAD and a STORE (in flight together with dma_rw_overlap): an error on
    # either names its slot, whichever of the two came first
    ld = Dma(DmaFunc.LOAD, repeat=R, sram_addr=0, sram_stride=1, mem_addr=base + 0x1000,
             mem_stride=srb, size=srb)
    R2 = min(R, cfg.acc_rows)
    st = Dma(DmaFunc.STORE, repeat=R2, sram_addr=0, sram_stride=1, is_accum=True,
             mem_addr=base + 0x3000, mem_stride=arb, size=arb)
    last_rd = base + 0x1000 + R * srb - b.bb             # the LOAD's last beat
    first_wr = base + 0x3000                               # the STORE's first beat
    for order in ((ld, st), (st, ld)):
        for kind, addr, code in (("read", last_rd, "AXI_RD_ERR"),
                                 ("write", first_wr, "AXI_WR_ERR")):
            victim = ld if kind == "read" else st
            slot = order.index(victim)
            name = (f"{'load, store' if order[0] is ld else 'store, load'}: SLVERR on the "
                    f"{kind}")
            both, err, hw, got_slot, injected = await _pair_with_fault(
                b, list(order), Fault(kind, addr, addr + b.bb), name, limit)
            if not injected:
                problems.append(f"{name}: the memory injected nothing")
            if both and not load_store_expected(cfg, *order):
                problems.append(f"{name}: in flight together, expected not")
            if not err or hw != code or got_slot != slot:
                problems.append(f"{name}: err={err} code={hw} err_slot={got_slot}, expected "
                                f"{code} in slot {slot}")
            for mon in b.mons:
                if mon.rbeats != sum(x.beats for x in mon.ar) or \
                        mon.wbeats != sum(x.beats for x in mon.aw):
                    problems.append(f"{name}: {mon.prefix}: not drained")
            dut._log.info("%s: %s slot %d (in flight together: %s)", name, hw, got_slot, both)
    _fail(problems + b.problems(), "AXI error cases")
