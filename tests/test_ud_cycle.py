"""The UD plans computed cycle by cycle (fsa/golden/ud_cycle.py): back-to-back
UD instructions at the plans' own issue times (STEPs T = 2R + P + 3 apart)
give the tile model's attention raw bit for raw bit; a plan moved by one
cycle does not."""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa import plan as fplan
from fsa.golden import tile, ud_cycle
from fsa.hw import timing
from fsa.isa import Matrix, MxFunc


def _setup(name, sq, skv, causal, seed=0, outliers=False):
    """A UD program with every operand already in the scratchpad (no DMA):
    the kernel's instruction order, each step's K/V^T in rows of its own."""
    base = fconfig.get(name)
    R, C = base.sa_rows, base.sa_cols
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, R)) * s for n, s in ((sq, 1.5), (skv, 1.5), (skv, 1.0)))
    if outliers:
        q[0, 0], k[1, 1], v[2, 0] = 300.0, -250.0, np.inf
    q, k, v = (nx.from_float64(x, base.e_type) for x in (q, k, v))
    nq, nk = sq // C, skv // R
    steps = [(i, j) for i in range(nq) for j in range((min(i, nk - 1) if causal else nk - 1) + 1)]
    N = len(steps)
    cfg = base.replace(name="UdCycle", spad_rows=nq * C + (N + 1) * 2 * R, acc_rows=nq * (1 + R))
    spad = np.zeros((cfg.spad_rows, R), q.dtype)
    spad[:nq * C] = q
    kv0 = nq * C
    for n in range(N + 1):
        if n < N:
            j = steps[n][1]
            spad[kv0 + 2 * R * n:kv0 + 2 * R * n + R] = k[j * R:(j + 1) * R]
        if n >= 1:
            j = steps[n - 1][1]
            spad[kv0 + 2 * R * n + R:kv0 + 2 * R * (n + 1)] = v[j * R:(j + 1) * R].T
    fl = dict(rev_input=True, delay_output=True)
    prog = []
    for n in range(N + 1):
        kp = steps[n] if n < N else None
        pv = steps[n - 1] if n else None
        if kp is not None and kp[1] == 0:
            prog.append(Matrix(MxFunc.LOAD_Q, spad_addr=kp[0] * C + C - 1, spad_stride=-1, **fl))
        kw = dict(spad_addr=kv0 + 2 * R * n, spad_stride=1, **fl)
        if pv is not None:
            kw.update(acc_addr=pv[0] * (1 + R), acc_stride=1, zero=pv[1] == 0)
        if kp is not None:
            kw.update(causal=causal and kp[0] == kp[1], reset_max=kp[1] == 0)
        if kp is None:
            kw["spad_addr"] += R
            prog.append(Matrix(MxFunc.PVSTEP, **kw))
        else:
            prog.append(Matrix(MxFunc.KSTEP if pv is None else MxFunc.STEP, **kw))
        if pv is not None and pv[1] == (min(pv[0], nk - 1) if causal else nk - 1):
            a = pv[0] * (1 + R)
            prog += [Matrix(MxFunc.ATTENTION_LSE_NORM_SCALE, acc_addr=a),
                     Matrix(MxFunc.ATTENTION_LSE_NORM, acc_addr=a + 1, acc_stride=1)]
    plans = timing.plans(cfg)
    starts = fplan.schedule_starts([plans[int(i.func)] for i in prog])
    return cfg, spad, prog, starts, (q, k, v)


def _output(cfg, acc, nq):
    R = cfg.sa_rows
    return np.concatenate([acc[i * (1 + R) + 1:(i + 1) * (1 + R)].T for i in range(nq)])


@pytest.mark.parametrize("name,sq,skv,causal,outliers", [
    ("FSA4X4Fp16UdConfig", 8, 12, False, False), ("FSA4X4Fp16UdConfig", 12, 12, True, True),
    ("FSA8X8Fp16UdConfig", 16, 32, False, True), ("FSA4X8Fp16UdConfig", 16, 16, False, False),
    ("FSA8X4Fp16UdConfig", 8, 16, False, False), ("FSA4X4Bf16UdConfig", 8, 8, True, False),
    ("FSA4X4Fp32UdConfig", 4, 8, False, False), ("FSA4X4Fp16OnlyUdConfig", 8, 8, False, True),
], ids=lambda v: str(v))
def test_plans_compute_attention_bit_exact(name, sq, skv, causal, outliers):
    cfg, spad, prog, starts, (q, k, v) = _setup(name, sq, skv, causal, outliers=outliers)
    T = 2 * cfg.sa_rows + cfg.exp2_pieces + 3
    # consecutive STEPs (nothing between them in program order) run T apart
    gaps = {starts[n + 1] - starts[n] for n in range(len(prog) - 1)
            if prog[n].func == prog[n + 1].func == MxFunc.STEP}
    assert gaps == {T} if skv // cfg.sa_rows >= 3 and not causal else gaps <= {T}
    acc = ud_cycle.run(cfg, spad, np.zeros((cfg.acc_rows, cfg.sa_cols), np.uint32 if
                                            cfg.a_fmt.width == 32 else np.uint16), prog, starts)
    got = _output(cfg, acc, sq // cfg.sa_cols)
    want = tile.attention(cfg, q, k, v, causal)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("shift", [-1, -2])
def test_steps_closer_than_T_are_wrong(shift):
    """The model is sensitive to the schedule: the STEPs after the first one
    moved earlier (closer than T) break the result or the hand-over."""
    cfg, spad, prog, starts, (q, k, v) = _setup("FSA4X4Fp16UdConfig", 4, 12, False)
    i0 = [i.func for i in prog].index(MxFunc.STEP) + 1
    moved = starts[:i0] + [s + shift for s in starts[i0:]]
    zeros = np.zeros((cfg.acc_rows, cfg.sa_cols), np.uint32)
    want = tile.attention(cfg, q, k, v)
    try:
        got = _output(cfg, ud_cycle.run(cfg, spad, zeros, prog, moved), 1)
    except ValueError:
        return                                     # the ACC found no value: also a failure
    assert not np.array_equal(got, want)


def _with_norms(cfg, prog):
    """`prog` with each LSE_NORM_SCALE / LSE_NORM pair replaced by the
    non-blocking NORM_SCALE and NORM, each right before a later STEP or
    PVSTEP (its partner), at least the kernel's gap apart; those without a
    partner at the end."""
    from fsa.kernels.ud import _norm_gap
    gap = _norm_gap(cfg)
    out, fifo, last = [], [], -gap
    n_mx = 0
    for ins in prog:
        if ins.func == MxFunc.ATTENTION_LSE_NORM_SCALE:
            fifo.append(Matrix(MxFunc.NORM_SCALE, acc_addr=ins.acc_addr))
            continue
        if ins.func == MxFunc.ATTENTION_LSE_NORM:
            fifo.append(Matrix(MxFunc.NORM, acc_addr=ins.acc_addr, acc_stride=ins.acc_stride))
            continue
        if ins.func in (MxFunc.STEP, MxFunc.PVSTEP):
            n_mx += 1
            if fifo and n_mx - last >= gap:
                out.append(fifo.pop(0))
                last = n_mx
        out.append(ins)
    return out + fifo


@pytest.mark.parametrize("name,sq,skv,causal", [
    ("FSA4X4Fp16UdConfig", 12, 16, False), ("FSA4X4Fp16UdConfig", 16, 16, True),
    ("FSA8X8Fp16UdConfig", 24, 32, False), ("FSA4X8Fp16UdConfig", 16, 24, False),
    ("FSA8X4Fp16UdConfig", 12, 32, False), ("FSA4X4Fp32UdConfig", 8, 24, False),
    ("FSA4X4Fp16OnlyUdConfig", 8, 16, False),
], ids=lambda v: str(v))
@pytest.mark.parametrize("late", [False, True], ids=["partner+1", "partner+slack"])
def test_non_blocking_normalisation_bit_exact(name, sq, skv, causal, late):
    """NORM_SCALE / NORM in their partner STEP's free ACC window, the partner
    1 or norm_slack cycles after them: no resource has two owners
    (plan_ud.check_schedule), the cycle-by-cycle model gives the tile
    model's attention bit for bit, and a query block costs LOAD_Q's C + 2
    cycles plus one or two cycles per normalisation instruction."""
    from fsa.plan_ud import check_schedule, norm_slack
    cfg, spad, prog, _, (q, k, v) = _setup(name, sq, skv, causal, outliers=True)
    prog = _with_norms(cfg, prog)
    plans = timing.plans(cfg)
    pl = [plans[int(i.func)] for i in prog]
    starts = fplan.schedule_starts(pl)
    norms = [n for n, i in enumerate(prog) if i.func in (MxFunc.NORM_SCALE, MxFunc.NORM)]
    partnered = [n for n in norms if n + 1 < len(prog)
                 and prog[n + 1].func in (MxFunc.STEP, MxFunc.PVSTEP)]
    at_once = [n for n in partnered if starts[n + 1] == starts[n] + 1]
    # a partner either starts right after its NORM or waits for it to retire
    # (causal: short query blocks, where the slots hold it back)
    assert all(starts[n + 1] >= starts[n] + pl[n].retire for n in partnered if n not in at_once)
    assert at_once and (causal or at_once == partnered), (at_once, partnered)
    if late:         # every partner (and all after it) as late as the rule allows
        d = norm_slack(cfg.exp2_pieces) - 1
        for n in partnered:
            starts = starts[:n + 1] + [s + d for s in starts[n + 1:]]
    check_schedule(pl, starts)
    acc = ud_cycle.run(cfg, spad, np.zeros((cfg.acc_rows, cfg.sa_cols), np.uint32 if
                                            cfg.a_fmt.width == 32 else np.uint16), prog, starts)
    got = _output(cfg, acc, sq // cfg.sa_cols)
    want = tile.attention(cfg, q, k, v, causal)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


def test_norm_partner_one_cycle_past_the_slack_collides():
    """The window is tight: a partner STEP one cycle later than the rule
    allows (norm_slack + 1 after its NORM) puts its EXP_S1 on the NORM's
    first ACC2 cycle; the issue rule makes such a STEP wait for the NORM."""
    from fsa.plan_ud import ScheduleError, check_schedule, norm_slack
    cfg, spad, prog, _, _ = _setup("FSA4X4Fp16UdConfig", 8, 16, False)
    prog = _with_norms(cfg, prog)
    plans = timing.plans(cfg)
    pl = [plans[int(i.func)] for i in prog]
    starts = fplan.schedule_starts(pl)
    n = next(n for n, i in enumerate(prog) if i.func == MxFunc.NORM and n + 1 < len(prog)
             and prog[n + 1].func == MxFunc.STEP)
    check_schedule(pl, starts)
    d = norm_slack(cfg.exp2_pieces)         # the partner at NORM + 1 + d
    moved = starts[:n + 1] + [s + d for s in starts[n + 1:]]
    with pytest.raises(ScheduleError, match="acc_cmd"):
        check_schedule(pl, moved)
