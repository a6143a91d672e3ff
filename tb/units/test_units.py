"""Unit benches of the PE, CMP and ACC (docs/array.md) against the per-cycle
reference models of ``tb/units/models.py``, on ``$SIM`` (verilator or icarus).

For each unit and configuration, a random per-cycle input sequence is
generated here (see :func:`pe_sequence`, :func:`cmp_sequence`,
:func:`acc_sequence`), run through the model, and written with the
expected outputs to an .npz; ``tb/units/tb_units.py`` drives the unit's converted
Verilog (the unit itself is the toplevel, compiled with the FP modules it
instantiates from ``gen/<config>/``) and compares every output and state
register with the model in every cycle, bit for bit.

The sequences mix realistic runs (the control words and command orders of
the execution plans) with random legal ones, and draw values from a class
mixture that includes the special values (NaN with random payloads, +-inf,
subnormals, +-0, extremes, rounding midpoints):

* PE: every control word the plans use (``fsa.plan.table`` of every matrix
  function) and random legal words (no register written twice); exp2
  chains (x loaded by ``load_reg_ui`` with junk upper bits, by
  ``load_reg_li``, or through the plan's ``reg*1 - m`` / ``reg*scale``
  steps, then ``P`` cycles with slope and encoded intercept ``k = 0..P-1``
  in order, sometimes on ``d_in``, with ``mac``, out of order or with other
  slopes, then the row-sum ``mac``); idle cycles (everything held).
* CMP: score blocks (a run of UPDATEs, usually R long, causal on or off,
  varying ``col``; then PROP_MAX, PROP_MAX_DIFF, P x PROP_EXP2_INTERCEPTS,
  PROP_ZERO), intercept runs longer than P (wrap), RESET, random commands.
  Scores include E rounding midpoints, E overflow / underflow, ties for the
  running max (+0 / -0, repeats).
* ACC: the score tail (EXP_S1, EXP_S2, ACC_SA), value accumulation (ACC_SA
  runs), normalisation (SET_SCALE, a full RECIPROCAL window of
  ``fsa_acc.reciprocal_cycles`` cycles, ACC run), lone RECIPROCAL windows
  and EXP_S2 chains on arbitrary scales, random commands.
* every unit: a few synchronous reset pulses in mid-sequence.

Cycles per case: :data:`CYCLES` (PE 8000, CMP and ACC 6000).  The Verilog
comes from ``rtl.generate.generate(cfg)`` written to ``sims/gen/units/<config>``
(the same files as ``gen/<config>/``; a folder of our own because
``generate`` has no lock), and only the unit's module and the modules it
instantiates are compiled.  Configurations: :data:`CONFIGS`.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nm
from fsa import plan as fplan
from fsa import simrun
from fsa.formats import get_format
from fsa.hw import timing
from tb.common.tier import SEED
from tb.units.models import (ACC_CMDS, CMP_CMDS, PE_BITS, UD_ACC_CMDS, ACCModel, CMPModel,
                            PEModel, encoded_intercepts, pe_legal)
from tb.units.stimuli import (Seq, Values, npz_case, reset_slots, score_value, sequence_start,
                              unit_sources, word_burst)

CONFIGS = ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig"]
UNITS = ["pe", "cmp", "acc"]
#: cycles per case (each case also has the reset sample)
CYCLES = {"pe": 8000, "cmp": 6000, "acc": 6000}

CMP = {n: i for i, n in enumerate(CMP_CMDS)}
ACC = {n: i for i, n in enumerate(UD_ACC_CMDS)}
BIT = {n: 1 << i for i, n in enumerate(PE_BITS)}
#: UD configurations whose ACC (scale2: SET_SCALE2, RECIPROCAL2, ACC2) is checked too
UD_ACC_CONFIGS = ["FSA4X4Fp16UdConfig", "FSA4X4Fp16OnlyUdConfig"]


def ctrl_word(bits) -> int:
    if isinstance(bits, str):
        bits = bits.split()
    w = 0
    for b in bits:
        w |= BIT[b]
    return w


def ctrl_label(w: int) -> str:
    return "+".join(n for n in PE_BITS if w & BIT[n]) or "idle"


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------
# --------------------------------------------------------------------------
# sequences
# --------------------------------------------------------------------------
def plan_ctrl_words(cfg) -> list[int]:
    """Every PE control word of every plan (fsa.plan.table), idle included."""
    words = {0}
    for func in fplan.FUNCS:
        tb = fplan.table(timing.plan(cfg, func))
        for row in tb.pe:
            for bits in row:
                words.add(ctrl_word(bits))
    return sorted(words)


def pe_sequence(cfg, n: int, seed: int) -> Seq:
    """PE inputs: plan control words, random legal words, exp2 chains."""
    rng, ve, va, seq, resets = sequence_start(
        cfg, seed, n, ("rst", "ctrl", "l_in", "u_in", "d_in"))
    e, a, P = cfg.e_type, cfg.a_type, cfg.exp2_pieces
    fe, fa = get_format(e), get_format(a)
    plan_words = plan_ctrl_words(cfg)
    legal = [w for w in range(1 << len(PE_BITS)) if pe_legal(w)]
    slopes = [int(x) for x in nm.pwl_constants(P, e, a)[0]]
    icpts = list(encoded_intercepts(e, a, P))
    one_e = fe.one
    scale_e = cfg.attention_scale_bits(e)

    def rand_in() -> dict:
        return dict(l_in=ve.get(), u_in=va.get(), d_in=va.get())

    def add(w: int, label: str = "", **kw: int) -> None:
        if len(seq) in resets:
            seq.add("RESET-PULSE", rst=1, ctrl=int(rng.choice(legal)), **rand_in())
        d = rand_in()
        d.update(kw)
        seq.add(label or ctrl_label(w), ctrl=w, **d)

    def exp2_x() -> int:
        u = rng.random()
        if u < 0.55:
            return ve.real(-rng.random() * (4.0 if rng.random() < 0.7 else 40.0))
        if u < 0.7:   # piece boundaries and integers
            return ve.real(-(int(rng.integers(0, 4 * P)) / P))
        if u < 0.8:   # tiny and huge negatives
            return ve.real(-float(rng.choice([1e-3, 1e-6, 3e-8, 1e3, 3e4, 1e30])))
        return ve.get()

    while len(seq) < n:
        kind = rng.choice(["plan", "random", "exp2", "idle"], p=[0.35, 0.25, 0.3, 0.1])
        if kind == "plan":
            word_burst(rng, add, plan_words)
        elif kind == "random":
            word_burst(rng, add, legal)
        elif kind == "idle":
            for _ in range(int(rng.integers(1, 4))):
                add(0)
        else:
            x = exp2_x()
            how = rng.choice(["ui", "li", "plan"], p=[0.4, 0.2, 0.4])
            if how == "ui":
                junk = int(rng.integers(0, 1 << (fa.width - fe.width))) if fa.width > fe.width else 0
                add(ctrl_word("load_reg_ui"), u_in=(junk << fe.width) | x)
            elif how == "li":
                add(ctrl_word("load_reg_li"), l_in=x)
            else:
                # plan: reg <- S; reg <- reg*1 - m; reg <- reg*scale + 0
                add(ctrl_word("load_reg_ui"), u_in=x)
                m = score_value(rng, va, ve) if rng.random() < 0.3 else va.real(
                    abs(rng.standard_normal()) * 4)
                add(ctrl_word("update_reg acc_ui flow_ud flow_lr"), l_in=one_e,
                    u_in=m ^ fa.sign_mask)
                add(ctrl_word("flow_ud update_reg flow_lr"), l_in=scale_e,
                    d_in=0 if rng.random() < 0.8 else va.get())
            variant = rng.choice(["plan", "d_in", "mac", "shuffled", "slopes"],
                                 p=[0.6, 0.1, 0.1, 0.1, 0.1])
            ks = list(range(P))
            if variant == "shuffled":
                ks = [int(k) for k in rng.permutation(P)]
            for k in ks:
                sl = slopes[k] if variant != "slopes" else ve.get()
                if variant == "d_in":
                    add(ctrl_word("flow_lr exp2"), l_in=sl, d_in=icpts[k])
                elif variant == "mac":
                    add(ctrl_word("mac acc_ui exp2"), l_in=sl, u_in=icpts[k])
                else:
                    add(ctrl_word("flow_ud flow_lr acc_ui exp2"), l_in=sl, u_in=icpts[k])
            add(ctrl_word("mac acc_ui flow_lr"), l_in=one_e,
                u_in=va.real(abs(rng.standard_normal()) * 3) if rng.random() < 0.8 else va.get())
    return seq


def cmp_sequence(cfg, n: int, seed: int) -> Seq:
    """CMP inputs: score blocks, intercept runs, RESET, random commands."""
    rng, ve, va, seq, resets = sequence_start(
        cfg, seed + 1, n, ("rst", "cmd", "causal", "mask", "key_limit", "s_in", "col"))
    e, a, P, R = cfg.e_type, cfg.a_type, cfg.exp2_pieces, cfg.sa_rows
    state = {"col": 2, "kl": R}

    def add(cmd: int, causal: "int | None" = None, s_in: "int | None" = None,
            mask: "int | None" = None) -> None:
        if len(seq) in resets:
            seq.add("RESET-PULSE", rst=1, cmd=int(rng.integers(0, 7)), causal=1, mask=1,
                    key_limit=state["kl"], s_in=va.get(), col=state["col"])
        seq.add(CMP_CMDS[cmd], cmd=cmd,
                causal=int(rng.integers(0, 2)) if causal is None else causal,
                mask=int(rng.integers(0, 2)) if mask is None else mask, key_limit=state["kl"],
                s_in=va.get() if s_in is None else s_in, col=state["col"])

    while len(seq) < n:
        kind = rng.choice(["block", "reset", "random", "icpt"], p=[0.55, 0.1, 0.25, 0.1])
        if kind == "block":
            state["col"] = int(rng.choice([2, 2, 2, 0, 1, 3, R - 1, 5, 255]))
            if rng.random() < 0.3:      # LSE_NORM's RESET before the next row block
                add(CMP["RESET"])
            causal = int(rng.random() < 0.4)
            mask = int(rng.random() < 0.4)      # mask_keys, with a key limit 0..R (or beyond)
            state["kl"] = int(rng.choice([0, 1, R - 1, R, int(rng.integers(0, R + 1)), R + 1,
                                          255, 256, 511]))
            nu = R if rng.random() < 0.7 else int(rng.integers(1, 2 * R + 4))
            pool = [score_value(rng, va, ve) for _ in range(3)]
            for _ in range(nu):
                s = pool[int(rng.integers(3))] if rng.random() < 0.15 else score_value(rng, va, ve)
                add(CMP["UPDATE"], causal, s, mask)
            tail = ([CMP["PROP_MAX"], CMP["PROP_MAX_DIFF"]] + [CMP["PROP_EXP2_INTERCEPTS"]] * P
                    + [CMP["PROP_ZERO"]])
            if rng.random() < 0.2:
                tail = tail[:int(rng.integers(0, len(tail)))]
            for c in tail:
                add(c)
            for _ in range(int(rng.integers(0, 4))):
                add(CMP["NOP"])
        elif kind == "reset":
            add(CMP["RESET"])
        elif kind == "icpt":
            for _ in range(int(rng.integers(1, 2 * P + 3))):
                add(CMP["PROP_EXP2_INTERCEPTS"])
        else:
            state["col"] = int(rng.integers(0, 8))
            state["kl"] = int(rng.integers(0, 512))
            for _ in range(int(rng.integers(1, 9))):
                add(int(rng.integers(0, 7)), s_in=score_value(rng, va, ve))
    return seq


def acc_sequence(cfg, n: int, seed: int) -> Seq:
    """ACC inputs: score tails, value runs, normalisation with full
    RECIPROCAL windows, EXP_S2 chains, random commands."""
    rng = np.random.default_rng(seed + 2)
    a, P, R = cfg.a_type, cfg.exp2_pieces, cfg.sa_rows
    va = Values(rng, a)
    from rtl import fsa_acc
    window = fsa_acc.reciprocal_cycles(a, cfg.div_bits_per_cycle)
    seq = Seq(("rst", "cmd", "sa", "sram", "scale_a"))
    resets = reset_slots(rng, n)
    # the scale_a register: the reset value, a user scale's (fsa.config.scale_bits
    # of a log-uniform s), or any bit pattern (specials included)
    state = {"scale_a": cfg.attention_scale_bits(a)}

    def new_scale_a() -> int:
        u = rng.random()
        if u < 0.25:
            return cfg.attention_scale_bits(a)
        if u < 0.7:
            return fconfig.scale_bits(cfg, float(10 ** rng.uniform(-2.5, 2.5)))[1]
        return va.get()

    def add(cmd: int, sa: "int | None" = None, sram: "int | None" = None,
            pulse_ok: bool = True) -> None:
        if pulse_ok and len(seq) in resets:
            seq.add("RESET-PULSE", rst=1, cmd=int(rng.integers(0, 7)), sa=va.get(), sram=va.get(),
                    scale_a=state["scale_a"])
        seq.add(UD_ACC_CMDS[cmd], cmd=cmd, sa=va.get() if sa is None else sa,
                sram=va.get() if sram is None else sram, scale_a=state["scale_a"])

    def max_diff() -> int:
        u = rng.random()
        if u < 0.7:
            return va.real(-abs(rng.standard_normal()) * (3.0 if rng.random() < 0.8 else 60.0))
        if u < 0.8:
            return int(rng.choice([0, va.f.sign_mask]))
        return va.get()

    def positive() -> int:
        return va.real(abs(rng.standard_normal()) * 10 + 1e-3) if rng.random() < 0.75 else va.get()

    def recip_window() -> None:
        # the pulse slot may fall inside the window: skip it there (a reset
        # mid-window is out of the plan's contract)
        for _ in range(window):
            add(ACC["RECIPROCAL"], pulse_ok=False)
        add(int(rng.choice([ACC["NOP"], ACC["ACC"], ACC["SET_SCALE"], ACC["EXP_S1"]])))

    while len(seq) < n:
        ud = cfg.dataflow == "ud"
        kind = rng.choice(["tail", "value", "norm", "recip", "exp2", "random", "norm2"],
                          p=[0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.2] if ud else
                          [0.25, 0.15, 0.15, 0.1, 0.1, 0.25, 0.0])
        if kind == "tail":
            state["scale_a"] = new_scale_a()
            add(ACC["EXP_S1"], sa=max_diff())
            add(ACC["EXP_S2"])
            for _ in range(P - 1 if rng.random() < 0.7 else int(rng.integers(0, 3))):
                add(ACC["NOP"])
            add(ACC["ACC_SA"], sa=positive(), sram=positive())
        elif kind == "value":
            for _ in range(R):
                add(ACC["ACC_SA"])
        elif kind == "norm":
            add(ACC["SET_SCALE"], sram=positive())
            recip_window()
            for _ in range(R):
                add(ACC["ACC"])
        elif kind == "recip":
            recip_window()
        elif kind == "exp2":
            add(int(rng.choice([ACC["SET_SCALE"], ACC["EXP_S1"]])), sa=max_diff(), sram=va.get())
            for _ in range(int(rng.integers(1, 4))):
                add(ACC["EXP_S2"])
        elif kind == "norm2":
            # UD: scale2 <- 1 / l while the other commands go on (the divider
            # works for scale2 in the background), then ACC2 runs
            add(ACC["SET_SCALE2"], sram=positive(), pulse_ok=False)
            add(ACC["RECIPROCAL2"], pulse_ok=False)
            for _ in range(window - 1 + int(rng.integers(0, 3))):
                add(int(rng.choice([ACC["NOP"], ACC["EXP_S1"], ACC["EXP_S2"], ACC["ACC_SA"],
                                    ACC["ACC"], ACC["SET_SCALE"]])), sa=max_diff(),
                    pulse_ok=False)
            for _ in range(R):
                add(int(rng.choice([ACC["ACC2"], ACC["ACC2"], ACC["ACC_SA"]])))
        else:
            for _ in range(int(rng.integers(1, 9))):
                c = int(rng.integers(0, 8 if ud else 6))
                add(c if c < 6 else ACC["SET_SCALE2"] if c == 6 else ACC["ACC2"])
    return seq


# --------------------------------------------------------------------------
# model run and case file
# --------------------------------------------------------------------------
UNIT_SPEC = {
    # unit: (regs, combs)
    "pe": (("r_out", "d_out", "u_out", "ctrl_out", "sreg"), ()),
    "cmp": (("out", "cmd_out", "causal_out", "mask_out", "new_max", "old_max"), ()),
    "acc": (("scale",), ("wb",)),
}


#: model input name -> the unit's port name, where they differ
PORT_NAMES = {"pe": {"ctrl": "ctrl_in"},
              "cmp": {"cmd": "cmd_in", "causal": "causal_in", "mask": "mask_in"},
              "acc": {}}


def make_model(unit: str, cfg):
    e, a, P = cfg.e_type, cfg.a_type, cfg.exp2_pieces
    if unit == "pe":
        return PEModel(e, a, P)
    if unit == "cmp":
        return CMPModel(e, a, P, col=2)
    return ACCModel(a, P, cfg.sa_rows, cfg.div_bits_per_cycle, ud=cfg.dataflow == "ud")


def make_case(unit: str, cfg, n: int, seed: int) -> dict:
    """The sequence, the model's outputs, widths and labels, as npz arrays."""
    gen = {"pe": pe_sequence, "cmp": cmp_sequence, "acc": acc_sequence}[unit]
    seq = gen(cfg, n, seed)
    regs, combs = UNIT_SPEC[unit]
    if unit == "acc" and cfg.dataflow == "ud":
        regs = regs + ("scale2",)
    fe, fa = cfg.e_fmt, cfg.a_fmt
    width = {"rst": 1, "ctrl": 9, "ctrl_out": 9, "l_in": fe.width, "r_out": fe.width,
             "sreg": fe.width, "u_in": fa.width, "d_in": fa.width, "d_out": fa.width,
             "u_out": fa.width, "cmd": 3, "cmd_out": 3, "causal": 1, "causal_out": 1,
             "mask": 1, "mask_out": 1, "key_limit": 9, "scale_a": fa.width,
             "s_in": fa.width, "col": 8, "out": fa.width, "new_max": fa.width,
             "old_max": fa.width, "sa": fa.width, "sram": fa.width, "wb": fa.width,
             "scale": fa.width, "scale2": fa.width}
    if cfg.dataflow == "ud" and unit == "acc":
        width["cmd"] = 4
    return npz_case(unit, seq, make_model(unit, cfg), regs, combs, width, PORT_NAMES[unit])


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------
@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("unit", UNITS)
def test_unit_bit_exact(unit, config, tmp_path):
    cfg = fconfig.get(config)
    t0 = time.monotonic()
    case = make_case(unit, cfg, CYCLES[unit], SEED)
    path = tmp_path / f"{unit}-{config}.npz"
    np.savez(path, **case)
    t1 = time.monotonic()
    simrun.run(f"fsa_{unit}", unit_sources(cfg, f"fsa_{unit}"), "tb.units.tb_units",
               testcase=f"replay_{unit}", extra_env={"FSA_UNIT_CASE": str(path)},
               timeout_s=600)
    print(f"{unit} {config}: {len(case['labels'])} cycles, model {t1 - t0:.1f} s, "
          f"simulation {time.monotonic() - t1:.1f} s")


@pytest.mark.sim
@pytest.mark.parametrize("config", UD_ACC_CONFIGS)
def test_ud_acc_bit_exact(config, tmp_path):
    """The UD ACC (4-bit commands, scale2) against ACCModel(ud=True), cycle
    by cycle: RECIPROCAL2's division runs while the STEPs' commands go on."""
    cfg = fconfig.get(config)
    case = make_case("acc", cfg, CYCLES["acc"], SEED)
    assert "SET_SCALE2" in set(case["labels"]) and "ACC2" in set(case["labels"])
    path = tmp_path / f"acc-{config}.npz"
    np.savez(path, **case)
    simrun.run("fsa_acc", unit_sources(cfg, "fsa_acc"), "tb.units.tb_units", testcase="replay_acc",
               extra_env={"FSA_UNIT_CASE": str(path)}, timeout_s=600)


# ---- quick checks of the sequences and models (no simulator)
@pytest.mark.parametrize("config", CONFIGS)
def test_sequences_cover_everything(config):
    """Every command / control word the plans use appears, with the
    realistic orders, in the generated sequences."""
    cfg = fconfig.get(config)
    P, R = cfg.exp2_pieces, cfg.sa_rows
    pe = pe_sequence(cfg, CYCLES["pe"], 1)
    words = set(pe.cols["ctrl"])
    assert set(plan_ctrl_words(cfg)) <= words
    assert all(pe_legal(w) for w in words)
    for b in PE_BITS:
        assert any(w & BIT[b] for w in words), b
    # an exp2 chain in plan order
    w2 = ctrl_word("flow_ud flow_lr acc_ui exp2")
    c = pe.cols["ctrl"]
    assert any(c[t:t + P] == [w2] * P for t in range(len(c) - P))
    cm = cmp_sequence(cfg, CYCLES["cmp"], 1)
    cmds = cm.cols["cmd"]
    assert set(cmds) == set(range(len(CMP_CMDS)))
    block = [CMP["UPDATE"]] * R + [CMP["PROP_MAX"], CMP["PROP_MAX_DIFF"]] + \
        [CMP["PROP_EXP2_INTERCEPTS"]] * P + [CMP["PROP_ZERO"]]
    starts = [t for t in range(len(cmds) - len(block)) if cmds[t:t + len(block)] == block]
    assert any(cm.cols["causal"][t] for t in starts) and any(not cm.cols["causal"][t] for t in starts)
    ac = acc_sequence(cfg, CYCLES["acc"], 1)
    from rtl import fsa_acc
    win = fsa_acc.reciprocal_cycles(cfg.a_type, cfg.div_bits_per_cycle)
    a = ac.cols["cmd"]
    assert set(a) == set(range(len(ACC_CMDS)))
    assert any(a[t:t + win + 2] == [ACC["SET_SCALE"]] + [ACC["RECIPROCAL"]] * win + [a[t + win + 1]]
               for t in range(len(a) - win - 2))
    for s in (pe, cm, ac):
        assert sum(s.cols["rst"]) >= 1
    # key-limit masking: full score blocks with mask_keys and a limit inside
    # the block (some keys kept, some masked), with and without causal
    kl = cm.cols["key_limit"]
    inside = [t for t in starts if cm.cols["mask"][t] and 0 < kl[t] < R]
    assert any(cm.cols["causal"][t] for t in inside) and any(not cm.cols["causal"][t] for t in inside)
    assert any(cm.cols["mask"][t] and kl[t] == 0 for t in starts)
    # EXP_S1 (then EXP_S2) with scale_a values other than the reset one:
    # user scales and arbitrary patterns (specials and negative included)
    sc = {ac.cols["scale_a"][t] for t in range(len(a) - 1)
          if a[t] == ACC["EXP_S1"] and a[t + 1] == ACC["EXP_S2"]}
    fa = cfg.a_fmt
    assert len(sc) > 20 and cfg.attention_scale_bits(cfg.a_type) in sc
    assert any(v & fa.sign_mask for v in sc) and any((v & fa.pos_inf) == fa.pos_inf for v in sc)


def test_model_pe_basics():
    m = PEModel("fp16", "fp32", 8)
    one16, two16, one32 = 0x3C00, 0x4000, 0x3F800000
    m.step(dict(ctrl=ctrl_word("load_reg_li"), l_in=two16))
    assert m.reg == two16 and m.r_out == 0
    o = m.step(dict(ctrl=ctrl_word("mac acc_ui"), l_in=one16, u_in=one32, d_in=0x12345678))
    assert o["d_out"] == 0x40400000 and o["u_out"] == 0 and o["sreg"] == two16     # 2*1 + 1
    o = m.step(dict(ctrl=ctrl_word("mac"), l_in=one16, u_in=0x12345678, d_in=one32))
    assert o["u_out"] == 0x40400000 and o["d_out"] == 0x40400000
    o = m.step(dict(ctrl=ctrl_word("load_reg_ui"), u_in=0xABCD3C00))
    assert o["sreg"] == one16
    o = m.step(dict(ctrl=0, l_in=1, u_in=2, d_in=3))
    assert o == dict(r_out=0, d_out=0x40400000, u_out=0x40400000, ctrl_out=0, sreg=one16)
    with pytest.raises(ValueError):
        m.step(dict(ctrl=ctrl_word("mac acc_ui flow_ud")))
    # exp2: x = -0.5 -> piece 4 of 8; only cycle k = 4 writes reg
    m.reset()
    m.step(dict(ctrl=ctrl_word("load_reg_li"), l_in=0xB800))
    slopes = [int(s) for s in nm.pwl_constants(8, "fp16", "fp32")[0]]
    icpts = encoded_intercepts("fp16", "fp32", 8)
    regs = [m.step(dict(ctrl=ctrl_word("flow_ud flow_lr acc_ui exp2"), l_in=slopes[k],
                        u_in=icpts[k]))["sreg"] for k in range(8)]
    assert regs[:4] == [0xB800] * 4
    assert regs[4] == int(nm.exp2_pwl(0xB800, "fp16", 8, "fp32")) == regs[7]


def test_model_cmp_basics():
    m = CMPModel("fp16", "fp32", 8, col=1)
    f32 = lambda x: int(nm.from_float64(x, "fp32"))   # noqa: E731
    outs = [m.step(dict(cmd=CMP["UPDATE"], causal=1, s_in=f32(v)))["out"]
            for v in (1.0, 2.0, 5.0, 7.0)]
    assert outs == [0x3C00, 0x4000, 0xFC00, 0xFC00]          # k = 2, 3 > col = 1: masked
    assert m.new_max == f32(2.0)
    assert m.step(dict(cmd=CMP["PROP_MAX"]))["out"] == f32(-2.0)
    o = m.step(dict(cmd=CMP["PROP_MAX_DIFF"]))
    assert o["out"] == 0xFF800000 and o["old_max"] == f32(2.0)   # old_max was -inf
    icp = encoded_intercepts("fp16", "fp32", 8)
    got = [m.step(dict(cmd=CMP["PROP_EXP2_INTERCEPTS"]))["out"] for _ in range(10)]
    assert got == list(icp) + list(icp[:2])
    m.step(dict(cmd=CMP["RESET"]))
    assert m.new_max == m.old_max == 0xFF800000


def test_model_acc_reciprocal_window():
    from rtl import fsa_acc
    from rtl.fp import fsa_div
    m = ACCModel("fp32", 8, 4, 2)
    assert m.window == fsa_acc.reciprocal_cycles("fp32", 2) == fsa_div.latency("fp32", 2) + 2
    four = 0x40800000
    assert m.step(dict(cmd=ACC["SET_SCALE"], sram=four))["scale"] == four
    scales = [m.step(dict(cmd=ACC["RECIPROCAL"]))["scale"] for _ in range(m.window)]
    assert scales[:-1] == [four] * (m.window - 1) and scales[-1] == 0x3E800000
    assert m.step(dict(cmd=ACC["ACC"], sram=four))["wb"] == 0x3F800000
    m2 = ACCModel("fp32", 8, 4, 2)
    m2.step(dict(cmd=ACC["RECIPROCAL"]))
    with pytest.raises(ValueError):
        m2.step(dict(cmd=ACC["NOP"]))
