"""Accumulator unit ACC(c) (docs/architecture.md section 4, docs/array.md).

Ports::

    cmd  (3)  command, the same for all columns (after the output delayer)
    scale_a (A)  EXP_S1's factor: the ``scale_a`` register (fsa/hw/regs.py;
              softmax scale * log2(e) in A, constant while a program runs)
    sa   (A)  column c's value from the array bottom (via the output delayer)
    sram (A)  the acc SRAM word read the cycle before (or +0: `zero` bit)
    wb   (A)  write-back value fma(scale, sram, ACC_SA ? sa : +0); combinational,
              the controller writes it in the cycle of ACC_SA / ACC

Commands (``CMD_*``, codes from the table ``fsa.hw.control.ACC_CMDS``; in the
Verilog each is a named decode of ``cmd``, ``acc_cmd_exp_s1`` ...): NOP,
EXP_S1 (scale <- sa * scale_a), EXP_S2
(scale <- 2^scale, one cycle, in-unit PWL constants), ACC_SA, ACC,
SET_SCALE (scale <- sram), RECIPROCAL (scale <- 1/scale with the divider:
the first RECIPROCAL cycle starts it, ``scale`` is written when it is done;
the plan keeps RECIPROCAL for ``fsa.hw.timing.reciprocal_cycles`` cycles).

UD configurations (``fsa.hw.dataflow.UD``, docs/ud.md) take 4-bit commands (the table
``fsa.hw.control.UD_ACC_CMDS``) and add a second scale register ``scale2`` for
the non-blocking normalisation: SET_SCALE2 (scale2 <- sram), RECIPROCAL2
(one cycle: starts the divider on scale2, which writes scale2 when done),
ACC2 (wb = fma(scale2, sram, +0)).

Units inside: ``fsa_fma`` (A x A + A, exp2 mode; its gated variant
``fsa_fma_<A>_<A>_p<P>_en``, enabled only by the commands that use its
result: EXP_S1, EXP_S2, ACC_SA, ACC; ``wb`` is 0 in other cycles) and
``fsa_div``.
Latency: ``wb`` is combinational; ``scale`` updates at the edge of the
command's cycle (RECIPROCAL: ``latency + 1`` cycles after the first one).
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from fsa.hw.control import ACC_CMDS, UD_ACC_CMDS
from fsa.formats import get_format
from fsa.hw import dataflow, timing
from rtl.convert import convert_block, sig, submodule
from rtl.fp import fsa_div, fsa_fma

MODULE = "fsa_acc"
CMD_BITS = 3
#: Command codes: the table is ``fsa.hw.control.ACC_CMDS``.
(CMD_NOP, CMD_EXP_S1, CMD_EXP_S2, CMD_ACC_SA, CMD_ACC, CMD_SET_SCALE,
 CMD_RECIPROCAL) = (ACC_CMDS.index(c) for c in (
     "NOP", "EXP_S1", "EXP_S2", "ACC_SA", "ACC", "SET_SCALE", "RECIPROCAL"))
assert len(ACC_CMDS) <= 1 << CMD_BITS
UD_CMD_BITS = 4
assert len(UD_ACC_CMDS) <= 1 << UD_CMD_BITS
CMD_SET_SCALE2, CMD_RECIPROCAL2, CMD_ACC2 = (UD_ACC_CMDS.index(c) for c in (
    "SET_SCALE2", "RECIPROCAL2", "ACC2"))


def cmd_bits(cfg_or_df) -> int:
    """Bits of the ACC command of a configuration (or dataflow): 3, 4 on UD
    ones (the dataflow's ACC command table)."""
    return max(CMD_BITS, (len(dataflow.of(cfg_or_df).acc_cmds) - 1).bit_length())


#: RECIPROCAL commands the plan must issue (start cycle, the divider's latency,
#: the cycle that writes ``scale``): the contract's function, re-exported here.
reciprocal_cycles = timing.reciprocal_cycles


def acc_constants(a_type: str, pieces: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(slopes, encoded intercepts) of the ACC's A-format exp2."""
    import numpy as np

    from fsa import numerics

    slopes, icpt = numerics.pwl_constants(pieces, a_type, a_type)
    enc = numerics.encode_intercept(icpt, np.arange(pieces, dtype=np.int64), a_type)
    return tuple(int(v) for v in slopes), tuple(int(v) for v in enc)


@block
def fsa_acc(clk, rst, cmd, scale_a, sa, sram, wb, a_type="fp32", pieces=8,
            div_bits_per_cycle=2, dataflow_name="reference"):
    """One accumulator unit; see the module docstring."""
    s2 = dataflow.of(dataflow_name).acc_scale2      # the second scale register
    fa = get_format(a_type)
    aw = fa.width
    slopes, icpts = acc_constants(a_type, pieces)
    pbits = max(1, (pieces - 1).bit_length())

    scale = sig(aw, fa.one)
    op_a, op_b, op_c = sig(aw), sig(aw), sig(aw)
    f_a, unused_f_e = sig(aw), sig(aw)
    unused_piece, unused_match = sig(pbits), sig(1)
    piece = sig(pbits)
    # the commands by name (one decode each; acc_cmd_exp_s2 is the FMA's exp2 mode)
    (acc_cmd_exp_s1, acc_cmd_exp_s2, acc_cmd_acc_sa, acc_cmd_acc, acc_cmd_set_scale,
     acc_cmd_reciprocal) = (sig(1) for _ in range(6))
    fma_en = sig(1)         # the FMA works only in the cycles that use its result
    # scale2: the second scale register and its commands; the divider's operand
    # and which register it writes.  The shared generators below read
    # `scale_mul` (the FMA's multiplier: scale, or scale2 for ACC2), `acc_mul`
    # (ACC or ACC2) and `done1` (a division for `scale` is done), which are
    # scale, acc_cmd_acc and div_done themselves without scale2.
    scale2, div_x = sig(aw, fa.one), sig(aw)
    acc_cmd_set_scale2, acc_cmd_reciprocal2, acc_cmd_acc2, div_to2 = (sig(1) for _ in range(4))
    div_start, unused_div_ready, div_done = sig(1), sig(1), sig(1)
    div_y = sig(aw)
    prev_recip = sig(1)
    scale_mul = sig(aw) if s2 else scale
    acc_mul = sig(1) if s2 else acc_cmd_acc
    done1 = sig(1) if s2 else div_done

    u_fma = submodule(fsa_fma.fsa_fma, (op_a, op_b, op_c, acc_cmd_exp_s2, f_a, unused_f_e, unused_piece, unused_match),
                      dict(mul=a_type, add=a_type, pieces=pieces, en=fma_en),
                      fsa_fma.module_name(a_type, a_type, pieces, gated=True), "u_fma",
                      {"a": op_a, "b": op_b, "c": op_c, "exp2": acc_cmd_exp_s2, "out_a": f_a,
                       "out_e": unused_f_e, "piece": unused_piece, "match": unused_match,
                       "en": fma_en},
                      {"out_a", "out_e", "piece", "match"})
    dx = div_x if s2 else scale
    u_div = submodule(fsa_div.fsa_div, (clk, rst, div_start, dx, unused_div_ready, div_done, div_y),
                      dict(fmt=a_type, bits_per_cycle=div_bits_per_cycle),
                      fsa_div.module_name(a_type, div_bits_per_cycle), "u_div",
                      {"clk": clk, "rst": rst, "start": div_start, "x": dx,
                       "ready": unused_div_ready, "done": div_done, "y": div_y},
                      {"ready", "done", "y"})

    # exp2 piece of `scale` (numerics.exp2_piece) for any value of it (it
    # depends on the scale_a register through EXP_S1), computed here rather than
    # taken from the FMA so that the operand muxes do not loop through it:
    # piece = bits [sh, sh + lp) of (significand << lp), sh = the number of
    # fraction bits of |scale|; every signal explicitly sized
    mb, lp, bias = fa.man_bits, pbits, fa.bias
    emask = fa.exp_max
    ef = sig(aw - 1 - mb)             # exponent field of scale
    e_eff = sig(aw - 1 - mb)          # the exponent: ef, or 1 for a subnormal
    hidden = sig(1)
    man = sig(mb)
    zeros_lp = sig(lp)                # constant 0: the lp bits below the significand
    sig_w = ConcatSignal(hidden, man, zeros_lp)   # significand << lp
    sh = sig(max(1, (mb + bias - 1).bit_length()))   # 1 .. mb + bias - 1 when fractional
    sig_sh = sig(mb + 1 + lp)
    fractional = sig(1)               # scale < 0, finite, not an integer
    slope_k, icpt_k = sig(aw), sig(aw)

    @always_comb
    def scale_fields():
        ef.next = scale[aw - 1:mb]
        man.next = scale[mb:]

    @always_comb
    def scale_exponent():
        hidden.next = ef != 0
        if ef == 0:
            e_eff.next = 1
        else:
            e_eff.next = ef

    @always_comb
    def scale_shift():
        fractional.next = scale[aw - 1] == 1 and ef != emask and e_eff < mb + bias
        if e_eff < mb + bias:
            sh.next = (mb + bias) - e_eff
        else:
            sh.next = 0                     # (|scale| is an integer: piece 0)

    @always_comb
    def shift_significand():
        sig_sh.next = sig_w >> sh

    @always_comb
    def piece_of_scale():
        if fractional:
            piece.next = sig_sh[lp:]
        else:
            piece.next = 0                  # x >= 0 (clamped), inf/NaN, or an integer

    @always_comb
    def piece_consts():
        slope_k.next = slopes[piece]
        icpt_k.next = icpts[piece]

    # (a process docstring is a comment of the generated Verilog: edit it and the
    # Verilog changes; fsa.plan re-exports the fsa.hw.control tables)
    @always_comb
    def commands():
        """cmd decoded by name (fsa.plan.ACC_CMDS; NOP needs none)."""
        acc_cmd_exp_s1.next = cmd == CMD_EXP_S1
        acc_cmd_exp_s2.next = cmd == CMD_EXP_S2
        acc_cmd_acc_sa.next = cmd == CMD_ACC_SA
        acc_cmd_acc.next = cmd == CMD_ACC
        acc_cmd_set_scale.next = cmd == CMD_SET_SCALE
        acc_cmd_reciprocal.next = cmd == CMD_RECIPROCAL

    @always_comb
    def fma_gate():
        fma_en.next = acc_cmd_exp_s1 or acc_cmd_exp_s2 or acc_cmd_acc_sa or acc_mul

    @always_comb
    def operand_a():
        if acc_cmd_exp_s1:
            op_a.next = sa
        else:
            op_a.next = scale_mul

    @always_comb
    def divider_start():
        div_start.next = acc_cmd_reciprocal and not prev_recip

    @always_comb
    def operands():
        if acc_cmd_exp_s1:
            op_b.next = scale_a
            op_c.next = 0
        elif acc_cmd_exp_s2:
            op_b.next = slope_k
            op_c.next = icpt_k
        elif acc_cmd_acc_sa:
            op_b.next = sram
            op_c.next = sa
        else:
            op_b.next = sram
            op_c.next = 0

    @always_comb
    def output():
        wb.next = f_a

    @always_seq(clk.posedge, reset=rst)
    def step():
        prev_recip.next = acc_cmd_reciprocal
        if acc_cmd_exp_s1 or acc_cmd_exp_s2:
            scale.next = f_a
        elif acc_cmd_set_scale:
            scale.next = sram
        elif done1:
            scale.next = div_y

    common = (u_fma, u_div, commands, fma_gate, scale_fields, scale_exponent, scale_shift,
              shift_significand, piece_of_scale, piece_consts, operand_a, operands, output, step)
    if not s2:
        return common + (divider_start,)

    # ---- scale2 and its three commands
    @always_comb
    def commands2():
        acc_cmd_set_scale2.next = cmd == CMD_SET_SCALE2
        acc_cmd_reciprocal2.next = cmd == CMD_RECIPROCAL2
        acc_cmd_acc2.next = cmd == CMD_ACC2

    @always_comb
    def select2():
        acc_mul.next = acc_cmd_acc or acc_cmd_acc2
        if acc_cmd_acc2:
            scale_mul.next = scale2
        else:
            scale_mul.next = scale
        done1.next = div_done and not div_to2

    @always_comb
    def divider_in():
        # RECIPROCAL2 is one cycle: it starts the division on scale2
        div_start.next = (acc_cmd_reciprocal and not prev_recip) or acc_cmd_reciprocal2
        if acc_cmd_reciprocal2:
            div_x.next = scale2
        else:
            div_x.next = scale

    @always_seq(clk.posedge, reset=rst)
    def step2():
        if div_start:
            div_to2.next = acc_cmd_reciprocal2
        if acc_cmd_set_scale2:
            scale2.next = sram
        elif div_done and div_to2:
            scale2.next = div_y

    return common + (commands2, select2, divider_in, step2)


def ports(a_type: str = "fp32", dataflow_name: str = "reference") -> dict:
    from myhdl import ResetSignal

    aw = get_format(a_type).width
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
                cmd=sig(cmd_bits(dataflow_name)),
                scale_a=sig(aw), sa=sig(aw), sram=sig(aw), wb=sig(aw))


def convert(outdir, a_type: str = "fp32", pieces: int = 8, div_bits_per_cycle: int = 2,
            dataflow_name: str = "reference"):
    """Write ``<outdir>/fsa_acc.v`` (instantiates fsa_fma and fsa_div modules)
    for the ACC of dataflow `dataflow_name`."""
    p = ports(a_type, dataflow_name)
    return convert_block(lambda: fsa_acc(**p, a_type=a_type, pieces=pieces,
                                         div_bits_per_cycle=div_bits_per_cycle,
                                         dataflow_name=dataflow_name),
                         MODULE, outdir)
