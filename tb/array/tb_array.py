"""cocotb bench for fsa_array: the plan compiler's control tables drive the
array directly (no controller), for LOAD_STATIONARY -> ATTENTION_SCORE ->
ATTENTION_VALUE over several key blocks, then the final normalisation; S, P,
the running max, l and O^T are compared bit for bit with the tile model.

Parameters come from the pytest side (tb/array/test_array.py) through the
environment: FSA_CASE (an .npz with the config name and the inputs).
"""
from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from fsa import config as fconfig
from fsa import numerics as nx
from fsa.golden import tile
from tb.common.planstim import ACC_CODE, CMP_CODE, Program, pack, unpack
from rtl import fsa_acc, fsa_cmp

assert CMP_CODE["UPDATE"] == fsa_cmp.CMD_UPDATE and CMP_CODE["RESET"] == fsa_cmp.CMD_RESET
assert ACC_CODE["ACC_SA"] == fsa_acc.CMD_ACC_SA and ACC_CODE["RECIPROCAL"] == fsa_acc.CMD_RECIPROCAL


@cocotb.test()
async def array_matches_tile_model(dut):
    case = np.load(os.environ["FSA_CASE"])
    cfg = fconfig.get(str(case["config"]))
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    EW, AW = cfg.e_fmt.width, cfg.a_fmt.width
    q, ks, vs = case["q"], case["k"], case["v"]      # (C,R), (nb,R,R), (nb,R,R)
    causal_last = bool(case["causal_last"])
    nb = ks.shape[0]

    # scratchpad image: Q rows, then per block K rows and V^T rows
    spad: dict[int, list[int]] = {}
    for c in range(C):
        spad[c] = list(q[c])
    kbase = [C + 2 * R * j for j in range(nb)]
    vbase = [C + 2 * R * j + R for j in range(nb)]
    for j in range(nb):
        for r in range(R):
            spad[kbase[j] + r] = list(ks[j][r])
            spad[vbase[j] + r] = list(vs[j][:, r])      # V^T row r
    slopes, _ = nx.pwl_constants(P, e, a)
    consts = {"one": cfg.e_fmt.one, "scale": cfg.attention_scale_bits(e),
              "slope": [int(x) for x in slopes]}
    prog = Program(cfg, spad, consts)
    L_ROW, O_ROW = 0, 1
    for j in range(nb):
        prog.add("LOAD_STATIONARY", spad_addr=C - 1, spad_stride=-1, tag=f"q{j}")
        prog.add("ATTENTION_SCORE", spad_addr=kbase[j], acc_addr=L_ROW, zero=(j == 0),
                 causal=(causal_last and j == nb - 1), tag=f"s{j}")
        prog.add("ATTENTION_VALUE", spad_addr=vbase[j], acc_addr=O_ROW, zero=(j == 0), tag=f"v{j}")
    prog.add("ATTENTION_LSE_NORM_SCALE", acc_addr=L_ROW)
    prog.add("ATTENTION_LSE_NORM", acc_addr=O_ROW)
    div_cycles = fsa_acc.reciprocal_cycles(a, cfg.div_bits_per_cycle)
    prog.compile(div_cycles)

    # what to sample, from the plans (column-0 times + column skew)
    sample_s, sample_p, sample_max = {}, {}, {}
    score_i = [i for i, ins in enumerate(prog.instrs) if ins["func"] == "ATTENTION_SCORE"]
    for j, i in enumerate(score_i):
        s0 = prog.starts[i]
        for c in range(C):
            for k in range(R):
                sample_s.setdefault(s0 + R + 1 + k + c, []).append((j, c, k))
            sample_max.setdefault(s0 + 2 * R + 1 + c, []).append((j, c))
            for r in range(R):
                sample_p.setdefault(s0 + 2 * R + 4 + P + r + c, []).append((j, r, c))

    acc_mem = {addr: [0] * C for addr in range(R + 1)}
    got_s = np.zeros((nb, C, R), np.int64)
    got_p = np.zeros((nb, C, R), np.int64)
    got_max = np.zeros((nb, C), np.int64)
    l_after, o_after = [], []
    # l is written by each score, O^T by each value: snapshot after each
    score_end = {prog.starts[i] + prog.plans[i].last: j for j, i in enumerate(score_i)}
    value_i = [i for i, ins in enumerate(prog.instrs) if ins["func"] == "ATTENTION_VALUE"]
    value_end = {prog.starts[i] + prog.plans[i].last: j for j, i in enumerate(value_i)}

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for sname in ("ctrl", "cmp_cmd", "cmp_causal", "id_data", "id_valid", "id_rev_in",
                  "id_rev_out", "id_delay", "acc_cmd", "acc_sram", "cmp_mask"):
        getattr(dut, sname).value = 0
    dut.scale_a.value = cfg.attention_scale_bits(a)     # the setting registers' reset values
    dut.key_limit.value = R
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    pe = {(r, c): getattr(dut, f"u_pe_{r}_{c}") for r in range(R) for c in range(C)}
    cmp = [getattr(dut, f"u_cmp_{c}") for c in range(C)]

    for t in range(prog.T):
        dut.ctrl.value = prog.ctrl[t]
        dut.cmp_cmd.value = prog.cmp[t]
        dut.cmp_causal.value = prog.causal[t]
        dut.cmp_mask.value = prog.mask[t]
        dut.acc_cmd.value = prog.acc[t]
        if prog.idin[t] is not None:
            data, ri, ro, dl = prog.idin[t]
            dut.id_data.value = data
            dut.id_valid.value = 1
            dut.id_rev_in.value, dut.id_rev_out.value, dut.id_delay.value = int(ri), int(ro), int(dl)
        else:
            dut.id_valid.value = 0
            dut.id_data.value = 0
        rd = prog.accrd[t]
        dut.acc_sram.value = 0 if rd in (None, "zero") else pack(acc_mem[rd], AW)
        await ReadOnly()
        for (j, c, k) in sample_s.get(t, ()):
            got_s[j, c, k] = int(cmp[c].s_in.value)
        for (j, r, c) in sample_p.get(t, ()):
            got_p[j, c, R - 1 - r] = int(pe[(r, c)].sreg.value)
        for (j, c) in sample_max.get(t, ()):
            got_max[j, c] = int(cmp[c].new_max.value)
        if prog.accwr[t] is not None:
            acc_mem[prog.accwr[t]] = unpack(int(dut.acc_wb.value), C, AW)
        if t in score_end:
            l_after.append(list(acc_mem[L_ROW]))
        if t in value_end:
            o_after.append([list(acc_mem[O_ROW + i]) for i in range(R)])
        await RisingEdge(dut.clk)

    # the model
    st = tile.TileState(cfg)
    problems = []

    def cmp_bits(what, got, exp):
        got = np.asarray(got, np.int64)
        exp = np.asarray(exp, np.int64)
        bad = np.argwhere(got != exp)
        if len(bad):
            first = ", ".join(f"{tuple(int(i) for i in ix)}: got 0x{int(got[tuple(ix)]):x} "
                              f"model 0x{int(exp[tuple(ix)]):x}" for ix in bad[:5])
            problems.append(f"{what}: {len(bad)} of {got.size} differ; first: {first}")

    for j in range(nb):
        tr = tile.score(st, q, ks[j], zero=(j == 0), causal=(causal_last and j == nb - 1))
        cmp_bits(f"block {j} S", got_s[j], tr.s)
        cmp_bits(f"block {j} running max", got_max[j], st.new_max)
        cmp_bits(f"block {j} P", got_p[j], tr.p)
        cmp_bits(f"block {j} l", l_after[j], st.l)
        tile.value(st, tr.p, vs[j], zero=(j == 0))
        cmp_bits(f"block {j} O^T", o_after[j], st.o_t)
    tile.lse_norm_scale(st)
    tile.lse_norm(st)
    final = [acc_mem[O_ROW + i] for i in range(R)]
    cmp_bits("final O^T", final, st.o_t)
    summary = {"cycles": prog.T, "blocks": nb, "starts": prog.starts}
    dut._log.info("array bench: %s", json.dumps(summary))
    assert not problems, "array differs from the tile model:\n" + "\n".join(problems)
