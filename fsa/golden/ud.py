"""The UD dataflow's functions in the instruction-level golden model
(``fsa/golden/machine.py`` calls :func:`execute` for codes 5..10 and
:func:`check_modelled` before a reference function, through the UD dataflow of
:mod:`fsa.dataflows`, which refuses these codes on other hardware).

Tile-level, bit-exact, in the hardware's operation order (docs/ud.md,
``fsa/plan_ud.py``):

* LOAD_Q: C scratchpad rows into the PEs' second register ``qreg``; read
  ``i`` ends in column ``C-1-i`` (pass the Q tile reversed so that column
  ``c`` holds query ``c``, as for LOAD_STATIONARY).
* the K part (KSTEP, STEP: walk rows 0..R-1 = K): with ``reset_max`` the
  bottom comparator row's maxima become -inf; the scores ``S = Q K^T`` from
  ``qreg`` (sums over the dimensions in the reference order), rounded to E,
  causal-masked (key ``k > c`` -> -inf), the running max, then the max
  difference ``old - new`` and ``old <- new``; the E scores wait in the
  bottom row's LIFO and ``-m`` in the u path for the next PV part.
* the PV part (STEP: walk rows R..2R-1 = V^T, PVSTEP: rows 0..R-1): the
  softmax of the waiting scores with the waiting ``-m`` (subtract, scale,
  exp2, row sum: the PE registers end up holding P), the ACC rescale from
  the waiting max difference, ``l <- scale * l + rowsum`` (acc walk row 0;
  0 instead of the old value with ``zero``) and ``O^T <- scale * O^T + P V``
  (acc walk rows 1..R).

A STEP runs its PV part (block ``j - 1``) before its K part (block ``j``),
which is the data order of the overlapped hardware schedule.  The results
are those of :func:`fsa.golden.tile.score` followed by
:func:`fsa.golden.tile.value` for every key block, bit for bit
(tests/test_ud_golden.py checks the kernel against the reference one).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fsa import numerics as nx
from fsa.golden import tile
from fsa.golden.errors import UnsupportedProgram
from fsa.isa import Matrix, MxFunc

__all__ = ["FUNCS", "UdState", "abort", "check_modelled", "execute"]

#: The UD function codes.
FUNCS = (MxFunc.LOAD_Q, MxFunc.KSTEP, MxFunc.STEP, MxFunc.PVSTEP, MxFunc.NORM_SCALE,
         MxFunc.NORM)
#: The input-delayer flags (rev_input, rev_output, delay_output) every UD
#: function's SRAM reads use (fsa.plan_ud.FLAGS).
FLAGS = (True, False, True)


@dataclass
class UdState:
    """What the UD hardware keeps besides the reference machine's state:
    ``qreg`` (R, C) E, the bottom row's maxima and max difference (C,) A,
    the LIFO of the last K part's E scores (C, R) and ``-m`` in the u path
    (C,) A (None while no K part waits for its PV part), and the ACC's second
    scale register ``scale2`` (C,) A (NORM_SCALE, NORM)."""

    cfg: object
    qreg: np.ndarray = field(default=None)
    new_max: np.ndarray = field(default=None)
    old_max: np.ndarray = field(default=None)
    diff: np.ndarray = field(default=None)
    lifo: "np.ndarray | None" = None
    neg_m: "np.ndarray | None" = None
    scale2: np.ndarray = field(default=None)

    def __post_init__(self) -> None:
        c = self.cfg
        ue = np.uint16 if c.e_fmt.width == 16 else np.uint32
        ua = np.uint16 if c.a_fmt.width == 16 else np.uint32
        neg_inf = ua(c.a_fmt.sign_mask | c.a_fmt.pos_inf)
        if self.qreg is None:
            self.qreg = np.zeros((c.sa_rows, c.sa_cols), ue)
        if self.new_max is None:
            self.new_max = np.full(c.sa_cols, neg_inf, ua)
        if self.old_max is None:
            self.old_max = np.full(c.sa_cols, neg_inf, ua)
        if self.diff is None:
            self.diff = np.zeros(c.sa_cols, ua)
        if self.scale2 is None:
            self.scale2 = np.full(c.sa_cols, c.a_fmt.one, ua)


def abort(m) -> None:
    """The abort register's effect on machine `m`'s UD state (rtl/fsa_core.py:
    the bottom row's RESET: maxima -inf, the LIFO empty, nothing in the u
    path; ``qreg``, the max difference and ``scale2`` are kept)."""
    if getattr(m, "ud", None) is not None:
        fresh = UdState(m.cfg)
        m.ud.new_max, m.ud.old_max = fresh.new_max, fresh.old_max
        m.ud.lifo = m.ud.neg_m = None


def check_modelled(m, ins: Matrix, index: int) -> None:
    """UnsupportedProgram for a reference function the model cannot run in
    machine `m`'s UD state: ATTENTION_SCORE while a UD K part left its
    scores in the bottom row and -m in the u path, which its upward waves
    (the only reference function with any) would meet."""
    if ins.func == MxFunc.ATTENTION_SCORE and getattr(getattr(m, "ud", None), "lifo",
                                                      None) is not None:
        raise UnsupportedProgram(f"instruction {index}: ATTENTION_SCORE while a UD K part's "
                                 f"scores wait in the bottom row for their PV part (a STEP "
                                 f"or PVSTEP first) is not modelled")


def _state(m) -> UdState:
    if getattr(m, "ud", None) is None:
        m.ud = UdState(m.cfg)
    return m.ud


def _lanes(m, rows: list[int]) -> np.ndarray:
    """(R, n) E: the elements each array row receives from the reads of
    `rows` with the UD flags (rev_input: row r gets element R-1-r)."""
    return m.spad[rows].T[::-1].copy()


def _k_part(m, st: UdState, ins: Matrix, rows: list[int]) -> None:
    cfg = m.cfg
    R, C = cfg.sa_rows, cfg.sa_cols
    e, a = cfg.e_type, cfg.a_type
    E, A = cfg.e_fmt, cfg.a_fmt
    ue, ua = m.ue, m.ua
    if ins.reset_max:
        fresh = UdState(cfg)
        st.new_max, st.old_max = fresh.new_max, fresh.old_max
    q = st.qreg[::-1].T                    # (C, R): q[c][d] = qreg[R-1-d, c]
    k = m.spad[rows]                       # (R, R): k[key][d]
    s = np.zeros((C, R), ua)
    for d in range(R - 1, -1, -1):         # row 0 (dimension R-1) adds first
        s = nx.fma(q[:, d][:, None], k[:, d][None, :], s, mul=e, acc=a)
    s_e = nx.convert(s, a, e) if e != a else s.copy()
    if ins.causal:
        s_e = np.where(tile.causal_mask(R, C), ue(E.sign_mask | E.pos_inf), s_e).astype(ue)
    s_e_a = nx.convert(s_e, e, a) if e != a else s_e
    new_max = st.new_max.copy()
    for j in range(R):                     # UPDATE k = 0..R-1
        new_max = nx.maximum(new_max, s_e_a[:, j], a)
    st.new_max = new_max
    nan = tile._is_nan(new_max, A)
    st.neg_m = np.where(nan, ua(A.canonical_nan), new_max ^ ua(A.sign_mask)).astype(ua)
    st.diff = nx.sub(st.old_max, new_max, a)
    st.old_max = new_max.copy()
    st.lifo = s_e


def _pv_part(m, st: UdState, ins: Matrix, rows: list[int], index: int) -> None:
    cfg = m.cfg
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    ue, ua = m.ue, m.ua
    if st.lifo is None:
        raise UnsupportedProgram(f"instruction {index}: {MxFunc(ins.func).name} has a PV part but "
                                 f"no K part left scores in the bottom row (KSTEP or STEP first)")
    s_e, neg_m = st.lifo, st.neg_m
    one_e = ue(cfg.e_fmt.one)
    x1 = nx.fma(s_e, one_e, neg_m[:, None], mul=e, acc=a, out="elem")
    x = nx.fma(x1, ue(m.settings["scale_e"]), ua(0), mul=e, acc=a, out="elem")   # the registers
    p = nx.exp2_pwl(x, e, P, a, out="elem")
    rs = np.zeros(C, ua)
    for j in range(R - 1, -1, -1):         # row 0 holds key R-1: it adds first
        rs = nx.fma(p[:, j], one_e, rs, mul=e, acc=a)
    ts = m.state
    s1 = nx.fma(st.diff, ua(m.settings["scale_a"]), ua(0), mul=a, acc=a)
    ts.scale = nx.exp2_pwl(s1, a, P, a, out="acc")
    acc_rows = m._rows(ins.acc_addr, ins.acc_stride, R + 1, cfg.acc_rows, "acc", index)
    # the acc walk: l (index 0), then the O^T rows (tile.value's arithmetic)
    add = np.concatenate([rs[None, :], tile.value_products(cfg, p, m.spad[rows].T.copy())])
    m.acc_walk(acc_rows, ins.zero, add)
    ts.o_t = m.acc[acc_rows[1:]].copy()
    m.pe = p[:, ::-1].T.copy()             # PE(r, c) = p[c][R-1-r]
    st.lifo = st.neg_m = None


def execute(m, ins: Matrix, index: int) -> None:
    """Run UD function `ins` on machine `m` (a :class:`fsa.golden.machine.Machine`
    of a UD config: the machine refuses the UD functions on other hardware,
    :func:`fsa.dataflows.illegal`)."""
    cfg = m.cfg
    R, C = cfg.sa_rows, cfg.sa_cols
    f = MxFunc(ins.func)
    if f in (MxFunc.NORM_SCALE, MxFunc.NORM):     # ACC only: no SRAM reads, flags unused
        st = _state(m)
        if f == MxFunc.NORM_SCALE:                 # scale2 <- 1 / l
            row = m._rows(ins.acc_addr, 0, 1, cfg.acc_rows, "acc", index)[0]
            lv = np.zeros(C, m.ua) if ins.zero else m.acc[row].copy()
            st.scale2 = nx.reciprocal(lv, cfg.a_type)
        else:                                      # O^T <- scale2 * O^T + 0
            rows = m._rows(ins.acc_addr, ins.acc_stride, R, cfg.acc_rows, "acc", index)
            m.acc_walk(rows, ins.zero, np.zeros((R, C), m.ua), scale=st.scale2)
        return
    flags = (ins.rev_input, ins.rev_output, ins.delay_output)
    if flags != FLAGS:
        raise UnsupportedProgram(f"{f.name} with flags rev_input/rev_output/delay_output = "
                                 f"{flags} is not modelled (the UD schedule uses 1/0/1)")
    st = _state(m)
    if f == MxFunc.LOAD_Q:
        rows = m._rows(ins.spad_addr, ins.spad_stride, C, cfg.spad_rows, "spad", index)
        st.qreg = _lanes(m, rows)[:, ::-1].copy()      # column c holds read C-1-c
        return
    n = {MxFunc.KSTEP: R, MxFunc.STEP: 2 * R, MxFunc.PVSTEP: R}[f]
    rows = m._rows(ins.spad_addr, ins.spad_stride, n, cfg.spad_rows, "spad", index)
    if f == MxFunc.STEP:
        _pv_part(m, st, ins, rows[R:], index)
        _k_part(m, st, ins, rows[:R])
    elif f == MxFunc.KSTEP:
        _k_part(m, st, ins, rows)
    else:
        _pv_part(m, st, ins, rows, index)
