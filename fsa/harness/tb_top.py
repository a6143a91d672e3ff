"""Generic cocotb test of the whole device: runs one program, or several
one after another on the same device without a reset (a case file from the
Python side: config, instruction words or a list of programs, initial memory
segments, regions to dump after the last program, pauses, error injection,
an abort or a reset in the middle) through the buses and writes what it saw
(per program: state, error, counters, cycles and the memory dumps after it)
to the run folder as result.json for the Python side to check.

Case keys: ``words`` (one program) or ``programs`` (a list of word lists:
``runs`` gets one entry per program; after an error a start is written
(it must be ignored: ``start_in_error`` records the state after it) and
then an abort, the way out of ERROR, before the next program); ``memory``,
``dumps``, ``max_cycles`` (per program), ``pauses``, ``seed``, ``inject``,
``overfill``, ``reset_midway`` / ``abort_midway`` (cycles after the first
start: reset, or abort, in the middle of the first program, then reload the
memory and run the programs; ``midway`` records the status then, and for an
abort ``abort_cycles``); ``settings`` (setting registers written after
the reset and the memory load, before the programs; each write must be
answered OKAY and read back, else the test fails);
``fetch`` (a byte address, or absent/None: where the programs are placed in
memory and fetched by the device, instead of pushed; see
fsa.cycle.fetch.program_address); ``mem_model`` (``"axi"``, the default:
cocotbext-axi memories on the ``fsa_top`` ports; ``"fast"``: the toplevel is
``fsa_memtop`` and the memory is inside the simulation, fsa/fastmem.py; no
pauses or injected faults then).

Used by tb/top/test_top.py (device tests), fsa.engines.SimEngine (fsa run /
fsa exec) and tb/attention/test_attention.py (the regression).
"""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import ClockCycles

from fsa.harness.device import Device, poison
from fsa.config import FSAConfig


@cocotb.test()
async def run_program(dut):
    case = json.load(open(os.environ["FSA_CASE"]))
    cfg = FSAConfig.from_dict(case["config"])
    dev = Device(dut, cfg, pauses=case.get("pauses", 0.0), seed=case.get("seed", 1),
                 memory=case.get("mem_model", "axi"))
    inj = case.get("inject", {})
    poison(dev, reads=tuple(inj["read"]) if "read" in inj else None,
           writes=tuple(inj["write"]) if "write" in inj else None)
    await dev.reset()
    ident = {"magic": await dev.read("magic"), "identity": await dev.read("identity"),
             "queue": await dev.read("queue")}
    for addr, data in case["memory"]:
        dev.write_mem(int(addr), bytes.fromhex(data))
    await dev.load_mem()
    result = {"identity": ident, "runs": []}
    result["settings"] = await dev.write_settings(case.get("settings", {}))
    max_cycles = case["max_cycles"]
    if case.get("overfill"):
        # more words than the queue holds while idle: the extra pushes are refused
        q = cfg.inst_queue_size
        await dev.push([0] * (q + case["overfill"]))
        result["overfill"] = {"refused": dev.refused, "state": (await dev.status())["state"],
                              "q_free": await dev.read("q_free")}
        await dev.reset()
    programs = case.get("programs") or [case["words"]]
    if case.get("abort_midway"):
        # start the first program, abort it in the middle (AXI bursts may be in
        # flight), then run the programs on the same device (no reset)
        if case.get("fetch") is not None:
            await dev.start_fetch(programs[0], case["fetch"])
        else:
            await dev.push(programs[0][:cfg.inst_queue_size])
            await dev.start()
        await ClockCycles(dut.clk, case["abort_midway"])
        result["midway"] = await dev.status()
        result["abort_cycles"] = await dev.abort(max_cycles)
        result["after_abort"] = await dev.status()
        for addr, data in case["memory"]:
            dev.write_mem(int(addr), bytes.fromhex(data))
        await dev.load_mem()
    if case.get("reset_midway"):
        # start the program, reset in the middle, then run it again cleanly
        await dev.push(programs[0][:cfg.inst_queue_size])
        await dev.start()
        await ClockCycles(dut.clk, case["reset_midway"])
        mid = await dev.status()
        result["midway"] = mid
        await dev.reset()
        for addr, data in case["memory"]:
            dev.write_mem(int(addr), bytes.fromhex(data))
        await dev.load_mem()
    for k, prog in enumerate(programs):
        if k and result["runs"][-1]["state"] == "error":
            # a start in ERROR is ignored (the error stays readable): record the
            # state after one, then abort (the way out of ERROR)
            await dev.start()
            result["runs"][-1]["start_in_error"] = (await dev.status())["state"]
            result["runs"][-1]["abort_cycles"] = await dev.abort(max_cycles)
        st = await dev.run(prog, max_cycles, fetch_addr=case.get("fetch"))
        st["dumps"] = [(await dev.dump_mem(int(a), int(n))).hex() for a, n in case.get("dumps", [])]
        result["runs"].append(st)
    result["dumps"] = [(await dev.dump_mem(int(a), int(n))).hex() for a, n in case.get("dumps", [])]
    json.dump(result, open(os.path.join(os.environ["FSA_RUN_DIR"], "result.json"), "w"))
    dut._log.info("state %s error %s after %d cycles; counters %s", st["state"], st["error"],
                  st["waited"], st["counters"])
