"""Plans of the UD ("unidirectional") dataflow, and its schedule checker.

docs/ud.md is the design.  Everything that uses a PE's FMA flows **down**:
Q stays resident in a second PE register ``qreg`` (LOAD_Q), the K stream
multiplies it (``use_q``) and its sums flow down into the bottom comparator
row (BCMP: running max, causal mask, an R-deep LIFO of the scores, ``-m``
and the max difference); the scores and ``-m`` come back **up** the
otherwise idle u path (``flow_du``), every row captures its score in
parallel (``load_reg_di``) and the top CMP latches ``-m`` (``LATCH``); then
the softmax waves and the V stream run down as in the reference.

One fused STEP per key block ``j`` overlaps the K part of block ``j`` with
the PV part (softmax and V) of block ``j - 1``; KSTEP is the K part alone
(pipeline start), PVSTEP the PV part alone (drain).  Cycles of column 0
relative to the instruction's start (column ``c`` acts ``c`` cycles later;
ACC commands and acc-SRAM reads are all-column times, after the BCMP's
output register and the output delayer: ``+C`` from the bottom PE):

=================  ===========================================================
K part (KSTEP,     top CMP PROP_ZERO at 0 (row 0's addend is +0 for the sums);
STEP)              K rows (walk 0..R-1) read at 0..R-1; ``mac acc_ui use_q
                   flow_lr`` down 1..R; BCMP RESET at R (only with the
                   instruction's ``reset_max``), UPDATE at R+1..2R, PROP_MAX
                   at 2R+1 (``-m`` into the u path), MAX_DIFF at 2R+2
PV part (STEP,     ``flow_du`` parallel 0..R-1 with BCMP POP at 0..R-1 (``-m``
PVSTEP)            then the scores shift up); ``load_reg_di`` parallel at R,
                   top CMP LATCH at R; the reference's softmax waves one
                   cycle apart from R+1 (sub max, scale, P exp2 chords, row
                   sum at R+P+3) with the same constants; V rows read at
                   R+P+3.. (STEP: walk R..2R-1, PVSTEP: walk 0..R-1),
                   ``mac acc_ui flow_lr`` down R+P+4..2R+P+3; BCMP SEND_DIFF at
                   R+1, BYPASS at 2R+P+3..3R+P+3; ACC EXP_S1 / EXP_S2 at
                   R+C+1 / R+C+2, ACC_SA at 2R+P+C+3+i (acc walk i = 0: l,
                   1..R: the O^T rows), each reading its row the cycle before
LOAD_Q             Q rows (walk 0..C-1) read at 0..C-1, ``load_q`` down 1..C;
                   the slot retires after its last row-0 source
                   (:attr:`fsa.plan.Plan.slot_last` = C: release at C + 1,
                   retire at C + 2), so a STEP after it waits C + 2 cycles,
                   not for the STEP before LOAD_Q to retire
=================  ===========================================================

The STEP period is ``T = 2R + P + 3`` (:func:`period`): every PE's FMA, the
spad read port and every input lane are busy every cycle of it, which is the
bound for one FMA per PE with these softmax operations.  A STEP's slot
retires ``3R + P + C + 5`` cycles after its start, so two issue slots keep
STEPs ``T`` apart only while ``C <= R + P + 1`` (checked by
:func:`make_ud_plan`; ``FSAConfig`` refuses such UD configs).

An instruction with the ``early_release`` bit releases its semaphore at
:attr:`fsa.plan.Plan.read_release` (the cycle after its last scratchpad
read: ``2R + P + 3`` for a STEP) instead of :attr:`~fsa.plan.Plan.release`
(after its last ACC write, ``3R + P + C + 4``), so the DMA may refill its
scratchpad rows while its softmax and ACC work finish.

All SRAM reads use the input delayer with ``rev_input`` and ``delay_output``
(row ``r`` receives element ``R-1-r`` of a read at cycle ``t`` at cycle
``t + 1 + r``), so ``qreg`` and the K rows pair dimension ``R-1-r`` in row
``r`` and the sums, the row sum and the V products are accumulated in the
reference tile model's order (bit for bit the same results).

:func:`check_schedule` is the checker: over a sequence of overlapped
instructions it asserts that no resource has two owners in one cycle (PE
FMA, d_out, u_out, r_out, reg and qreg per row, the input lanes, the spad
read port, the acc SRAM read and write ports, the top CMP, BCMP and ACC
command lanes) and that every cross-instruction hand-over happens in order
(scores and ``-m`` before they are popped, the max difference before it is
sent, the rescale after the last use of the old scale, ``reg`` and ``qreg``
rewritten only after their last reader).
"""
from __future__ import annotations

from fsa.hw.control import norm_slack
from fsa.hw.control import ACC_WRITE_CMDS
from fsa.hw.isa import UD_MX_FUNCS as UD_FUNCS
from fsa.plan_base import AccRead, Plan, SpadRead, Wave, check_reciprocal_cycles, table

__all__ = ["period", "make_ud_plan", "retire_span", "norm_slack", "norm_window", "check_schedule",
           "claims", "ScheduleError"]

#: Input-delayer flags of every UD SRAM read: rev_input, rev_output, delay_output.
FLAGS = (True, False, True)


def period(R: int, P: int) -> int:
    """The STEP period ``2R + P + 3`` (cycles per key block in steady state)."""
    return 2 * R + P + 3


def retire_span(R: int, C: int, P: int) -> int:
    """Cycles from a STEP's start until its slot retires: ``3R + P + C + 5``."""
    return 3 * R + P + C + 5


def _w(bits: str, kind: str, start: int, n: int) -> Wave:
    return Wave(tuple(bits.split()), kind, start, n)


def _const(t: int, src: str, k: int = 0) -> SpadRead:
    return SpadRead(t, src, k, False, False, True)


def _k_part(R: int) -> tuple[list, list, list, list]:
    waves = [_w("mac acc_ui use_q flow_lr", "down", 1, R)]
    reads = [SpadRead(i, "sram", i, *FLAGS) for i in range(R)]
    cmp = [(0, "PROP_ZERO")]
    bcmp = [(R, "RESET")] + [(R + 1 + k, "UPDATE") for k in range(R)]
    bcmp += [(2 * R + 1, "PROP_MAX"), (2 * R + 2, "MAX_DIFF")]
    return waves, reads, cmp, bcmp


def _pv_part(R: int, C: int, P: int, v_walk: int) -> tuple[list, list, list, list, list, list]:
    waves = [
        _w("flow_du", "parallel", 0, R),                         # -m, then the scores, up
        _w("load_reg_di", "parallel", R, 1),                     # every row captures its score
        _w("update_reg acc_ui flow_ud flow_lr", "down", R + 1, 1),   # reg*1 - m
        _w("update_reg acc_ui flow_ud flow_lr", "down", R + 2, 1),   # reg*scale + 0
        _w("flow_ud flow_lr acc_ui exp2", "down", R + 3, P),         # exp2, P chords
        _w("mac acc_ui flow_lr", "down", R + P + 3, 1),              # row sum
        _w("mac acc_ui flow_lr", "down", R + P + 4, R),              # V stream, sums down
    ]
    cmp = [(R, "LATCH"), (R + 1, "PROP_ZERO")]
    cmp += [(R + 2 + k, "PROP_EXP2_INTERCEPTS") for k in range(P)]
    cmp += [(R + P + 2, "PROP_ZERO")]
    reads = [_const(R, "one"), _const(R + 1, "scale")]
    reads += [_const(R + 2 + k, "slope", k) for k in range(P)]
    reads += [_const(R + P + 2, "one")]
    reads += [SpadRead(R + P + 3 + i, "sram", v_walk + i, *FLAGS) for i in range(R)]
    bcmp = [(k, "POP") for k in range(R)] + [(R + 1, "SEND_DIFF")]
    bcmp += [(2 * R + P + 3 + i, "BYPASS") for i in range(R + 1)]
    acc = [(R + C + 1, "EXP_S1"), (R + C + 2, "EXP_S2")]
    acc += [(2 * R + P + C + 3 + i, "ACC_SA") for i in range(R + 1)]
    acc_reads = [AccRead(2 * R + P + C + 2 + i, i) for i in range(R + 1)]
    return waves, reads, cmp, bcmp, acc, acc_reads


def make_ud_plan(func: str, R: int, C: int, P: int = 8, *,
                 reciprocal_cycles: "int | None" = None, rev_in: "bool | None" = None,
                 rev_out: "bool | None" = None, delay: "bool | None" = None) -> Plan:
    """The UD plan of `func` (one of :data:`fsa.plan.UD_FUNCS`);
    `reciprocal_cycles` (:func:`fsa.hw.timing.reciprocal_cycles`) is needed
    by NORM_SCALE.  The input-delayer flags are fixed (:data:`FLAGS`):
    `rev_in`, `rev_out`, `delay` must be None.

    Raises:
        ValueError: flags given, unknown function, bad sizes, or ``C > R + P + 1``.
    """
    if (rev_in, rev_out, delay) != (None, None, None):
        raise ValueError(f"{func}: the UD plans have fixed input-delayer flags")
    if func not in UD_FUNCS:
        raise ValueError(f"unknown UD matrix function {func!r}; use one of {UD_FUNCS}")
    if R < 2 or C < 2 or P < 1:
        raise ValueError(f"need R >= 2, C >= 2, P >= 1 (got R={R}, C={C}, P={P})")
    if C > R + P + 1:
        raise ValueError(f"the UD dataflow needs C <= R + P + 1 = {R + P + 1} (two issue slots), "
                         f"got C = {C}")
    T = period(R, P)
    if func in ("NORM_SCALE", "NORM"):
        return _norm_plan(func, R, C, P, reciprocal_cycles)
    if func == "LOAD_Q":
        # the slot is free once its last row-0 source (cycle C) has gone: the
        # wave reaches the other rows through the control chains
        return Plan(func, R, C, P, waves=(_w("load_q", "down", 1, C),), cmp=(), acc=(),
                    spad_reads=tuple(SpadRead(i, "sram", i, *FLAGS) for i in range(C)),
                    acc_reads=(), conflict_free=C - 1, slot_last=C)
    waves, reads, cmp, bcmp, acc, acc_reads = [], [], [], [], [], []
    if func in ("KSTEP", "STEP"):
        w, r, c, b = _k_part(R)
        waves, reads, cmp, bcmp = waves + w, reads + r, cmp + c, bcmp + b
    if func in ("STEP", "PVSTEP"):
        w, r, c, b, a, ar = _pv_part(R, C, P, R if func == "STEP" else 0)
        waves, reads, cmp, bcmp = waves + w, reads + r, cmp + c, bcmp + b
        acc, acc_reads = acc + a, acc_reads + ar
    # KSTEP: the next STEP may pop the scores once -m is in the u path
    cf = 2 * R + 1 if func == "KSTEP" else T - 1
    return Plan(func, R, C, P, tuple(waves), tuple(sorted(cmp)), tuple(acc),
                tuple(sorted(reads, key=lambda x: x.cycle)), tuple(acc_reads),
                conflict_free=cf, bcmp=tuple(sorted(bcmp)))


def norm_window(R: int, C: int, P: int) -> tuple[int, int]:
    """(first, last) cycle, relative to a NORM_SCALE / NORM start, of the
    ACC command lane that its partner (a STEP or PVSTEP starting 1 ..
    :func:`norm_slack` cycles later) and everything before it leave free:
    after the latest partner's EXP_S2, before the earliest partner's first
    ACC_SA (``2R + P + C + 4``); ``R + P + 1 - norm_slack`` cycles."""
    return R + C + 3 + norm_slack(P), 2 * R + P + C + 3


def _norm_plan(func: str, R: int, C: int, P: int, n: "int | None") -> Plan:
    """NORM_SCALE (``scale2 <- 1 / l``, one acc row) or NORM (R acc rows
    ``<- scale2 * row + 0``): the ACC-only functions of the controller's
    third slot.  Their commands sit in the free window of the STEP or PVSTEP
    that starts 1 .. :func:`norm_slack` cycles after them
    (:func:`norm_window`); the next instruction may start that soon
    (``conflict_free`` 0) only when it is such a partner (the issue rule,
    fsa/plan.py), else once they have retired."""
    first, last = norm_window(R, C, P)
    if func == "NORM_SCALE":
        n = check_reciprocal_cycles(func, n, 2)
        # l read the cycle before SET_SCALE2; one RECIPROCAL2 starts the
        # divider, which writes scale2 n - 1 cycles later (hold)
        return Plan(func, R, C, P, waves=(), cmp=(),
                    acc=((first, "SET_SCALE2"), (first + 1, "RECIPROCAL2")), spad_reads=(),
                    acc_reads=(AccRead(first - 1, 0),), conflict_free=0, reciprocal_cycles=n,
                    hold=first + n)
    assert first + R - 1 <= last
    return Plan(func, R, C, P, waves=(), cmp=(), acc=tuple((first + i, "ACC2") for i in range(R)),
                spad_reads=(), acc_reads=tuple(AccRead(first - 1 + i, i) for i in range(R)),
                conflict_free=0)


# --------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------
class ScheduleError(ValueError):
    """Two owners of one resource in a cycle, or a hand-over out of order."""


def _pe_claims(bits: frozenset) -> tuple[set[str], set[str], set[str]]:
    """(resources owned, registers read, registers written) by one row's bits."""
    own: set[str] = set()
    if bits & {"mac", "update_reg", "exp2"}:
        own.add("fma")
    if ("mac" in bits and "acc_ui" in bits) or "flow_ud" in bits:
        own.add("d_out")
    if ("mac" in bits and "acc_ui" not in bits) or "flow_du" in bits:
        own.add("u_out")
    if bits & {"flow_lr", "load_reg_li", "load_q"}:
        own.add("r_out")
    reads, writes = set(), set()
    if bits & {"mac", "update_reg", "exp2"}:
        reads.add("qreg" if "use_q" in bits else "reg")
    if bits & {"load_reg_li", "load_reg_ui", "load_reg_di", "update_reg", "exp2"}:
        writes.add("reg")
    if "load_q" in bits:
        writes.add("qreg")
        reads.add("qreg")                       # r_out <- qreg: the chain shifts
    return own | reads | writes, reads, writes


def claims(plan: Plan) -> dict[tuple, str]:
    """Every (resource, cycle) key `plan` owns, relative to its start, with
    what owns it (for messages).  Raises ScheduleError for a plan that
    drives one resource twice itself (two writers of d_out, two addends)."""
    tb = table(plan)
    out: dict[tuple, str] = {}
    for cyc, rows in enumerate(tb.pe):
        for r, bits in enumerate(rows):
            if not bits:
                continue
            if "mac" in bits and "acc_ui" in bits and "flow_ud" in bits:
                raise ScheduleError(f"{plan.func}: mac and flow_ud both write d_out, row {r} cycle {cyc}")
            if len(bits & {"load_reg_li", "load_reg_ui", "load_reg_di", "update_reg"}) > 1:
                raise ScheduleError(f"{plan.func}: two writers of reg, row {r} cycle {cyc}")
            for res in _pe_claims(bits)[0]:
                out[("pe", res, r, cyc)] = "+".join(sorted(bits))
    for cyc, cmd in tb.cmp.items():
        out[("top_cmp", cyc)] = cmd
    for (lane, cyc), cmd in tb.bcmp.items():
        out[("bcmp", lane, cyc)] = cmd
    for cyc, cmd in tb.acc.items():
        out[("acc_cmd", cyc)] = cmd
        if cmd in ACC_WRITE_CMDS:
            out[("acc_write", cyc)] = cmd
    for cyc in tb.acc_read:
        out[("acc_read", cyc)] = "read"
    for cyc, rd in tb.spad.items():
        out[("spad_read", cyc)] = rd.source
    for (cyc, r), (rd, _) in tb.lane.items():
        out[("lane", r, cyc)] = rd.source
    return out


def _times(plan: Plan, start: int) -> dict:
    """Absolute times of the events the hand-over checks compare."""
    tb = table(plan)
    ev: dict = {"reg_r": {}, "reg_w": {}, "qreg_r": {}, "qreg_w": {}}
    for cyc, rows in enumerate(tb.pe):
        for r, bits in enumerate(rows):
            _, rd, wr = _pe_claims(bits)
            for reg in rd:
                ev[reg + "_r"].setdefault(r, []).append(start + cyc)
            for reg in wr:
                ev[reg + "_w"].setdefault(r, []).append(start + cyc)
    for cmd in ("UPDATE", "PROP_MAX", "POP", "MAX_DIFF", "SEND_DIFF"):
        ev[cmd] = [start + t for t, c in plan.bcmp if c == cmd]
    ev["scale_use"] = [start + t for t, c in plan.acc if c in ("ACC_SA", "ACC", "RECIPROCAL",
                                                                 "EXP_S2")]
    ev["scale_set"] = [start + t for t, c in plan.acc if c in ("EXP_S1", "SET_SCALE")]
    ev["scale2_use"] = [start + t for t, c in plan.acc if c in ("ACC2", "RECIPROCAL2")]
    ev["scale2_ready"] = [start + plan.hold + 1] if plan.func == "NORM_SCALE" else []
    ev["top_zero_use"] = ([start + 1, start + plan.R] if "use_q" in
                          {b for w in plan.waves for b in w.bits} else [])
    ev["top_set"] = [start + t for t, _ in plan.cmp]
    return ev


def check_schedule(plans: list[Plan], starts: list[int]) -> None:
    """Raise :class:`ScheduleError` unless the overlapped instructions
    (`plans` started at `starts`, column-0 cycles) share no resource in any
    cycle and hand their data over in order (see the module docstring).
    Column ``c`` repeats column 0 ``c`` cycles later for every instruction,
    and the ACC row and its SRAM ports act for all columns at once, so
    checking these times covers the whole array."""
    owner: dict[tuple, int] = {}
    for i, (p, s) in enumerate(zip(plans, starts)):
        for key, what in claims(p).items():
            abs_key = key[:-1] + (key[-1] + s,)
            j = owner.setdefault(abs_key, i)
            if j != i:
                raise ScheduleError(f"{abs_key[:-1]} at cycle {abs_key[-1]}: {plans[j].func} "
                                    f"(#{j}, start {starts[j]}) and {p.func} (#{i}, start {s}, "
                                    f"{what}) both own it")
    ev = [_times(p, s) for p, s in zip(plans, starts)]
    for i, e in enumerate(ev):
        name = f"{plans[i].func} (#{i})"
        if e["POP"]:                      # a PV part: the scores of the last K part before it
            k = max((j for j in range(i) if ev[j]["UPDATE"]), default=None)
            if k is None:
                raise ScheduleError(f"{name}: pops scores no K part produced")
            first_pop = min(e["POP"])
            if not (max(ev[k]["UPDATE"]) < first_pop and max(ev[k]["PROP_MAX"]) < first_pop):
                raise ScheduleError(f"{name}: pops at {first_pop} before the scores / -m of "
                                    f"#{k} are in the bottom row")
            if not max(ev[k]["MAX_DIFF"]) < min(e["SEND_DIFF"]):
                raise ScheduleError(f"{name}: sends the max difference before #{k} computed it")
            later = [min(ev[j]["UPDATE"]) for j in range(k + 1, len(ev)) if ev[j]["UPDATE"]]
            if later and min(later) <= max(e["POP"]):
                raise ScheduleError(f"{name}: a later K part pushes onto the LIFO at "
                                    f"{min(later)} before the last pop {max(e['POP'])}")
            if any(ev[j]["POP"] for j in range(k + 1, i)):
                raise ScheduleError(f"{name}: the scores of #{k} were popped already")
        for j in range(i):                 # registers rewritten only after earlier readers
            for reg in ("reg", "qreg"):
                for r, ws in e[reg + "_w"].items():
                    rs = ev[j][reg + "_r"].get(r, [])
                    if rs and min(ws) <= max(rs):
                        raise ScheduleError(f"{name}: writes {reg} of row {r} at {min(ws)} while "
                                            f"{plans[j].func} (#{j}) reads it until {max(rs)}")
            if e["scale_set"] and ev[j]["scale_use"] and min(e["scale_set"]) <= max(ev[j]["scale_use"]):
                raise ScheduleError(f"{name}: sets the ACC scale at {min(e['scale_set'])} while "
                                    f"{plans[j].func} (#{j}) uses it until {max(ev[j]['scale_use'])}")
            if e["top_zero_use"] and ev[j]["top_set"] and max(ev[j]["top_set"]) >= min(e["top_zero_use"]):
                raise ScheduleError(f"{name}: the top CMP output it adds from {min(e['top_zero_use'])} "
                                    f"is still driven by {plans[j].func} (#{j})")
        if plans[i].func == "NORM":        # scale2 ready before NORM's first use
            ns = [j for j in range(i) if plans[j].func == "NORM_SCALE"]
            first2 = min(e["scale2_use"])
            if ns and first2 < ev[ns[-1]]["scale2_ready"][0]:
                raise ScheduleError(f"{name}: uses scale2 at {first2} before NORM_SCALE "
                                    f"(#{ns[-1]}) wrote it at {ev[ns[-1]]['scale2_ready'][0] - 1}")
        if e["qreg_r"]:                    # use_q reads: after the last LOAD_Q's writes
            loads = [j for j in range(i) if plans[j].func == "LOAD_Q"]
            if plans[i].func != "LOAD_Q":
                if not loads:
                    raise ScheduleError(f"{name}: uses qreg before any LOAD_Q")
                lq = ev[loads[-1]]["qreg_w"]
                for r, rs in e["qreg_r"].items():
                    if min(rs) <= max(lq[r]):
                        raise ScheduleError(f"{name}: reads qreg of row {r} at {min(rs)} before "
                                            f"LOAD_Q (#{loads[-1]}) finished it at {max(lq[r])}")
