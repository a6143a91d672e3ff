"""The UD dataflow's plans (fsa/plan_ud.py): resource ownership over
back-to-back STEPs, the steady-state period T = 2R + P + 3, the hand-overs,
and what the controller will be generated from (docs/ud.md)."""
from __future__ import annotations

import pytest

from fsa import config as fconfig
from fsa import plan as fplan
from fsa import plan_ud
from fsa.hw import timing

P = 8
SIZES = [(4, 4), (8, 8), (16, 16), (32, 32), (128, 128), (4, 8), (8, 4), (16, 8), (8, 16)]


def _plans(R, C, P=P):
    return {f: fplan.make_plan(f, R, C, P, reciprocal_cycles=16) for f in fplan.ALL_FUNCS}


def _query_block(pl, n_steps):
    """LOAD_Q, KSTEP, n_steps STEPs, PVSTEP, NORM_SCALE, NORM (one query block)."""
    return ([pl["LOAD_Q"], pl["KSTEP"]] + [pl["STEP"]] * n_steps + [pl["PVSTEP"]]
            + [pl["ATTENTION_LSE_NORM_SCALE"], pl["ATTENTION_LSE_NORM"]])


@pytest.mark.parametrize("R,C", SIZES, ids=lambda v: str(v))
def test_back_to_back_steps_share_nothing_and_run_at_T(R, C):
    pl = _plans(R, C)
    n = 3 if R >= 32 else 5
    seq = _query_block(pl, n)
    starts = fplan.schedule_starts(seq)
    plan_ud.check_schedule(seq, starts)
    T = 2 * R + P + 3
    assert plan_ud.period(R, P) == T
    step_starts = [s for p, s in zip(seq, starts) if p.func in ("STEP", "PVSTEP")]
    assert {b - a for a, b in zip(step_starts, step_starts[1:])} == {T}, step_starts
    # KSTEP -> first STEP: as soon as -m is in the u path, and (two after
    # LOAD_Q) once LOAD_Q's wave is over; KSTEP itself takes LOAD_Q's slot
    # C + 2 cycles after it (its last row-0 source)
    i = [p.func for p in seq].index("KSTEP")
    assert pl["LOAD_Q"].retire == C + 2 < pl["LOAD_Q"].wave_retire == 2 * C + R
    assert starts[i] == starts[i - 1] + C
    assert starts[i + 1] == max(starts[i] + 2 * R + 2, starts[i - 1] + pl["LOAD_Q"].wave_retire)


def test_load_q_between_steps_costs_c_plus_2():
    """Mid-pipeline (STEP, LOAD_Q, STEP): LOAD_Q's slot retires after its
    last row-0 source, so the STEP after it starts C + 2 cycles after it
    instead of waiting for the STEP before it to retire (3R + P + C + 5);
    the STEP after that one waits for LOAD_Q's wave, which is over by then."""
    for R, C in ((4, 4), (8, 8), (16, 16), (4, 8), (8, 4), (16, 8)):
        pl = _plans(R, C)
        T = plan_ud.period(R, P)
        seq = [pl["LOAD_Q"], pl["KSTEP"], pl["STEP"], pl["LOAD_Q"], pl["STEP"], pl["STEP"],
               pl["PVSTEP"]]
        starts = fplan.schedule_starts(seq)
        plan_ud.check_schedule(seq, starts)
        assert starts[3] == starts[2] + T
        assert starts[4] == starts[3] + C + 2, (R, C, starts)
        assert starts[5] == starts[4] + T and starts[6] == starts[5] + T
        # what the two-slot rule alone gave: the STEP before LOAD_Q's retirement
        assert starts[2] + plan_ud.retire_span(R, C, P) > starts[4]


@pytest.mark.parametrize("R,C", [(4, 4), (8, 8), (16, 16), (4, 8), (8, 4), (8, 16), (16, 8)],
                         ids=lambda v: str(v))
def test_one_cycle_less_than_T_collides(R, C):
    """T is the minimum: STEPs T-1 apart have a resource with two owners."""
    pl = _plans(R, C)
    T = plan_ud.period(R, P)
    seq = [pl["LOAD_Q"], pl["KSTEP"], pl["STEP"], pl["STEP"], pl["STEP"]]
    starts = fplan.schedule_starts(seq)
    plan_ud.check_schedule(seq, starts)
    squeezed = starts[:3] + [starts[2] + (T - 1), starts[2] + 2 * (T - 1)]
    with pytest.raises(plan_ud.ScheduleError):
        plan_ud.check_schedule(seq, squeezed)


@pytest.mark.parametrize("R,C", [(4, 4), (8, 8), (16, 16), (4, 8), (8, 16)], ids=lambda v: str(v))
def test_every_fma_and_the_input_port_are_busy_in_steady_state(R, C):
    """In a window of T cycles of the steady state every row's FMA, every
    input lane and the spad read port are owned every cycle: 2R + P + 3 is
    the one-FMA-per-PE bound, not just a conflict-free spacing."""
    pl = _plans(R, C)
    seq = [pl["LOAD_Q"], pl["KSTEP"]] + [pl["STEP"]] * 4
    starts = fplan.schedule_starts(seq)
    T = plan_ud.period(R, P)
    owned = set()
    for p, s in zip(seq, starts):
        for key in plan_ud.claims(p):
            owned.add(key[:-1] + (key[-1] + s,))
    t0 = starts[4]
    for t in range(t0, t0 + T):
        assert ("spad_read", t) in owned, t
        for r in range(R):
            assert ("pe", "fma", r, t + r) in owned, (r, t)
            assert ("lane", r, t + 1 + r) in owned, (r, t)


@pytest.mark.parametrize("breaker", ["pop_early", "rescale_early", "qreg_early", "two_pops"])
def test_checker_catches_broken_handovers(breaker):
    pl = _plans(4, 4)
    seq = [pl["LOAD_Q"], pl["KSTEP"], pl["STEP"], pl["PVSTEP"]]
    starts = fplan.schedule_starts(seq)
    plan_ud.check_schedule(seq, starts)
    if breaker == "pop_early":        # STEP pops before KSTEP's PROP_MAX (but no port collides)
        bad = starts[:2] + [starts[2] - 1, starts[3] - 1]
    elif breaker == "rescale_early":  # PVSTEP's EXP_S1 before STEP's last ACC_SA
        p = pl["PVSTEP"]
        early = fplan.Plan(**{**p.__dict__, "acc": tuple((t - 20, c) if c.startswith("EXP") else (t, c)
                                                        for t, c in p.acc)})
        seq, bad = seq[:3] + [early], starts
    elif breaker == "qreg_early":     # KSTEP starts while LOAD_Q still shifts Q in
        bad = [starts[0], starts[0] + 1] + starts[2:]
    else:                             # a second PVSTEP pops the same scores again
        seq = seq + [pl["PVSTEP"]]
        bad = starts + [starts[3] + plan_ud.period(4, P)]
    with pytest.raises(plan_ud.ScheduleError):
        plan_ud.check_schedule(seq, bad)


def test_two_query_blocks_back_to_back():
    """The next query block's LOAD_Q and KSTEP follow the previous block's
    drain and normalisation without collisions."""
    pl = _plans(8, 8)
    seq = _query_block(pl, 2) + _query_block(pl, 2)
    plan_ud.check_schedule(seq, fplan.schedule_starts(seq))


def test_step_timings_and_bits():
    R, C = 8, 4
    pl = _plans(R, C)
    st = pl["STEP"]
    T = 2 * R + P + 3
    assert st.conflict_free == T - 1
    assert st.retire == plan_ud.retire_span(R, C, P) == 3 * R + P + C + 5
    assert pl["KSTEP"].conflict_free == 2 * R + 1
    # spad walk: K rows 0..R-1 then V rows R..2R-1; LOAD_Q C rows; PVSTEP V rows 0..R-1
    assert [r.index for r in st.spad_reads if r.source == "sram"] == list(range(2 * R))
    assert [r.index for r in pl["LOAD_Q"].spad_reads] == list(range(C))
    assert [r.index for r in pl["PVSTEP"].spad_reads if r.source == "sram"] == list(range(R))
    # acc walk: l then the R rows of O^T, each ACC_SA reading its row the cycle before
    reads = {a.cycle: a.index for a in st.acc_reads}
    sa = [t for t, c in st.acc if c == "ACC_SA"]
    assert [reads[t - 1] for t in sa] == list(range(R + 1))
    bits = {b for w in st.waves for b in w.bits}
    assert {"use_q", "load_reg_di"} <= bits and "load_q" not in bits
    assert {b for w in pl["LOAD_Q"].waves for b in w.bits} == {"load_q"}
    assert dict(st.cmp)[R] == "LATCH" and "LATCH" in fplan.UD_CMP_CMDS
    assert fplan.UD_CMP_CMDS.index("LATCH") == 7
    assert all(c in fplan.BCMP_CMDS for _, c in st.bcmp)
    # the compact (timer) form reproduces the table, as for the reference plans
    tb = fplan.table(st)
    assert fplan.expand_compact(fplan.compact(st), R, tb.length) == tb.pe


def test_ud_plans_refuse_too_many_columns():
    with pytest.raises(ValueError, match="C <= R \\+ P \\+ 1"):
        fplan.make_plan("STEP", 4, 14, 8)
    fplan.make_plan("STEP", 4, 13, 8)
    with pytest.raises(ValueError, match="sa_cols <= sa_rows"):
        fconfig.get("FSA4X4Fp16UdConfig").replace(sa_cols=14, name="Wide")


def test_timing_plans_by_dataflow():
    ref = timing.plans("FSA8X8Fp16Config")
    ud = timing.plans("FSA8X8Fp16UdConfig")
    assert [p.func for p in ref] == list(fplan.FUNCS)
    assert [p.func for p in ud] == list(fplan.ALL_FUNCS)
    assert ud[:5] == ref                     # codes 0-4 unchanged on UD hardware
    assert all(not p.bcmp for p in ref)


def test_reference_chart_unchanged_by_ud_bits():
    """Reference plans draw without the UD bits, lanes or legend."""
    out = fplan.chart(timing.plan("FSA4X4Fp16Config", "ATTENTION_SCORE"))
    assert "use_q" not in out and "BCMP" not in out and "LATCH" not in out
    ud = fplan.chart(timing.plan("FSA4X4Fp16UdConfig", "STEP"))
    assert "BCMP up" in ud and "load_reg_di r3" in ud


@pytest.mark.parametrize("name,sq,skv,causal", [("FSA4X4Fp16UdConfig", 12, 16, False),
                                                ("FSA8X8Fp16UdConfig", 24, 24, True),
                                                ("FSA4X8Fp16UdConfig", 16, 12, False),
                                                ("FSA8X4Fp16UdConfig", 8, 24, False)])
def test_the_kernels_own_schedule_is_clean(name, sq, skv, causal):
    """The UD kernel's matrix instructions, at the start cycles the cycle
    model gives them (free and calibrated DMA), pass the checker: across
    query blocks too (STEP, LOAD_Q, STEP, LSE_NORM_SCALE, LSE_NORM)."""
    from fsa.cycle import model as cm
    from fsa import isa, kernels

    cfg = fconfig.get(name)
    prog = kernels.attention(cfg, sq, skv, causal)
    plans = timing.plans(cfg)
    mx = [plans[int(i.func)] for i in prog.instructions if isinstance(i, isa.Matrix)]
    assert [p.func for p in mx].count("LOAD_Q") == sq // cfg.sa_cols
    for dma in (cm.IDEAL_DMA, cm.DEFAULT_DMA):
        starts = cm.simulate(cfg, prog.instructions, dma).mx_starts
        assert len(starts) == len(mx)
        plan_ud.check_schedule(mx, starts)
