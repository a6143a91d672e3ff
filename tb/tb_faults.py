"""The fault matrix on the whole device (``fsa_top``), many faults in ONE
simulator run: a list of cases from the Python side (tb/test_faults.py,
through ``FSA_CASE``), each of them a fault followed by the recovery
(today: the reset pin; an abort register is issue 13 item 2) and a clean
attention run whose output is dumped for the bit-exact comparison with the
golden model. Random pauses are on all five channels of every memory port
(tb/device.py) and on all five channels of the AXI4-Lite control port (the
cocotbext-axi ``AxiLiteMaster``'s own channel objects), every case.

What each case records (result.json in the run folder): the status after
the fault (state, error code, instruction index, counters), the cycle the
start write was accepted in, the cycles at which ``irq`` rose, the AXI
protocol violations and error responses the passive checkers
(:class:`axi_faults.AxiChecker`) saw on the memory ports with their cycle,
what the faulty memory injected, the R beats and B responses still owed on
each port when the host resets (none: the DMA drained what it had issued),
and the clean run's status and dump. The
Python side checks it and derives the cycles to detect.

Case kinds (``kind``):
    program          push ``words`` (at most a queue), start, wait for irq
    reset_midway     run the clean program, pull ``rst`` ``cycles`` cycles after start
    start_active     run the clean program and write start ``times`` more times while it runs
    start_error      run ``words`` (they fail), then write start ``times`` times in ERROR
    push_error       run ``words`` (they fail), then push the free words plus ``extra``
    push_done        run ``words`` (they finish), then push the free words plus ``extra``
    push_running     push the clean program, start, then (read ACTIVE) push ``tail``
                     behind its stop fence while it runs, wait for irq
"""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from axi_faults import AxiChecker, Fault
from device import CTRL_BASE, REGS, STATES, Device, pause_gen
from fsa.config import FSAConfig


class Cycles:
    """Counts rising edges and records when irq rose and when a start write
    took effect: fsa_regs takes AW and W separately, and a write is done in
    the cycle both of its halves have been accepted (AW and W pair in order)."""

    def __init__(self, dut):
        self.dut, self.cycle = dut, 0
        self.irq_rises: list[int] = []
        self.starts: list[int] = []
        self._aw: list[tuple[int, int]] = []      # (cycle, offset) of accepted AWs
        self._w: list[int] = []                   # cycles of accepted Ws
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        prev = 0
        while True:
            await RisingEdge(d.clk)
            self.cycle += 1
            if int(d.rst.value):
                self._aw, self._w, prev = [], [], 0
                continue
            irq = int(d.irq.value)
            if irq and not prev:
                self.irq_rises.append(self.cycle)
            prev = irq
            if int(d.s_axil_awvalid.value) and int(d.s_axil_awready.value):
                self._aw.append((self.cycle, int(d.s_axil_awaddr.value) & 0xFF))
            if int(d.s_axil_wvalid.value) and int(d.s_axil_wready.value):
                self._w.append(self.cycle)
            while self._aw and self._w:
                (ta, off), tw = self._aw.pop(0), self._w.pop(0)
                if off == REGS["start"]:
                    self.starts.append(max(ta, tw))


def lite_pauses(dev: Device, p: float, seed: int) -> None:
    """Random pauses on the five channels of the AXI4-Lite master."""
    m = dev.ctrl
    for j, ch in enumerate((m.write_if.aw_channel, m.write_if.w_channel, m.write_if.b_channel,
                            m.read_if.ar_channel, m.read_if.r_channel)):
        ch.set_pause_generator(pause_gen(seed * 1000 + 500 + j, p))


def load(dev: Device, memory) -> None:
    for addr, data in memory:
        dev.write_mem(int(addr), bytes.fromhex(data))


async def short_run(dev: Device, words, max_cycles: int) -> dict:
    """Push `words` (they fit in the queue), start, wait for irq (no timeout
    error: a device that does not finish is reported as such)."""
    dev.write_limit = max(1000, max_cycles)
    await dev.push(words)
    await dev.start()
    try:
        await dev.wait_irq(max_cycles)
    except AssertionError:
        pass
    return await dev.status()


@cocotb.test()
async def fault_matrix(dut):
    spec = json.load(open(os.environ["FSA_CASE"]))
    cfg = FSAConfig.from_dict(spec["config"])
    seed = spec.get("seed", 1)
    dev = Device(dut, cfg, pauses=spec["pauses"], seed=seed)
    lite_pauses(dev, spec["lite_pauses"], seed)
    clk = Cycles(dut)
    prefixes = ["m_axi"] if cfg.mem_ports == 1 else [f"m_axi{i}" for i in range(cfg.mem_ports)]
    checkers = [AxiChecker(dut, pre, dut.clk, dut.rst, lambda: clk.cycle) for pre in prefixes]
    clean = spec["clean"]
    await dev.reset()                 # the device starts from a reset, as in tb_top.py
    out = {"identity": {n: await dev.read(n) for n in ("magic", "identity", "queue")},
           "cases": []}
    for case in spec["cases"]:
        rec = {"name": case["name"]}
        # every case starts from reset: a start from DONE (the previous clean
        # run) does not begin a fresh program today (issue 13 item 1)
        dev.faults.clear()
        await dev.reset()
        for f in case.get("faults", []):
            dev.faults.add(Fault(**f))
        for ch in checkers:
            ch.violations.clear()
        clk.irq_rises.clear()
        clk.starts.clear()
        load(dev, case.get("memory", []))
        kind = case["kind"]
        mc = case.get("max_cycles", 5000)
        if kind == "program":
            rec["status"] = await short_run(dev, case["words"], mc)
        elif kind == "reset_midway":
            load(dev, clean["memory"])
            dev.write_limit = mc
            await dev.push(clean["words"])
            await dev.start()
            await ClockCycles(dut.clk, case["cycles"])
            rec["status"] = await dev.status()
        elif kind == "start_active":
            load(dev, clean["memory"])
            await dev.push(clean["words"])
            await dev.start()
            # each extra start is written right after reading ACTIVE (one
            # register read: the program has hundreds of cycles left)
            for _ in range(case["times"]):
                state = STATES.get(await dev.read("state"))
                rec.setdefault("state_at_starts", []).append(state)
                if state != "active":
                    break
                await dev.start()
            try:
                await dev.wait_irq(mc)
            except AssertionError:
                pass
            rec["status"] = await dev.status()
            rec["dump"] = dev.read_mem(*clean["dump"]).hex()
        elif kind == "start_error":
            rec["before"] = await short_run(dev, case["words"], mc)
            for _ in range(case["times"]):
                await dev.start()
            await ClockCycles(dut.clk, 100)
            rec["status"] = await dev.status()
            rec["irq"] = int(dut.irq.value)
        elif kind in ("push_error", "push_done"):
            rec["before"] = await short_run(dev, case["words"], mc)
            free = await dev.read("q_free")
            dev.refused = 0
            await dev.push([0] * (free + case["extra"]))
            await ClockCycles(dut.clk, 100)
            rec["free_before"] = free
            rec["refused"] = dev.refused
            rec["status"] = await dev.status()
        elif kind == "push_running":
            load(dev, clean["memory"])
            dev.write_limit = mc
            await dev.push(clean["words"])
            await dev.start()
            rec["state_at_push"] = STATES.get(await dev.read("state"))
            await dev.push(case["tail"])
            try:
                await dev.wait_irq(mc)
            except AssertionError:
                pass
            rec["status"] = await dev.status()
            rec["dump"] = dev.read_mem(*clean["dump"]).hex()
        else:
            raise ValueError(f"unknown case kind {kind!r}")
        rec["starts"] = list(clk.starts)
        rec["irq_rises"] = list(clk.irq_rises)
        rec["violations"] = sorted(v for ch in checkers for v in ch.violations)
        rec["injected"] = [list(i) for i in dev.faults.injected]
        rec["outstanding"] = [list(ch.outstanding()) for ch in checkers]
        # recovery: the reset pin (abort: issue 13 item 2), then a clean run
        dev.faults.clear()
        await dev.reset()
        rec["after_reset"] = await dev.status()
        addr, n = clean["dump"]
        dev.write_mem(addr, bytes([0xA5]) * n)          # no stale output can pass
        load(dev, clean["memory"])
        st = await dev.run(clean["words"], clean["max_cycles"])
        rec["clean"] = {"state": st["state"], "error": st["error"], "waited": st["waited"],
                        "dump": dev.read_mem(addr, n).hex()}
        dut._log.info("case %s: %s; clean run %s", case["name"],
                      {k: rec["status"][k] for k in ("state", "error", "error_index")},
                      st["state"])
        out["cases"].append(rec)
    out["ctrl_base"] = CTRL_BASE
    json.dump(out, open(os.path.join(os.environ["FSA_RUN_DIR"], "result.json"), "w"))
