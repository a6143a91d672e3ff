"""cocotb bench of the setting registers (fsa/hw/regs.py: scale_e 0x58,
scale_a 0x5C, key_limit 0x60) on the whole device (``fsa_top``): reset
values, writes and read-back while IDLE and DONE, SLVERR (value unchanged)
for out-of-range values and for any write while a program runs, values kept
across start, done and abort, and ``rst`` restoring the reset values.

Case (FSA_CASE, JSON): ``config``, ``new`` (name -> a legal value, each
different from its reset value), ``bad`` ([name, value] pairs out of range),
``busy`` (the words of a program that stays ACTIVE for a few hundred cycles).
The bench writes ``settings_result.json`` (what it saw) to the run folder.
"""
from __future__ import annotations

import json
import os

import cocotb

from fsa.harness.device import Device
from fsa.config import FSAConfig
from fsa.hw import regs as hwregs

OKAY, SLVERR = 0, 2


@cocotb.test()
async def setting_registers(dut):
    case = json.load(open(os.environ["FSA_CASE"]))
    cfg = FSAConfig.from_dict(case["config"])
    dev = Device(dut, cfg)
    await dev.reset()
    names = hwregs.SETTINGS
    defaults = hwregs.setting_defaults(cfg)
    seen = {}

    async def values() -> dict:
        return {n: await dev.read(n) for n in names}

    seen["after_reset"] = await values()
    assert seen["after_reset"] == defaults, (seen["after_reset"], defaults)
    new = case["new"]
    for n in names:                                  # IDLE: accepted
        assert await dev.write(n, new[n]) == OKAY, n
    seen["written"] = await values()
    assert seen["written"] == new, seen["written"]
    for n, v in case["bad"]:                         # out of range: refused, unchanged
        assert await dev.write(n, v) == SLVERR, (n, v)
    assert await values() == new
    # while the program runs (state ACTIVE): refused, unchanged
    await dev.push(case["busy"])
    await dev.start()
    assert await dev.read("state") == int(hwregs.State.ACTIVE)
    resp = {n: await dev.write(n, defaults[n]) for n in names}
    still = await dev.read("state")
    seen["active_resp"] = resp
    assert still == int(hwregs.State.ACTIVE), "the busy program ended too early for the check"
    assert resp == {n: SLVERR for n in names}, resp
    await dev.wait_irq(100_000)
    assert await dev.read("state") == int(hwregs.State.DONE)
    assert await values() == new                     # kept across the start and the program
    # DONE: accepted; kept across an abort
    assert await dev.write("key_limit", 0) == OKAY
    await dev.abort()
    seen["after_abort"] = await values()
    assert seen["after_abort"] == dict(new, key_limit=0), seen["after_abort"]
    await dev.reset()                                # only rst restores them
    seen["after_rst"] = await values()
    assert seen["after_rst"] == defaults, seen["after_rst"]
    json.dump(seen, open(os.path.join(os.environ["FSA_RUN_DIR"], "settings_result.json"), "w"))
