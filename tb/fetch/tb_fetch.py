"""cocotb bench of the program-fetch registers and the control port in fetch
mode (run by tb/fetch/test_fetch.py): the fetch registers read back what was
written; a push while a fetch-mode program runs is refused (SLVERR) and
never reaches the queue; the program still ends DONE with every word
fetched; then a pushed program (plain start) and a fetched one run on the
same device.  The outcome goes to result.json for the pytest side."""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import ClockCycles

from fsa.harness.device import Device
from fsa.config import FSAConfig
from fsa.isa import Fence, encode


@cocotb.test()
async def fetch_registers_and_pushes(dut):
    cfg = FSAConfig.from_dict(json.loads(os.environ["FSA_CFG"]))
    addr = int(os.environ["FSA_FETCH_ADDR"])
    dev = Device(dut, cfg)
    await dev.reset()
    out = {}
    for name, value in (("fetch_lo", 0x89ABCDEF), ("fetch_hi", 0x7F), ("fetch_words", 12345)):
        out[f"{name}_resp"] = await dev.write(name, value)
        out[name] = await dev.read(name)
    words = encode([Fence(mx=True)] * 300 + [Fence(stop=True)])
    await dev.start_fetch(words, addr)
    await ClockCycles(dut.clk, 20)
    out["push_resp"] = await dev.write("push", encode([Fence(stop=True)])[0])
    out["state_after_push"] = (await dev.status())["state"]
    await dev.wait_irq(5000)
    out["fetch_run"] = await dev.status()
    out["fetch_run"]["fetched"] = await dev.read("fetched")
    out["push_run"] = await dev.run(encode([Fence(dma=True)] * 5 + [Fence(stop=True)]), 5000)
    out["refetch_run"] = await dev.run(words, 5000, fetch_addr=addr)
    json.dump(out, open(os.path.join(os.environ["FSA_RUN_DIR"], "result.json"), "w"))
