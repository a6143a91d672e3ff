"""The matrix engine: instruction queue, decoder, semaphores, fences, the
matrix controller, the scratchpad and accumulator SRAMs and the array
(architecture.md sections 6-9). The DMA engine and the bus interfaces are
outside (``rtl/fsa_top.py``); the core hands DMA instructions out on a
command port and exposes the SRAMs' narrow ports.

Ports::

    inst_valid/inst_ready/inst_word   push one 32-bit instruction word (the
                                      queue holds cfg.inst_queue_size words)
    start                             pulse: IDLE or DONE -> ACTIVE (from DONE
                                      the counters are cleared first)
    state                             0 idle, 1 active, 2 done, 3 error
    err_code, err_index               fsa/errors.py code and the index of the
                                      instruction that caused it
    cnt_*                             the reference's counters (32 bits)
    q_free                            free words in the instruction queue
    dma_*                             DMA command port (valid/ready), and the
                                      DMA engine's done/busy/err/err_code
    sp_n_*, ac_n_*                    narrow (AXI-beat) ports of the
                                      scratchpad and accumulator SRAMs

Instruction flow: words are decoded in order (only while ACTIVE). A matrix
or DMA instruction goes to its engine's one-entry pending register (the
decoder waits while that one is full); a pending instruction issues when its
semaphore acquire succeeds and its engine accepts it, so a matrix instruction
waiting on a semaphore never blocks DMA instructions behind it. A fence
waits until the engines it names are idle; ``stop`` (after waiting for both
engines) ends the program: state DONE. An illegal instruction or an
out-of-range SRAM row of a matrix instruction, and any DMA error, put the
core in the ERROR state: nothing more is issued.
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, Signal, always, always_comb, always_seq, block, concat, intbv

from fsa.errors import CODES, DMA_CODE_BASE as DMA_BASE, ERR_BITS
from rtl import fsa_acc, fsa_array, fsa_cmp, fsa_mxctrl, fsa_sram
from rtl.convert import Const, convert_block, sig, submodule

MODULE = "fsa_core"
S_IDLE, S_ACTIVE, S_DONE, S_ERROR = 0, 1, 2, 3
COUNTERS = ("exec", "bubble", "mx_active", "dma_active", "words", "mx", "dma", "fence",
            "enq", "deq")
IDX_BITS = 16


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
def fsa_core(clk, rst, inst_valid, inst_ready, inst_word, start, state, err_code, err_index,
             q_free, cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active, cnt_words, cnt_mx,
             cnt_dma, cnt_fence, cnt_enq, cnt_deq,
             dma_valid, dma_ready, dma_func, dma_repeat, dma_sram_addr, dma_sram_stride,
             dma_is_accum, dma_mem_addr, dma_mem_stride, dma_size, dma_done, dma_busy, dma_err,
             dma_err_code,
             sp_n_valid, sp_n_ready, sp_n_we, sp_n_addr, sp_n_lane, sp_n_wdata, sp_n_rvalid,
             sp_n_rdata,
             ac_n_valid, ac_n_ready, ac_n_we, ac_n_addr, ac_n_lane, ac_n_wdata, ac_n_rvalid,
             ac_n_rdata, cfg=None):
    """The matrix engine; see the module docstring."""
    R, C = cfg.sa_rows, cfg.sa_cols
    EW, AW = cfg.e_fmt.width, cfg.a_fmt.width
    Q = cfg.inst_queue_size
    QB = (Q - 1).bit_length()
    geo = sram_geometries(cfg)
    SPR, ACR = cfg.spad_rows, cfg.acc_rows
    SPA, ACA = _abits(SPR), _abits(ACR)
    insts = []

    # ------------------------------------------------------------ queue
    qmem = [Signal(intbv(0)[32:]) for _ in range(Q)]
    wp, rp = sig(QB), sig(QB)
    count = sig(QB + 1)
    push, pop = sig(1), sig(1)
    head = sig(32)

    @always(clk.posedge)
    def qwrite():
        if push:
            qmem[wp].next = inst_word

    @always_comb
    def qhead():
        head.next = qmem[rp]
        inst_ready.next = count < Q
        push.next = inst_valid and count < Q
        q_free.next = Q - count

    insts += [qwrite, qhead]

    # ------------------------------------------------------------ decoder
    st = sig(2)
    w0, w1, w2, w3 = sig(32), sig(32), sig(32), sig(32)
    have = sig(3)                 # words collected for the current instruction
    need = sig(3)                 # words the current instruction needs (0: unknown yet)
    dec_full = sig(1)             # a complete instruction is in w0..w3
    inst_idx = sig(IDX_BITS)
    illegal_type = sig(1)

    # pending matrix instruction
    mx_p = sig(1)
    mx_w0, mx_w1, mx_w2 = sig(32), sig(32), sig(32)
    mx_idx = sig(IDX_BITS)
    # pending DMA instruction
    dm_p = sig(1)
    dm_w0, dm_w1, dm_w2, dm_w3 = sig(32), sig(32), sig(32), sig(32)
    dm_idx = sig(IDX_BITS)
    dm_inflight = sig(1)
    dm_fidx = sig(IDX_BITS)       # index of the DMA instruction in flight
    dm_rel = sig(9)               # release of the DMA instruction in flight
    to_mx, to_dma, is_fence, fence_go, stop_go, bad_func = (sig(1) for _ in range(6))
    mx_busy = sig(1)

    @always_comb
    def classify():
        to_mx.next = dec_full and w0[32:29] == 1 and w0[16:11] <= 4
        to_dma.next = dec_full and w0[32:29] == 2 and w0[16:12] <= 1
        bad_func.next = dec_full and ((w0[32:29] == 1 and w0[16:11] > 4)
                                      or (w0[32:29] == 2 and w0[16:12] > 1))
        is_fence.next = dec_full and w0[32:29] == 0
        mx_idle = not mx_p and not mx_busy
        dma_idle = not dm_p and not dm_inflight and not dma_busy
        ok = (mx_idle or not w0[28]) and (dma_idle or not w0[27])
        if w0[26]:
            ok = ok and mx_idle and dma_idle
        fence_go.next = dec_full and w0[32:29] == 0 and ok
        stop_go.next = dec_full and w0[32:29] == 0 and ok and w0[26]
    insts.append(classify)

    @always_comb
    def need_words():
        pop.next = False
        illegal_type.next = False
        if st == S_ACTIVE and count > 0 and not dec_full:
            pop.next = True
        # the type of the first word decides the length
        if have > 0 and w0[32:29] > 2:
            illegal_type.next = True
    insts.append(need_words)

    # ------------------------------------------------------------ semaphores
    sem_val = [Signal(intbv(0)[3:]) for _ in range(32)]
    sem_held = [Signal(bool(0)) for _ in range(32)]
    mx_acq_ok, dm_acq_ok = sig(1), sig(1)
    mx_issue, dm_issue = sig(1), sig(1)
    mx_rel_v, mx_rel_id, mx_rel_val = sig(1), sig(5), sig(3)

    @always_comb
    def sem_check():
        mx_acq_ok.next = (not mx_w0[23]) or (sem_val[mx_w0[29:24]] == mx_w0[23:20]
                                             and not sem_held[mx_w0[29:24]])
        dm_acq_ok.next = (not dm_w0[23]) or (sem_val[dm_w0[29:24]] == dm_w0[23:20]
                                             and not sem_held[dm_w0[29:24]])
    insts.append(sem_check)

    # ------------------------------------------------------------ matrix issue
    mx_in_valid, mx_in_ready = sig(1), sig(1)
    mx_range_bad = sig(1)
    sp_first, sp_last = Signal(intbv(0, min=-(1 << 22), max=1 << 22)), Signal(intbv(0, min=-(1 << 22), max=1 << 22))
    ac_first, ac_last = Signal(intbv(0, min=-(1 << 22), max=1 << 22)), Signal(intbv(0, min=-(1 << 22), max=1 << 22))
    mfunc = sig(3)
    sp_stride_s = Signal(intbv(0, min=-16, max=16))
    ac_stride_s = Signal(intbv(0, min=-16, max=16))
    mx_w1_str, mx_w2_str = mx_w1(12, 7), mx_w2(12, 7)

    @always_comb
    def mx_ranges():
        mfunc.next = mx_w0[16:11]
        sp_stride_s.next = mx_w1_str.signed()
        ac_stride_s.next = mx_w2_str.signed()
    insts.append(mx_ranges)

    @always_comb
    def mx_range_calc():
        # rows touched: LOAD C spad rows; SCORE R spad + 1 acc; VALUE R spad + R acc;
        # LSE_NORM_SCALE 1 acc; LSE_NORM R acc
        sp_first.next = mx_w1[32:12]
        ac_first.next = mx_w2[32:12]
        if mfunc == 0:
            sp_last.next = mx_w1[32:12] + (C - 1) * sp_stride_s
        elif mfunc == 1 or mfunc == 2:
            sp_last.next = mx_w1[32:12] + (R - 1) * sp_stride_s
        else:
            sp_last.next = mx_w1[32:12]
        if mfunc == 2 or mfunc == 4:
            ac_last.next = mx_w2[32:12] + (R - 1) * ac_stride_s
        else:
            ac_last.next = mx_w2[32:12]
    insts.append(mx_range_calc)

    @always_comb
    def mx_range_check():
        bad = False
        if mfunc <= 2:
            if sp_first >= SPR or sp_last < 0 or sp_last >= SPR:
                bad = True
        if mfunc >= 1:
            if ac_first >= ACR or ac_last < 0 or ac_last >= ACR:
                bad = True
        mx_range_bad.next = mx_p and bad
        mx_in_valid.next = mx_p and not bad and st == S_ACTIVE and mx_acq_ok
    insts.append(mx_range_check)

    @always_comb
    def mx_issue_now():          # (its own block: in_ready depends on in_valid's block)
        mx_issue.next = mx_in_valid and mx_in_ready
    insts.append(mx_issue_now)

    # ------------------------------------------------------------ DMA issue
    @always_comb
    def dma_port():
        dma_valid.next = dm_p and st == S_ACTIVE and dm_acq_ok and not dm_inflight
        dm_issue.next = dm_p and st == S_ACTIVE and dm_acq_ok and not dm_inflight and dma_ready
        dma_func.next = dm_w0[12]
        dma_repeat.next = dm_w0[12:3]
        dma_sram_addr.next = dm_w1[32:12]
        dma_sram_stride.next = dm_w1[12:7]
        dma_is_accum.next = dm_w1[6]
        dma_mem_addr.next = concat(dm_w3, dm_w2[32:25])
        dma_mem_stride.next = concat(dm_w1[6:0], dm_w2[25:10])
        dma_size.next = dm_w2[10:0]
    insts.append(dma_port)

    # ------------------------------------------------------------ sequencing
    errc = sig(ERR_BITS)
    erri = sig(IDX_BITS)
    E_TYPE, E_FUNC, E_RANGE = CODES["ILLEGAL_TYPE"], CODES["ILLEGAL_FUNC"], CODES["SRAM_RANGE"]

    @always_seq(clk.posedge, reset=rst)
    def sequencer():
        # queue pointers
        if push:
            wp.next = (wp + 1) % Q
        if pop:
            rp.next = (rp + 1) % Q
        if push and not pop:
            count.next = count + 1
        elif pop and not push:
            count.next = count - 1
        # device state
        if start and (st == S_IDLE or st == S_DONE):
            st.next = S_ACTIVE
        # collect words
        if pop:
            if have == 0:
                w0.next = head
            elif have == 1:
                w1.next = head
            elif have == 2:
                w2.next = head
            else:
                w3.next = head
            if have == 0:
                if head[32:29] == 0:
                    dec_full.next = True
                    have.next = 0
                elif head[32:29] == 1 or head[32:29] == 2:
                    have.next = 1
                    need.next = 3 if head[32:29] == 1 else 4
                else:
                    have.next = 1
                    need.next = 1
            else:
                if have + 1 == need:
                    dec_full.next = True
                    have.next = 0
                else:
                    have.next = have + 1
        if st == S_ACTIVE:
            if illegal_type and not dec_full:
                st.next = S_ERROR
                errc.next = E_TYPE
                erri.next = inst_idx
            elif bad_func:
                st.next = S_ERROR
                errc.next = E_FUNC
                erri.next = inst_idx
            elif mx_range_bad:
                st.next = S_ERROR
                errc.next = E_RANGE
                erri.next = mx_idx
            elif dma_err:
                st.next = S_ERROR
                errc.next = DMA_BASE + dma_err_code   # fsa/errors.py: DMA codes
                erri.next = dm_fidx
            elif stop_go:
                st.next = S_DONE
        # dispatch a decoded instruction
        if st == S_ACTIVE and dec_full:
            if to_mx and not mx_p:
                mx_p.next = True
                mx_w0.next = w0
                mx_w1.next = w1
                mx_w2.next = w2
                mx_idx.next = inst_idx
                dec_full.next = False
                inst_idx.next = inst_idx + 1
            elif to_dma and not dm_p:
                dm_p.next = True
                dm_w0.next = w0
                dm_w1.next = w1
                dm_w2.next = w2
                dm_w3.next = w3
                dm_idx.next = inst_idx
                dec_full.next = False
                inst_idx.next = inst_idx + 1
            elif fence_go:
                dec_full.next = False
                inst_idx.next = inst_idx + 1
        # issue
        if mx_issue:
            mx_p.next = False
        if dm_issue:
            dm_p.next = False
            dm_inflight.next = True
            dm_fidx.next = dm_idx
            dm_rel.next = concat(dm_w0[19], dm_w0[29:24], dm_w0[19:16])
        if dma_done:
            dm_inflight.next = False
    insts.append(sequencer)

    @always_seq(clk.posedge, reset=rst)
    def semaphores():
        for i in range(32):
            take_mx = mx_issue and mx_w0[23] and mx_w0[29:24] == i
            take_dm = dm_issue and dm_w0[23] and dm_w0[29:24] == i
            rel_mx = mx_rel_v and mx_rel_id == i
            rel_dm = dma_done and dm_inflight and dm_rel[8] and dm_rel[8:3] == i
            if rel_mx:
                sem_val[i].next = mx_rel_val
                sem_held[i].next = False
            elif rel_dm:
                sem_val[i].next = dm_rel[3:0]
                sem_held[i].next = False
            elif take_mx or take_dm:
                sem_held[i].next = True
    insts.append(semaphores)

    # ------------------------------------------------------------ counters
    cnts = [cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active, cnt_words, cnt_mx, cnt_dma,
            cnt_fence, cnt_enq, cnt_deq]
    c_exec, c_bub, c_mxa, c_dma, c_words, c_mx, c_dm, c_fen, c_enq, c_deq = cnts
    M32 = 1 << 32

    @always_seq(clk.posedge, reset=rst)
    def counters():
        if start and st == S_DONE:
            c_exec.next = 0
            c_bub.next = 0
            c_mxa.next = 0
            c_dma.next = 0
            c_words.next = 0
            c_mx.next = 0
            c_dm.next = 0
            c_fen.next = 0
            c_enq.next = 0
            c_deq.next = 0
        else:
            if st == S_ACTIVE:
                c_exec.next = (c_exec + 1) % M32
                if not mx_busy:
                    c_bub.next = (c_bub + 1) % M32
            if mx_busy:
                c_mxa.next = (c_mxa + 1) % M32
            if dma_busy or dm_inflight:
                c_dma.next = (c_dma + 1) % M32
            if pop:
                c_words.next = (c_words + 1) % M32
                c_deq.next = (c_deq + 1) % M32
            if mx_issue:
                c_mx.next = (c_mx + 1) % M32
            if dm_issue:
                c_dm.next = (c_dm + 1) % M32
            if st == S_ACTIVE and dec_full and is_fence and fence_go:
                c_fen.next = (c_fen + 1) % M32
            if push:
                c_enq.next = (c_enq + 1) % M32
    insts.append(counters)

    @always_comb
    def status():
        state.next = st
        err_code.next = errc
        err_index.next = erri
    insts.append(status)

    # ------------------------------------------------------------ controller
    NB = 9
    ctrl = sig(R * NB)
    cmp_cmd, cmp_causal, acc_cmd = sig(fsa_cmp.CMD_BITS), sig(1), sig(fsa_acc.CMD_BITS)
    KB = max(1, (cfg.exp2_pieces - 1).bit_length())
    spad_en, spad_addr = sig(1), sig(fsa_mxctrl.ADDR_BITS)
    id_valid, id_const, id_csel, id_k = sig(1), sig(1), sig(2), sig(KB)
    id_rev_in, id_rev_out, id_delay = sig(1), sig(1), sig(1)
    acc_ren, acc_raddr, acc_zero = sig(1), sig(fsa_mxctrl.ADDR_BITS), sig(1)
    acc_wen, acc_waddr = sig(1), sig(fsa_mxctrl.ADDR_BITS)
    in_func, in_spad_addr, in_spad_stride = sig(3), sig(20), sig(5)
    in_rev_in, in_rev_out, in_delay = sig(1), sig(1), sig(1)
    in_acc_addr, in_acc_stride = sig(20), sig(5)
    in_zero, in_causal, in_wpa = sig(1), sig(1), sig(1)
    in_rel_valid, in_rel_id, in_rel_value = sig(1), sig(5), sig(3)

    @always_comb
    def mx_fields():
        in_func.next = mx_w0[14:11]
        in_wpa.next = mx_w0[10]
        in_rel_valid.next = mx_w0[19]
        in_rel_id.next = mx_w0[29:24]
        in_rel_value.next = mx_w0[19:16]
        in_spad_addr.next = mx_w1[32:12]
        in_spad_stride.next = mx_w1[12:7]
        in_rev_in.next = mx_w1[6]
        in_rev_out.next = mx_w1[5]
        in_delay.next = mx_w1[4]
        in_acc_addr.next = mx_w2[32:12]
        in_acc_stride.next = mx_w2[12:7]
        in_zero.next = mx_w2[6]
        in_causal.next = mx_w2[5]
    insts.append(mx_fields)

    ctl_ports = dict(clk=clk, rst=rst, in_valid=mx_in_valid, in_ready=mx_in_ready,
                     in_func=in_func, in_spad_addr=in_spad_addr, in_spad_stride=in_spad_stride,
                     in_rev_in=in_rev_in, in_rev_out=in_rev_out, in_delay=in_delay,
                     in_acc_addr=in_acc_addr, in_acc_stride=in_acc_stride, in_zero=in_zero,
                     in_causal=in_causal, in_wait_prev_acc=in_wpa, in_rel_valid=in_rel_valid,
                     in_rel_id=in_rel_id, in_rel_value=in_rel_value, ctrl=ctrl, cmp_cmd=cmp_cmd,
                     cmp_causal=cmp_causal, acc_cmd=acc_cmd, spad_en=spad_en,
                     spad_addr=spad_addr, id_valid=id_valid, id_const=id_const, id_csel=id_csel,
                     id_k=id_k, id_rev_in=id_rev_in, id_rev_out=id_rev_out, id_delay=id_delay,
                     acc_ren=acc_ren, acc_raddr=acc_raddr, acc_zero=acc_zero, acc_wen=acc_wen,
                     acc_waddr=acc_waddr, rel_valid=mx_rel_v, rel_id=mx_rel_id,
                     rel_value=mx_rel_val, busy=mx_busy)
    insts.append(submodule(fsa_mxctrl.fsa_mxctrl, (), dict(ctl_ports, cfg=cfg), fsa_mxctrl.MODULE,
                           "u_mxctrl", ctl_ports,
                           {"in_ready", "ctrl", "cmp_cmd", "cmp_causal", "acc_cmd", "spad_en",
                            "spad_addr", "id_valid", "id_const", "id_csel", "id_k", "id_rev_in",
                            "id_rev_out", "id_delay", "acc_ren", "acc_raddr", "acc_zero",
                            "acc_wen", "acc_waddr", "rel_valid", "rel_id", "rel_value", "busy"}))

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

    # bits that are decoded elsewhere or range-checked before issue (the
    # controller's 20-bit row addresses are in range by then): gathered in one
    # signal whose name tells lint they are unused by design
    unused_bits = ConcatSignal(spad_addr(20, SPA), acc_raddr(20, ACA), acc_waddr(20, ACA),
                               mx_w0(32, 29), mx_w0(10, 0), dm_w0(32, 29), dm_w0(16, 13), dm_w0(3, 0))
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
    insts.append(submodule(fsa_sram.fsa_sram, (), dict(sp_ports, rows=sp_rows, row_bits=sp_bits,
                                                       lane_bits=sp_lane, banks=sp_banks),
                           fsa_sram.module_name(*geo["spad"]), "u_spad", sp_ports,
                           {"a_rdata", "n_ready", "n_rvalid", "n_rdata"}))
    ac_ports = dict(clk=clk, rst=rst, a_en=acc_ren, a_we=Const(1, 0), a_addr=ac_raddr_n,
                    a_wdata=Const(ac_bits, 0), a_rdata=ac_rdata, w_en=acc_wen,
                    w_addr=ac_waddr_n, w_wdata=acc_wb, n_valid=ac_n_valid,
                    n_ready=ac_n_ready, n_we=ac_n_we, n_addr=ac_n_addr, n_lane=ac_n_lane,
                    n_wdata=ac_n_wdata, n_rvalid=ac_n_rvalid, n_rdata=ac_n_rdata)
    insts.append(submodule(fsa_sram.fsa_sram, (), dict(ac_ports, rows=ac_rows, row_bits=ac_bits,
                                                       lane_bits=ac_lane, banks=ac_banks),
                           fsa_sram.module_name(*geo["acc"]), "u_acc", ac_ports,
                           {"a_rdata", "n_ready", "n_rvalid", "n_rdata"}))

    # ------------------------------------------------------------ constants and the array
    from fsa import numerics
    slopes, _ = numerics.pwl_constants(cfg.exp2_pieces, cfg.e_type, cfg.a_type)
    ONE = cfg.e_fmt.one
    SCALE = cfg.attention_scale_bits(cfg.e_type)
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
            cval.next = SCALE
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

    arr_ports = dict(clk=clk, rst=rst, ctrl=ctrl, cmp_cmd=cmp_cmd, cmp_causal=cmp_causal,
                     id_data=id_data, id_valid=id_valid, id_rev_in=id_rev_in,
                     id_rev_out=id_rev_out, id_delay=id_delay, acc_cmd=acc_cmd,
                     acc_sram=acc_sram, acc_wb=acc_wb)
    insts.append(submodule(fsa_array.fsa_array, (), dict(arr_ports, cfg=cfg), fsa_array.MODULE,
                           "u_array", arr_ports, {"acc_wb"}))
    return insts


def ports(cfg) -> dict:
    geo = sram_geometries(cfg)
    sp_rows, sp_bits, sp_lane, _ = geo["spad"]
    ac_rows, ac_bits, ac_lane, _ = geo["acc"]
    QB = (cfg.inst_queue_size - 1).bit_length()
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), inst_valid=sig(1),
             inst_ready=sig(1), inst_word=sig(32), start=sig(1), state=sig(2),
             err_code=sig(ERR_BITS), err_index=sig(IDX_BITS), q_free=sig(QB + 1))
    for c in COUNTERS:
        p[f"cnt_{c}"] = sig(32)
    p.update(dma_valid=sig(1), dma_ready=sig(1), dma_func=sig(1), dma_repeat=sig(9),
             dma_sram_addr=sig(20), dma_sram_stride=sig(5), dma_is_accum=sig(1),
             dma_mem_addr=sig(39), dma_mem_stride=sig(21), dma_size=sig(10), dma_done=sig(1),
             dma_busy=sig(1), dma_err=sig(1), dma_err_code=sig(3))
    for pre, rows, lane, bits in (("sp", sp_rows, sp_lane, sp_bits), ("ac", ac_rows, ac_lane, ac_bits)):
        lanes = bits // lane
        p.update({f"{pre}_n_valid": sig(1), f"{pre}_n_ready": sig(1), f"{pre}_n_we": sig(1),
                  f"{pre}_n_addr": sig(_abits(rows)), f"{pre}_n_lane": sig(max(1, (lanes - 1).bit_length())),
                  f"{pre}_n_wdata": sig(lane), f"{pre}_n_rvalid": sig(1), f"{pre}_n_rdata": sig(lane)})
    return p


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_core(**p, cfg=cfg), MODULE, outdir)
