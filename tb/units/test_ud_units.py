"""Unit benches of the UD array units (docs/ud.md) against the per-cycle
models of ``tb/units/ud_models.py``, on ``$SIM``: the UD ``fsa_pe`` (qreg,
``use_q``, ``load_q``, ``load_reg_di``) and ``fsa_bcmp`` (the bottom
comparator row), each the toplevel of its own build from the UD config's
generated Verilog, compared with the model in every cycle, raw bits
(``tb/units/tb_units.py``: ``replay_pe_ud``, ``replay_bcmp``).

Sequences (random, ``SEED``; values from ``tb.units.stimuli.Values``, which
include NaN payloads, infinities, subnormals, zeros and extremes):

* UD PE: every control word of the UD config's plans (all nine functions),
  random legal 12-bit words, Q chains (``load_q`` shifts, then ``mac acc_ui
  use_q`` sums), the UD softmax chain (``load_reg_di`` of a score with junk
  upper bits, ``reg*1 - m``, ``reg*scale``, P exp2 chords, the row sum),
  idle cycles, reset pulses.
* BCMP: the plans' order per key block (RESET with ``reset_max``, R
  UPDATEs, causal on or off at a random column, PROP_MAX, MAX_DIFF, R POPs,
  SEND_DIFF, a BYPASS run), K parts back to back, random lane commands (a
  POP never with an UPDATE: the schedule), reset pulses.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nm
from fsa import plan as fplan
from fsa import simrun
from fsa.hw import timing
from tb.common.tier import SEED
from tb.units.models import encoded_intercepts
from tb.units.stimuli import Seq, npz_case, score_value, sequence_start, unit_sources, word_burst
from tb.units.ud_models import LANE, UD_BITS, BCMPModel, UDPEModel, ud_pe_legal

CONFIGS = ["FSA4X4Fp16UdConfig", "FSA4X4Bf16UdConfig", "FSA4X4Fp32UdConfig",
           "FSA4X4Fp16OnlyUdConfig"]
CYCLES = 5000
BIT = {n: 1 << i for i, n in enumerate(UD_BITS)}
M, U, O = LANE["max"], LANE["up"], LANE["od"]


def word(bits) -> int:
    return sum(BIT[b] for b in (bits.split() if isinstance(bits, str) else bits))


def label(w: int) -> str:
    return "+".join(n for n in UD_BITS if w & BIT[n]) or "idle"


def ud_plan_words(cfg) -> list[int]:
    """Every PE control word of every plan of the UD config (table)."""
    words = {0}
    for p in timing.plans(cfg):
        for row in fplan.table(p).pe:
            words.update(word(bits) for bits in row)
    return sorted(words)


def pe_ud_sequence(cfg, n: int, seed: int) -> Seq:
    rng, ve, va, seq, resets = sequence_start(
        cfg, seed, n, ("rst", "ctrl", "l_in", "u_in", "d_in"))
    e, a, P = cfg.e_type, cfg.a_type, cfg.exp2_pieces
    fe, fa = cfg.e_fmt, cfg.a_fmt
    plan_words = ud_plan_words(cfg)
    legal = [w for w in range(1 << len(UD_BITS)) if ud_pe_legal(w)]
    slopes = [int(x) for x in nm.pwl_constants(P, e, a)[0]]
    icpts = list(encoded_intercepts(e, a, P))
    scale_e = cfg.attention_scale_bits(e)

    def add(w: int, **kw: int) -> None:
        if len(seq) in resets:
            seq.add("RESET-PULSE", rst=1, ctrl=int(rng.choice(legal)), l_in=ve.get(),
                    u_in=va.get(), d_in=va.get())
        d = dict(l_in=ve.get(), u_in=va.get(), d_in=va.get())
        d.update(kw)
        seq.add(label(w), ctrl=w, **d)

    junk_bits = fa.width - fe.width
    while len(seq) < n:
        kind = rng.choice(["plan", "random", "q", "softmax", "idle"], p=[0.3, 0.2, 0.2, 0.25, 0.05])
        if kind == "plan":
            word_burst(rng, add, plan_words)
        elif kind == "random":
            word_burst(rng, add, legal)
        elif kind == "idle":
            add(0)
        elif kind == "q":
            for _ in range(int(rng.integers(1, 4))):
                add(word("load_q"))
            for _ in range(int(rng.integers(1, 6))):
                add(word("mac acc_ui use_q flow_lr"))
        else:
            junk = int(rng.integers(0, 1 << junk_bits)) if junk_bits else 0
            s = score_value(rng, va, ve) if rng.random() < 0.5 else ve.get()
            add(word("load_reg_di"), d_in=(junk << fe.width) | (s & ((1 << fe.width) - 1)))
            m = va.real(abs(rng.standard_normal()) * 4) if rng.random() < 0.8 else va.get()
            add(word("update_reg acc_ui flow_ud flow_lr"), l_in=fe.one, u_in=m ^ fa.sign_mask)
            add(word("update_reg acc_ui flow_ud flow_lr"), l_in=scale_e, u_in=0)
            for k in range(P):
                add(word("flow_ud flow_lr acc_ui exp2"), l_in=slopes[k], u_in=icpts[k])
            add(word("mac acc_ui flow_lr"), l_in=fe.one,
                u_in=va.real(abs(rng.standard_normal()) * 3))
    return seq


def bcmp_sequence(cfg, n: int, seed: int) -> Seq:
    rng, ve, va, seq, resets = sequence_start(
        cfg, seed + 7, n, ("rst", "max", "up", "od", "causal", "s_in", "col"))
    e, a, R, C = cfg.e_type, cfg.a_type, cfg.sa_rows, cfg.sa_cols
    col = 0

    def add(lbl: str, mx=0, up=0, od=0, causal=0, s_in=None) -> None:
        if len(seq) in resets:
            seq.add("RESET-PULSE", rst=1, s_in=va.get(), col=col)
        s = va.get() if s_in is None else s_in
        seq.add(lbl, max=mx, up=up, od=od, causal=causal, s_in=s, col=col)

    def score() -> int:
        return score_value(rng, va, ve) if rng.random() < 0.7 else va.get()

    while len(seq) < n:
        kind = rng.choice(["block", "random"], p=[0.75, 0.25])
        if kind == "random":
            for _ in range(int(rng.integers(1, 8))):
                mx = int(rng.integers(0, 4))
                up = int(rng.integers(0, 3))
                if mx == M["UPDATE"] and up == U["POP"]:
                    up = 0
                add("random", mx=mx, up=up, od=int(rng.integers(0, 3)),
                    causal=int(rng.integers(0, 2)))
            continue
        col = int(rng.integers(0, C))
        causal = int(rng.random() < 0.4)
        if rng.random() < 0.5:
            add("RESET", mx=M["RESET"])
        for _ in range(R):          # the K part: scores, BYPASS sometimes alongside
            add("UPDATE", mx=M["UPDATE"], causal=causal, s_in=score(),
                od=O["BYPASS"] if rng.random() < 0.3 else 0)
        add("PROP_MAX", up=U["PROP_MAX"])
        add("MAX_DIFF", mx=M["MAX_DIFF"])
        for _ in range(int(rng.integers(0, 3))):
            add("idle")
        for _ in range(R):          # the PV part: -m is in u_q; the scores come up
            add("POP", up=U["POP"])
        add("load", od=O["SEND_DIFF"] if rng.random() < 0.7 else 0)
        for _ in range(int(rng.integers(0, R + 2))):
            add("BYPASS", od=O["BYPASS"])
    return seq


REGS = {"pe_ud": (["r_out", "d_out", "u_out", "ctrl_out", "sreg", "qreg"], []),
        "bcmp": (["u_out", "max_out", "up_out", "od_out", "causal_out", "new_max", "old_max",
                  "diff_q", "cnt"], ["od"])}
PORTS = {"pe_ud": {"ctrl": "ctrl_in"},
         "bcmp": {"max": "max_in", "up": "up_in", "od": "od_in", "causal": "causal_in"}}


def make_case(unit: str, cfg, n: int, seed: int) -> dict:
    seq = (pe_ud_sequence if unit == "pe_ud" else bcmp_sequence)(cfg, n, seed)
    model = (UDPEModel(cfg.e_type, cfg.a_type, cfg.exp2_pieces) if unit == "pe_ud"
             else BCMPModel(cfg.sa_rows, cfg.e_type, cfg.a_type))
    regs, combs = REGS[unit]
    ew, aw = cfg.e_fmt.width, cfg.a_fmt.width
    width = dict(rst=1, ctrl=12, ctrl_out=12, l_in=ew, r_out=ew, sreg=ew, qreg=ew, u_in=aw,
                 d_in=aw, d_out=aw, u_out=aw, max=2, up=2, od=aw, causal=1, s_in=aw, col=8,
                 max_out=2, up_out=2, od_out=2, causal_out=1, new_max=aw, old_max=aw,
                 diff_q=aw, cnt=9)
    return npz_case(unit, seq, model, regs, combs, width, PORTS[unit], in_width={"od": 2})


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("unit", ["pe_ud", "bcmp"])
def test_ud_unit_bit_exact(unit, config, tmp_path):
    cfg = fconfig.get(config)
    top = "fsa_pe" if unit == "pe_ud" else "fsa_bcmp"
    t0 = time.monotonic()
    case = make_case(unit, cfg, CYCLES, SEED)
    path = tmp_path / f"{unit}-{config}.npz"
    np.savez(path, **case)
    t1 = time.monotonic()
    simrun.run(top, unit_sources(cfg, top), "tb.units.tb_units", testcase=f"replay_{unit}",
               extra_env={"FSA_UNIT_CASE": str(path)}, timeout_s=600)
    print(f"{unit} {config}: {len(case['labels'])} cycles, model {t1 - t0:.1f} s, "
          f"simulation {time.monotonic() - t1:.1f} s")


# ---- quick checks of the sequences and models (no simulator)
@pytest.mark.parametrize("config", CONFIGS[:1])
def test_ud_sequences_cover_the_plans(config):
    """The sequences exercise every UD control word of the plans, every
    lane command, causal masking, reset pulses."""
    cfg = fconfig.get(config)
    pe = pe_ud_sequence(cfg, CYCLES, SEED)
    assert set(ud_plan_words(cfg)) <= set(pe.cols["ctrl"])
    for b in ("use_q", "load_q", "load_reg_di"):
        assert any(w & BIT[b] for w in pe.cols["ctrl"]), b
    bc = bcmp_sequence(cfg, CYCLES, SEED)
    for lane in ("max", "up", "od"):
        assert set(bc.cols[lane]) == set(range(len(LANE[lane]) + 1)), lane
    assert any(c and m == M["UPDATE"] for c, m in zip(bc.cols["causal"], bc.cols["max"]))
    assert sum(bc.cols["rst"]) >= 1 and sum(pe.cols["rst"]) >= 1


def test_bcmp_model_block():
    """One key block through the BCMP model: max, masking, LIFO order, -m,
    the max difference, and the reference paths between commands."""
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    m = BCMPModel(4, "fp16", "fp32")
    f32 = lambda x: int(nm.from_float64(x, "fp32"))   # noqa: E731
    f16 = lambda x: int(nm.from_float64(x, "fp16"))   # noqa: E731
    assert m.step(dict(s_in=f32(3.0)))["od"] == f32(3.0)      # no command: od = s_in
    for v in (1.0, 2.0, 5.0, 7.0):
        m.step(dict(max=M["UPDATE"], causal=1, col=1, s_in=f32(v)))
    assert m.new_max == f32(2.0)                              # keys 2, 3 > col 1: masked
    assert m.step(dict(up=U["PROP_MAX"]))["u_out"] == f32(-2.0)
    o = m.step(dict(max=M["MAX_DIFF"]))
    assert o["old_max"] == f32(2.0) and o["diff_q"] == 0xFF800000   # -inf - 2
    pops = [m.step(dict(up=U["POP"]))["u_out"] for _ in range(4)]
    assert pops == [0xFC00, 0xFC00, f16(2.0), f16(1.0)]       # last pushed first
    # (u_out after the last POP's edge is the last score, read during the
    # next cycle; cleared at that cycle's edge)
    assert m.step(dict(od=O["SEND_DIFF"]))["u_out"] == 0
    o = m.step(dict(s_in=f32(9.0)))
    assert o["u_out"] == 0 and o["od"] == 0xFF800000          # od_q in the cycle after
    assert m.step(dict(s_in=f32(9.0)))["od"] == f32(9.0)
    assert cfg.sa_rows == 4


def test_ud_pe_model_basics():
    m = UDPEModel("fp16", "fp32", 8)
    one16, two16, three16 = 0x3C00, 0x4000, 0x4200
    m.step(dict(ctrl=word("load_q"), l_in=two16))
    o = m.step(dict(ctrl=word("load_q"), l_in=three16))
    assert o["qreg"] == three16 and o["r_out"] == two16       # the chain shifts
    o = m.step(dict(ctrl=word("mac acc_ui use_q"), l_in=one16, u_in=0x3F800000))
    assert o["d_out"] == 0x40800000 and o["sreg"] == 0        # 3 * 1 + 1 from qreg
    o = m.step(dict(ctrl=word("load_reg_di"), d_in=0xABCD0000 | two16))
    assert o["sreg"] == two16 and o["qreg"] == three16
    with pytest.raises(ValueError):
        m.step(dict(ctrl=word("load_reg_di update_reg")))
