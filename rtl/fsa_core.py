"""The matrix engine: instruction queue, decoder, dispatch, semaphores,
state/errors and counters, the matrix controller, the scratchpad and
accumulator SRAMs and the array (docs/architecture.md sections 6-9). The DMA
engine and the bus interfaces are outside (``rtl/fsa_top.py``); the core
hands DMA instructions out on a command port and exposes the SRAMs' narrow
ports.

Ports::

    inst_valid/inst_ready/inst_word   push one 32-bit instruction word (the
                                      queue holds cfg.inst_queue_size words)
    start                             pulse: IDLE or DONE -> ACTIVE, a fresh
                                      program (fsa/hw/regs.py: restart)
    abort_req                             pulse: abort / soft reset (fsa/hw/regs.py)
    aborting                          an abort is draining (to the DMA engine:
                                      no new burst, drain the ones in flight)
    state                             fsa.hw.regs.State: 0 idle, 1 active,
                                      2 done, 3 error
    err_code, err_index               fsa/hw/errors.py code and the index of the
                                      instruction that caused it
    err_wait                          after DEADLOCK: semaphore id, the value
                                      waited for, the value held (register 0x54)
    cnt_*                             the reference's counters (32 bits)
    q_free                            free words in the instruction queue
    dma_*                             DMA command port (valid/ready), and the
                                      DMA engine's done/busy/err/err_code/err_slot
    sp_n_*, ac_n_*                    narrow (AXI-beat) ports of the
                                      scratchpad and accumulator SRAMs
    scale_e, scale_a, key_limit       the setting registers (fsa/hw/regs.py,
                                      from fsa_regs): the `scale` constant the
                                      input delayer broadcasts, the ACCs'
                                      EXP_S1 factor, the CMPs' key limit
    fetch_more, fetch_end, fetch_busy,  the fetch unit's state for fsa_status
    fetch_err, fetch_err_code         (rtl/fsa_fetch.py)
    fetch_flush                       empty the queue (a fetch-mode program is over)

Units (each its own Verilog module, instantiated here):

    u_queue     fsa_queue      the instruction queue (rtl/fsa_queue.py)
    u_decode    fsa_decode     word collection and classification (rtl/fsa_decode.py)
    u_dispatch  fsa_dispatch   pending instructions, issue, range check, fences
    u_sem       fsa_sem        the semaphores
    u_status    fsa_status     device state, error register, abort, deadlock detection
    u_counters  fsa_counters   performance counters
    u_mxctrl    fsa_mxctrl     the matrix controller (from fsa/hw/timing.py plans)
    u_spad, u_acc              the SRAMs (fsa_sram)
    u_array     fsa_array      the systolic array with its CMP and ACC rows

Instruction flow: words are decoded in order (only while ACTIVE). A matrix
or DMA instruction goes to its engine's one-entry pending register (the
decoder waits while that one is full); a pending instruction issues when its
semaphore acquire succeeds and its engine accepts it, so a matrix instruction
waiting on a semaphore never blocks DMA instructions behind it. A fence
waits until the engines it names are idle; ``stop`` (after waiting for both
engines) ends the program: state DONE. An illegal instruction or an
out-of-range SRAM row of a matrix instruction, any DMA error, a deadlock and
a program that runs dry without a stop put the core in the ERROR state:
nothing more is issued. The last cycle of an abort (``clear``) also sends a
CMP RESET into the comparator row (it travels along the row like any CMP
command), so the next program finds the maxima as after a reset; on UD
configurations it also sends a RESET into the bottom comparator row
(``fsa_bcmp``: maxima, causal counter and LIFO pointer).
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, block

from fsa.hw.errors import ERR_BITS
from fsa.hw.regs import COUNTER_BITS, COUNTERS, STATE_BITS
from fsa.hw import dataflow
from fsa.hw.dmarules import sram_bank_ports
from rtl import fsa_dma_if, fsa_sram_bp
from rtl import (fsa_acc, fsa_array, fsa_bcmp, fsa_cmp, fsa_counters, fsa_decode, fsa_dispatch,
                 fsa_mxctrl, fsa_queue, fsa_regs, fsa_sem, fsa_sram, fsa_status)
from rtl.convert import Const, convert_block, sig, submodule
from rtl.parts import flat_ports
from rtl.prim import Bundle
from rtl.fsa_decode import IDX_BITS
from rtl.fsa_pe import ctrl_width

MODULE = "fsa_core"
__all__ = ["MODULE", "COUNTERS", "IDX_BITS", "fsa_core", "ports", "convert", "sram_geometries"]


def sram_geometries(cfg) -> dict:
    """(rows, row_bits, lane_bits, banks) of the scratchpad and accumulator."""
    lane = cfg.axi_data_bits
    sp_bits = cfg.sa_rows * cfg.e_fmt.width
    ac_bits = cfg.sa_cols * cfg.a_fmt.width
    return {"spad": (cfg.spad_rows, sp_bits, min(lane, sp_bits), cfg.spad_banks),
            "acc": (cfg.acc_rows, ac_bits, min(lane, ac_bits), cfg.acc_banks)}


def _abits(rows: int) -> int:
    return max(1, (rows - 1).bit_length())


@block
def fsa_core(clk, rst, inst_valid, inst_ready, inst_word, start, abort_req, aborting, state,
             err_code, err_index, err_wait, q_free, cnt_exec, cnt_bubble, cnt_mx_active,
             cnt_dma_active, cnt_words, cnt_mx, cnt_dma, cnt_fence, cnt_enq, cnt_deq,
             dma_valid, dma_ready, dma_func, dma_repeat, dma_sram_addr, dma_sram_stride,
             dma_is_accum, dma_mem_addr, dma_mem_stride, dma_size, dma_done, dma_busy, dma_err,
             dma_err_code, dma_err_slot,
             sp_n_valid, sp_n_ready, sp_n_we, sp_n_addr, sp_n_lane, sp_n_wdata, sp_n_rvalid,
             sp_n_rdata,
             ac_n_valid, ac_n_ready, ac_n_we, ac_n_addr, ac_n_lane, ac_n_wdata, ac_n_rvalid,
             ac_n_rdata, scale_e, scale_a, key_limit, fetch_more, fetch_end, fetch_busy,
             fetch_err, fetch_err_code, fetch_flush, cfg=None):
    """The matrix engine; see the module docstring."""
    R = cfg.sa_rows
    EW = cfg.e_fmt.width
    geo = sram_geometries(cfg)
    SPA, ACA = _abits(cfg.spad_rows), _abits(cfg.acc_rows)
    insts = []
    # internal control signals: the ports of the control units, by name
    cs = {}
    for mod in (fsa_queue, fsa_decode, fsa_dispatch, fsa_sem, fsa_status, fsa_counters):
        for name, s in mod.ports(cfg).items():
            cs.setdefault(name, s)
    outer = dict(clk=clk, rst=rst, inst_valid=inst_valid, inst_ready=inst_ready,
                 inst_word=inst_word, start=start, abort_req=abort_req, aborting=aborting,
                 state=state, err_code=err_code, err_index=err_index, err_wait=err_wait,
                 q_free=q_free, cnt_exec=cnt_exec, cnt_bubble=cnt_bubble,
                 cnt_mx_active=cnt_mx_active, cnt_dma_active=cnt_dma_active,
                 cnt_words=cnt_words, cnt_mx=cnt_mx, cnt_dma=cnt_dma, cnt_fence=cnt_fence,
                 cnt_enq=cnt_enq, cnt_deq=cnt_deq, dma_valid=dma_valid, dma_ready=dma_ready,
                 dma_func=dma_func, dma_repeat=dma_repeat, dma_sram_addr=dma_sram_addr,
                 dma_sram_stride=dma_sram_stride, dma_is_accum=dma_is_accum,
                 dma_mem_addr=dma_mem_addr, dma_mem_stride=dma_mem_stride, dma_size=dma_size,
                 dma_done=dma_done, dma_busy=dma_busy, dma_err=dma_err, dma_err_code=dma_err_code,
                 dma_err_slot=dma_err_slot,
                 fetch_more=fetch_more, fetch_end=fetch_end, fetch_busy=fetch_busy,
                 fetch_err=fetch_err, fetch_err_code=fetch_err_code)
    cs.update(outer)
    # the matrix controller's semaphore release (to fsa_sem's mx_rel_*)
    mx_rel_v, mx_rel_id, mx_rel_val = sig(1), sig(len(cs["in_rel_id"])), sig(len(cs["in_rel_value"]))
    # the controller's further release channels (fsa.hw.dataflow: slot 1's and
    # the third slot's on UD) to fsa_sem's mx<k>_rel_*
    df = dataflow.of(cfg)
    REL_WIDTHS = (("valid", 1), ("id", len(cs["in_rel_id"])), ("value", len(cs["in_rel_value"])))
    mx2_rel = {f"mx{k}_rel_{n}": sig(w) for k in range(2, df.release_channels + 1)
               for n, w in REL_WIDTHS}
    mx_busy = cs["mx_busy"]

    def conns(mod, **rename):
        return {p: (rename[p] if p in rename else cs[p]) for p in mod.ports(cfg)}

    # the control units (module, instance, port renames, takes cfg)
    # the queue is emptied by an abort's clear and by the end of a fetch-mode program
    q_clear = sig(1)
    st_clear = cs["clear"]

    @always_comb
    def queue_clear():
        q_clear.next = st_clear or fetch_flush
    insts.append(queue_clear)
    units = ((fsa_queue, "u_queue", dict(clear=q_clear), True),
             (fsa_decode, "u_decode", {}, True),
             (fsa_dispatch, "u_dispatch", {}, True),
             (fsa_sem, "u_sem", dict(mx_rel_valid=mx_rel_v, mx_rel_id=mx_rel_id,
                                     mx_rel_value=mx_rel_val, **mx2_rel), False),
             (fsa_status, "u_status", {}, False), (fsa_counters, "u_counters", {}, False))
    for mod, inst_name, rename, with_cfg in units:
        c = conns(mod, **rename)
        kw = dict(c, cfg=cfg) if with_cfg else dict(c)
        insts.append(submodule(getattr(mod, mod.MODULE), (), kw, mod.MODULE, inst_name, c,
                               mod.OUTPUTS))

    mx_in_valid, mx_in_ready = cs["mx_in_valid"], cs["mx_in_ready"]
    in_func, in_spad_addr, in_spad_stride = cs["in_func"], cs["in_spad_addr"], cs["in_spad_stride"]
    in_rev_in, in_rev_out, in_delay = cs["in_rev_in"], cs["in_rev_out"], cs["in_delay"]
    in_acc_addr, in_acc_stride = cs["in_acc_addr"], cs["in_acc_stride"]
    in_zero, in_causal, in_wpa = cs["in_zero"], cs["in_causal"], cs["in_wpa"]
    in_mask_keys = cs["in_mask_keys"]
    in_rel_valid, in_rel_id, in_rel_value = cs["in_rel_valid"], cs["in_rel_id"], cs["in_rel_value"]

    # ------------------------------------------------------------ controller
    NB = ctrl_width(cfg)
    ctrl = sig(R * NB)
    cmp_cmd, cmp_causal, acc_cmd = sig(fsa_cmp.CMD_BITS), sig(1), sig(fsa_acc.cmd_bits(cfg))
    cmp_mask = sig(1)
    cmp_cmd_arr = sig(fsa_cmp.CMD_BITS)          # the controller's, or RESET after an abort
    clear = cs["clear"]
    CMP_RESET = fsa_cmp.CMD_RESET

    @always_comb
    def cmp_reset():
        if clear:
            cmp_cmd_arr.next = CMP_RESET
        else:
            cmp_cmd_arr.next = cmp_cmd
    insts.append(cmp_reset)
    KB = max(1, (cfg.exp2_pieces - 1).bit_length())
    spad_en, spad_addr = sig(1), sig(fsa_mxctrl.ADDR_BITS)
    id_valid, id_const, id_csel, id_k = sig(1), sig(1), sig(2), sig(KB)
    id_rev_in, id_rev_out, id_delay = sig(1), sig(1), sig(1)
    acc_ren, acc_raddr, acc_zero = sig(1), sig(fsa_mxctrl.ADDR_BITS), sig(1)
    acc_wen, acc_waddr = sig(1), sig(fsa_mxctrl.ADDR_BITS)
    ctl_ports = dict(clk=clk, rst=rst, in_valid=mx_in_valid, in_ready=mx_in_ready,
                     in_func=in_func, in_spad_addr=in_spad_addr, in_spad_stride=in_spad_stride,
                     in_rev_in=in_rev_in, in_rev_out=in_rev_out, in_delay=in_delay,
                     in_acc_addr=in_acc_addr, in_acc_stride=in_acc_stride, in_zero=in_zero,
                     in_causal=in_causal, in_mask_keys=in_mask_keys, in_wait_prev_acc=in_wpa,
                     in_rel_valid=in_rel_valid,
                     in_rel_id=in_rel_id, in_rel_value=in_rel_value, ctrl=ctrl, cmp_cmd=cmp_cmd,
                     cmp_causal=cmp_causal, cmp_mask=cmp_mask, acc_cmd=acc_cmd, spad_en=spad_en,
                     spad_addr=spad_addr, id_valid=id_valid, id_const=id_const, id_csel=id_csel,
                     id_k=id_k, id_rev_in=id_rev_in, id_rev_out=id_rev_out, id_delay=id_delay,
                     acc_ren=acc_ren, acc_raddr=acc_raddr, acc_zero=acc_zero, acc_wen=acc_wen,
                     acc_waddr=acc_waddr, rel_valid=mx_rel_v, rel_id=mx_rel_id,
                     rel_value=mx_rel_val, busy=mx_busy)
    ud_out = set()
    ctl_kw = dict(ctl_ports, cfg=cfg)       # (the controller's arguments: bundles, cfg)
    if df.norm_slot:        # the extra ports of the controller with the third slot (docs/ud.md)
        LB = fsa_bcmp.LANE_BITS
        bcmp_max, bcmp_up, bcmp_od, bcmp_causal = sig(LB), sig(LB), sig(LB), sig(1)
        bcmp_max_arr = sig(LB)       # the controller's, or RESET after an abort
        ctl_kw.update(in_reset_max=cs["in_reset_max"], in_early_release=cs["in_early_release"],
                      bcmp=Bundle(max=bcmp_max, up=bcmp_up, od=bcmp_od, causal=bcmp_causal),
                      **{f"rel{k}": Bundle(**{n: mx2_rel[f"mx{k}_rel_{n}"] for n, _ in REL_WIDTHS})
                         for k in range(2, df.release_channels + 1)})
        ctl_ports.update(flat_ports({n: v for n, v in ctl_kw.items()
                                     if n not in ctl_ports and n != "cfg"}))
        ud_out = set(fsa_mxctrl.UD_OUTPUTS)
        BCMP_RESET = fsa_bcmp.CMD_RESET

        @always_comb
        def bcmp_reset():
            if clear:
                bcmp_max_arr.next = BCMP_RESET
            else:
                bcmp_max_arr.next = bcmp_max
        insts.append(bcmp_reset)
    insts.append(submodule(fsa_mxctrl.fsa_mxctrl, (), ctl_kw, fsa_mxctrl.MODULE,
                           "u_mxctrl", ctl_ports,
                           {"in_ready", "ctrl", "cmp_cmd", "cmp_causal", "cmp_mask", "acc_cmd",
                            "spad_en",
                            "spad_addr", "id_valid", "id_const", "id_csel", "id_k", "id_rev_in",
                            "id_rev_out", "id_delay", "acc_ren", "acc_raddr", "acc_zero",
                            "acc_wen", "acc_waddr", "rel_valid", "rel_id", "rel_value", "busy"}
                           | ud_out))

    # ------------------------------------------------------------ SRAMs
    sp_rows, sp_bits, sp_lane, sp_banks = geo["spad"]
    ac_rows, ac_bits, ac_lane, ac_banks = geo["acc"]
    sp_rdata, ac_rdata = sig(sp_bits), sig(ac_bits)
    acc_wb = sig(ac_bits)
    sp_addr_n, ac_raddr_n, ac_waddr_n = sig(SPA), sig(ACA), sig(ACA)

    @always_comb
    def sram_addrs():
        sp_addr_n.next = spad_addr[SPA:]
        ac_raddr_n.next = acc_raddr[ACA:]
        ac_waddr_n.next = acc_waddr[ACA:]
    insts.append(sram_addrs)

    # the controller's row addresses above the SRAM's address bits (in range
    # by then: fsa_dispatch range-checks before issue): gathered in one signal
    # whose name tells lint they are unused by design
    AB = len(spad_addr)
    unused_bits = ConcatSignal(spad_addr(AB, SPA), acc_raddr(AB, ACA), acc_waddr(AB, ACA))
    unused_core = sig(len(unused_bits))

    @always_comb
    def unused_sink():
        unused_core.next = unused_bits
    insts.append(unused_sink)

    sp_ports = dict(clk=clk, rst=rst, a_en=spad_en, a_we=Const(1, 0), a_addr=sp_addr_n,
                    a_wdata=Const(sp_bits, 0), a_rdata=sp_rdata, w_en=Const(1, 0),
                    w_addr=Const(SPA, 0), w_wdata=Const(sp_bits, 0), n_valid=sp_n_valid,
                    n_ready=sp_n_ready, n_we=sp_n_we, n_addr=sp_n_addr, n_lane=sp_n_lane,
                    n_wdata=sp_n_wdata, n_rvalid=sp_n_rvalid, n_rdata=sp_n_rdata)
    # (with several AXI ports, or one working per port, a banked SRAM has a
    # narrow port per bank: rtl/fsa_sram_bp.py, fsa.hw.dmarules.sram_bank_ports)
    sp_mod = fsa_sram_bp if sram_bank_ports(cfg, sp_banks) else fsa_sram
    sp_fn = fsa_sram_bp.fsa_sram_bp if sp_mod is fsa_sram_bp else fsa_sram.fsa_sram
    insts.append(submodule(sp_fn, (), dict(sp_ports, rows=sp_rows, row_bits=sp_bits,
                                           lane_bits=sp_lane, banks=sp_banks),
                           sp_mod.module_name(*geo["spad"]), "u_spad", sp_ports,
                           {"a_rdata", "n_ready", "n_rvalid", "n_rdata"}))
    ac_ports = dict(clk=clk, rst=rst, a_en=acc_ren, a_we=Const(1, 0), a_addr=ac_raddr_n,
                    a_wdata=Const(ac_bits, 0), a_rdata=ac_rdata, w_en=acc_wen,
                    w_addr=ac_waddr_n, w_wdata=acc_wb, n_valid=ac_n_valid,
                    n_ready=ac_n_ready, n_we=ac_n_we, n_addr=ac_n_addr, n_lane=ac_n_lane,
                    n_wdata=ac_n_wdata, n_rvalid=ac_n_rvalid, n_rdata=ac_n_rdata)
    ac_mod = fsa_sram_bp if sram_bank_ports(cfg, ac_banks) else fsa_sram
    ac_fn = fsa_sram_bp.fsa_sram_bp if ac_mod is fsa_sram_bp else fsa_sram.fsa_sram
    insts.append(submodule(ac_fn, (), dict(ac_ports, rows=ac_rows, row_bits=ac_bits,
                                           lane_bits=ac_lane, banks=ac_banks),
                           ac_mod.module_name(*geo["acc"]), "u_acc", ac_ports,
                           {"a_rdata", "n_ready", "n_rvalid", "n_rdata"}))

    # ------------------------------------------------------------ constants and the array
    from fsa import numerics
    slopes, _ = numerics.pwl_constants(cfg.exp2_pieces, cfg.e_type, cfg.a_type)
    ONE = cfg.e_fmt.one
    SLOPES = tuple(int(x) for x in slopes)
    id_data = sig(R * EW)
    cval = sig(EW)
    cbcast = ConcatSignal(*([cval] * R))            # the constant on every lane
    acc_sram = sig(ac_bits)

    @always_comb
    def const_value():
        if id_csel == 2:
            cval.next = SLOPES[id_k]
        elif id_csel == 1:
            cval.next = scale_e
        else:
            cval.next = ONE
    insts.append(const_value)

    @always_comb
    def array_inputs():
        if id_const:
            id_data.next = cbcast
        else:
            id_data.next = sp_rdata
        if acc_zero:
            acc_sram.next = 0
        else:
            acc_sram.next = ac_rdata
    insts.append(array_inputs)

    arr_ports = dict(clk=clk, rst=rst, ctrl=ctrl, cmp_cmd=cmp_cmd_arr, cmp_causal=cmp_causal,
                     cmp_mask=cmp_mask, key_limit=key_limit, scale_a=scale_a,
                     id_data=id_data, id_valid=id_valid, id_rev_in=id_rev_in,
                     id_rev_out=id_rev_out, id_delay=id_delay, acc_cmd=acc_cmd,
                     acc_sram=acc_sram, acc_wb=acc_wb)
    arr_kw = dict(arr_ports, cfg=cfg)       # (the array's arguments: the bundle, cfg)
    if df.bottom_row:
        arr_kw["bcmp"] = Bundle(max=bcmp_max_arr, up=bcmp_up, od=bcmp_od, causal=bcmp_causal)
        arr_ports.update(flat_ports(dict(bcmp=arr_kw["bcmp"])))
    insts.append(submodule(fsa_array.fsa_array, (), arr_kw, fsa_array.MODULE,
                           "u_array", arr_ports, {"acc_wb"}))
    return insts


def ports(cfg) -> dict:
    QB = fsa_queue.ptr_bits(cfg)
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), inst_valid=sig(1),
             inst_ready=sig(1), inst_word=sig(32), start=sig(1), abort_req=sig(1),
             aborting=sig(1), state=sig(STATE_BITS), err_code=sig(ERR_BITS),
             err_index=sig(IDX_BITS), err_wait=sig(fsa_status.WAIT_BITS), q_free=sig(QB + 1))
    for c in COUNTERS:
        p[f"cnt_{c}"] = sig(COUNTER_BITS)
    p.update(fsa_dispatch.dma_ports())
    p.update(dma_err=sig(1), dma_err_code=sig(fsa_status.DMA_ERR_BITS))
    p.update(fetch_more=sig(1), fetch_end=sig(1), fetch_busy=sig(1), fetch_err=sig(1),
             fetch_err_code=sig(1), fetch_flush=sig(1))
    # the narrow ports as the DMA drives them (one per bank with bank ports)
    dg = fsa_dma_if.geometry(cfg)
    for pre, side in (("sp", "spad"), ("ac", "acc")):
        p.update({f"{pre}_{n}": sig(w) for n, w in fsa_dma_if.narrow_widths(dg, side).items()})
    p.update(fsa_regs.setting_ports(cfg))
    return p


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_core(**p, cfg=cfg), MODULE, outdir)
