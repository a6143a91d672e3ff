"""The fault matrix on the whole device (``fsa_top``), many faults in ONE
simulator run: a list of cases from the Python side (tb/faults/test_faults.py,
through ``FSA_CASE``), each of them a fault followed by the host's recovery
and a clean attention run whose output is dumped for the bit-exact
comparison with the golden model. Random pauses are on all five channels of
every memory port (fsa/harness/device.py) and on all five channels of the AXI4-Lite
control port (the cocotbext-axi ``AxiLiteMaster``'s own channel objects),
every case.

The device is reset once, at the beginning: every case starts where the
previous case's clean run left it (DONE), so each case's first start is a
start from DONE (a fresh program, fsa/hw/regs.py). The recovery of a case
(``recovery``) is ``abort`` (default: register 0x50, then wait for IDLE;
the cycles it took are recorded), ``reset`` (the reset pin: kept for a reset
in the middle of a run and a few error cases) or ``none`` (the case ends in
DONE with an empty queue: the clean run is simply the next start from DONE).

What each case records (result.json in the run folder): the state before it,
the status after the fault (state, error code, instruction index, the wait
register, counters), the cycles the start writes took effect in, the cycles
at which ``irq`` rose, the AXI protocol violations and error responses the
passive checkers (:class:`axi_faults.AxiChecker`) saw on the memory ports
with their cycle, what the faulty memory injected, the R beats and B
responses still owed on each port before and after the recovery, the
recovery's cycles and the status after it, and the clean run's status and
dump. The Python side checks it and derives the cycles to detect.

Case kinds (``kind``):
    program          push ``words`` (at most a queue; none: the empty program),
                     start, wait for irq
    reset_midway     run the clean program, pull ``rst`` ``cycles`` cycles after start
    abort_midway     run the clean program, abort ``cycles`` cycles after start (with
                     ``in_flight``: at the first cycle from then with an AXI burst in
                     flight); this abort is the recovery, ``status`` is read after it
    start_active     run the clean program and write start ``times`` more times while it runs
    start_repeated   push the clean program, write start ``times`` times back to back
    start_done       run the clean program to DONE (the clean run is then a second
                     program on the same device: pushed while DONE, started from DONE)
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

from fsa.config import FSAConfig
from fsa.harness.axi_faults import AxiChecker, Fault
from fsa.harness.device import CTRL_BASE, REGS, STATES, Device, pause_gen


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
    await wait_quietly(dev, max_cycles)
    return await dev.status()


async def wait_quietly(dev: Device, max_cycles: int) -> None:
    """Wait for irq at most `max_cycles`; a device that does not finish is
    left as it is (the status read next says so)."""
    try:
        await dev.wait_irq(max_cycles)
    except AssertionError:
        pass


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
    await dev.reset()                 # the only reset but the cases' own (recovery "reset")
    out = {"identity": {n: await dev.read(n) for n in ("magic", "identity", "queue")},
           "cases": []}
    for case in spec["cases"]:
        rec = {"name": case["name"]}
        # no reset between cases: the previous clean run left the device DONE
        rec["state_before"] = STATES.get(await dev.read("state"))
        dev.faults.clear()
        for f in case.get("faults", []):
            dev.faults.add(Fault(**f))
        for ch in checkers:
            ch.violations.clear()
        clk.irq_rises.clear()
        clk.starts.clear()
        load(dev, case.get("memory", []))
        kind = case["kind"]
        mc = case.get("max_cycles", 5000)
        dev.write_limit = max(1000, mc)
        if kind == "program":
            rec["status"] = await short_run(dev, case["words"], mc)
        elif kind == "reset_midway":
            # the recovery (the reset pin) is what hits the running program
            load(dev, clean["memory"])
            await dev.push(clean["words"])
            await dev.start()
            await ClockCycles(dut.clk, case["cycles"])
            rec["status"] = await dev.status()
        elif kind == "abort_midway":
            # abort exactly `cycles` after start (no register read before it:
            # the checkers' record of the bursts in flight then is free); the
            # counters are kept until the next start, so the status read
            # after the abort shows how far the program had got
            load(dev, clean["memory"])
            await dev.push(clean["words"])
            await dev.start()
            await ClockCycles(dut.clk, case["cycles"])
            # with ``in_flight``: then wait (bounded) for a cycle with an AXI
            # burst in flight, so that the abort has something to drain
            for _ in range(1000 if case.get("in_flight") else 0):
                if any(ch.outstanding() != (0, 0) for ch in checkers):
                    break
                await RisingEdge(dut.clk)
            rec["irq_at_abort"] = int(dut.irq.value)
            rec["in_flight_at_abort"] = [list(ch.outstanding()) for ch in checkers]
            rec["abort_cycles"] = await dev.abort(10_000)
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
            await wait_quietly(dev, mc)
            rec["status"] = await dev.status()
            rec["dump"] = dev.read_mem(*clean["dump"]).hex()
        elif kind == "start_repeated":
            load(dev, clean["memory"])
            await dev.push(clean["words"])
            for _ in range(case["times"]):
                await dev.start()
            await wait_quietly(dev, mc)
            rec["status"] = await dev.status()
            rec["dump"] = dev.read_mem(*clean["dump"]).hex()
        elif kind == "start_done":
            load(dev, clean["memory"])
            rec["status"] = await short_run(dev, clean["words"], mc)
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
            await dev.push(clean["words"])
            await dev.start()
            rec["state_at_push"] = STATES.get(await dev.read("state"))
            await dev.push(case["tail"])
            await wait_quietly(dev, mc)
            rec["status"] = await dev.status()
            rec["dump"] = dev.read_mem(*clean["dump"]).hex()
        else:
            raise ValueError(f"unknown case kind {kind!r}")
        rec["starts"] = list(clk.starts)
        rec["irq_rises"] = list(clk.irq_rises)
        rec["violations"] = sorted(v for ch in checkers for v in ch.violations)
        rec["injected"] = [list(i) for i in dev.faults.injected]
        rec["outstanding"] = [list(ch.outstanding()) for ch in checkers]
        # recovery: abort (default), the reset pin, or none (DONE, queue empty)
        dev.faults.clear()
        how = case.get("recovery", "abort")
        if how == "abort":
            if kind != "abort_midway":                     # (abort_midway: done above)
                rec["abort_cycles"] = await dev.abort(10_000)
        elif how == "reset":
            await dev.reset()
        elif how != "none":
            raise ValueError(f"unknown recovery {how!r}")
        rec["after_recovery"] = await dev.status()
        rec["outstanding_after"] = [list(ch.outstanding()) for ch in checkers]
        addr, n = clean["dump"]
        dev.write_mem(addr, bytes([0xA5]) * n)          # no stale output can pass
        load(dev, clean["memory"])
        st = await dev.run(clean["words"], clean["max_cycles"])
        rec["clean"] = {"state": st["state"], "error": st["error"], "waited": st["waited"],
                        "counters": st["counters"], "dump": dev.read_mem(addr, n).hex()}
        dut._log.info("case %s: %s; %s; clean run %s", case["name"],
                      {k: rec["status"][k] for k in ("state", "error", "error_index")},
                      how, st["state"])
        out["cases"].append(rec)
    out["ctrl_base"] = CTRL_BASE
    json.dump(out, open(os.path.join(os.environ["FSA_RUN_DIR"], "result.json"), "w"))
