"""cocotb bench for fsa_mxctrl: its per-cycle outputs must equal the plans'
schedule (tb/common/planstim.py) for a stream of matrix instructions: PE control of
every row, CMP/ACC commands, spad and acc reads and writes, the input-delayer
settings, semaphore releases, and the start cycle of every instruction."""
from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from fsa import config as fconfig
from fsa.plan import FUNCS
from tb.common.planstim import Program
from rtl import fsa_acc


@cocotb.test()
async def controller_follows_plans(dut):
    case = json.loads(os.environ["FSA_CASE"])
    cfg = fconfig.get(case["config"])
    prog = Program(cfg)
    for ins in case["instrs"]:
        prog.add(**ins)
    prog.compile(fsa_acc.reciprocal_cycles(cfg.a_type, cfg.div_bits_per_cycle), with_data=False)

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.in_valid.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    queue = list(case["instrs"])
    accepted = []
    problems = []
    cycle = 0
    t0 = None
    limit = prog.T + 50
    while cycle < limit:
        if queue:
            ins = queue[0]
            rel = ins.get("rel")
            dut.in_valid.value = 1
            dut.in_func.value = FUNCS.index(ins["func"])
            dut.in_spad_addr.value = ins.get("spad_addr", 0)
            dut.in_spad_stride.value = ins.get("spad_stride", 1) & 0x1F
            fl = {"LOAD_STATIONARY": (0, 0, 0), "ATTENTION_SCORE": (1, 1, 1),
                  "ATTENTION_VALUE": (1, 0, 1)}.get(ins["func"], (0, 0, 0))
            dut.in_rev_in.value, dut.in_rev_out.value, dut.in_delay.value = fl
            dut.in_acc_addr.value = ins.get("acc_addr", 0)
            dut.in_acc_stride.value = ins.get("acc_stride", 1) & 0x1F
            dut.in_zero.value = int(ins.get("zero", False))
            dut.in_causal.value = int(ins.get("causal", False))
            dut.in_mask_keys.value = int(ins.get("mask_keys", False))
            dut.in_wait_prev_acc.value = int(ins.get("wait_prev_acc", False))
            dut.in_rel_valid.value = int(rel is not None)
            dut.in_rel_id.value = rel[0] if rel else 0
            dut.in_rel_value.value = rel[1] if rel else 0
        else:
            dut.in_valid.value = 0
        await ReadOnly()
        if queue and int(dut.in_ready.value):
            accepted.append(cycle)
            queue.pop(0)
            if t0 is None:
                t0 = cycle + 1
        if t0 is not None and cycle >= t0:
            t = cycle - t0
            exp = {
                "ctrl": prog.ctrl[t] if t < prog.T else 0,
                "cmp_cmd": prog.cmp[t] if t < prog.T else 0,
                "acc_cmd": prog.acc[t] if t < prog.T else 0,
            }
            if t < prog.T and prog.cmp[t] == 1:
                exp["cmp_causal"] = prog.causal[t]
                exp["cmp_mask"] = prog.mask[t]
            rd = prog.spadrd[t] if t < prog.T else None
            exp["spad_en"] = int(rd is not None and rd[0] == "sram")
            if exp["spad_en"]:
                exp["spad_addr"] = rd[1]
            prev = prog.spadrd[t - 1] if 0 < t <= prog.T else None
            exp["id_valid"] = int(prev is not None)
            if prev is not None:
                exp["id_const"] = int(prev[0] == "const")
                fl = prog.idflags[t - 1]
                exp["id_rev_in"], exp["id_rev_out"], exp["id_delay"] = (int(x) for x in fl)
                if prev[0] == "const":
                    exp["id_csel"] = prev[1]
                    if prev[1] == 2:
                        exp["id_k"] = prev[2]
            ra = prog.accraddr[t] if t < prog.T else None
            exp["acc_ren"] = int(ra is not None)
            if ra is not None:
                exp["acc_raddr"] = ra
            if 0 < t <= prog.T and prog.accraddr[t - 1] is not None:
                exp["acc_zero"] = int(prog.acczero[t])
            wa = prog.accwr[t] if t < prog.T else None
            exp["acc_wen"] = int(wa is not None)
            if wa is not None:
                exp["acc_waddr"] = wa
            rel = prog.rel[t] if t < prog.T else None
            exp["rel_valid"] = int(rel is not None)
            if rel is not None:
                exp["rel_id"], exp["rel_value"] = rel
            for name, want in exp.items():
                got = int(getattr(dut, name).value)
                if got != want and len(problems) < 30:
                    problems.append(f"t={t}: {name} = {got:#x}, plan says {want:#x}")
        await RisingEdge(dut.clk)
        cycle += 1
        if not queue and t0 is not None and cycle - t0 > prog.T and not int(dut.busy.value):
            break
    starts = [a + 1 - t0 for a in accepted]
    if starts != prog.starts:
        problems.insert(0, f"start cycles {starts} != plan {prog.starts}")
    if int(dut.busy.value):
        problems.append("controller still busy at the end")
    dut._log.info("starts %s, %d cycles", starts, prog.T)
    assert not problems, "controller differs from the plans:\n" + "\n".join(problems)
