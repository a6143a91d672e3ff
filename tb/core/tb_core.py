"""cocotb bench for fsa_core (the matrix engine, no AXI): the scratchpad is
preloaded through its narrow port, a real instruction stream is pushed into
the queue, the engine runs, and the accumulator is read back through its
narrow port and compared bit for bit with the instruction-level golden model;
the start cycle of every matrix instruction is checked against the plans.
Error programs must end in the ERROR state with the right code, and a
semaphore that can never be acquired is caught by a watchdog that names it.
"""
from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from fsa import errors
from fsa import plan as fplan
from fsa.config import FSAConfig
from fsa.golden.machine import Machine
from fsa.isa import Matrix, decode
from fsa.hw import isa as hwisa
from fsa.hw import regs as hwregs
from fsa.hw import timing
from rtl.fsa_core import sram_geometries

S_ACTIVE, S_DONE, S_ERROR = hwregs.State.ACTIVE, hwregs.State.DONE, hwregs.State.ERROR


class CoreBench:
    def __init__(self, dut, cfg: FSAConfig):
        self.dut, self.cfg = dut, cfg
        geo = sram_geometries(cfg)
        self.sp_lane, self.ac_lane = geo["spad"][2], geo["acc"][2]
        self.sp_lanes = geo["spad"][1] // self.sp_lane
        self.ac_lanes = geo["acc"][1] // self.ac_lane

    async def reset(self, settings: "dict | None" = None):
        """Reset, with the setting inputs (the registers fsa_regs holds in the
        device) at `settings` over their reset values."""
        d = self.dut
        for name, value in dict(hwregs.setting_defaults(self.cfg), **(settings or {})).items():
            getattr(d, name).value = value
        cocotb.start_soon(Clock(d.clk, 10, unit="ns").start())
        for s in ("inst_valid", "inst_word", "start", "abort_req", "dma_ready", "dma_done", "dma_busy",
                  "dma_err", "dma_err_code", "sp_n_valid", "sp_n_we", "sp_n_addr", "sp_n_lane",
                  "sp_n_wdata", "ac_n_valid", "ac_n_we", "ac_n_addr", "ac_n_lane", "ac_n_wdata"):
            getattr(d, s).value = 0
        d.rst.value = 1
        await ClockCycles(d.clk, 3)
        d.rst.value = 0
        await RisingEdge(d.clk)

    async def _narrow(self, pre: str, we: int, addr: int, lane: int, data: int = 0,
                      limit: int = 1000) -> int | None:
        d = self.dut
        getattr(d, f"{pre}_n_valid").value = 1
        getattr(d, f"{pre}_n_we").value = we
        getattr(d, f"{pre}_n_addr").value = addr
        getattr(d, f"{pre}_n_lane").value = lane
        getattr(d, f"{pre}_n_wdata").value = data
        for _ in range(limit):
            await ReadOnly()
            ok = int(getattr(d, f"{pre}_n_ready").value)
            await RisingEdge(d.clk)
            if ok:
                break
        else:
            raise AssertionError(f"{pre} narrow port never ready (waited {limit} cycles)")
        getattr(d, f"{pre}_n_valid").value = 0
        if we:
            return None
        await ReadOnly()
        assert int(getattr(d, f"{pre}_n_rvalid").value), f"{pre}: no read data"
        v = int(getattr(d, f"{pre}_n_rdata").value)
        await RisingEdge(d.clk)
        return v

    async def write_spad_row(self, row: int, bits: np.ndarray):
        value = int.from_bytes(bits.tobytes(), "little")
        m = (1 << self.sp_lane) - 1
        for lane in range(self.sp_lanes):
            await self._narrow("sp", 1, row, lane, (value >> (lane * self.sp_lane)) & m)

    async def read_acc_row(self, row: int, dtype) -> np.ndarray:
        value = 0
        for lane in range(self.ac_lanes):
            v = await self._narrow("ac", 0, row, lane)
            value |= v << (lane * self.ac_lane)
        nbytes = self.cfg.acc_row_bytes
        return np.frombuffer(value.to_bytes(nbytes, "little"), dtype).copy()

    async def push(self, words: list[int], limit: int = 100000):
        d = self.dut
        for w in words:
            d.inst_valid.value = 1
            d.inst_word.value = w
            for _ in range(limit):
                await ReadOnly()
                ok = int(d.inst_ready.value)
                await RisingEdge(d.clk)
                if ok:
                    break
            else:
                raise AssertionError("instruction queue never ready")
        d.inst_valid.value = 0

    async def run(self, limit: int):
        """Start, then wait for DONE or ERROR; record matrix issue cycles.
        Returns (final state, cycles, issue cycles)."""
        d = self.dut
        d.start.value = 1
        await RisingEdge(d.clk)
        d.start.value = 0
        issues = []
        for cyc in range(limit):
            await ReadOnly()
            if int(d.u_mxctrl.in_valid.value) and int(d.u_mxctrl.in_ready.value):
                issues.append(cyc)
            s = int(d.state.value)
            await RisingEdge(d.clk)
            if s in (S_DONE, S_ERROR):
                return s, cyc, issues
        return int(d.state.value), limit, issues

    def waiting_on(self) -> str:
        """What the engine is waiting for (watchdog report)."""
        d = self.dut.u_dispatch          # the pending registers live in fsa_dispatch
        parts = []
        if int(d.mx_p.value):
            w0 = [int(d.mx_w0.value)]
            if hwisa.field("MATRIX", "acquire_valid").extract(w0):
                sid = hwisa.field("MATRIX", "sem_id").extract(w0)
                val = hwisa.field("MATRIX", "acquire_value").extract(w0)
                parts.append(f"matrix instruction {int(d.mx_idx.value)} waits for semaphore "
                             f"{sid} == {val}")
            else:
                parts.append(f"matrix instruction {int(d.mx_idx.value)} waits for the controller")
        if int(d.dm_p.value):
            parts.append(f"DMA instruction {int(d.dm_idx.value)} waits")
        return "; ".join(parts) or "nothing pending"


@cocotb.test()
async def core_runs_program(dut):
    case = json.load(open(os.environ["FSA_CASE"]))
    cfg = FSAConfig.from_dict(case["config"])
    tb = CoreBench(dut, cfg)
    settings = case.get("settings", {})
    await tb.reset(settings)
    spad = np.array(case["spad"], dtype=np.uint16 if cfg.e_fmt.width == 16 else np.uint32)
    for row in range(spad.shape[0]):
        await tb.write_spad_row(row, spad[row])
    words = case["words"]
    await tb.push(words)
    state, cycles, issues = await tb.run(case["limit"])
    expect = case["expect"]
    if expect == "done":
        assert state == S_DONE, (f"state {state} after {cycles} cycles, error "
                                 f"{errors.name(int(dut.err_code.value))}; {tb.waiting_on()}")
    elif expect == "hang":
        assert state == S_ACTIVE, f"expected a stuck program, got state {state}"
        report = tb.waiting_on()
        dut._log.info("watchdog: no progress after %d cycles: %s", cycles, report)
        assert case["hang_report"] in report, report
        return
    else:
        assert state == S_ERROR, f"expected error {expect}, state {state}"
        code = errors.name(int(dut.err_code.value))
        idx = int(dut.err_index.value)
        assert code == expect and idx == case["err_index"], \
            f"error {code} at instruction {idx}, expected {expect} at {case['err_index']}"
        if "wait" in case:                  # DEADLOCK: the wait register's fields
            wait = hwregs.decode_wait(int(dut.err_wait.value))
            assert wait == case["wait"], f"wait register {wait}, expected {case['wait']}"
        if "max_cycles" in case:
            assert cycles <= case["max_cycles"], f"detected after {cycles} cycles"
        dut._log.info("error %s at instruction %d after %d cycles", code, idx, cycles)
        return
    # results against the golden model
    prog = decode(words)
    m = Machine(cfg)
    for name, value in settings.items():
        m.write_setting(name, value)
    m.spad[:spad.shape[0]] = spad
    m.run(prog)
    ua = np.uint16 if cfg.a_fmt.width == 16 else np.uint32
    bad = []
    for row in range(cfg.acc_rows):
        got = await tb.read_acc_row(row, ua)
        if not np.array_equal(got, m.acc[row]):
            bad.append(f"acc row {row}: got {[hex(x) for x in got]} model {[hex(x) for x in m.acc[row]]}")
    # cycle counts: issue cycles against the plans' schedule
    mx = [i for i in prog if isinstance(i, Matrix)]
    plans = [timing.plan(cfg, int(i.func)) for i in mx]
    want = fplan.schedule_starts(plans, [i.wait_prev_acc for i in mx])
    got = [c - issues[0] for c in issues]
    if got != want:
        bad.append(f"matrix issue cycles {got} != plan {want}")
    counters = {c: int(getattr(dut, f"cnt_{c}").value) for c in
                hwregs.COUNTERS}
    if counters["mx"] != len(mx) or counters["words"] != len(words) or counters["enq"] != len(words):
        bad.append(f"counters {counters}")
    if not 0 < counters["mx_active"] <= counters["exec"]:
        bad.append(f"matrix active {counters['mx_active']} vs exec {counters['exec']}")
    periods = [got[i + 3] - got[i] for i in range(0, len(got) - 5, 3)]
    dut._log.info("done in %d cycles; issue cycles %s; key-block periods %s; counters %s",
                  cycles, got, periods, json.dumps(counters))
    json.dump({"cycles": cycles, "issues": got, "periods": periods, "counters": counters},
              open(os.path.join(os.environ["FSA_RUN_DIR"], "core_result.json"), "w"))
    assert not bad, "core differs:\n" + "\n".join(bad)
