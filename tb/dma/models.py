"""The DMA bench's models (tb/dma/tb_dma.py): :class:`SramModel`, the
scratchpad and the accumulator behind their narrow ports (``n_ready`` random
when stalling, read data one cycle after acceptance, as rtl/fsa_sram.py; it
checks the valid/ready rule and the address / lane ranges);
:class:`AxiMonitor`, every AR/AW handshake of a port (ID 0, INCR, full beat
size, no 4 KiB crossing, full write strobes); and the burst policy the
monitors' bursts are compared with (:func:`expected_bursts`)."""
from __future__ import annotations

import random
from dataclasses import dataclass

from fsa.config import FSAConfig
from fsa.isa import Dma


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


def burst_port(cfg: FSAConfig, ins: Dma, j: int) -> int:
    """The port of burst `j` (a row, or rows merged): round-robin, or 0
    when the rows overlap."""
    from fsa.hw.dmarules import rows_on_port0
    P = cfg.mem_ports
    return 0 if P > 1 and rows_on_port0(ins) else j % P


def expected_bursts(cfg: FSAConfig, ins: Dma) -> list[list[Burst]]:
    """Per port, the bursts of a successful `ins`: rows merged where
    ``dma_burst_beats`` allows (:func:`fsa.hw.dmarules.bursts`), else one row
    each, split at 4 KiB boundaries."""
    from fsa.hw.dmarules import bursts
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
