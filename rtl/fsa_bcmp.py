"""Bottom comparator unit BCMP(c) of the UD dataflow (docs/ud.md): one per
column, below the last PE row, on UD configurations only.

Ports::

    max_in (2), up_in (2), od_in (2), causal_in   ->  [ BCMP(c) ]  ->  *_out
                   (three command lanes and the causal bit, to BCMP(c+1), 1 cycle)
    s_in   (A)  from PE(R-1,c).d_out (the sums flowing down)
    u_out  (A)  to   PE(R-1,c).d_in  (the u-path register ``u_q``, or 0)
    od     (A)  to   the output delayer, column c (the register ``od_q`` the
                cycle after an ``od`` command, else ``s_in`` itself)
    col         constant: this unit's column index (causal mask)

Commands, three lanes that may act in the same cycle (``fsa.hw.control.BCMP_CMDS``;
code 0 is NOP on every lane, the others are numbered from 1 in the table's
order, :data:`LANE_CODES`; in the Verilog each is a named decode,
``bcmp_cmd_update`` ...):

* ``max``: RESET (maxima <- -inf, the causal counter and the LIFO pointer
  <- 0), UPDATE (the k-th UPDATE since the last RESET / MAX_DIFF takes
  ``s_in`` rounded to E, or -inf when ``causal_in`` and ``k > col``, pushes
  it on the LIFO and folds it (widened to A) into ``new_max``), MAX_DIFF
  (``diff <- old_max - new_max``, ``old_max <- new_max``, counter <- 0).
* ``up``: PROP_MAX (``u_out <- -new_max``, the canonical NaN stays NaN),
  POP (``u_out <- `` the LIFO's top score, zero-extended to A).
* ``od``: BYPASS (``od <- s_in``), SEND_DIFF (``od <- diff``).

The LIFO holds R E-format scores (a memory and a wrapping pointer; the
schedule pushes R and pops R per key block, and RESET empties it).  With
``E == A`` the score is ``s_in`` unchanged (the per-cycle model,
``fsa/golden/ud_cycle.py``, is the reference of every register here).

Units inside: ``fsa_fcmp`` (A: the maximum and the difference), and when
``E != A`` ``fsa_cvt`` A -> E (rounding) and E -> A (widening), as in the
top CMP (``rtl/fsa_cmp.py``).

Latency: one cycle (``u_q``, ``od_q`` and the state are registers written
at the edge of the cycle holding the command).

The reference functions run unchanged on UD hardware: they expect row
R-1's ``d_in`` to be 0 (ATTENTION_SCORE's sums start there) and the output
delayer to see the bottom PE's ``d_out`` directly.  So ``u_q`` returns to
0 the cycle after the POP that empties the LIFO (the UD schedule reads the
last score in that cycle, ``load_reg_di``, and nothing more until the next
PROP_MAX) and on RESET, and ``od`` shows ``od_q`` only in the cycle after
an ``od`` command (``od_sel``), ``s_in`` otherwise.
"""
from __future__ import annotations

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from fsa.formats import get_format
from fsa.hw.control import BCMP_CMDS
from rtl.convert import convert_block, sig, submodule
from rtl.fsa_cmp import fmt_consts, max_unit, score_units

MODULE = "fsa_bcmp"
LANES = ("max", "up", "od")
LANE_BITS = 2
#: Per lane, command name -> code (0 is NOP): the order of fsa.hw.control.BCMP_CMDS.
LANE_CODES = {ln: {c: i + 1 for i, c in enumerate(k for k, v in BCMP_CMDS.items() if v == ln)}
              for ln in LANES}
assert all(len(v) < 1 << LANE_BITS for v in LANE_CODES.values())
CMD_RESET, CMD_UPDATE, CMD_MAX_DIFF = (LANE_CODES["max"][c] for c in ("RESET", "UPDATE", "MAX_DIFF"))
CMD_PROP_MAX, CMD_POP = (LANE_CODES["up"][c] for c in ("PROP_MAX", "POP"))
CMD_BYPASS, CMD_SEND_DIFF = (LANE_CODES["od"][c] for c in ("BYPASS", "SEND_DIFF"))
COL_BITS = 8


@block
def fsa_bcmp(clk, rst, max_in, up_in, od_in, causal_in, s_in, col, u_out, od, max_out, up_out,
             od_out, causal_out, R=4, e_type="fp16", a_type="fp32"):
    """One bottom comparator unit; see the module docstring."""
    fe, fa = get_format(e_type), get_format(a_type)
    ew, aw = fe.width, fa.width
    for name, s, w in (("s_in", s_in, aw), ("u_out", u_out, aw), ("od", od, aw),
                       ("max_in", max_in, LANE_BITS), ("up_in", up_in, LANE_BITS),
                       ("od_in", od_in, LANE_BITS), ("col", col, COL_BITS)):
        if len(s) != w:
            raise ValueError(f"fsa_bcmp: port {name} must be {w} bits wide, got {len(s)}")
    if R < 2:
        raise ValueError(f"fsa_bcmp: R must be >= 2, got {R}")
    a_neg_inf, e_neg_inf, a_nan, a_exp_mask, a_man_mask = fmt_consts(e_type, a_type)
    PB = max(1, (R - 1).bit_length())
    RL = R - 1                       # the last LIFO entry

    new_max = sig(aw, a_neg_inf)
    old_max = sig(aw, a_neg_inf)
    diff_q = sig(aw)                 # the max difference (MAX_DIFF), sent by SEND_DIFF
    u_q = sig(aw)                    # the u-path register (PROP_MAX, POP)
    u_clr = sig(1)                   # the LIFO was emptied by the last cycle's POP
    od_q = sig(aw)                   # the od register (BYPASS, SEND_DIFF)
    od_sel = sig(1)                  # the last cycle had an od command
    cnt = sig(COL_BITS + 1)          # UPDATEs since the last RESET / MAX_DIFF
    s_e = sig(ew)                    # score rounded to E
    s_e_m = sig(ew)                  # ... or -inf when masked
    s_e_a = sig(aw)                  # ... widened back to A (exact)
    op_a, op_b = sig(aw), sig(aw)
    diff, mx = sig(aw), sig(aw)
    top_z = sig(aw)                  # the LIFO's top score, zero-extended to A
    a_sign = sig(aw, fa.sign_mask)
    neg_inf = sig(aw, a_neg_inf)
    neg_inf_e = sig(ew, e_neg_inf)
    lifo = [Signal(intbv(0)[ew:]) for _ in range(R)]
    wp = sig(PB)                     # next free entry
    rp = sig(PB)                     # the top entry (wp - 1, wrapping)
    # the commands by name (one decode each)
    (bcmp_cmd_reset, bcmp_cmd_update, bcmp_cmd_max_diff, bcmp_cmd_prop_max, bcmp_cmd_pop,
     bcmp_cmd_bypass, bcmp_cmd_send_diff) = (sig(1) for _ in range(7))

    insts = [submodule(*u) for u in score_units(e_type, a_type, s_in, s_e, s_e_m, s_e_a)]
    if e_type == a_type:
        @always_comb
        def same_fmt():
            s_e.next = s_in
            s_e_a.next = s_e_m
        insts.append(same_fmt)
    insts.append(submodule(*max_unit(a_type, op_a, op_b, diff, mx)))

    # (a process docstring is a comment of the generated Verilog: edit it and the
    # Verilog changes; fsa.plan re-exports the fsa.hw.control tables)
    @always_comb
    def commands():
        """The lanes decoded by name (fsa.plan.BCMP_CMDS)."""
        bcmp_cmd_reset.next = max_in == CMD_RESET
        bcmp_cmd_update.next = max_in == CMD_UPDATE
        bcmp_cmd_max_diff.next = max_in == CMD_MAX_DIFF
        bcmp_cmd_prop_max.next = up_in == CMD_PROP_MAX
        bcmp_cmd_pop.next = up_in == CMD_POP
        bcmp_cmd_bypass.next = od_in == CMD_BYPASS
        bcmp_cmd_send_diff.next = od_in == CMD_SEND_DIFF
    insts.append(commands)

    @always_comb
    def operands():
        if causal_in and cnt > concat(False, col):
            s_e_m.next = neg_inf_e
        else:
            s_e_m.next = s_e
        if bcmp_cmd_max_diff:
            op_a.next = old_max
            op_b.next = new_max
        else:
            op_a.next = new_max
            op_b.next = s_e_a
        if wp == 0:
            rp.next = RL
        else:
            rp.next = wp - 1
    insts.append(operands)

    if aw > ew:
        @always_comb
        def lifo_top():
            top_z.next = concat(intbv(0)[aw - ew:], lifo[rp])
    else:
        @always_comb
        def lifo_top():
            top_z.next = lifo[rp]
    insts.append(lifo_top)

    @always_comb
    def outputs():
        u_out.next = u_q
        if od_sel:
            od.next = od_q
        else:
            od.next = s_in
    insts.append(outputs)

    @always(clk.posedge)
    def lifo_write():
        if bcmp_cmd_update:
            lifo[wp].next = s_e_m
    insts.append(lifo_write)

    @always_seq(clk.posedge, reset=rst)
    def step():
        max_out.next = max_in
        up_out.next = up_in
        od_out.next = od_in
        causal_out.next = causal_in
        # max lane
        if bcmp_cmd_reset:
            new_max.next = neg_inf
            old_max.next = neg_inf
            cnt.next = 0
            wp.next = 0
        elif bcmp_cmd_update:
            new_max.next = mx
            cnt.next = cnt + 1
            if wp == RL:
                wp.next = 0
            else:
                wp.next = wp + 1
        elif bcmp_cmd_max_diff:
            diff_q.next = diff
            old_max.next = new_max
            cnt.next = 0
        # up lane (a POP and an UPDATE never share a cycle: the schedule)
        u_clr.next = bcmp_cmd_pop and rp == 0
        if bcmp_cmd_prop_max:
            if (new_max & a_exp_mask) == a_exp_mask and (new_max & a_man_mask) != 0:
                u_q.next = a_nan
            else:
                u_q.next = new_max ^ a_sign
        elif bcmp_cmd_pop:
            u_q.next = top_z
            if not bcmp_cmd_update:
                wp.next = rp
        elif u_clr or bcmp_cmd_reset:
            u_q.next = 0
        # od lane
        od_sel.next = bcmp_cmd_bypass or bcmp_cmd_send_diff
        if bcmp_cmd_bypass:
            od_q.next = s_in
        elif bcmp_cmd_send_diff:
            od_q.next = diff_q
    insts.append(step)
    return insts


def ports(R: int = 4, e_type: str = "fp16", a_type: str = "fp32") -> dict:
    from myhdl import ResetSignal

    aw = get_format(a_type).width
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), max_in=sig(LANE_BITS),
                up_in=sig(LANE_BITS), od_in=sig(LANE_BITS), causal_in=sig(1), s_in=sig(aw),
                col=sig(COL_BITS), u_out=sig(aw), od=sig(aw), max_out=sig(LANE_BITS),
                up_out=sig(LANE_BITS), od_out=sig(LANE_BITS), causal_out=sig(1))


OUTPUTS = {"u_out", "od", "max_out", "up_out", "od_out", "causal_out"}


def convert(outdir, R: int = 4, e_type: str = "fp16", a_type: str = "fp32"):
    """Write ``<outdir>/fsa_bcmp.v`` (instantiates fsa_fcmp, and fsa_cvt when E != A)."""
    p = ports(R, e_type, a_type)
    return convert_block(lambda: fsa_bcmp(**p, R=R, e_type=e_type, a_type=a_type), MODULE, outdir,
                         init_memories=True)
