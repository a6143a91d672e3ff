"""Execution plans: reference timings, compact (timer) form, overlap safety."""
import itertools

import pytest

from fsa import plan as P
from fsa.hw.timing import reciprocal_cycles

#: RECIPROCAL length of the presets' accumulators (fp32, 2 divider bits per cycle)
RECIP = reciprocal_cycles("fp32", 2)

SIZES = [2, 3, 4, 8, 16, 64]


@pytest.mark.parametrize("R,C", list(itertools.product(SIZES, SIZES)))
def test_compact_form_reproduces_table(R, C):
    for func in P.FUNCS:
        for pieces in (4, 8):
            pl = P.make_plan(func, R, C, pieces, reciprocal_cycles=RECIP)
            tb = P.table(pl)
            assert P.expand_compact(P.compact(pl), R, tb.length) == tb.pe, (func, R, C, pieces)


def test_compact_form_merges_overlapping_waves():
    pl = P.make_plan("ATTENTION_SCORE", 4, 4, 8)
    form = P.compact(pl)
    # flow_ud: R+1 for R, then 2R+2, 2R+3 and the exp2 wave 2R+4..2R+3+P, all "down":
    # the last three are adjacent and merge into one interval
    assert form[("flow_ud", "down")] == ((5, 4), (10, 2 + 8))
    assert form[("acc_ui", "down")] == ((10, 1), (12, 8 + 1))


def test_expand_compact_detects_a_wrong_form():
    pl = P.make_plan("ATTENTION_SCORE", 4, 4, 8)
    form = dict(P.compact(pl))
    form[("exp2", "down")] = ((12, 7),)
    assert P.expand_compact(form, 4, P.table(pl).length) != P.table(pl).pe


def test_score_timings_match_the_reference():
    R, C, Pn = 8, 4, 8
    pl = P.make_plan("ATTENTION_SCORE", R, C, Pn)
    cmp = dict(pl.cmp)
    assert [cmp[R + 1 + k] for k in range(R)] == ["UPDATE"] * R
    assert cmp[2 * R + 1] == "PROP_MAX" and cmp[2 * R + 2] == "PROP_MAX_DIFF"
    assert cmp[2 * R + 3 + Pn] == "PROP_ZERO"
    acc = dict(pl.acc)
    assert acc == {3 * R + C + 2: "EXP_S1", 3 * R + C + 3: "EXP_S2", 3 * R + C + Pn + 3: "ACC_SA"}
    assert pl.conflict_free == 2 * R + 3 + Pn
    tb = P.table(pl)
    # mac flows up from cycle 1: bottom row first
    assert "mac" in tb.pe[1][R - 1] and "mac" not in tb.pe[1][0] and "mac" in tb.pe[R][0]
    # the exp2 wave lasts P cycles per row
    assert sum("exp2" in tb.pe[c][3] for c in range(tb.length)) == Pn


@pytest.mark.parametrize("n", [4, 8, 16, 32, 64, 128])
@pytest.mark.parametrize("pieces", [4, 8, 16])
def test_square_steady_state_period_equals_reference(n, pieces):
    seq = [P.make_plan(f, n, n, pieces) for f in
           ("LOAD_STATIONARY", "ATTENTION_SCORE", "ATTENTION_VALUE") * 4]
    s = P.schedule_starts(seq)
    periods = {s[i + 3] - s[i] for i in range(0, len(s) - 3, 3)}
    assert periods == {4 * n + n + pieces + 5}


@pytest.mark.parametrize("R,C", [(8, 16), (4, 8), (16, 16), (2, 3), (16, 8), (6, 4)])
def test_period_against_reference_formula(R, C):
    """Equal to C + 2R + P + 4 + max(2R - 1, R + C + 1) when R <= C; when
    R > C the two-slot rule makes ATTENTION_SCORE wait for the previous
    ATTENTION_VALUE to retire: 2R + 1 instead of max(...) in the last term."""
    seq = [P.make_plan(f, R, C, 8) for f in ("LOAD_STATIONARY", "ATTENTION_SCORE", "ATTENTION_VALUE") * 3]
    s = P.schedule_starts(seq)
    last = max(2 * R - 1, R + C + 1) if R <= C else 2 * R + 1
    assert s[6] - s[3] == C + 2 * R + 8 + 4 + last


@pytest.mark.parametrize("R,C", list(itertools.product([2, 3, 4, 8, 16], [2, 3, 4, 8, 16])))
def test_overlapped_attention_program_has_no_resource_conflict(R, C):
    funcs = (["LOAD_STATIONARY", "ATTENTION_SCORE", "ATTENTION_VALUE"] * 3
             + ["ATTENTION_LSE_NORM_SCALE", "ATTENTION_LSE_NORM"]
             + ["LOAD_STATIONARY", "ATTENTION_SCORE", "ATTENTION_VALUE"])
    seq = [P.make_plan(f, R, C, 8, reciprocal_cycles=RECIP) for f in funcs]
    P.check_overlap(seq, P.schedule_starts(seq))


def test_overlap_checker_catches_a_too_early_start():
    seq = [P.make_plan(f, 4, 4, 8) for f in ("ATTENTION_SCORE", "ATTENTION_VALUE")]
    s = P.schedule_starts(seq)
    with pytest.raises(ValueError, match="collide"):
        P.check_overlap(seq, [s[0], s[1] - 1])


def test_load_stationary_then_score_back_to_back():
    seq = [P.make_plan(f, 4, 4, 8) for f in ("LOAD_STATIONARY", "ATTENTION_SCORE")]
    assert P.schedule_starts(seq) == [0, 4]


def test_blocking_instructions_wait_for_everything():
    seq = [P.make_plan(f, 4, 4, 8, reciprocal_cycles=RECIP)
           for f in ("ATTENTION_SCORE", "ATTENTION_VALUE", "ATTENTION_LSE_NORM_SCALE",
                     "ATTENTION_LSE_NORM")]
    s = P.schedule_starts(seq)
    assert s[2] >= s[0] + seq[0].retire and s[2] >= s[1] + seq[1].retire
    assert s[3] >= s[2] + seq[2].retire


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown matrix function"):
        P.make_plan("ATTENTION_FOO", 4, 4)
    with pytest.raises(ValueError, match="valid codes"):
        P.make_plan(11, 4, 4)
    with pytest.raises(ValueError, match="R >= 2"):
        P.make_plan("ATTENTION_SCORE", 1, 4)
    # the RECIPROCAL length has no default: it is the hardware's (fsa.hw.timing)
    with pytest.raises(ValueError, match="reciprocal_cycles"):
        P.make_plan("ATTENTION_LSE_NORM_SCALE", 4, 4)


def test_chart_is_readable():
    text = P.chart(P.make_plan("ATTENTION_SCORE", 4, 4, 4))
    assert "ATTENTION_SCORE  R=4 C=4 P=4" in text
    assert "exp2 r3         ...............EEEE....." in text
    assert "CMP (col 0)     .....UUUUMDIIII0" in text


def test_norm_scale_needs_reciprocal_cycles():
    with pytest.raises(ValueError, match="NORM_SCALE needs reciprocal_cycles"):
        P.make_plan("NORM_SCALE", 4, 4)
    from fsa.plan_ud import norm_window
    first, _ = norm_window(4, 4, 8)
    assert P.make_plan("NORM_SCALE", 4, 4, reciprocal_cycles=16).hold == first + 16
