"""Comparator unit CMP(c): running max, max difference, exp2 intercepts
(docs/architecture.md section 4, docs/array.md "Comparator unit").

Ports::

    cmd_in (3), causal_in, mask_in  ->  [ CMP(c) ]  -> cmd_out, causal_out, mask_out
                                                    (to CMP(c+1), 1 cycle)
    s_in (A)  from PE(0,c).u_out
    out  (A)  to   PE(0,c).u_in   (register, held when not written)
    col       constant: this unit's column index (causal masking)
    key_limit (KL_BITS)  the key_limit register (fsa/hw/regs.py), the same for
              every column, constant while a program runs

Masks (UPDATE): the k-th consecutive UPDATE (k from 0: key k of the
instruction's block) sends and folds -inf instead of its score when
``causal_in`` and ``k > col`` (causal mask), or when ``mask_in`` and
``k >= key_limit`` (the instruction's ``mask_keys`` flag); both may apply.

Commands (``CMD_*``, codes from the table ``fsa.hw.control.CMP_CMDS``): NOP,
UPDATE, PROP_MAX, PROP_MAX_DIFF, PROP_EXP2_INTERCEPTS, PROP_ZERO, RESET; in
the Verilog each is a named decode of ``cmd_in`` (``cmp_cmd_update`` ...).  State: ``new_max``, ``old_max``
(reset to -inf), the UPDATE counter (causal and key masks) and the intercept index.

A dataflow with ``cmp_latch`` (``fsa.hw.dataflow``; UD, docs/ud.md) adds command 7 ``LATCH``
(``fsa.hw.control.UD_CMP_CMDS``): ``out <- s_in``, the top PE's ``u_out``
(``-m`` arriving up the u path); the reference configurations' CMP is
generated without it (the same Verilog).

Latency: one cycle (``out`` and the state are registers written at the edge
of the cycle holding the command).  The running max is kept over the
E-rounded scores; ``PROP_MAX`` never folds 0 into it.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from fsa.formats import get_format
from fsa.hw import dataflow
from fsa.hw.control import CMP_CMDS, UD_CMP_CMDS
from rtl.convert import convert_block, sig, submodule
from rtl.fp import fsa_cvt, fsa_fcmp
from rtl.parts import part_of

MODULE = "fsa_cmp"
CMD_BITS = 3
#: Command codes: the table is ``fsa.hw.control.CMP_CMDS``.
(CMD_NOP, CMD_UPDATE, CMD_PROP_MAX, CMD_PROP_MAX_DIFF, CMD_PROP_EXP2_INTERCEPTS,
 CMD_PROP_ZERO, CMD_RESET) = (CMP_CMDS.index(c) for c in (
     "NOP", "UPDATE", "PROP_MAX", "PROP_MAX_DIFF", "PROP_EXP2_INTERCEPTS", "PROP_ZERO", "RESET"))
CMD_LATCH = UD_CMP_CMDS.index("LATCH")
assert len(UD_CMP_CMDS) <= 1 << CMD_BITS
COL_BITS = 8
#: width of the key_limit input (the UPDATE counter's: 0..2**COL_BITS)
KL_BITS = COL_BITS + 1


def encoded_intercepts(e_type: str, a_type: str, pieces: int) -> tuple[int, ...]:
    """The P encoded intercept words (A format) the CMP sends in exp2 phase."""
    import numpy as np

    from fsa import numerics

    _, icpt = numerics.pwl_constants(pieces, e_type, a_type)
    enc = numerics.encode_intercept(icpt, np.arange(pieces, dtype=np.int64), a_type)
    return tuple(int(v) for v in enc)


def fmt_consts(e_type: str, a_type: str) -> tuple[int, int, int, int, int]:
    """The comparators' constants: -inf (A), -inf (E), the canonical NaN (A),
    A's exponent mask and mantissa mask."""
    fe, fa = get_format(e_type), get_format(a_type)
    return (fa.sign_mask | fa.pos_inf, fe.sign_mask | fe.pos_inf, fa.canonical_nan, fa.pos_inf,
            (1 << fa.man_bits) - 1)


def score_units(e_type: str, a_type: str, s_in, s_e, s_e_m, s_e_a) -> list[tuple]:
    """The :func:`rtl.convert.submodule` arguments of a comparator's rounding
    (``s_in`` A -> ``s_e`` E, ``u_round``) and widening (``s_e_m`` E ->
    ``s_e_a`` A, ``u_widen``) units; none when E == A.  (The CMP and the
    BCMP call ``submodule`` themselves: MyHDL takes a block's names from
    the frame that instantiates.)"""
    if e_type == a_type:
        return []
    return [(fsa_cvt.fsa_cvt, (s_in, s_e), dict(src=a_type, dst=e_type),
             fsa_cvt.module_name(a_type, e_type), "u_round", {"x": s_in, "y": s_e}, {"y"}),
            (fsa_cvt.fsa_cvt, (s_e_m, s_e_a), dict(src=e_type, dst=a_type),
             fsa_cvt.module_name(e_type, a_type), "u_widen", {"x": s_e_m, "y": s_e_a}, {"y"})]


def max_unit(a_type: str, op_a, op_b, diff, mx) -> tuple:
    """The :func:`rtl.convert.submodule` arguments of a comparator's
    ``fsa_fcmp`` (``u_fcmp``: the maximum and the difference)."""
    return (fsa_fcmp.fsa_fcmp, (op_a, op_b, diff, mx), dict(fmt=a_type),
            fsa_fcmp.module_name(a_type), "u_fcmp",
            {"a": op_a, "b": op_b, "diff": diff, "mx": mx}, {"diff", "mx"})


@block
def fsa_cmp(clk, rst, cmd_in, causal_in, mask_in, s_in, col, key_limit, out, cmd_out,
            causal_out, mask_out, e_type="fp16", a_type="fp32", pieces=8,
            dataflow_name="reference"):
    """One comparator unit; see the module docstring."""
    latch = dataflow.of(dataflow_name).cmp_latch
    fe, fa = get_format(e_type), get_format(a_type)
    ew, aw = fe.width, fa.width
    a_neg_inf, e_neg_inf, a_nan, a_exp_mask, a_man_mask = fmt_consts(e_type, a_type)
    icpts = encoded_intercepts(e_type, a_type, pieces)
    kbits = max(1, (pieces - 1).bit_length())
    last_k = pieces - 1

    new_max = sig(aw, a_neg_inf)
    old_max = sig(aw, a_neg_inf)
    cnt = sig(COL_BITS + 1)
    k = sig(kbits)
    s_e = sig(ew)           # score rounded to E
    s_e_m = sig(ew)         # ... or -inf when masked
    s_e_a = sig(aw)         # ... widened back to A (exact)
    op_a, op_b = sig(aw), sig(aw)
    diff, mx = sig(aw), sig(aw)
    icpt = sig(aw)
    s_e_m_z = sig(aw)       # s_e_m zero-extended to A (what UPDATE sends down)
    a_sign = sig(aw, fa.sign_mask)      # constants, sized
    neg_inf = sig(aw, a_neg_inf)
    neg_inf_e = sig(ew, e_neg_inf)
    # the commands by name (one decode each; LATCH only where the dataflow
    # has it, rtl/parts.py)
    (cmp_cmd_update, cmp_cmd_prop_max, cmp_cmd_prop_max_diff, cmp_cmd_prop_exp2_intercepts,
     cmp_cmd_prop_zero, cmp_cmd_reset) = (sig(1) for _ in range(6))
    cmp_cmd_latch = sig(1) if latch else None

    insts = [submodule(*u) for u in score_units(e_type, a_type, s_in, s_e, s_e_m, s_e_a)]
    insts.append(submodule(*max_unit(a_type, op_a, op_b, diff, mx)))

    if e_type == a_type:
        # RNE_E(s) is the identity here except for NaN: every NaN result is
        # the canonical NaN (numerics.md), as fsa_cvt gives when E != A
        @always_comb
        def same_fmt():
            if (s_in & a_exp_mask) == a_exp_mask and (s_in & a_man_mask) != 0:
                s_e.next = a_nan
            else:
                s_e.next = s_in
            s_e_a.next = s_e_m
        insts.append(same_fmt)

    # (a process docstring is a comment of the generated Verilog: edit it and the
    # Verilog changes; fsa.plan re-exports the fsa.hw.control tables)
    @always_comb
    def commands():
        """cmd_in decoded by name (fsa.plan.CMP_CMDS)."""
        cmp_cmd_update.next = cmd_in == CMD_UPDATE
        cmp_cmd_prop_max.next = cmd_in == CMD_PROP_MAX
        cmp_cmd_prop_max_diff.next = cmd_in == CMD_PROP_MAX_DIFF
        cmp_cmd_prop_exp2_intercepts.next = cmd_in == CMD_PROP_EXP2_INTERCEPTS
        cmp_cmd_prop_zero.next = cmd_in == CMD_PROP_ZERO
        cmp_cmd_reset.next = cmd_in == CMD_RESET
    insts.append(commands)

    if aw > ew:
        @always_comb
        def extend():
            s_e_m_z.next = concat(intbv(0)[aw - ew:], s_e_m)
    else:
        @always_comb
        def extend():
            s_e_m_z.next = s_e_m
    insts.append(extend)

    @always_comb
    def operands():
        if (causal_in and (cnt > concat(False, col))) or (mask_in and cnt >= key_limit):
            s_e_m.next = neg_inf_e
        else:
            s_e_m.next = s_e
        if cmp_cmd_prop_max_diff:
            op_a.next = old_max
            op_b.next = new_max
        else:
            op_a.next = new_max
            op_b.next = s_e_a
        icpt.next = icpts[k]
    insts.append(operands)

    if latch:
        @always_comb
        def latch_command():
            cmp_cmd_latch.next = cmd_in == CMD_LATCH
        insts.append(latch_command)

    def step():
        cmd_out.next = cmd_in
        causal_out.next = causal_in
        mask_out.next = mask_in
        if cmp_cmd_update:
            out.next = s_e_m_z
            new_max.next = mx
            cnt.next = cnt + 1
        else:
            cnt.next = 0
        if cmp_cmd_prop_exp2_intercepts:
            out.next = icpt
            if k == last_k:
                k.next = 0
            else:
                k.next = k + 1
        else:
            k.next = 0
        if cmp_cmd_prop_max:
            if (new_max & a_exp_mask) == a_exp_mask and (new_max & a_man_mask) != 0:
                out.next = a_nan
            else:
                out.next = new_max ^ a_sign
        elif cmp_cmd_prop_max_diff:
            out.next = diff
            old_max.next = new_max
        elif cmp_cmd_prop_zero:
            out.next = 0
        elif cmp_cmd_reset:
            old_max.next = neg_inf
            new_max.next = neg_inf
        elif cmp_cmd_latch:
            out.next = s_in
    # (the process of the CMP with LATCH keeps its name, step_ud)
    insts.append(always_seq(clk.posedge, reset=rst)(
        part_of(step, name="step_ud" if latch else None)))
    return insts


def ports(e_type: str = "fp16", a_type: str = "fp32") -> dict:
    from myhdl import ResetSignal

    aw = get_format(a_type).width
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), cmd_in=sig(CMD_BITS),
                causal_in=sig(1), mask_in=sig(1), s_in=sig(aw), col=sig(COL_BITS),
                key_limit=sig(KL_BITS), out=sig(aw), cmd_out=sig(CMD_BITS), causal_out=sig(1),
                mask_out=sig(1))


def convert(outdir, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8,
            dataflow_name: str = "reference"):
    """Write ``<outdir>/fsa_cmp.v`` (instantiates fsa_cvt and fsa_fcmp modules)
    for the CMP of dataflow `dataflow_name`."""
    p = ports(e_type, a_type)
    return convert_block(lambda: fsa_cmp(**p, e_type=e_type, a_type=a_type, pieces=pieces,
                                         dataflow_name=dataflow_name), MODULE, outdir)
