"""The systolic array: R x C PEs, the CMP row above, the ACC row below, the
input and output delayers (docs/architecture.md section 2, docs/array.md).

Ports (the controller, or a testbench, drives everything per cycle)::

    ctrl       R*9   row r's PE control bits at column 0 (bits [9r +: 9])
    cmp_cmd    3     CMP command entering CMP(0); cmp_causal its causal bit,
                     cmp_mask its mask_keys bit (they travel with it)
    key_limit  9     the key_limit register (every CMP; fsa_cmp.KL_BITS)
    scale_a    A     the scale_a register (every ACC's EXP_S1 factor)
    id_data    R*E   scratchpad row (or broadcast constant) entering the input
                     delayer, with id_valid, id_rev_in, id_rev_out, id_delay;
                     it is the SRAM's output: a read issued at cycle t is
                     presented here at t+1
    acc_cmd    3     ACC command (all columns)
    acc_sram   C*A   acc SRAM words read the cycle before (or zeros)
    acc_wb     C*A   write-back values of the ACC row (combinational)

Hierarchy: ``fsa_pe`` x R*C, ``fsa_cmp`` x C, ``fsa_acc`` x C, one
``fsa_idelay`` and one ``fsa_odelay``; each is its own Verilog module.

The dataflow (``fsa.hw.dataflow``) picks the units' parts.  UD
configurations (docs/ud.md): ``ctrl`` is R*12 bits (``fsa_pe.ctrl_width``;
the PE with ``qreg``), the CMPs decode LATCH, and (``bottom_row``) a row of
``fsa_bcmp`` x C sits below the last PE row (instances ``u_bcmp_<c>``):
PE(R-1,c).d_out is its ``s_in``, its ``u_out`` drives PE(R-1,c).d_in (0 on
reference configs) and its ``od`` register feeds the output delayer instead
of the bottom PE's d_out.  Extra ports (column 0's commands, travelling
right one column per cycle like the CMP's)::

    bcmp_max, bcmp_up, bcmp_od   2 each   the three BCMP command lanes
                                          (fsa_bcmp.LANE_CODES)
    bcmp_causal                  1        the causal bit of the UPDATE's instruction
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, block

from fsa.hw import dataflow
from rtl.convert import Const, convert_block, sig, submodule
from rtl.prim import Bundle
from rtl import fsa_acc, fsa_bcmp, fsa_cmp, fsa_delay, fsa_pe

MODULE = "fsa_array"


@block
def fsa_array(clk, rst, ctrl, cmp_cmd, cmp_causal, cmp_mask, key_limit, scale_a, id_data,
              id_valid, id_rev_in, id_rev_out, id_delay, acc_cmd, acc_sram, acc_wb, cfg=None,
              bcmp=None):
    # (this docstring is the module's comment in the generated Verilog: edit it
    # and the Verilog changes; fsa.plan re-exports the fsa.hw.control tables)
    """The array; see the module docstring. `cfg` is an FSAConfig.

    ctrl[9r +: 9] is row r's PE control word (fsa.plan.PE_BITS), bits 0..8 =
    pe_ctrl_mac, pe_ctrl_acc_ui, pe_ctrl_load_reg_li, pe_ctrl_load_reg_ui,
    pe_ctrl_flow_lr, pe_ctrl_flow_ud, pe_ctrl_flow_du, pe_ctrl_update_reg,
    pe_ctrl_exp2 (the names fsa_pe gives them).
    cmp_cmd and acc_cmd carry the command codes of fsa.plan.CMP_CMDS and
    fsa.plan.ACC_CMDS (decoded by name in fsa_cmp and fsa_acc).
    """
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    EW, AW = cfg.e_fmt.width, cfg.a_fmt.width
    df = dataflow.of(cfg)
    bottom_row = df.bottom_row          # the bottom comparator row (fsa_bcmp)
    NB = df.ctrl_bits
    if bottom_row and bcmp is None:
        raise ValueError(f"fsa_array: dataflow {df.name!r} needs the bcmp port bundle")
    checks = (("ctrl", ctrl, R * NB), ("id_data", id_data, R * EW), ("acc_sram", acc_sram, C * AW),
              ("acc_wb", acc_wb, C * AW), ("cmp_cmd", cmp_cmd, fsa_cmp.CMD_BITS),
              ("acc_cmd", acc_cmd, fsa_acc.cmd_bits(cfg)), ("key_limit", key_limit, fsa_cmp.KL_BITS),
              ("scale_a", scale_a, AW))
    for name, s, w in checks:
        if len(s) != w:
            raise ValueError(f"fsa_array: port {name} must be {w} bits wide, got {len(s)}")

    insts = []
    # input delayer -> lanes (row r's l_in at column 0)
    id_out = sig(R * EW)
    insts.append(submodule(fsa_delay.fsa_idelay,
                           (clk, rst, id_data, id_valid, id_rev_in, id_rev_out, id_delay, id_out),
                           dict(R=R, e_type=e), "fsa_idelay", "u_idelay",
                           {"clk": clk, "rst": rst, "din": id_data, "valid": id_valid,
                            "rev_in": id_rev_in, "rev_out": id_rev_out, "delay": id_delay,
                            "dout": id_out}, {"dout"}))

    h = [[id_out((r + 1) * EW, r * EW)] + [sig(EW) for _ in range(C)] for r in range(R)]
    ct = [[ctrl((r + 1) * NB, r * NB)] + [sig(NB) for _ in range(C)] for r in range(R)]
    down = [[sig(AW) for _ in range(C)] for _ in range(R + 1)]   # down[r][c] = PE(r,c).u_in
    up = [[sig(AW) for _ in range(C)] for _ in range(R)]         # up[r][c] = PE(r,c).u_out
    cc = [cmp_cmd] + [sig(fsa_cmp.CMD_BITS) for _ in range(C)]
    cz = [cmp_causal] + [sig(1) for _ in range(C)]
    cm = [cmp_mask] + [sig(1) for _ in range(C)]
    zero = Const(AW, 0)
    b_up = [sig(AW) for _ in range(C)] if bottom_row else None   # BCMP u_out -> PE(R-1,c).d_in
    b_od = [sig(AW) for _ in range(C)] if bottom_row else None   # BCMP od -> output delayer
    units = dict(e_type=e, a_type=a, pieces=P, dataflow_name=df.name)

    for r in range(R):
        for c in range(C):
            d_in = up[r + 1][c] if r + 1 < R else (b_up[c] if bottom_row else zero)
            port = {"clk": clk, "rst": rst, "l_in": h[r][c], "u_in": down[r][c], "d_in": d_in,
                    "ctrl_in": ct[r][c], "r_out": h[r][c + 1], "d_out": down[r + 1][c],
                    "u_out": up[r][c], "ctrl_out": ct[r][c + 1]}
            insts.append(submodule(fsa_pe.fsa_pe, (), dict(port, **units),
                                   fsa_pe.MODULE, f"u_pe_{r}_{c}", port,
                                   {"r_out", "d_out", "u_out", "ctrl_out"}))
    for c in range(C):
        port = {"clk": clk, "rst": rst, "cmd_in": cc[c], "causal_in": cz[c], "mask_in": cm[c],
                "s_in": up[0][c], "col": Const(fsa_cmp.COL_BITS, c), "key_limit": key_limit,
                "out": down[0][c], "cmd_out": cc[c + 1], "causal_out": cz[c + 1],
                "mask_out": cm[c + 1]}
        insts.append(submodule(fsa_cmp.fsa_cmp, (), dict(port, **units),
                               fsa_cmp.MODULE, f"u_cmp_{c}", port,
                               {"out", "cmd_out", "causal_out", "mask_out"}))
    if bottom_row:
        LB = fsa_bcmp.LANE_BITS
        bm = [bcmp.max] + [sig(LB) for _ in range(C)]
        bu = [bcmp.up] + [sig(LB) for _ in range(C)]
        bo = [bcmp.od] + [sig(LB) for _ in range(C)]
        bz = [bcmp.causal] + [sig(1) for _ in range(C)]
        for c in range(C):
            port = {"clk": clk, "rst": rst, "max_in": bm[c], "up_in": bu[c], "od_in": bo[c],
                    "causal_in": bz[c], "s_in": down[R][c], "col": Const(fsa_bcmp.COL_BITS, c),
                    "u_out": b_up[c], "od": b_od[c], "max_out": bm[c + 1], "up_out": bu[c + 1],
                    "od_out": bo[c + 1], "causal_out": bz[c + 1]}
            insts.append(submodule(fsa_bcmp.fsa_bcmp, (), dict(port, R=R, e_type=e, a_type=a),
                                   fsa_bcmp.MODULE, f"u_bcmp_{c}", port, fsa_bcmp.OUTPUTS))

    # output delayer: bottom d_out of every column -> aligned
    # (a ConcatSignal cannot be a submodule port directly: copy it to a wire)
    bottom = ConcatSignal(*reversed(b_od if bottom_row else down[R]))
    od_in = sig(C * AW)

    @always_comb
    def gather():
        od_in.next = bottom
    insts.append(gather)
    od_out = sig(C * AW)
    insts.append(submodule(fsa_delay.fsa_odelay, (clk, rst, od_in, od_out), dict(C=C, a_type=a),
                           "fsa_odelay", "u_odelay",
                           {"clk": clk, "rst": rst, "din": od_in, "dout": od_out}, {"dout"}))
    wbs = [sig(AW) for _ in range(C)]
    for c in range(C):
        port = {"clk": clk, "rst": rst, "cmd": acc_cmd, "scale_a": scale_a,
                "sa": od_out((c + 1) * AW, c * AW), "sram": acc_sram((c + 1) * AW, c * AW),
                "wb": wbs[c]}
        insts.append(submodule(fsa_acc.fsa_acc, (), dict(port, a_type=a, pieces=P,
                                                         div_bits_per_cycle=cfg.div_bits_per_cycle,
                                                         dataflow_name=df.name),
                               fsa_acc.MODULE, f"u_acc_{c}", port, {"wb"}))
    all_wb = ConcatSignal(*reversed(wbs))
    # the last column's pass-through outputs go nowhere: gather them in one
    # signal whose name tells lint they are unused by design
    unused_edge = ConcatSignal(*[h[r][C] for r in range(R)], *[ct[r][C] for r in range(R)],
                               cc[C], cz[C], cm[C], *((bm[C], bu[C], bo[C], bz[C]) if bottom_row else ()))
    unused_sink = sig(len(unused_edge))

    @always_comb
    def sink():
        unused_sink.next = unused_edge
    insts.append(sink)

    @always_comb
    def pack():
        acc_wb.next = all_wb
    insts.append(pack)
    return insts


def ports(cfg) -> dict:
    R, C = cfg.sa_rows, cfg.sa_cols
    EW, AW = cfg.e_fmt.width, cfg.a_fmt.width
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
                ctrl=sig(R * fsa_pe.ctrl_width(cfg)), cmp_cmd=sig(fsa_cmp.CMD_BITS), cmp_causal=sig(1),
                cmp_mask=sig(1), key_limit=sig(fsa_cmp.KL_BITS), scale_a=sig(AW),
                id_data=sig(R * EW), id_valid=sig(1), id_rev_in=sig(1), id_rev_out=sig(1),
                id_delay=sig(1), acc_cmd=sig(fsa_acc.cmd_bits(cfg)), acc_sram=sig(C * AW),
                acc_wb=sig(C * AW))
    if dataflow.of(cfg).bottom_row:
        LB = fsa_bcmp.LANE_BITS
        p.update(bcmp=Bundle(max=sig(LB), up=sig(LB), od=sig(LB), causal=sig(1)))
    return p


#: the extra input ports of an array with the bottom row (its ``bcmp`` bundle:
#: MyHDL names the ports ``bcmp_<lane>``)
UD_PORTS = ("bcmp_max", "bcmp_up", "bcmp_od", "bcmp_causal")


def convert(outdir, cfg):
    """Write ``<outdir>/fsa_array.v`` (instances only; the units are converted
    separately by rtl.generate)."""
    p = ports(cfg)
    return convert_block(lambda: fsa_array(**p, cfg=cfg), MODULE, outdir)
