"""SRAM routing of a DMA with several AXI ports when an SRAM has a narrow
port per bank (``rtl/fsa_sram_bp.py``; ``fsa.hw.dmarules.bank_ports``): a MyHDL
block inlined into ``fsa_dma`` (``rtl/fsa_dma.py``).

Per bank of such an SRAM, a round-robin arbiter (:func:`rtl.prim.rr_arbiter`:
a stalled request keeps its grant) picks one of the ports whose request's
row lies in that bank; the banks work independently, so ports whose rows are
in different banks move a beat each in the same cycle.  An SRAM with one
narrow port (one bank) is served as before: one arbiter over all ports, one
beat per cycle.  Only the SRAM of the instruction in flight (``c_accum``) is
used.  Each port gets its own ``grant``, ``sram_ready`` (the ready of the
bank its row is in) and read data (from the bank it read in the cycle
before, remembered per port).  With the config's ``dma_rw_overlap``
(:func:`bank_routing_rw`) both SRAMs have bank ports and each is served by
the half (read or write) of each port whose instruction uses it.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from rtl.convert import comb_expr, sig
from rtl.prim import clog2, mux_tree, rr_arbiter, vsig

__all__ = ["bank_routing", "bank_routing_rw"]


@block
def bank_routing(clk, rst, c_store, c_accum, reqs, q_rows, q_lanes, rdatas, grants, p_ready,
                 p_rvalid, p_rdata, spad, acc, g):
    """The routing (see the module docstring); `reqs` ... `rdatas` and
    `grants` ... `p_rdata` are per-port lists, `spad` and `acc` the narrow
    port bundles, `g` the DMA geometry (``rtl.fsa_dma_if.geometry``)."""
    P = len(reqs)
    TB = clog2(P)
    LB = g["lane_bits"]
    insts = []
    sides = (("spad", spad, "not c_accum"), ("acc", acc, "c_accum"))
    single = [(pre, b, act) for pre, b, act in sides if not g[f"{pre}_bp"]]
    banked = [(pre, b, act) for pre, b, act in sides if g[f"{pre}_bp"]]
    # per port: its grant and ready from each path
    s_grants = [sig(1) for _ in range(P)]
    b_grant_or = [[] for _ in range(P)]
    s_ready, s_rvalid, s_rdata = sig(1), sig(1), sig(LB)

    # ---- the one-port SRAM (at most one of the two): one arbiter, as fsa_dma
    if single:
        (pre, bd, act), = single
        sreqs = [sig(1) for _ in range(P)]
        for p in range(P):
            insts.append(comb_expr(sreqs[p], f"r and {act}", r=reqs[p], c_accum=c_accum))
        any_s = sig(1)
        insts.append(comb_expr(any_s, " or ".join(f"r{p}" for p in range(P)),
                               **{f"r{p}": sreqs[p] for p in range(P)}))
        sg = vsig(TB)
        insts.append(rr_arbiter(clk, rst, sreqs, any_s, s_ready, s_grants, sg))
        AW, LS = len(bd.n_addr), len(bd.n_lane)
        BW = AW + LS + LB
        bundles = [ConcatSignal(_low(q_rows[p], AW), _low(q_lanes[p], LS), rdatas[p])
                   for p in range(P)]
        mb = sig(BW)
        insts.append(mux_tree(bundles, sg, mb))
        s_row, s_lane, s_wd = _bits(mb, BW, LS + LB), _bits(mb, LS + LB, LB), mb(LB, 0)
        n_valid, n_ready, n_we, n_addr, n_lane = bd.n_valid, bd.n_ready, bd.n_we, bd.n_addr, \
            bd.n_lane
        n_wdata, n_rvalid, n_rdata = bd.n_wdata, bd.n_rvalid, bd.n_rdata
        is_acc = pre == "acc"

        @always_comb
        def one_port():
            if is_acc:
                n_valid.next = any_s and c_accum
            else:
                n_valid.next = any_s and not c_accum
            n_we.next = not c_store
            n_addr.next = s_row
            n_lane.next = s_lane
            n_wdata.next = s_wd
            s_ready.next = n_ready
            s_rvalid.next = n_rvalid
            s_rdata.next = n_rdata
        insts.append(one_port)
    else:       # both SRAMs have bank ports: no shared path
        s_grants = [None] * P
        s_ready = s_rvalid = s_rdata = None

    # ---- SRAMs with a narrow port per bank (one helper block per SRAM)
    side = {}
    for pre, bd, act in banked:
        B = g[f"{pre}_banks"]
        bgr = [[sig(1) for _ in range(P)] for _ in range(B)]
        rdy, rv, rd = [sig(1) for _ in range(P)], [sig(1) for _ in range(P)], \
            [sig(LB) for _ in range(P)]
        insts.append(_banked_side(clk, rst, c_store, c_accum, reqs, q_rows, q_lanes, rdatas,
                                  grants, bd, g, pre, act, bgr, rdy, rv, rd))
        for p in range(P):
            b_grant_or[p] += [bgr[b][p] for b in range(B)]
        side[pre] = (rdy, rv, rd)

    # ---- each port's grant, ready and read data
    def pick(k):        # the instruction's SRAM: its bank-port side, else the one port
        sp = side.get("spad", (None,) * 3)[k]
        ac = side.get("acc", (None,) * 3)[k]
        return sp, ac

    for p in range(P):
        gs = {f"g{k}": x for k, x in enumerate(b_grant_or[p])}
        if s_grants[p] is not None:
            gs["s"] = s_grants[p]
        insts.append(comb_expr(grants[p], " or ".join(sorted(gs)), **gs))
        for k, (out, one) in enumerate(((p_ready, s_ready), (p_rvalid, s_rvalid),
                                        (p_rdata, s_rdata))):
            sp, ac = pick(k)
            a = ac[p] if ac is not None else one
            b = sp[p] if sp is not None else one
            insts.append(comb_expr(out[p], "a if c_accum else b", a=a, b=b, c_accum=c_accum))
    return insts


@block
def _banked_side(clk, rst, c_store, c_accum, reqs, q_rows, q_lanes, rdatas, grants, bd, g, pre,
                 act, bgr, p_ready, p_rvalid, p_rdata):
    """One SRAM with a narrow port per bank: per bank an arbiter over the
    ports whose row is in it, and per port the ready of its row's bank and
    the data of the bank it read last; `bgr[b][p]` are the banks' grants.
    `act`: the condition, over ``c_accum``, that the instruction uses this
    SRAM, or None when `reqs` are this SRAM's already; `c_store`: the
    requests are SRAM reads."""
    P = len(reqs)
    TB = clog2(P)
    LB = g["lane_bits"]
    B = g[f"{pre}_banks"]
    kb = B.bit_length() - 1
    LW, LS = g[f"{pre}_local_bits"], g[f"{pre}_lane_bits"]
    insts = []
    bks = [vsig(kb) for _ in range(P)]         # the bank of each port's row
    for p in range(P):
        insts.append(comb_expr(bks[p], "r", r=q_rows[p](kb, 0)))
    valids, addrs, lanes, wdatas = [], [], [], []
    for b in range(B):
        breqs = [sig(1) for _ in range(P)]
        for p in range(P):
            if act is None:
                insts.append(comb_expr(breqs[p], f"r and bk == {b}", r=reqs[p], bk=bks[p]))
            else:
                insts.append(comb_expr(breqs[p], f"r and ({act}) and bk == {b}", r=reqs[p],
                                       c_accum=c_accum, bk=bks[p]))
        anyb = sig(1)
        insts.append(comb_expr(anyb, " or ".join(f"r{p}" for p in range(P)),
                               **{f"r{p}": breqs[p] for p in range(P)}))
        BW = LW + LS + LB
        bundles = [ConcatSignal(_bits(q_rows[p], kb + LW, kb), _low(q_lanes[p], LS), rdatas[p])
                   for p in range(P)]
        mb = sig(BW)        # (a signal: MyHDL drops slices of a ConcatSignal's slice)
        if P == 1:      # one port (fsa.hw.dmarules.per_port_dma): its request is granted
            insts.append(comb_expr(bgr[b][0], "r", r=breqs[0]))
            insts.append(comb_expr(mb, "x", x=bundles[0]))
        else:
            bg = vsig(TB)
            insts.append(rr_arbiter(clk, rst, breqs, anyb, bd.n_ready(b), bgr[b], bg))
            insts.append(mux_tree(bundles, bg, mb))
        valids.append(anyb)
        addrs.append(_bits(mb, BW, LS + LB))
        lanes.append(_bits(mb, LS + LB, LB))
        wdatas.append(mb(LB, 0))
    n_valid, n_we, n_addr, n_lane, n_wdata = bd.n_valid, bd.n_we, bd.n_addr, bd.n_lane, \
        bd.n_wdata
    v_cat = ConcatSignal(*reversed(valids))
    a_cat = ConcatSignal(*reversed(addrs))
    l_cat = ConcatSignal(*reversed(lanes))
    w_cat = ConcatSignal(*reversed(wdatas))
    WE_ALL = (1 << B) - 1

    @always_comb
    def bank_ports():
        n_valid.next = v_cat
        if c_store:
            n_we.next = 0
        else:
            n_we.next = WE_ALL
        n_addr.next = a_cat
        n_lane.next = l_cat
        n_wdata.next = w_cat
    insts.append(bank_ports)
    rbits = [bd.n_ready(b) for b in range(B)]
    vbits = [bd.n_rvalid(b) for b in range(B)]
    dwords = [bd.n_rdata(b * LB + LB, b * LB) for b in range(B)]
    for p in range(P):
        insts.append(mux_tree(rbits, bks[p], p_ready[p]))
        pb = vsig(kb)
        insts.append(_last_bank(clk, rst, reqs[p], grants[p], p_ready[p], bks[p], pb))
        insts.append(mux_tree(vbits, pb, p_rvalid[p]))
        insts.append(mux_tree(dwords, pb, p_rdata[p]))
    return insts


@block
def bank_routing_rw(clk, rst, r_acc, w_acc, r_side, w_side, rdatas, spad, acc, g):
    """The routing with ``dma_rw_overlap`` (both SRAMs with a narrow port
    per bank): each port has a read half (LOAD beats, written into the SRAM
    ``r_acc`` names) and a write half (STORE beats, read from ``w_acc``'s);
    `r_side` / `w_side` hold each half's per-port lists (``reqs``,
    ``q_rows``, ``q_lanes``, ``grants``, ``p_ready``, ``p_rvalid``,
    ``p_rdata``).  Per SRAM, port p requests with the half that uses that
    SRAM (a LOAD and a STORE in flight together use different SRAMs,
    ``fsa.hw.dmarules.load_store_ok``, so at most one half of a port asks an
    SRAM at a time) and the SRAM's bank arbiters (``_banked_side``) choose
    among the ports as without the overlap; a half's grant, ready and read
    data come from the SRAM it uses."""
    P = len(rdatas)
    LB = g["lane_bits"]
    insts = []
    outs = {}
    for pre, bd, want in (("spad", spad, 0), ("acc", acc, 1)):
        # (the row and lane bits this SRAM uses: bank and row in the bank)
        RW = g[f"{pre}_banks"].bit_length() - 1 + g[f"{pre}_local_bits"]
        LW = g[f"{pre}_lane_bits"]
        reqs = [sig(1) for _ in range(P)]
        rows = [sig(RW) for _ in range(P)]
        lanes = [vsig(LW) for _ in range(P)]
        rsel = [sig(1) for _ in range(P)]       # port p's read half asks this SRAM
        wsel = [sig(1) for _ in range(P)]
        for p in range(P):
            insts.append(_rw_request(r_side["reqs"][p], w_side["reqs"][p], r_acc, w_acc, want,
                                     r_side["q_rows"][p], w_side["q_rows"][p],
                                     r_side["q_lanes"][p], w_side["q_lanes"][p],
                                     rsel[p], wsel[p], reqs[p], rows[p], lanes[p]))
        st = sig(1)         # this SRAM's requests are reads (a STORE's)
        insts.append(comb_expr(st, " or ".join(f"w{p}" for p in range(P)),
                               **{f"w{p}": wsel[p] for p in range(P)}))
        B = g[f"{pre}_banks"]
        bgr = [[sig(1) for _ in range(P)] for _ in range(B)]
        grants = [sig(1) for _ in range(P)]
        rdy, rv, rd = [sig(1) for _ in range(P)], [sig(1) for _ in range(P)], \
            [sig(LB) for _ in range(P)]
        insts.append(_banked_side(clk, rst, st, None, reqs, rows, lanes, rdatas, grants, bd, g,
                                  pre, None, bgr, rdy, rv, rd))
        for p in range(P):
            gs = {f"g{b}": bgr[b][p] for b in range(B)}
            insts.append(comb_expr(grants[p], " or ".join(sorted(gs)), **gs))
        outs[pre] = dict(grants=grants, p_ready=rdy, p_rvalid=rv, p_rdata=rd, r=rsel, w=wsel)
    sp, ac = outs["spad"], outs["acc"]
    for side, half, acc_sel in ((r_side, "r", r_acc), (w_side, "w", w_acc)):
        for p in range(P):
            # the grant of the SRAM this half asks; ready and read data of the one it uses
            insts.append(comb_expr(side["grants"][p], "(a and ag) or (s and sg)",
                                   a=ac[half][p], ag=ac["grants"][p], s=sp[half][p],
                                   sg=sp["grants"][p]))
            for key in ("p_ready", "p_rvalid", "p_rdata"):
                insts.append(comb_expr(side[key][p], "a if x else b", a=ac[key][p],
                                       b=sp[key][p], x=acc_sel))
    return insts


@block
def _rw_request(rq, wq, r_acc, w_acc, want, r_row, w_row, r_lane, w_lane, rsel, wsel, req, row,
                lane):
    """Port p's request to the SRAM `want` (0 scratchpad, 1 accumulator):
    its read half's when that one asks and its LOADs use the SRAM, else its
    write half's when that one asks and its STOREs use it (the row and
    lane cut to the SRAM's widths)."""
    RW, LW = len(row), len(lane)

    @always_comb
    def pick():
        rsel.next = rq and r_acc == want
        wsel.next = wq and w_acc == want and not (rq and r_acc == want)
        req.next = (rq and r_acc == want) or (wq and w_acc == want)
        if rq and r_acc == want:
            row.next = r_row[RW:0]
            lane.next = r_lane[LW:0]
        else:
            row.next = w_row[RW:0]
            lane.next = w_lane[LW:0]
    return pick


def _low(s, n: int):
    """The low `n` bits of `s` (`s` itself when that is all of it)."""
    return s if len(s) == n else _bits(s, n, 0)


def _bits(s, hi: int, lo: int):
    """Bits ``[hi:lo]`` of `s` as a shadow signal (a one-bit one is an index,
    which MyHDL converts cleanly inside a ConcatSignal)."""
    return s(lo) if hi - lo == 1 else s(hi, lo)


@block
def _last_bank(clk, rst, req, grant, ready, bank, pb):
    """The bank of the port's last accepted request."""
    @always_seq(clk.posedge, reset=rst)
    def reg():
        if req and grant and ready:
            pb.next = bank
    return reg
