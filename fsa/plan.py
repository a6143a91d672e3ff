"""Execution plans: the reference schedule of every matrix function, as data.

A :class:`Plan` says, cycle by cycle relative to the instruction's start
(cycle 0), what the array does for one matrix instruction:

* PE control **waves**: a set of control bits applied to the array rows as
  ``parallel(t, n)`` (all rows at cycles ``t .. t+n-1``), ``down(t, n)``
  (row ``r`` at ``t+r .. t+r+n-1``) or ``up(t, n)`` (row ``r`` at
  ``t+(R-1-r) ..``).  Times are those of column 0; control moves one column
  to the right per cycle, so column ``c`` sees everything ``c`` cycles later.
* **CMP commands** (entering CMP(0) and travelling right like PE control).
* **ACC commands** (all columns in the same cycle: the output delayer
  de-skews the columns before the ACC row).
* **Spad reads**: a scratchpad row (the ``i``-th row of the instruction's
  address/stride walk) or a broadcast constant, each with the input-delayer
  flags ``rev_in`` / ``rev_out`` / ``delay``.  A read at cycle ``t`` reaches
  array row ``r`` at cycle ``t + 1 + skew`` (one cycle of SRAM latency).
* **Acc reads** (cycle, row index of the instruction's walk) and the zero
  option; an ACC write-back command at cycle ``t`` uses the read of ``t-1``.
* ``conflict_free``: the next instruction may start the cycle after this
  one; ``last``: the last cycle with any action; ``release``: the cycle at
  which the instruction's semaphore release takes effect.

:func:`table` expands a plan into a per-cycle, per-row table of control bits
(the form testbenches drive and docs show); :func:`compact` produces the
timer form the hardware controller implements (per control bit and wave kind,
a list of merged ``(start, length)`` intervals), and :func:`expand_compact`
proves it reproduces the table.

:func:`make_plan` is parameterised by the array size, the exp2 pieces and the
RECIPROCAL length; :func:`fsa.hw.timing.plan` makes the plan of a
configuration with the hardware's parameters (the one the matrix controller
is generated from, the cycle model simulates and ``fsa plan show`` draws).

The UD dataflow (docs/ud.md, configs with ``dataflow = "ud"``) adds the
functions of :data:`UD_FUNCS` (ISA codes 5..10), built by
:func:`fsa.plan_ud.make_ud_plan` (``make_plan`` dispatches by the function's
dataflow in ``fsa.hw.isa.MX_FUNC_TABLE``): three more
PE control bits (:data:`UD_PE_BITS`), the top CMP's ``LATCH`` command and the
bottom comparator row's commands (:attr:`Plan.bcmp`, :data:`BCMP_CMDS`).
Reference plans have no BCMP commands and none of those bits.

The timings follow docs/architecture.md section 7 (with this module's reading of
"next may start at X": the next instruction's cycle 0 is this one's X + 1,
which is what makes LOAD_STATIONARY -> ATTENTION_SCORE conflict-free).

The plans' types (:class:`Wave`, :class:`SpadRead`, :class:`AccRead`,
:class:`Plan`, :class:`Table`, :func:`table`) are :mod:`fsa.plan_base`'s,
re-exported here.
"""
from __future__ import annotations

from typing import Iterable

from fsa.hw.control import (ACC_CMDS, ACC_WRITE_CMDS, BCMP_CMDS, CMP_CMDS, ISSUE_SLOTS,
                            NORM_FUNCS, NORM_PARTNERS, PE_BITS, SLOT_RETIRE, UD_ACC_CMDS,
                            UD_CMP_CMDS, UD_PE_BITS, norm_slack)
from fsa.hw import dataflow as hw_dataflow
from fsa.hw.isa import ALL_MX_FUNCS, MX_FUNC_TABLE, MX_FUNCS, UD_MX_FUNCS
from fsa.plan_base import (AccRead, Plan, SpadRead, Table, Wave, check_reciprocal_cycles, landing,
                           table)
from fsa.plan_ud import make_ud_plan

__all__ = [
    "PE_BITS", "CMP_CMDS", "ACC_CMDS", "FUNCS", "Wave", "SpadRead", "AccRead", "Plan",
    "make_plan", "table", "compact", "expand_compact", "Table", "schedule_starts",
    "ISSUE_SLOTS", "SLOT_RETIRE", "check_overlap", "chart", "landing",
    "UD_FUNCS", "ALL_FUNCS", "UD_PE_BITS", "BCMP_CMDS", "UD_CMP_CMDS", "UD_ACC_CMDS",
    "ACC_WRITE_CMDS", "NORM_FUNCS", "NORM_PARTNERS", "check_reciprocal_cycles",
]

# The tables (one place each, the hardware contract): re-exported here
# because the plans are written in them.
FUNCS = MX_FUNCS            # the reference functions, ISA codes 0..4
UD_FUNCS = UD_MX_FUNCS      # the UD dataflow's, codes 5..10
ALL_FUNCS = ALL_MX_FUNCS    # every function, indexed by ISA code


def _sram_flags(func: str) -> tuple[bool, bool, bool]:
    """Input-delayer flags the reference kernels set for SRAM reads."""
    return {"LOAD_STATIONARY": (False, False, False),
            "ATTENTION_SCORE": (True, True, True),
            "ATTENTION_VALUE": (True, False, True)}.get(func, (False, False, False))


def make_plan(func: "str | int", R: int, C: int, P: int = 8, *,
              reciprocal_cycles: "int | None" = None,
              rev_in: bool | None = None, rev_out: bool | None = None,
              delay: bool | None = None) -> Plan:
    """The reference schedule of matrix function `func` for an R x C array.

    Args:
        func: a name of :data:`ALL_FUNCS` or its ISA code (the UD ones are
            built by :func:`fsa.plan_ud.make_ud_plan`; their input-delayer
            flags are fixed, `rev_in` / `rev_out` / `delay` must be None).
        R, C: array rows and columns.
        P: exp2 pieces.
        reciprocal_cycles: cycles of RECIPROCAL commands of
            ATTENTION_LSE_NORM_SCALE (required for that function, ignored by
            the others); the hardware's value is
            :func:`fsa.hw.timing.reciprocal_cycles`, and
            :func:`fsa.hw.timing.plan` makes the plan of a configuration.
        rev_in, rev_out, delay: the instruction's input-delayer flags for its
            SRAM reads (default: what the reference kernels use).

    Raises:
        ValueError: unknown function or bad sizes; ATTENTION_LSE_NORM_SCALE
            without `reciprocal_cycles`.
    """
    if isinstance(func, int):
        if not 0 <= func < len(ALL_FUNCS):
            raise ValueError(f"unknown matrix function code {func}; valid codes 0..{len(ALL_FUNCS) - 1}")
        func = ALL_FUNCS[func]
    if func not in _OWNER:
        raise ValueError(f"unknown matrix function {func!r}; use one of {ALL_FUNCS}")
    return _BUILDERS[_OWNER[func]](func, R, C, P, reciprocal_cycles=reciprocal_cycles,
                                   rev_in=rev_in, rev_out=rev_out, delay=delay)


def _reference_plan(func: str, R: int, C: int, P: int, *, reciprocal_cycles: "int | None",
                    rev_in: "bool | None", rev_out: "bool | None", delay: "bool | None") -> Plan:
    """The reference schedule of `func` (one of :data:`FUNCS`; arguments as
    :func:`make_plan`)."""
    if func not in FUNCS:
        raise ValueError(f"unknown matrix function {func!r}; use one of {ALL_FUNCS}")
    if R < 2 or C < 2 or P < 1:
        raise ValueError(f"need R >= 2, C >= 2, P >= 1 (got R={R}, C={C}, P={P})")
    fl = _sram_flags(func)
    flags = (fl[0] if rev_in is None else rev_in, fl[1] if rev_out is None else rev_out,
             fl[2] if delay is None else delay)

    def W(bits: str, kind: str, start: int, n: int) -> Wave:
        return Wave(tuple(bits.split()), kind, start, n)

    def sram(cycles: Iterable[int]) -> list[SpadRead]:
        return [SpadRead(t, "sram", i, *flags) for i, t in enumerate(cycles)]

    def const(t: int, src: str, k: int = 0) -> SpadRead:
        # constants are broadcast; skewed so that row r gets it r cycles later
        return SpadRead(t, src, k, False, False, True)

    if func == "LOAD_STATIONARY":
        return Plan(func, R, C, P,
                    waves=(W("load_reg_li", "parallel", 1, C),),
                    cmp=(), acc=(), spad_reads=tuple(sram(range(C))), acc_reads=(),
                    conflict_free=C - 1)

    if func == "ATTENTION_SCORE":
        waves = [
            W("mac flow_lr", "up", 1, R),                       # S = Q.K, sums flow up
            W("flow_ud", "down", R + 1, R),                     # S (as E) flows back down
            W("flow_du", "up", R + 4, R),                       # zeros up: clear the up path
            W("load_reg_ui", "parallel", 2 * R + 1, 1),         # reg <- S
            W("update_reg acc_ui flow_ud flow_lr", "down", 2 * R + 2, 1),   # reg*1 - m
            W("flow_ud update_reg flow_lr", "down", 2 * R + 3, 1),          # reg*scale + 0
            W("flow_ud flow_lr acc_ui exp2", "down", 2 * R + 4, P),         # exp2, P cycles
            W("mac acc_ui flow_lr", "down", 2 * R + 4 + P, 1),              # row sum
        ]
        cmp = [(R + 1 + k, "UPDATE") for k in range(R)]
        cmp += [(2 * R + 1, "PROP_MAX"), (2 * R + 2, "PROP_MAX_DIFF")]
        cmp += [(2 * R + 3 + k, "PROP_EXP2_INTERCEPTS") for k in range(P)]
        cmp += [(2 * R + 3 + P, "PROP_ZERO")]
        reads = sram(range(R))
        reads += [const(2 * R + 1, "one"), const(2 * R + 2, "scale")]
        reads += [const(2 * R + 3 + k, "slope", k) for k in range(P)]
        reads += [const(2 * R + 3 + P, "one")]
        acc = [(3 * R + C + 2, "EXP_S1"), (3 * R + C + 3, "EXP_S2"),
               (3 * R + C + P + 3, "ACC_SA")]
        return Plan(func, R, C, P, tuple(waves), tuple(cmp), tuple(acc), tuple(reads),
                    acc_reads=(AccRead(3 * R + C + P + 2, 0),),
                    conflict_free=2 * R + 3 + P)

    if func == "ATTENTION_VALUE":
        return Plan(func, R, C, P,
                    waves=(W("mac acc_ui flow_lr", "down", 1, R),),
                    cmp=(), acc=tuple((R + C + i, "ACC_SA") for i in range(R)),
                    spad_reads=tuple(sram(range(R))),
                    acc_reads=tuple(AccRead(R + C - 1 + i, i) for i in range(R)),
                    conflict_free=2 * R - 2)

    if func == "ATTENTION_LSE_NORM_SCALE":
        n = check_reciprocal_cycles(func, reciprocal_cycles, 1)
        acc = [(1, "SET_SCALE")] + [(2 + k, "RECIPROCAL") for k in range(n)]
        return Plan(func, R, C, P, waves=(), cmp=(), acc=tuple(acc), spad_reads=(),
                    acc_reads=(AccRead(0, 0),), conflict_free=1 + n,
                    blocking=True, reciprocal_cycles=n)

    # ATTENTION_LSE_NORM
    return Plan(func, R, C, P, waves=(), cmp=((0, "RESET"),),
                acc=tuple((1 + i, "ACC") for i in range(R)), spad_reads=(),
                acc_reads=tuple(AccRead(i, i) for i in range(R)),
                conflict_free=R, blocking=True)


#: The plan builder of each dataflow's own functions, by the dataflow that
#: owns a function in fsa.hw.isa.MX_FUNC_TABLE (a new dataflow: its builder here).
_BUILDERS = {"reference": _reference_plan, "ud": make_ud_plan}
_OWNER = dict(MX_FUNC_TABLE)


# --------------------------------------------------------------------------
# Compact (timer) form for the hardware controller
# --------------------------------------------------------------------------
def _merge(intervals: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for s, n in sorted(intervals):
        if n <= 0:
            continue
        if out and s <= out[-1][0] + out[-1][1]:
            out[-1][1] = max(out[-1][1], s + n - out[-1][0])
        else:
            out.append([s, n])
    return tuple((s, n) for s, n in out)


def compact(plan: Plan) -> dict[tuple[str, str], tuple[tuple[int, int], ...]]:
    """Timer form of the PE control: ``{(bit, kind): ((start, length), ...)}``.

    The hardware implements each entry with comparators on the instruction's
    cycle counter (a "source" per bit and kind) and, for ``down`` / ``up``,
    a shift register along the rows; overlapping or adjacent intervals of the
    same bit and kind are merged into one.
    """
    acc: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for w in plan.waves:
        for b in w.bits:
            acc.setdefault((b, w.kind), []).append((w.start, w.length))
    return {k: _merge(v) for k, v in sorted(acc.items())}


def expand_compact(form: dict[tuple[str, str], tuple[tuple[int, int], ...]], R: int,
                   length: int) -> list[list[frozenset]]:
    """Per-cycle, per-row bits that the hardware produces from the compact form
    (its own model of sources + row shift registers)."""
    src: dict[tuple[str, str], list[bool]] = {}
    for key, ivs in form.items():
        line = [False] * (length + 2 * R)
        for s, n in ivs:
            for cyc in range(s, s + n):
                if 0 <= cyc < len(line):
                    line[cyc] = True
        src[key] = line
    out = []
    for cyc in range(length):
        row_bits = []
        for r in range(R):
            bits = set()
            for (b, kind), line in src.items():
                d = {"parallel": 0, "down": r, "up": R - 1 - r}[kind]
                if cyc - d >= 0 and line[cyc - d]:
                    bits.add(b)
            row_bits.append(frozenset(bits))
        out.append(row_bits)
    return out


def schedule_starts(plans: list[Plan], wait_prev_acc: "list[bool] | None" = None) -> list[int]:
    """Start cycles of a sequence of instructions under the reference issue
    rule (no semaphore waits): the next starts the cycle after the previous
    one's conflict-free cycle, only when the instruction ISSUE_SLOTS before it
    has retired, and a blocking instruction (or one with `wait_prev_acc`)
    waits for all before it to retire; a blocking one also holds off
    everything after it until it retires.  An instruction whose slot retires
    before its wave is over (:attr:`Plan.slot_last`, UD LOAD_Q) lets only
    the instruction right after it start before :attr:`Plan.wave_retire`.
    The UD NORM_FUNCS run in a third slot of their own (one at a time); the
    instruction after one starts 1 .. ``fsa.hw.control.norm_slack`` cycles
    after it when it is a STEP or PVSTEP (its partner, whose free ACC window
    the normalisation uses), otherwise once it has retired."""
    starts: list[int] = []
    waits = wait_prev_acc or [False] * len(plans)
    wave = None                 # the last early-retired instruction (index)
    for i, p in enumerate(plans):
        s = 0
        if i:
            prev = plans[i - 1]
            s = starts[i - 1] + prev.conflict_free + 1
            if p.func in NORM_FUNCS:
                # their own third slot: free once the previous one retired
                s = max([s] + [starts[j] + plans[j].retire for j in range(i)
                               if plans[j].func in NORM_FUNCS])
            else:
                # a free slot: fewer than ISSUE_SLOTS earlier ones (not
                # NORM_FUNCS) not yet retired: the instruction ISSUE_SLOTS
                # before, unless an early-retired LOAD_Q between frees its
                # slot first
                while True:
                    ends = sorted(e for e in (starts[j] + plans[j].retire for j in range(i)
                                              if plans[j].func not in NORM_FUNCS) if e > s)
                    if len(ends) < ISSUE_SLOTS:
                        break
                    s = ends[len(ends) - ISSUE_SLOTS]
            if p.blocking or prev.blocking or waits[i]:
                s = max([s] + [starts[j] + plans[j].retire for j in range(i)])
            if wave is not None and (wave < i - 1 or p.blocking or waits[i]):
                s = max(s, starts[wave] + plans[wave].wave_retire)
            # after a NORM_SCALE / NORM: its partner (a STEP or PVSTEP)
            # within the slack, anything else once it has retired
            if prev.func in NORM_FUNCS and not (
                    p.func in NORM_PARTNERS and not (p.blocking or waits[i])
                    and s <= starts[i - 1] + norm_slack(prev.P)):
                s = max(s, starts[i - 1] + prev.retire)
        if p.slot_last is not None:
            wave = i
        starts.append(s)
    return starts


# --------------------------------------------------------------------------
# Conflicts between overlapped instructions
# --------------------------------------------------------------------------
#: Which PE output each control bit writes (for conflict checks).
def _pe_resources(bits: frozenset) -> set[str]:
    res = set()
    if "mac" in bits:
        res.add("d_out" if "acc_ui" in bits else "u_out")
    if "flow_ud" in bits:
        res.add("d_out")
    if "flow_du" in bits:
        res.add("u_out")
    if bits & {"load_reg_li", "load_reg_ui", "load_reg_di", "update_reg", "exp2"}:
        res.add("reg")
    if bits & {"flow_lr", "load_reg_li", "load_q"}:
        res.add("r_out")
    if "load_q" in bits:
        res.add("qreg")
    if bits & {"mac", "update_reg", "exp2"}:
        res.add("addend_" + ("u" if "acc_ui" in bits else "d"))
    return res


def check_overlap(plans: list[Plan], starts: list[int]) -> None:
    """Raise ValueError if two instructions of a schedule drive the same
    resource (a PE output, the FMA addend select, a CMP/ACC command slot, a
    spad/acc read port, an input-delayer lane) in the same cycle.

    Within one instruction bits may share a resource by design (e.g.
    ``mac`` + ``flow_ud`` write different outputs only when ``acc_ui`` is 0);
    those are checked per instruction too.
    """
    owner: dict[tuple, int] = {}

    def claim(key: tuple, i: int, what: str) -> None:
        j = owner.setdefault(key, i)
        if j != i:
            raise ValueError(f"{what}: {plans[j].func} (#{j}, start {starts[j]}) and "
                             f"{plans[i].func} (#{i}, start {starts[i]}) collide at {key}")

    for i, (p, s) in enumerate(zip(plans, starts)):
        tb = table(p)
        for cyc, row_bits in enumerate(tb.pe):
            for r, bits in enumerate(row_bits):
                res = _pe_resources(bits)
                if {"addend_u", "addend_d"} <= res:
                    raise ValueError(f"{p.func}: addend select conflict row {r} cycle {cyc}")
                if "mac" in bits and "flow_ud" in bits and "acc_ui" in bits:
                    raise ValueError(f"{p.func}: mac and flow_ud both write d_out, row {r} cycle {cyc}")
                for x in res:
                    claim(("pe", x, r, s + cyc), i, "PE")
        for cyc in tb.cmp:
            claim(("cmp", s + cyc), i, "CMP")
        for lane, cyc in tb.bcmp:
            claim(("bcmp", lane, s + cyc), i, "bottom CMP")
        for cyc in tb.acc:
            claim(("acc", s + cyc), i, "ACC")
        for cyc in tb.spad:
            claim(("spad", s + cyc), i, "spad read port")
        for (cyc, r) in tb.lane:
            claim(("lane", r, s + cyc), i, "input delayer")
        for cyc in tb.acc_read:
            claim(("accrd", s + cyc), i, "acc read port")


# --------------------------------------------------------------------------
# A chart a person can read (`fsa plan show`)
# --------------------------------------------------------------------------
_BIT_CHAR = {"mac": "M", "acc_ui": "a", "load_reg_li": "L", "load_reg_ui": "U",
             "flow_lr": ">", "flow_ud": "v", "flow_du": "^", "update_reg": "W", "exp2": "E",
             "use_q": "q", "load_q": "Q", "load_reg_di": "D"}
_BCMP_CHAR = {"RESET": "R", "UPDATE": "U", "MAX_DIFF": "D", "PROP_MAX": "M", "POP": "p",
              "BYPASS": "b", "SEND_DIFF": "d"}


def chart(plan: Plan, bits: Iterable[str] | None = None) -> str:
    """Text chart of a plan: one line per (control bit, row), one column per
    cycle, then the CMP, ACC, spad and acc-read lanes."""
    tb = table(plan)
    n = tb.length
    hw = hw_dataflow.of(_OWNER[plan.func])        # the hardware that runs the function
    chars = {b: _BIT_CHAR[b] for b in hw.pe_bits}
    bits = list(bits) if bits is not None else list(hw.pe_bits)
    label_w = 16
    lines = []
    ruler = "".join(str((c // 10) % 10) if c % 10 == 0 else " " for c in range(n))
    lines.append(f"{plan.func}  R={plan.R} C={plan.C} P={plan.P}: {n} cycles, next may start "
                 f"at {plan.conflict_free + 1}, slot retires at {plan.retire}"
                 f"{', blocking' if plan.blocking else ''}")
    lines.append(" " * label_w + ruler)
    lines.append(" " * label_w + "".join(str(c % 10) for c in range(n)))
    for b in bits:
        if not any(b in tb.pe[c][r] for c in range(n) for r in range(plan.R)):
            continue
        for r in range(plan.R):
            row = "".join(chars[b] if b in tb.pe[c][r] else "." for c in range(n))
            lines.append(f"{b + ' r' + str(r):<{label_w}}{row}")
    abbrev = {"UPDATE": "U", "PROP_MAX": "M", "PROP_MAX_DIFF": "D", "PROP_EXP2_INTERCEPTS": "I",
              "PROP_ZERO": "0", "RESET": "R", "EXP_S1": "1", "EXP_S2": "2", "ACC_SA": "S",
              "ACC": "A", "SET_SCALE": "T", "RECIPROCAL": "/", "LATCH": "L", "ACC2": "a",
              "SET_SCALE2": "t", "RECIPROCAL2": "%"}
    if tb.cmp:
        lines.append(f"{'CMP (col 0)':<{label_w}}" + "".join(abbrev[tb.cmp[c]] if c in tb.cmp else "."
                                                          for c in range(n)))
    for lane in ("max", "up", "od"):
        if any(k[0] == lane for k in tb.bcmp):
            lines.append(f"{'BCMP ' + lane:<{label_w}}" + "".join(
                _BCMP_CHAR[tb.bcmp[(lane, c)]] if (lane, c) in tb.bcmp else "." for c in range(n)))
    if tb.acc:
        lines.append(f"{'ACC (all cols)':<{label_w}}" + "".join(abbrev[tb.acc[c]] if c in tb.acc else "."
                                                             for c in range(n)))
    if tb.spad:
        sc = {"sram": "r", "one": "1", "scale": "s", "slope": "k"}
        lines.append(f"{'spad read':<{label_w}}" + "".join(sc[tb.spad[c].source] if c in tb.spad else "."
                                                        for c in range(n)))
    if tb.acc_read:
        lines.append(f"{'acc read':<{label_w}}" + "".join("r" if c in tb.acc_read else "."
                                                       for c in range(n)))
    lines.append("")
    lines.append("PE bits: " + ", ".join(f"{v}={k}" for k, v in chars.items()))
    lines.append("CMP: U=UPDATE M=PROP_MAX D=PROP_MAX_DIFF I=PROP_EXP2_INTERCEPTS 0=PROP_ZERO R=RESET"
                 + (" L=LATCH" if hw.cmp_latch else "") + ";"
                 " ACC: 1=EXP_S1 2=EXP_S2 S=ACC_SA A=ACC T=SET_SCALE /=RECIPROCAL")
    if hw.bottom_row:
        lines.append("BCMP (bottom CMP row): " + " ".join(f"{v}={k}" for k, v in _BCMP_CHAR.items())
                     + " (R only with reset_max)")
    lines.append("spad: r=SRAM row 1=const 1.0 s=attention scale k=exp2 slope; times are column 0 "
                 "(column c acts c cycles later; ACC after the output delayer)")
    return "\n".join(lines)
