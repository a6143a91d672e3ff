"""The DMA engine's body (``rtl/fsa_dma.py`` has its ports, behaviour and
structure): the command register, the row sequencer and its burst shape,
the ports (``fsa_dma_port`` instances, their reductions and the SRAM
narrow ports), the in-flight queue (``rtl/fsa_dma_queue.py``) and the
up-front checks (``rtl/fsa_dma_checks.py``).

:func:`engine` is a nameless MyHDL block (``skipname``) that ``fsa_dma``
instantiates with its own ports: its signals and processes keep their
names (``state``, ``seq`` ...) in the module ``fsa_dma``, whose Verilog is
what it was when this body was ``fsa_dma``'s own.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, intbv

from rtl import fsa_dma_banks, fsa_dma_checks, fsa_dma_port, fsa_dma_queue
from rtl.convert import comb_expr, sig, submodule
from rtl.fsa_dma_if import (ERR_AXI_RD, ERR_AXI_WR, ERR_DMA_ALIGN, ERR_DMA_SIZE, ERR_MEM_RANGE,
                            ERR_NONE, ERR_SRAM_RANGE, WDATA_DEPTH, axi_prefixes, inflight_depth)
from rtl.prim import Bundle, clog2, mux_tree, rr_arbiter, vsig, zext

__all__ = ["engine", "S_IDLE", "S_CHECK", "S_RUN", "CNT_BITS"]

#: sequencer states
S_IDLE, S_CHECK, S_RUN = 0, 1, 2
#: bits of a per-instruction burst count (at most 511 rows of two bursts)
CNT_BITS = 11


def _vec(bits, pad: int = 0):
    """The 1-bit signals `bits` as one vector, ``bits[i]`` at bit i (one
    signal is padded with a constant `pad` bit, so that it is a vector)."""
    if len(bits) == 1:
        return ConcatSignal(intbv(pad)[1:], bits[0])
    return ConcatSignal(*reversed(bits))


@block(skipname=True)
def engine(clk, rst, done, busy, err, err_code, cmd, spad, acc, m, aborting, err_slot, cfg,
           max_outstanding, g):
    """The body of ``fsa_dma`` (its ports, `cfg`, `max_outstanding` and the
    geometry `g` checked by it)."""
    P = g["ports"]
    BB = g["beat_bytes"]
    lb = BB.bit_length() - 1
    LB = g["lane_bits"]
    AB = g["addr_bits"]
    RB = g["row_bits_max"]
    LS = g["lane_sel_max"]
    SAB, AAB = g["spad_addr_bits"], g["acc_addr_bits"]
    SLS, ALS = g["spad_lane_bits"], g["acc_lane_bits"]
    TB = clog2(P)
    RAW = 40                    # row address: < 2**39 + 511 * 2**20 < 2**40
    D = max_outstanding
    QD = inflight_depth(P)
    insts = []

    cmd_valid, cmd_ready, cmd_func, cmd_repeat = cmd.valid, cmd.ready, cmd.func, cmd.repeat
    cmd_sram_addr, cmd_sram_stride, cmd_is_accum = cmd.sram_addr, cmd.sram_stride, cmd.is_accum
    cmd_mem_addr, cmd_mem_stride, cmd_size = cmd.mem_addr, cmd.mem_stride, cmd.size
    spad_n_valid, spad_n_ready, spad_n_we = spad.n_valid, spad.n_ready, spad.n_we
    spad_n_addr, spad_n_lane, spad_n_wdata = spad.n_addr, spad.n_lane, spad.n_wdata
    spad_n_rvalid, spad_n_rdata = spad.n_rvalid, spad.n_rdata
    acc_n_valid, acc_n_ready, acc_n_we = acc.n_valid, acc.n_ready, acc.n_we
    acc_n_addr, acc_n_lane, acc_n_wdata = acc.n_addr, acc.n_lane, acc.n_wdata
    acc_n_rvalid, acc_n_rdata = acc.n_rvalid, acc.n_rdata

    # ---- latched command
    state = sig(2)
    c_store = sig(1)
    c_accum = sig(1)
    c_rep = sig(9)
    c_rm1 = sig(9)
    c_saddr = sig(20)
    c_sneg = sig(1)
    c_smag = sig(5)             # |sram stride|, 0..16
    c_mneg = sig(1)
    c_mmag = sig(21)            # |mem stride|, 0..2**20
    c_size = sig(10)
    c_maddr = sig(39)
    # ---- sequencer
    ra = sig(RAW)               # this row's memory address (valid while not `under`)
    under = sig(1)              # the row address went below 0
    sa = sig(RB)                # this row's SRAM row
    left = sig(9)               # rows left, this one included
    first = sig(1)              # row 0
    second = sig(1)             # the next burst is the second part of a row split at 4 KiB
    b1l = vsig(LS)              # beats of a split row's first burst (= first lane of the second)
    b2b = sig(8)                # beats of its second burst
    tp = vsig(TB)                # the port of this row
    solo = sig(1)               # rows overlap: every row on port 0
    issue = sig(1)
    lastb = sig(1)              # the burst issued now is the instruction's last
    nrows = vsig(9)             # rows it moves (its last, or merged ones)
    rowerr = sig(1)
    mis = sig(1)
    inwin = sig(1)
    can_sel = sig(1)
    unused_idle = sig(1)        # (the in-flight queue counts bursts per slot and port)
    k_base = sig(RAW, cfg.mem_base)
    k_end = sig(RAW, cfg.mem_base + cfg.mem_size)
    err_r = sig(1)
    code_r = sig(3)
    done_r = sig(1)
    axi_rd_err = sig(1)
    axi_wr_err = sig(1)
    # ---- the in-flight queue: slot wp is allocated on accept, rp is the oldest
    occ = sig(2)                # instructions accepted and not done
    wp, rp, cur = sig(1), sig(1), sig(1)    # next slot, oldest slot, the sequencer's slot
    iss0, iss1 = sig(1), sig(1)             # the slot's bursts are still being issued
    h_iss = sig(1)
    rdy = sig(1)                # cmd_ready
    acc_cmd = sig(1)            # a command is accepted this cycle
    seq_end = sig(1)            # the sequencer finishes its instruction this cycle
    hd_done = sig(1)            # the oldest instruction is done (done pulses next cycle)
    fslot = sig(1)              # the slot of the oldest unfinished burst
    slot_r = sig(1)             # err_slot

    # ---- merged bursts (config dma_burst_beats = MB > 0; fsa.hw.dmarules.bursts)
    MB = cfg.dma_burst_beats
    c_mrg = sig(1)              # the instruction's rows may merge (set in CHECK)
    c_lrb = vsig(4)             # log2(beats of a row), for a merging instruction
    mrg = sig(1)                # the burst on offer merges mrows >= 2 rows
    mrows = vsig(9)             # rows of a merged burst
    mbeats = vsig(9)            # its beats (<= MB)

    # ---- burst shape (bytes, 16-bit arithmetic)
    size16 = zext(c_size, 16)
    size21 = zext(c_size, 21)
    size40 = zext(c_size, RAW)
    rlo16 = zext(ra(12, 0), 16)
    tp4k = sig(16)              # bytes from the row address to the next 4 KiB boundary
    xing = sig(1)               # the row crosses a 4 KiB boundary
    bbeats = sig(8)             # beats of the burst on offer
    pgn = sig(RAW - 12)
    pgaddr = ConcatSignal(pgn, intbv(0)[12:])
    baddr = sig(RAW)
    d_addr = sig(AB)
    d_len = sig(8)
    d_row = sig(RB)
    d_lane = vsig(LS)
    d_bm1 = vsig(LS)            # beats of a row - 1 (the port's lane wrap)
    mbm1 = vsig(9)              # beats of a merged burst - 1
    szbm1 = vsig(8)             # beats of a row - 1
    mmag40 = zext(c_mmag, RAW)
    maddr40 = zext(c_maddr, RAW)
    smag_r = zext(c_smag, RB)
    ra_lo = ra(lb, 0)
    mm_lo = c_mmag(lb, 0)
    sz_lo = c_size(lb, 0)
    szb = zext(c_size(10, lb), 8)      # beats of a row
    tpb = tp4k(lb + 8, lb)              # beats to the 4 KiB boundary (when it is < a row)
    tpl = tp4k(lb + LS, lb)

    # ---- up-front checks (state CHECK; rtl/fsa_dma_checks.py)
    szbad = sig(1)
    srbad = sig(1)
    solo_c = sig(1)
    prod = sig(14)              # (repeat - 1) * |sram stride|
    rm1_14 = zext(c_rm1, 14)
    smag14 = zext(c_smag, 14)
    prod20 = zext(prod, 20)

    insts.append(fsa_dma_checks.instruction_checks(
        cfg, P, c_accum=c_accum, c_store=c_store, c_size=c_size, c_saddr=c_saddr, c_sneg=c_sneg,
        c_smag=c_smag, c_mmag=c_mmag, c_rep=c_rep, rm1_14=rm1_14, smag14=smag14, prod=prod,
        prod20=prod20, size21=size21, szbad=szbad, srbad=srbad, solo_c=solo_c))

    @always_comb
    def shape():
        tp4k.next = 4096 - rlo16
        xing.next = size16 > tp4k
        pgn.next = ra[RAW:12] + 1
        if second:
            bbeats.next = b2b
            baddr.next = pgaddr
        elif size16 > tp4k:
            bbeats.next = tpb
            baddr.next = ra
        else:
            bbeats.next = szb
            baddr.next = ra
    insts.append(shape)

    @always_comb
    def desc():
        d_addr.next = baddr[AB:0]
        if mrg:
            d_len.next = mbm1[8:0]
        elif bbeats != 0:
            d_len.next = bbeats - 1
        else:
            d_len.next = 0
        d_row.next = sa
        if second:
            d_lane.next = b1l
        else:
            d_lane.next = 0
        d_bm1.next = szbm1[LS:0]
    insts.append(desc)

    @always_comb
    def desc_len():
        if mbeats != 0:
            mbm1.next = mbeats - 1
        else:
            mbm1.next = 0
        if szb != 0:
            szbm1.next = szb - 1
        else:
            szbm1.next = 0
    insts.append(desc_len)

    # bytes of a merged burst (one ConcatSignal: MyHDL converts a nested one
    # to constants)
    mbytes40 = ConcatSignal(intbv(0)[RAW - 9 - lb:], mbeats, intbv(0)[lb:])
    mrows_rb = zext(mrows, RB)
    if MB:
        szb9 = zext(c_size(10, lb), 9)      # (9 bits: log2 reaches bit 3)
        rl = [sig(1) for _ in range(4)]     # log2(beats of a row), when a power of two
        rlb = ConcatSignal(*reversed(rl))
        p2 = sig(1)             # the row is a power-of-two number of beats
        b4k = sig(9)            # beats to the next 4 KiB boundary, at most MB
        mr = vsig(9)            # rows of the burst before `left` limits it
        mend = sig(RAW)         # end of the merged burst in memory
        tpb4k = tp4k(13, lb)            # beats to the next 4 KiB boundary (<= 4096 / BB)

        for bit in range(4):        # bit `bit` of log2(b) for b = 2**i
            ones = [i for i in range(9) if i >> bit & 1]
            insts.append(comb_expr(rl[bit], " or ".join(f"s[{i}]" for i in ones), s=szb9))

        @always_comb
        def rowlog():
            p2.next = szb9 != 0 and (szb9 & (szb9 - 1)) == 0
            if tpb4k > MB:
                b4k.next = MB
            else:       # (<= MB <= 256; a slice of tp4k itself: Icarus takes no slice of a slice)
                b4k.next = tp4k[lb + 9:lb]
        insts.append(rowlog)

        @always_comb
        def merge_rows():
            mr.next = b4k >> c_lrb
        insts.append(merge_rows)

        @always_comb
        def merge_len():
            if left < mr:
                mrows.next = left
            else:
                mrows.next = mr
        insts.append(merge_len)

        @always_comb
        def merge_beats():
            mbeats.next = mrows << c_lrb
            mend.next = ra + mbytes40
        insts.append(merge_beats)

        @always_comb
        def merge_ok():
            mrg.next = c_mrg and not second and not under and mrows >= 2 and mend <= k_end
        insts.append(merge_ok)

        @always_seq(clk.posedge, reset=rst)
        def merge_latch():
            if state == S_CHECK:
                c_mrg.next = (not c_mneg and c_mmag == size21 and not c_sneg and c_smag == 1
                              and p2)
                c_lrb.next = rlb
        insts.append(merge_latch)
    # (dma_burst_beats = 0: one burst per row; mrg, mrows and mbeats stay
    # undriven constant 0s)

    @always_comb
    def window():
        inwin.next = not under and ra >= k_base and ra + size40 <= k_end
        if first:
            mis.next = ra_lo != 0
        else:
            mis.next = mm_lo != 0
    insts.append(window)

    @always_comb
    def ending():
        if mrg:
            lastb.next = left == mrows
            nrows.next = mrows
        else:
            lastb.next = (second or not xing) and left == 1
            nrows.next = 1
    insts.append(ending)

    @always_comb
    def decide():
        rowerr.next = not second and (mis or not inwin)
        issue.next = (state == S_RUN and not err_r and not aborting and not second and not mis
                      and inwin and can_sel) or (state == S_RUN and not err_r and not aborting
                                                 and second and can_sel)
    insts.append(decide)

    # ---- ports
    cans = [sig(1) for _ in range(P)]
    idles = [sig(1) for _ in range(P)]
    fins = [sig(1) for _ in range(P)]
    reqs = [sig(1) for _ in range(P)]
    grants = [sig(1) for _ in range(P)]
    q_rows = [sig(RB) for _ in range(P)]
    q_lanes = [vsig(LS) for _ in range(P)]
    rd_errs = [sig(1) for _ in range(P)]
    wr_errs = [sig(1) for _ in range(P)]
    BP = g["spad_bp"] or g["acc_bp"]        # an SRAM with a narrow port per bank
    if BP:      # each port its own SRAM handshake (rtl/fsa_dma_banks.py)
        p_ready, p_rvalid, p_rdata = ([sig(1) for _ in range(P)], [sig(1) for _ in range(P)],
                                      [sig(LB) for _ in range(P)])
    else:
        sram_ready = sig(1)
        sram_rvalid = sig(1)
        sram_rdata = sig(LB)
        p_ready, p_rvalid, p_rdata = [sram_ready] * P, [sram_rvalid] * P, [sram_rdata] * P
    port_out = {n for n, d, _ in fsa_dma_port.port_table(g) if d == "out"}
    OV = bool(cfg.dma_rw_overlap)
    if OV:      # a read half and a write half per port (_rw_ports)
        w_side = dict(cans=[sig(1) for _ in range(P)], idles=[sig(1) for _ in range(P)],
                      fins=[sig(1) for _ in range(P)], reqs=[sig(1) for _ in range(P)],
                      grants=[sig(1) for _ in range(P)], q_rows=[sig(RB) for _ in range(P)],
                      q_lanes=[vsig(LS) for _ in range(P)], p_ready=[sig(1) for _ in range(P)],
                      p_rvalid=[sig(1) for _ in range(P)], p_rdata=[sig(LB) for _ in range(P)],
                      wr_errs=wr_errs)
        r_side = dict(cans=cans, idles=idles, fins=fins, reqs=reqs, grants=grants, q_rows=q_rows,
                      q_lanes=q_lanes, p_ready=p_ready, p_rvalid=p_rvalid, p_rdata=p_rdata,
                      rd_errs=rd_errs)
        r_acc, w_acc = sig(1), sig(1)       # the SRAM of the LOADs / STOREs (latched on accept)
        insts.append(fsa_dma_port.rw_ports(clk, rst, cfg, g, m, issue, tp, c_store, d_addr, d_len, d_row,
                               d_lane, d_bm1, D, MB, r_side, w_side, port_out))
    for p, pre in enumerate(axi_prefixes(cfg) if not OV else ()):
        if P == 1:
            push = issue
        else:
            push = sig(1)       # this port's turn and a burst is issued
            insts.append(comb_expr(push, f"issue and tp == {p}", issue=issue, tp=tp))
        ax = getattr(m, pre[2:])
        conn = dict(clk=clk, rst=rst, is_store=c_store, push=push, d_addr=d_addr, d_len=d_len,
                    d_row=d_row, d_lane=d_lane, d_bm1=d_bm1, can=cans[p], idle=idles[p], fin=fins[p],
                    req=reqs[p],
                    q_row=q_rows[p], q_lane=q_lanes[p], grant=grants[p], sram_ready=p_ready[p],
                    sram_rvalid=p_rvalid[p], sram_rdata=p_rdata[p], rd_err=rd_errs[p],
                    wr_err=wr_errs[p])
        pax = {n: getattr(ax, n) for n in fsa_dma_port.PORT_AXI}
        kwargs = dict(conn, axi=Bundle(**pax), depth=D, wdepth=WDATA_DEPTH, afifo=bool(MB))
        conn.update({f"axi_{n}": s for n, s in pax.items()})
        insts.append(submodule(fsa_dma_port.fsa_dma_port, (), kwargs, fsa_dma_port.MODULE,
                               f"u_port{p}", conn, port_out))

    # ---- reductions over the ports
    any_req = sig(1)
    if OV:
        wcan_v = _vec(w_side["cans"])
        rcan_v = _vec(cans)
        idle_v = _vec(idles + w_side["idles"])
        rde_v = _vec(rd_errs)
        wre_v = _vec(wr_errs)

        @always_comb
        def sel_rw():
            if c_store:
                can_sel.next = wcan_v[tp]
            else:
                can_sel.next = rcan_v[tp]
            unused_idle.next = idle_v == 0
            axi_rd_err.next = rde_v != 0
            axi_wr_err.next = wre_v != 0
        insts.append(sel_rw)
        rdatas = [getattr(m, pre[2:]).rdata for pre in axi_prefixes(cfg)]
        insts.append(fsa_dma_banks.bank_routing_rw(
            clk, rst, r_acc, w_acc, r_side, w_side, rdatas, spad, acc, g))

        @always_seq(clk.posedge, reset=rst)
        def rw_srams():
            if acc_cmd:
                if cmd_func:
                    w_acc.next = cmd_is_accum
                else:
                    r_acc.next = cmd_is_accum
        insts.append(rw_srams)
    elif P == 1 and not BP:
        can_v, idle_v, req_v, rde_v, wre_v = cans[0], idles[0], reqs[0], rd_errs[0], wr_errs[0]
        grant0 = grants[0]

        @always_comb
        def sel1():
            can_sel.next = can_v
            unused_idle.next = idle_v
            any_req.next = req_v
            axi_rd_err.next = rde_v
            axi_wr_err.next = wre_v
            grant0.next = req_v
        insts.append(sel1)
        m_row, m_lane, m_wdata = q_rows[0], q_lanes[0], getattr(m, "axi").rdata
    else:       # several ports, or one port with bank ports (fsa.hw.dmarules.per_port_dma)
        can_v = _vec(cans)
        idle_v = _vec(idles, 1)
        req_v = _vec(reqs)
        rde_v = _vec(rd_errs)
        wre_v = _vec(wr_errs)
        ALL = (1 << len(idle_v)) - 1

        @always_comb
        def selp():
            can_sel.next = can_v[tp]
            unused_idle.next = idle_v == ALL
            axi_rd_err.next = rde_v != 0
            axi_wr_err.next = wre_v != 0
        insts.append(selp)
        if BP:      # a narrow port per bank: rtl/fsa_dma_banks.py
            rdatas = [getattr(m, pre[2:]).rdata for pre in axi_prefixes(cfg)]
            insts.append(fsa_dma_banks.bank_routing(
                clk, rst, c_store, c_accum, reqs, q_rows, q_lanes, rdatas, grants, p_ready,
                p_rvalid, p_rdata, spad, acc, g))
        else:
            insts.append(comb_expr(any_req, "v != 0", v=req_v))
            # round-robin grant (a stalled request keeps it until the SRAM takes it)
            gidx = vsig(TB)
            insts.append(rr_arbiter(clk, rst, reqs, any_req, sram_ready, grants, gidx))
            # the granted port's request: mux of (row, lane, R data) by gidx
            BW = RB + LS + LB
            bundles = [ConcatSignal(q_rows[q], q_lanes[q], getattr(m, pre[2:]).rdata)
                       for q, pre in enumerate(axi_prefixes(cfg))]
            mb = sig(BW)
            insts.append(mux_tree(bundles, gidx, mb))
            m_row, m_lane, m_wdata = mb(BW, LS + LB), mb(LS + LB, LB), mb(LB, 0)

    # ---- the SRAM narrow ports (the instruction's SRAM only)
    if not BP:
        s_addr = zext(m_row, SAB)
        a_addr = zext(m_row, AAB)
        s_lane = zext(m_lane, SLS)
        a_lane = zext(m_lane, ALS)

        @always_comb
        def sram():
            spad_n_valid.next = any_req and not c_accum
            acc_n_valid.next = any_req and c_accum
            spad_n_we.next = not c_store
            acc_n_we.next = not c_store
            spad_n_addr.next = s_addr
            acc_n_addr.next = a_addr
            spad_n_lane.next = s_lane
            acc_n_lane.next = a_lane
            spad_n_wdata.next = m_wdata
            acc_n_wdata.next = m_wdata
            if c_accum:
                sram_ready.next = acc_n_ready
                sram_rvalid.next = acc_n_rvalid
                sram_rdata.next = acc_n_rdata
            else:
                sram_ready.next = spad_n_ready
                sram_rvalid.next = spad_n_rvalid
                sram_rdata.next = spad_n_rdata
        insts.append(sram)

    @always_comb
    def status():
        cmd_ready.next = rdy
        busy.next = state != S_IDLE or occ != 0
        done.next = done_r
        err.next = err_r
        err_code.next = code_r
        err_slot.next = slot_r
    insts.append(status)

    # ---- the in-flight queue (rtl/fsa_dma_queue.py)
    insts.append(fsa_dma_queue.inflight_queue(
        clk, rst, QD, S_IDLE, S_CHECK, S_RUN, CNT_BITS, state=state, rp=rp, wp=wp, cur=cur,
        occ=occ, iss0=iss0, iss1=iss1, h_iss=h_iss, rdy=rdy, acc_cmd=acc_cmd, seq_end=seq_end,
        hd_done=hd_done, fslot=fslot, done_r=done_r, err_r=err_r, aborting=aborting,
        c_rep=c_rep, c_size=c_size, szbad=szbad, sz_lo=sz_lo, srbad=srbad, rowerr=rowerr,
        issue=issue, lastb=lastb, cmd_func=cmd_func,
        cmd_is_accum=cmd_is_accum, cmd_valid=cmd_valid, c_store=c_store, c_accum=c_accum,
        fins=fins, cmd_size=cmd_size, BB=BB, tp=tp,
        errs=list(zip(rd_errs, wr_errs)), cmd=cmd, bp=(g["spad_bp"], g["acc_bp"]),
        w_fins=w_side["fins"] if OV else None))

    # ---- the sequencer
    @always_seq(clk.posedge, reset=rst)
    def seq():
        if state == S_IDLE:
            if aborting:
                if occ == 0:
                    err_r.next = 0
                    code_r.next = ERR_NONE
            elif acc_cmd:
                state.next = S_CHECK
                c_store.next = cmd_func
                c_accum.next = cmd_is_accum
                c_rep.next = cmd_repeat
                if cmd_repeat != 0:
                    c_rm1.next = cmd_repeat - 1
                else:
                    c_rm1.next = 0
                c_saddr.next = cmd_sram_addr
                c_sneg.next = cmd_sram_stride[4]
                if cmd_sram_stride[4]:
                    c_smag.next = (~cmd_sram_stride) + 1
                else:
                    c_smag.next = cmd_sram_stride
                c_mneg.next = cmd_mem_stride[20]
                if cmd_mem_stride[20]:
                    c_mmag.next = (~cmd_mem_stride) + 1
                else:
                    c_mmag.next = cmd_mem_stride
                c_size.next = cmd_size
                c_maddr.next = cmd_mem_addr
        elif state == S_CHECK:
            ra.next = maddr40
            under.next = 0
            sa.next = c_saddr[RB:0]
            left.next = c_rep
            first.next = 1
            second.next = 0
            tp.next = 0
            solo.next = solo_c
            if err_r or aborting or c_rep == 0 or c_size == 0:
                state.next = S_IDLE
            elif szbad:
                err_r.next = 1
                slot_r.next = cur
                code_r.next = ERR_DMA_SIZE
                state.next = S_IDLE
            elif sz_lo != 0:
                err_r.next = 1
                slot_r.next = cur
                code_r.next = ERR_DMA_ALIGN
                state.next = S_IDLE
            elif srbad:
                err_r.next = 1
                slot_r.next = cur
                code_r.next = ERR_SRAM_RANGE
                state.next = S_IDLE
            else:
                state.next = S_RUN
        elif state == S_RUN:
            if err_r or aborting:
                state.next = S_IDLE
            elif rowerr:
                err_r.next = 1
                slot_r.next = cur
                if mis:
                    code_r.next = ERR_DMA_ALIGN
                else:
                    code_r.next = ERR_MEM_RANGE
                state.next = S_IDLE
            elif issue:
                if not second and not mrg and xing:     # the first half of a split row
                    second.next = 1
                    b1l.next = tpl
                    b2b.next = szb - tpb
                else:       # a row, its second half, or merged rows: the next burst
                    second.next = 0
                    if lastb:
                        state.next = S_IDLE
                    else:
                        left.next = left - nrows
                        first.next = 0
                        if mrg:
                            ra.next = ra + mbytes40
                            sa.next = sa + mrows_rb
                        else:
                            if c_mneg:
                                if ra >= mmag40:
                                    ra.next = ra - mmag40
                                else:
                                    under.next = 1
                            else:
                                ra.next = ra + mmag40
                            if c_sneg:
                                sa.next = sa - smag_r
                            else:
                                sa.next = sa + smag_r
                        if not solo:        # (merged rows never overlap)
                            if tp == P - 1:
                                tp.next = 0
                            else:
                                tp.next = tp + 1
        # AXI errors (any state; the first error is kept), of the oldest
        # instruction with a burst in flight
        if not err_r and (axi_rd_err or axi_wr_err):
            err_r.next = 1
            slot_r.next = fslot
            if axi_rd_err:
                code_r.next = ERR_AXI_RD
            else:
                code_r.next = ERR_AXI_WR
    insts.append(seq)
    return insts
