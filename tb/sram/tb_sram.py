"""cocotb bench of ``fsa_sram`` (driven from ``tb/sram/test_sram.py``).

Parameters come in ``$FSA_SRAM_PARAMS`` (JSON: ``rows``, ``row_bits``,
``lane_bits``, ``banks``, ``cycles``); the seed is cocotb's
(``$COCOTB_RANDOM_SEED``).

Parts (cocotb's matrix_multiplier split):

* :class:`ArrayDriver`: the array port, random read / write / idle per
  cycle in phases (busy, balanced, quiet), addresses biased towards recently
  touched rows (write-then-read hazards) and towards the bank of the pending
  narrow request (bank conflicts).  Idle cycles drive random garbage on the
  other array inputs.
* :class:`NarrowRequester`: a valid/ready source on the narrow port; a
  request's ``n_valid`` and fields stay stable until it is accepted; random
  gaps (garbage fields, ``n_valid`` low) between requests.
* :class:`SramModel`: the memory, per (row, lane); only written cells are
  known.  Reads only target written cells (the memory is not initialised:
  Icarus would show X); an array read of a partly written row compares the
  written lanes only.
* Monitor and checker (:meth:`Bench.cycle`): every cycle, after the
  inputs settle (``ReadOnly``), samples ``n_ready``, ``a_rdata``,
  ``n_rvalid``, ``n_rdata`` and checks them against the expectations:
  ``n_ready`` == no bank conflict, ``a_rdata`` == the last array read's row
  (held) or 0 before the first read, ``n_rvalid``/``n_rdata`` == the narrow
  read accepted in the previous cycle (0 otherwise).

At the end the requester drains, every written row is read back through the
array port, and the handshake accounting is checked: requests issued ==
requests accepted, narrow reads accepted == ``n_rvalid`` pulses.  Failures
are collected and reported together (cycle, what, got, expected).
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

#: how many mismatches the failure message lists
SHOW = 12


@dataclass(frozen=True)
class Geometry:
    rows: int
    row_bits: int
    lane_bits: int
    banks: int

    @property
    def lanes(self) -> int:
        return self.row_bits // self.lane_bits

    @property
    def addr_bits(self) -> int:
        return max(1, (self.rows - 1).bit_length())

    @property
    def lane_sel_bits(self) -> int:
        return max(1, (self.lanes - 1).bit_length())

    def bank(self, addr: int) -> int:
        return addr & (self.banks - 1)


@dataclass
class Request:
    """One narrow-port request."""

    we: bool
    addr: int
    lane: int
    data: int
    seq: int


# ------------------------------------------------------------------ model
class SramModel:
    """Contents per (row, lane); unwritten cells are unknown (None)."""

    def __init__(self, g: Geometry):
        self.g = g
        self.cells: dict[tuple[int, int], int] = {}
        self.rows_written: set[int] = set()
        self.cell_list: list[tuple[int, int]] = []

    def _set(self, row: int, lane: int, value: int) -> None:
        if (row, lane) not in self.cells:
            self.cell_list.append((row, lane))
        self.cells[(row, lane)] = value
        self.rows_written.add(row)

    def write_row(self, row: int, value: int) -> None:
        W = self.g.lane_bits
        for lane in range(self.g.lanes):
            self._set(row, lane, (value >> (lane * W)) & ((1 << W) - 1))

    def write_lane(self, row: int, lane: int, value: int) -> None:
        self._set(row, lane, value)

    def row(self, row: int) -> list[int | None]:
        return [self.cells.get((row, lane)) for lane in range(self.g.lanes)]

    def lane(self, row: int, lane: int) -> int | None:
        return self.cells.get((row, lane))


# ------------------------------------------------------------------ drivers
class NarrowRequester:
    """Valid/ready source: holds each request stable until it is accepted."""

    def __init__(self, dut, g: Geometry, model: SramModel, rng: random.Random):
        self.dut, self.g, self.model, self.rng = dut, g, model, rng
        self.pending: Request | None = None
        self.gap = 3
        self.issued = 0
        self.stopped = False           # no new random requests
        self.script: list[Request] = []  # requests to issue first, back to back
        self.hot: list[int] = []       # recently written rows (shared with the array driver)

    def _new(self) -> Request:
        g, rng = self.g, self.rng
        if self.model.cell_list and rng.random() < 0.5:
            if self.hot and rng.random() < 0.4:
                row = rng.choice(self.hot)
                cands = [c for c in ((row, la) for la in range(g.lanes)) if c in self.model.cells]
            else:
                cands = []
            row, lane = rng.choice(cands or self.model.cell_list)
            return Request(False, row, lane, rng.getrandbits(g.lane_bits), self.issued)
        row = rng.choice(self.hot) if self.hot and rng.random() < 0.3 else rng.randrange(g.rows)
        return Request(True, row, rng.randrange(g.lanes), rng.getrandbits(g.lane_bits),
                       self.issued)

    def drive(self) -> Request | None:
        """Put this cycle's request (or garbage with n_valid low) on the port."""
        d, g, rng = self.dut, self.g, self.rng
        if self.pending is None and self.script:
            self.pending = self.script.pop(0)
            self.issued += 1
        elif self.pending is None and not self.stopped:
            if self.gap > 0:
                self.gap -= 1
            else:
                self.pending = self._new()
                self.issued += 1
        p = self.pending
        if p is None:
            d.n_valid.value = 0
            d.n_we.value = rng.getrandbits(1)
            d.n_addr.value = rng.getrandbits(g.addr_bits)
            d.n_lane.value = rng.getrandbits(g.lane_sel_bits)
            d.n_wdata.value = rng.getrandbits(g.lane_bits)
        else:
            d.n_valid.value = 1
            d.n_we.value = int(p.we)
            d.n_addr.value = p.addr
            d.n_lane.value = p.lane
            d.n_wdata.value = p.data
        return p

    def accepted(self) -> None:
        self.pending = None
        r = self.rng.random()
        self.gap = 0 if r < 0.55 else (self.rng.randint(1, 3) if r < 0.9 else
                                       self.rng.randint(4, 12))


class ArrayDriver:
    """Random array-port traffic in phases; returns the op it drove."""

    PHASES = (("busy", 0.08), ("balanced", 0.4), ("quiet", 0.85))

    def __init__(self, dut, g: Geometry, model: SramModel, rng: random.Random,
                 narrow: NarrowRequester):
        self.dut, self.g, self.model, self.rng, self.narrow = dut, g, model, rng, narrow
        self.idle_p = 0.4
        self.left = 0

    def _row(self) -> int:
        g, rng = self.g, self.rng
        p = self.narrow.pending
        r = rng.random()
        if p is not None and r < 0.35:             # same bank as the narrow request
            return rng.randrange(g.bank(p.addr), g.rows, g.banks)
        if self.narrow.hot and r < 0.6:
            return rng.choice(self.narrow.hot)
        return rng.randrange(g.rows)

    def next_op(self):
        rng = self.rng
        if self.left == 0:
            _, self.idle_p = rng.choice(self.PHASES)
            self.left = rng.randint(20, 200)
        self.left -= 1
        if rng.random() < self.idle_p:
            return None
        if self.model.rows_written and rng.random() < 0.5:
            row = self._row()
            if row not in self.model.rows_written:
                row = rng.choice(sorted(self.model.rows_written))
            if rng.random() < 0.3:
                # the accumulator's pattern: read one row, write another (w port)
                other = self._row()
                if other != row:
                    return ("rw", row, other, rng.getrandbits(self.g.row_bits))
            return ("r", row)
        if rng.random() < 0.3:
            return ("W", self._row(), rng.getrandbits(self.g.row_bits))
        return ("w", self._row(), rng.getrandbits(self.g.row_bits))

    def drive(self, op) -> None:
        d, g, rng = self.dut, self.g, self.rng
        if op is not None and op[0] in ("rw", "W"):
            d.w_en.value = 1
            d.w_addr.value = op[-2]
            d.w_wdata.value = op[-1]
        else:
            d.w_en.value = 0
            d.w_addr.value = rng.getrandbits(g.addr_bits)
            d.w_wdata.value = rng.getrandbits(g.row_bits)
        if op is not None and op[0] == "W":
            op = None
        if op is None:
            d.a_en.value = 0
            d.a_we.value = rng.getrandbits(1)
            d.a_addr.value = rng.getrandbits(g.addr_bits)
            d.a_wdata.value = rng.getrandbits(g.row_bits)
        elif op[0] in ("r", "rw"):
            d.a_en.value = 1
            d.a_we.value = 0
            d.a_addr.value = op[1]
            d.a_wdata.value = rng.getrandbits(g.row_bits)
        else:
            d.a_en.value = 1
            d.a_we.value = 1
            d.a_addr.value = op[1]
            d.a_wdata.value = op[2]


# ------------------------------------------------------------------ monitor / checker
def _lanes(value, lanes: int, width: int) -> list[int | None]:
    """Split a sampled row into lanes; None for a lane holding X/Z."""
    if value.is_resolvable:
        v = int(value)
        return [(v >> (i * width)) & ((1 << width) - 1) for i in range(lanes)]
    s = str(value)
    n = len(s)
    out: list[int | None] = []
    for i in range(lanes):
        chunk = s[n - (i + 1) * width: n - i * width]
        out.append(int(chunk, 2) if set(chunk) <= {"0", "1"} else None)
    return out


def _fmt(v) -> str:
    if v is None:
        return "X"
    if isinstance(v, list):
        return "[" + " ".join(_fmt(x) for x in v) + "]"
    return f"{v:x}"


class Bench:
    """Drives one cycle at a time and checks every output every cycle."""

    def __init__(self, dut, g: Geometry, seed: int):
        self.dut, self.g = dut, g
        self.rng = random.Random(f"sram-{seed}-{g.rows}-{g.row_bits}-{g.lane_bits}-{g.banks}")
        self.model = SramModel(g)
        self.narrow = NarrowRequester(dut, g, self.model, self.rng)
        self.array = ArrayDriver(dut, g, self.model, self.rng, self.narrow)
        self.errors: list[str] = []
        self.nerr = 0
        self.cyc = 0
        self.exp_a: list[int | None] = [0] * g.lanes    # 0 after reset, until the first read
        self.exp_n: int | None | bool = False           # False: no n_rvalid expected
        self.stats = dict(a_reads=0, a_writes=0, n_reads=0, n_writes=0, stalls=0,
                          n_accepted=0, rvalid_pulses=0, a_checks=0, n_checks=0,
                          stall_cycles_no_valid=0)

    def error(self, what: str) -> None:
        self.nerr += 1
        if len(self.errors) < SHOW:
            self.errors.append(f"cycle {self.cyc}: {what}")

    def touch(self, row: int) -> None:
        hot = self.narrow.hot
        if row in hot:
            hot.remove(row)
        hot.append(row)
        del hot[:-4]

    async def reset(self) -> None:
        d = self.dut
        for h in (d.a_en, d.a_we, d.a_addr, d.a_wdata, d.w_en, d.w_addr, d.w_wdata, d.n_valid,
                  d.n_we, d.n_addr, d.n_lane, d.n_wdata):
            h.value = 0
        d.rst.value = 1
        for _ in range(3):
            await RisingEdge(d.clk)
        await FallingEdge(d.clk)
        d.rst.value = 0

    async def cycle(self, a_op="random") -> None:
        """One clock cycle: drive both ports, sample, check, update the model."""
        d, g, st = self.dut, self.g, self.stats
        await FallingEdge(d.clk)
        self.cyc += 1
        if a_op == "random":
            a_op = self.array.next_op()
        self.array.drive(a_op)
        req = self.narrow.drive()
        await ReadOnly()
        # --- sample
        ready = d.n_ready.value
        a_got = _lanes(d.a_rdata.value, g.lanes, g.lane_bits)
        rvalid = d.n_rvalid.value
        n_got = _lanes(d.n_rdata.value, 1, g.lane_bits)[0]
        # --- check the registered outputs against last cycle's expectations
        for lane, (got, exp) in enumerate(zip(a_got, self.exp_a)):
            if exp is not None and got != exp:
                self.error(f"a_rdata lane {lane}: got {_fmt(got)}, expected {_fmt(exp)} "
                           f"(row {_fmt(a_got)} vs model {_fmt(self.exp_a)})")
        st["a_checks"] += 1
        if not rvalid.is_resolvable:
            self.error(f"n_rvalid is {rvalid}")
        elif self.exp_n is False:
            if int(rvalid):
                self.error("n_rvalid high without an accepted narrow read in the last cycle")
            if n_got != 0:
                self.error(f"n_rdata = {_fmt(n_got)} while n_rvalid is low (expected 0)")
        else:
            if not int(rvalid):
                self.error("n_rvalid low after an accepted narrow read")
            elif n_got != self.exp_n:
                self.error(f"n_rdata: got {_fmt(n_got)}, expected {_fmt(self.exp_n)}")
            st["n_checks"] += 1
        if rvalid.is_resolvable and int(rvalid):
            st["rvalid_pulses"] += 1
        # --- handshake: n_ready low exactly on a bank conflict
        a_addr = int(d.a_addr.value)
        n_addr = int(d.n_addr.value)
        w_on = a_op is not None and a_op[0] in ("rw", "W")
        a_on = a_op is not None and a_op[0] != "W"
        w_addr = int(d.w_addr.value)
        exp_ready = not ((a_on and g.bank(a_addr) == g.bank(n_addr))
                         or (w_on and g.bank(w_addr) == g.bank(n_addr)))
        if not ready.is_resolvable or bool(int(ready)) != exp_ready:
            self.error(f"n_ready = {ready}, expected {int(exp_ready)} (a_en={int(a_op is not None)}"
                       f" a_addr={a_addr} n_addr={n_addr} banks={g.banks})")
        acc = req is not None and exp_ready
        if req is not None and not exp_ready:
            st["stalls"] += 1
        if req is None and not exp_ready:
            st["stall_cycles_no_valid"] += 1
        # --- model (reads first: both ports read the contents before this cycle's writes)
        self.exp_n = False
        if acc:
            st["n_accepted"] += 1
            if not req.we:
                self.exp_n = self.model.lane(req.addr, req.lane)
                st["n_reads"] += 1
        if a_op is not None and a_op[0] in ("r", "rw"):
            self.exp_a = self.model.row(a_op[1])
            st["a_reads"] += 1
        if acc:
            if req.we:
                self.model.write_lane(req.addr, req.lane, req.data)
                st["n_writes"] += 1
            self.touch(req.addr)
            self.narrow.accepted()
        if a_op is not None:
            if a_op[0] in ("w", "W"):
                self.model.write_row(a_op[1], a_op[2])
                st["a_writes"] += 1
            if a_op[0] == "rw":
                self.model.write_row(a_op[2], a_op[3])
                st["w_writes"] = st.get("w_writes", 0) + 1
                self.touch(a_op[2])
            self.touch(a_op[1])

    def finish(self) -> None:
        st = self.stats
        pend = 1 if self.narrow.pending is not None else 0
        if self.narrow.issued != st["n_accepted"] + pend:
            self.error(f"narrow requests issued {self.narrow.issued} != accepted "
                       f"{st['n_accepted']} + pending {pend}")
        if st["rvalid_pulses"] != st["n_reads"]:
            self.error(f"n_rvalid pulses {st['rvalid_pulses']} != narrow reads accepted "
                       f"{st['n_reads']}")
        self.dut._log.info("fsa_sram %s: %d cycles, %s", self.g, self.cyc, st)
        if self.nerr:
            raise AssertionError(f"fsa_sram {self.g}: {self.nerr} mismatches; first "
                                 f"{len(self.errors)}:\n  " + "\n  ".join(self.errors))


def _params() -> tuple[Geometry, int]:
    p = json.loads(os.environ["FSA_SRAM_PARAMS"])
    g = Geometry(p["rows"], p["row_bits"], p["lane_bits"], p["banks"])
    return g, int(p.get("cycles", 3000))


def _seed() -> int:
    return int(os.environ.get("COCOTB_RANDOM_SEED", "1"))


async def _start(dut, g: Geometry) -> Bench:
    Clock(dut.clk, 10, unit="ns").start()
    b = Bench(dut, g, _seed())
    await b.reset()
    return b


@cocotb.test()
async def sram_random(dut):
    """Random traffic on both ports against the model, then a full read-back."""
    g, cycles = _params()
    b = await _start(dut, g)
    for _ in range(cycles):
        await b.cycle()
    # drain the narrow port, then read every written row back through the array
    b.narrow.stopped = True
    for _ in range(64):
        if b.narrow.pending is None:
            break
        await b.cycle(None)
    if b.narrow.pending is not None:
        b.error("narrow request still pending 64 idle array cycles after the end")
    for row in sorted(b.model.rows_written):
        await b.cycle(("r", row))
    await b.cycle(None)
    await b.cycle(None)
    st = b.stats
    # the traffic reached what the bench promises
    need = dict(a_reads=cycles // 8, a_writes=cycles // 8, n_reads=cycles // 20,
                n_writes=cycles // 20, stalls=cycles // 40)
    short = {k: (st[k], v) for k, v in need.items() if st[k] < v}
    if short:
        b.error(f"traffic too thin (got, needed): {short}")
    b.finish()


@cocotb.test()
async def sram_directed(dut):
    """The timing diagram of rtl/fsa_sram.py's docstring, on every geometry
    (with banks = 1 the handshake trace must be the diagram's exactly), then
    a narrow write read back by the array port in the next cycle."""
    g, _ = _params()
    b = await _start(dut, g)
    r5, r7, r2 = 5, 7, 2
    v5, v7, v2, v5new = (b.rng.getrandbits(g.row_bits) for _ in range(4))
    b.narrow.stopped = True                 # only scripted requests
    for row, v in ((r5, v5), (r7, v7), (r2, v2)):
        await b.cycle(("w", row, v))
    await b.cycle(("r", r7))                # "old" = r7
    lane = g.lanes - 1
    b.narrow.script = [Request(False, r7, lane, 0, 0), Request(False, r2, lane, 0, 1)]
    trace = []
    for op in (("w", r5, v5new), None, ("r", r5), None, None, None):
        await b.cycle(op)
        trace.append((int(dut.n_ready.value), int(dut.n_rvalid.value)))
    if g.banks == 1:
        want = [(0, 0), (1, 0), (0, 1), (1, 0), (1, 1), (1, 0)]   # (n_ready, n_rvalid)
        if trace != want:
            b.error(f"handshake trace (n_ready, n_rvalid) per cycle {trace}, diagram says {want}")
    # narrow write of lane 0 of r2, array read of r2 in the next cycle
    b.narrow.script = [Request(True, r2, 0, b.rng.getrandbits(g.lane_bits), 2)]
    await b.cycle(None)
    await b.cycle(("r", r2))
    await b.cycle(None)
    await b.cycle(None)
    if b.stats["n_accepted"] != 3 or b.stats["rvalid_pulses"] != 2:
        b.error(f"scripted narrow requests: {b.stats}")
    b.finish()
