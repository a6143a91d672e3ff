"""What every dataflow's execution plans are made of (:mod:`fsa.plan`
describes them): :class:`Wave`, :class:`SpadRead`, :class:`AccRead`,
:class:`Plan`, the per-cycle :class:`Table` (:func:`table`, :func:`landing`)
and the check of a plan's RECIPROCAL length.  The reference plans
(:mod:`fsa.plan`) and the UD ones (:mod:`fsa.plan_ud`) are built from them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fsa.hw.control import BCMP_CMDS, SLOT_RETIRE

__all__ = ["Wave", "SpadRead", "AccRead", "Plan", "check_reciprocal_cycles", "Table", "landing",
           "table"]


@dataclass(frozen=True)
class Wave:
    """Control bits applied as a wave: kind "parallel" | "down" | "up"."""

    bits: tuple[str, ...]
    kind: str
    start: int
    length: int

    def rows_at(self, r: int, R: int) -> range:
        """Cycles (column 0) at which array row `r` has these bits."""
        off = {"parallel": 0, "down": r, "up": R - 1 - r}[self.kind]
        return range(self.start + off, self.start + off + self.length)


@dataclass(frozen=True)
class SpadRead:
    """One scratchpad read: SRAM row `index` of the walk, or a constant.

    For constant "slope", `index` is the piece number k.
    """

    cycle: int
    source: str          # "sram" | "one" | "scale" | "slope"
    index: int
    rev_in: bool
    rev_out: bool
    delay: bool


@dataclass(frozen=True)
class AccRead:
    """One accumulator SRAM read of row `index` of the instruction's walk."""

    cycle: int
    index: int


@dataclass(frozen=True)
class Plan:
    func: str
    R: int
    C: int
    P: int
    waves: tuple[Wave, ...]
    cmp: tuple[tuple[int, str], ...]
    acc: tuple[tuple[int, str], ...]
    spad_reads: tuple[SpadRead, ...]
    acc_reads: tuple[AccRead, ...]
    conflict_free: int
    blocking: bool = False
    reciprocal_cycles: int = 0      # RECIPROCAL commands (LSE_NORM_SCALE only)
    #: UD only: bottom comparator row commands (cycle of column 0, command of
    #: BCMP_CMDS), travelling right with the PE control's skew.
    bcmp: tuple[tuple[int, str], ...] = ()
    #: UD only: the last cycle the controller's slot acts for this instruction
    #: when that is before :attr:`last` (LOAD_Q: its last row-0 ``load_q``
    #: source; the wave finishes in the control chains and the array, which
    #: need no slot).  :attr:`release` and :attr:`retire` then count from it.
    slot_last: "int | None" = None
    #: UD NORM_SCALE: the cycle the divider writes ``scale2``, after its
    #: one-cycle RECIPROCAL2 command (the slot is held until then).
    hold: int = 0

    @property
    def last(self) -> int:
        """Last cycle with any action of this instruction (column C-1 included)."""
        cands = [0]
        for w in self.waves:
            # the last row of the wave, then C-1 more cycles to the last column
            end = w.start + w.length - 1 + (self.R - 1 if w.kind != "parallel" else 0)
            cands.append(end + self.C - 1)
        cands += [t + self.C - 1 for t, _ in self.cmp]
        cands += [t + self.C - 1 for t, _ in self.bcmp]
        cands += [t for t, _ in self.acc]
        cands += [r.cycle for r in self.spad_reads] + [r.cycle for r in self.acc_reads]
        return max(cands + [self.hold])

    @property
    def release(self) -> int:
        """Cycle at which the semaphore release takes effect (after the last
        action, or after :attr:`slot_last` when the plan sets it)."""
        return self._slot_end + 1

    @property
    def _slot_end(self) -> int:
        return self.last if self.slot_last is None else self.slot_last

    @property
    def read_release(self) -> int:
        """Cycle at which an ``early_release`` instruction's semaphore release
        takes effect (UD functions): the cycle after its last scratchpad read
        (its :attr:`release` when it reads none)."""
        reads = [r.cycle for r in self.spad_reads]
        return max(reads) + 1 if reads else self.release

    @property
    def retire(self) -> int:
        """Cycle (relative) from which this instruction's slot can be reused."""
        return self._slot_end + SLOT_RETIRE

    @property
    def wave_retire(self) -> int:
        """Cycle (relative) from which every action of this instruction is
        over (:attr:`retire` unless :attr:`slot_last` frees the slot earlier).
        While an early-retired instruction's wave runs on, only the
        instruction right after it may start (not a blocking one, nor one
        with ``wait_prev_acc``): the two-slot rule's guarantee that an
        instruction starts after everything two before it is over still
        holds (:func:`schedule_starts`)."""
        return self.last + SLOT_RETIRE


def check_reciprocal_cycles(func: str, n: Any, least: int) -> int:
    """`n` (RECIPROCAL cycles of `func`'s plan) if it is an int >= `least`,
    else ValueError (:func:`fsa.hw.timing.reciprocal_cycles` gives the
    hardware's)."""
    if n is None or isinstance(n, bool) or not isinstance(n, int) or n < least:
        raise ValueError(f"{func} needs reciprocal_cycles (an int >= {least}; "
                         f"fsa.hw.timing.reciprocal_cycles gives the hardware's), got {n!r}")
    return n


# --------------------------------------------------------------------------
# Expansion to a per-cycle table
# --------------------------------------------------------------------------
@dataclass
class Table:
    """Per-cycle view of one plan (column-0 times).

    Attributes:
        pe: ``pe[t][r]`` = set of control bits of array row r at cycle t.
        cmp: ``cmp[t]`` = CMP command entering CMP(0) at cycle t.
        acc: ``acc[t]`` = ACC command (all columns) at cycle t.
        spad: ``spad[t]`` = the SpadRead issued at cycle t.
        lane: ``lane[t][r]`` = (read, element) landing on row r's l_in at t.
        acc_read: ``acc_read[t]`` = acc walk index read at cycle t.
    """

    length: int
    R: int
    pe: list[list[frozenset]] = field(default_factory=list)
    cmp: dict[int, str] = field(default_factory=dict)
    acc: dict[int, str] = field(default_factory=dict)
    spad: dict[int, SpadRead] = field(default_factory=dict)
    lane: dict[tuple[int, int], tuple[SpadRead, int]] = field(default_factory=dict)
    acc_read: dict[int, int] = field(default_factory=dict)
    bcmp: dict[tuple[str, int], str] = field(default_factory=dict)   # (lane, cycle) -> cmd


def landing(read: SpadRead, R: int) -> list[tuple[int, int, int]]:
    """Where the elements of one spad read land: (cycle, row, element)."""
    out = []
    for e in range(R):
        p = R - 1 - e if read.rev_in else e
        d = p if read.delay else 0
        row = R - 1 - p if read.rev_out else p
        out.append((read.cycle + 1 + d, row, e))
    return out


def table(plan: Plan) -> Table:
    """Expand `plan` into a per-cycle, per-row table.

    Raises:
        ValueError: if the plan itself drives one resource twice in a cycle.
    """
    R = plan.R
    length = plan.last + 1
    t = Table(length=length, R=R)
    rows = [[set() for _ in range(R)] for _ in range(length)]
    for w in plan.waves:
        for r in range(R):
            for cyc in w.rows_at(r, R):
                rows[cyc][r].update(w.bits)
    t.pe = [[frozenset(s) for s in row] for row in rows]

    def claim(slots: dict, key, value, what: str, cyc: int) -> None:
        """Enter `value` at `key` of `slots`; ValueError if the plan already did."""
        if key in slots:
            raise ValueError(f"{plan.func}: two {what} at cycle {cyc}")
        slots[key] = value

    for cyc, cmd in plan.cmp:
        claim(t.cmp, cyc, cmd, "CMP commands", cyc)
    for cyc, cmd in plan.acc:
        claim(t.acc, cyc, cmd, "ACC commands", cyc)
    for rd in plan.spad_reads:
        claim(t.spad, rd.cycle, rd, "spad reads", rd.cycle)
        for cyc, row, e in landing(rd, R):
            claim(t.lane, (cyc, row), (rd, e), f"spad elements reach row {row}", cyc)
    for cyc, cmd in plan.bcmp:
        lane = BCMP_CMDS[cmd]
        claim(t.bcmp, (lane, cyc), cmd, f"bottom-CMP {lane}-lane commands", cyc)
    for a in plan.acc_reads:
        claim(t.acc_read, a.cycle, a.index, "acc reads", a.cycle)
    return t
