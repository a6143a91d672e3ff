"""An AXI4 memory that can answer with errors: one slave model for every
bench that injects AXI faults (fsa/harness/device.py, tb/dma/tb_dma.py).

:class:`FaultyAxiRam` is a drop-in for cocotbext-axi's ``AxiRam`` (the same
``mem`` sharing, ``read``/``write`` of the backing memory, ``write_if`` /
``read_if`` with the five channel objects for ``set_pause_generator``) built
only on cocotbext-axi's public pieces: the AXI channel sinks and sources of
``cocotbext.axi.axi_channels`` and the sparse ``Memory``. Its burst
processes do what ``AxiRam``'s do, cycle for cycle (one R beat per cycle,
one B response after the last W beat, channel queues of two), so a run
without faults times exactly as with ``AxiRam`` (the cycle model is
calibrated on that).

Faults (:class:`Fault`) are SLVERR or DECERR responses on reads (the beat's
``rresp``; its data is zero) or writes (the burst's ``bresp``; the failing
beat's data is not written), on a chosen beat of every burst that touches an
address range: every beat inside the range, or the first, middle or last
beat of the burst, or beat ``k``; optionally only on the first ``times``
bursts hit. Every injected error is logged in :attr:`FaultList.injected`,
so a test can check that its fault really fired.

Besides error responses, a fault can be one of the AXI protocol violations
the DMA claims to detect (rtl/fsa_dma_port.py; :data:`VIOLATIONS`), always
with an OKAY response and the right data:

    read  RID          the chosen beat carries RID 1 (the device's ID is 0)
    read  NO_RLAST     the burst's last beat comes without RLAST (only on a last beat)
    read  EARLY_RLAST  RLAST on a beat before the last (never on a last beat);
                       the rest of the burst still follows
    read  STRAY_B      the read burst hit also gets a B response on the write
                       channel, with no write outstanding
    write BID          the burst's B response carries BID 1
    write STRAY_R      the write burst hit also gets an R beat (RLAST 1, RID 0)
                       on the read channel, with no read outstanding

The burst's beat count is never changed (a slave that drops beats would
leave the master waiting: that is a hang no master can detect, not a
protocol error).

:class:`AxiChecker` is the independent other half: a passive monitor of one
AXI4 master port that tracks the bursts in flight from the AR/AW handshakes
and records every R beat or B response that breaks the protocol or carries
an error, with the clock cycle it was accepted in, so a bench can measure
the cycles from a fault reaching the device to the device's error state.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import cocotb
from cocotb.triggers import Edge
from cocotbext.axi import AxiBurstType, AxiResp
from cocotbext.axi.axi_channels import (AxiARSink, AxiAWSink, AxiBSource, AxiBTransaction,
                                        AxiRSource, AxiRTransaction, AxiWSink)
from cocotbext.axi.memory import Memory

RESPONSES = {"SLVERR": AxiResp.SLVERR, "DECERR": AxiResp.DECERR}
#: the protocol violations, by the direction of the burst that triggers them
VIOLATIONS = {"read": ("RID", "NO_RLAST", "EARLY_RLAST", "STRAY_B"), "write": ("BID", "STRAY_R")}
BEATS = ("range", "first", "middle", "last")


@dataclass
class Fault:
    """One injected error.

    Attributes:
        direction: "read" or "write".
        lo, hi: the bursts hit are those with a beat address in [lo, hi).
        resp: "SLVERR" or "DECERR", or a protocol violation of the
            direction (:data:`VIOLATIONS`).
        beat: which beat of a hit burst fails: "range" (every beat whose
            address is in [lo, hi)), "first", "middle" (beat len // 2),
            "last", or a beat index (no error if the burst is shorter).
        times: hit only the first `times` bursts (None: all of them).
    """

    direction: str
    lo: int
    hi: int
    resp: str = "SLVERR"
    beat: "str | int" = "range"
    times: "int | None" = None
    hits: int = 0

    def __post_init__(self):
        if self.direction not in ("read", "write"):
            raise ValueError(f"fault direction must be 'read' or 'write', got {self.direction!r}")
        allowed = sorted(RESPONSES) + list(VIOLATIONS.get(self.direction, ()))
        if self.resp not in allowed:
            raise ValueError(f"fault resp of a {self.direction} must be one of {allowed}, "
                             f"got {self.resp!r}")
        if not (isinstance(self.beat, int) and self.beat >= 0) and self.beat not in BEATS:
            raise ValueError(f"fault beat must be one of {BEATS} or a beat index >= 0, "
                             f"got {self.beat!r}")
        if not self.lo < self.hi:
            raise ValueError(f"fault range [{self.lo:#x}, {self.hi:#x}) is empty")

    def failing_beats(self, addrs: list[int]) -> set[int]:
        """The beats (indices into `addrs`, the burst's beat addresses) that
        fail; counts the burst as hit if any do."""
        inside = [i for i, a in enumerate(addrs) if self.lo <= a < self.hi]
        if not inside or (self.times is not None and self.hits >= self.times):
            return set()
        n = len(addrs)
        if self.beat == "range":
            beats = set(inside)
        else:
            k = {"first": 0, "middle": n // 2, "last": n - 1}.get(self.beat, self.beat)
            beats = {k} if k < n else set()
        if self.resp == "NO_RLAST":
            beats = {k for k in beats if k == n - 1}
        elif self.resp == "EARLY_RLAST":
            beats = {k for k in beats if k < n - 1}
        elif self.resp in ("STRAY_B", "STRAY_R", "BID"):
            beats = set(sorted(beats)[:1])      # one per burst
        if beats:
            self.hits += 1
        return beats


class FaultList:
    """The faults shared by the ports of one memory, and what they did."""

    def __init__(self):
        self.faults: list[Fault] = []
        #: (direction, beat address, beat index, burst length, resp name)
        self.injected: list[tuple] = []

    def add(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        self.faults.clear()
        self.injected.clear()

    def resolve(self, direction: str, addrs: list[int]) -> dict[int, str]:
        """{beat index: response name} of the failing beats of one burst."""
        out: dict[int, str] = {}
        for f in self.faults:
            if f.direction == direction:
                for k in f.failing_beats(addrs):
                    out.setdefault(k, f.resp)
        for k in sorted(out):
            self.injected.append((direction, addrs[k], k, len(addrs), out[k]))
        return out


def _beat_addrs(addr: int, length: int, size: int, burst, lanes: int) -> list[int]:
    """Word addresses of the beats of a burst (INCR, FIXED or WRAP)."""
    nbytes = 2 ** size
    cur = (addr // nbytes) * nbytes
    total = nbytes * length
    lo_wrap = (addr // total) * total
    out = []
    for _ in range(length):
        out.append((cur // lanes) * lanes)
        if burst != AxiBurstType.FIXED:
            cur += nbytes
            if burst == AxiBurstType.WRAP and cur == lo_wrap + total:
                cur = lo_wrap
    return out


class _Port:
    """Reset handling as cocotbext-axi's models do it: the burst process runs
    from construction, is killed (and the channels cleared) while reset is
    asserted, and restarts when it is released."""

    def _start_reset(self, reset):
        self._proc = cocotb.start_soon(self._process())
        if reset is not None:
            cocotb.start_soon(self._watch_reset(reset))

    async def _watch_reset(self, reset):
        while True:
            await Edge(reset)
            try:
                active = bool(int(reset.value))
            except ValueError:
                continue
            if active and self._proc is not None:
                self._proc.cancel()
                self._proc = None
                for ch in self.channels:
                    ch.clear()
            elif not active and self._proc is None:
                self._proc = cocotb.start_soon(self._process())


class FaultyRamRead(_Port):
    """The read half: AR sink, R source."""

    def __init__(self, bus, clock, reset, ram: "FaultyAxiRam"):
        self.ram = ram
        self.log = logging.getLogger(f"cocotb.faultyram.{bus.ar._name or 'ar'}")
        self.ar_channel = AxiARSink(bus.ar, clock, reset)
        self.ar_channel.queue_occupancy_limit = 2
        self.r_channel = AxiRSource(bus.r, clock, reset)
        self.r_channel.queue_occupancy_limit = 2
        self.channels = (self.ar_channel, self.r_channel)
        self.lanes = len(self.r_channel.bus.rdata) // 8
        self._start_reset(reset)

    async def _process(self):
        max_size = (self.lanes - 1).bit_length()
        while True:
            ar = await self.ar_channel.recv()
            arid = int(getattr(ar, "arid", 0))
            addrs = _beat_addrs(int(ar.araddr), int(getattr(ar, "arlen", 0)) + 1,
                                int(getattr(ar, "arsize", max_size)),
                                AxiBurstType(int(getattr(ar, "arburst", AxiBurstType.INCR))),
                                self.lanes)
            bad = self.ram.faults.resolve("read", addrs)
            if "STRAY_B" in bad.values():
                self.log.info("injected a stray B response with the read burst at 0x%x", addrs[0])
                self.ram.write_if.stray_b()
            for n, a in enumerate(addrs):
                kind = bad.get(n)
                r = AxiRTransaction()
                r.rid = arid ^ 1 if kind == "RID" else arid
                r.rlast = (n == len(addrs) - 1) != (kind in ("NO_RLAST", "EARLY_RLAST"))
                if kind in RESPONSES:
                    self.log.info("injected %s on the read beat at 0x%x", kind, a)
                    r.rresp = RESPONSES[kind]
                    r.rdata = 0
                else:
                    r.rresp = AxiResp.OKAY
                    r.rdata = int.from_bytes(self.ram.read(a % self.ram.size, self.lanes), "little")
                if kind in ("RID", "NO_RLAST", "EARLY_RLAST"):
                    self.log.info("injected %s on the read beat at 0x%x", kind, a)
                await self.r_channel.send(r)

    def stray_r(self) -> None:
        """Queue one R beat (OKAY, RLAST, RID 0) that no AR asked for."""
        r = AxiRTransaction()
        r.rid, r.rlast, r.rresp, r.rdata = 0, 1, AxiResp.OKAY, 0
        self.r_channel.send_nowait(r)


class FaultyRamWrite(_Port):
    """The write half: AW and W sinks, B source."""

    def __init__(self, bus, clock, reset, ram: "FaultyAxiRam"):
        self.ram = ram
        self.log = logging.getLogger(f"cocotb.faultyram.{bus.aw._name or 'aw'}")
        self.aw_channel = AxiAWSink(bus.aw, clock, reset)
        self.aw_channel.queue_occupancy_limit = 2
        self.w_channel = AxiWSink(bus.w, clock, reset)
        self.w_channel.queue_occupancy_limit = 2
        self.b_channel = AxiBSource(bus.b, clock, reset)
        self.b_channel.queue_occupancy_limit = 2
        self.channels = (self.aw_channel, self.w_channel, self.b_channel)
        self.lanes = len(self.w_channel.bus.wdata) // 8
        self.has_strb = hasattr(self.w_channel.bus, "wstrb")
        self._start_reset(reset)

    async def _process(self):
        max_size = (self.lanes - 1).bit_length()
        while True:
            aw = await self.aw_channel.recv()
            awid = int(getattr(aw, "awid", 0))
            addrs = _beat_addrs(int(aw.awaddr), int(getattr(aw, "awlen", 0)) + 1,
                                int(getattr(aw, "awsize", max_size)),
                                AxiBurstType(int(getattr(aw, "awburst", AxiBurstType.INCR))),
                                self.lanes)
            bad = self.ram.faults.resolve("write", addrs)
            if "STRAY_R" in bad.values():
                self.log.info("injected a stray R beat with the write burst at 0x%x", addrs[0])
                self.ram.read_if.stray_r()
            b = AxiBTransaction()
            b.bid = awid ^ 1 if "BID" in bad.values() else awid
            b.bresp = AxiResp.OKAY
            bad = {k: v for k, v in bad.items() if v in RESPONSES}
            for n, a in enumerate(addrs):
                w = await self.w_channel.recv()
                if n in bad:
                    self.log.info("injected %s on the write beat at 0x%x", bad[n], a)
                    if b.bresp == AxiResp.OKAY:
                        b.bresp = RESPONSES[bad[n]]
                    continue
                data = int(w.wdata).to_bytes(self.lanes, "little")
                full = (1 << self.lanes) - 1
                strb = int(w.wstrb) if self.has_strb else full
                if strb == full:
                    self.ram.write(a % self.ram.size, data)
                else:
                    for i in range(self.lanes):
                        if strb >> i & 1:
                            self.ram.write((a + i) % self.ram.size, data[i:i + 1])
            await self.b_channel.send(b)

    def stray_b(self) -> None:
        """Queue one B response (OKAY, BID 0) that no AW asked for."""
        b = AxiBTransaction()
        b.bid, b.bresp = 0, AxiResp.OKAY
        self.b_channel.send_nowait(b)


class FaultyAxiRam(Memory):
    """An AXI4 slave memory (as ``AxiRam``) with injectable error responses.

    Args:
        bus: an ``AxiBus`` (``AxiBus.from_prefix(dut, "m_axi")``).
        clock, reset: the clock and the active-high reset.
        size: the memory's size; address ``a`` maps to ``a % size``.
        mem: the backing store of another memory, to share it between ports.
        faults: a :class:`FaultList` to share between ports (default: a new one).
    """

    def __init__(self, bus, clock, reset=None, size: int = 2 ** 64, mem=None,
                 faults: "FaultList | None" = None):
        super().__init__(size, mem)
        self.faults = faults if faults is not None else FaultList()
        self.write_if = FaultyRamWrite(bus.write, clock, reset, self)
        self.read_if = FaultyRamRead(bus.read, clock, reset, self)


class AxiChecker:
    """A passive protocol monitor of one AXI4 master port (signals
    ``<prefix>_arvalid`` ...): every R beat and B response accepted is
    checked against the bursts in flight (AR lengths, AW count), and each one
    with RRESP/BRESP != OKAY, a nonzero RID/BID, a wrong RLAST, or no burst
    outstanding is appended to :attr:`violations` as (cycle, text), where
    cycle is ``now()`` at the rising edge the beat was accepted on. Reset
    empties the bursts in flight. Values are sampled at the rising edge, as
    cocotbext-axi's own models sample them.
    """

    def __init__(self, dut, prefix: str, clock, reset, now):
        self.s = {n: getattr(dut, f"{prefix}_{n}") for n in (
            "arvalid", "arready", "arlen", "rvalid", "rready", "rresp", "rid", "rlast",
            "awvalid", "awready", "bvalid", "bready", "bresp", "bid")}
        self.clock, self.reset, self.now = clock, reset, now
        self.violations: list[tuple[int, str]] = []
        self.reads: list[int] = []          # beats left of each read burst in flight
        self.writes = 0                     # write bursts awaiting their B response
        cocotb.start_soon(self._run())

    def outstanding(self) -> tuple[int, int]:
        """(R beats still owed, B responses still owed) by the bursts the
        master has issued: (0, 0) when the port is left clean."""
        return sum(self.reads), self.writes

    def _v(self, name: str) -> int:
        return int(self.s[name].value)

    async def _run(self):
        from cocotb.triggers import RisingEdge
        while True:
            await RisingEdge(self.clock)
            if int(self.reset.value):
                self.reads, self.writes = [], 0
                continue
            t = self.now()
            if self._v("rvalid") and self._v("rready"):
                bad = []
                if self._v("rresp"):
                    bad.append(f"RRESP {self._v('rresp')}")
                if self._v("rid"):
                    bad.append("RID != 0")
                if not self.reads:
                    bad.append("R beat with no read outstanding")
                else:
                    self.reads[0] -= 1
                    if bool(self._v("rlast")) != (self.reads[0] == 0):
                        bad.append("RLAST wrong")
                    if self.reads[0] == 0:
                        self.reads.pop(0)
                if bad:
                    self.violations.append((t, "R: " + ", ".join(bad)))
            if self._v("bvalid") and self._v("bready"):
                bad = []
                if self._v("bresp"):
                    bad.append(f"BRESP {self._v('bresp')}")
                if self._v("bid"):
                    bad.append("BID != 0")
                if self.writes == 0:
                    bad.append("B response with no write outstanding")
                else:
                    self.writes -= 1
                if bad:
                    self.violations.append((t, "B: " + ", ".join(bad)))
            if self._v("arvalid") and self._v("arready"):
                self.reads.append(self._v("arlen") + 1)
            if self._v("awvalid") and self._v("awready"):
                self.writes += 1
