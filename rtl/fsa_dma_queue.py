"""The in-flight queue of the DMA engine (``rtl/fsa_dma.py``): slot
allocation on accept, per-slot "still issuing" flags and (one port) per-slot
counts of bursts not finished, the oldest slot's ``done``, and ``cmd_ready``.
A helper that returns MyHDL instances for ``fsa_dma`` (a MyHDL block whose
logic is inlined there, not a Verilog module of its own); every signal is
``fsa_dma``'s.

In-flight queue (LOADs of one-beat rows: with longer rows the slave's AR
queue, two deep in cocotbext-axi's AxiRam, would hold the sequencer and
expose the latency in a way the cycle model does not follow).  The sequencer
is idle again the cycle after it queued an
instruction's last burst (the cycle after the check when there is none), and
the instruction waits in a queue slot (``INFLIGHT`` = 2 slots) until its
bursts have finished: each slot counts, per port, its bursts queued and not
finished (a port's bursts finish in order, so a finishing burst belongs to
the oldest slot with one unfinished on that port).  The oldest slot with no
burst left and nothing more to queue is done: ``done`` pulses in the next
cycle and the slot is free in that cycle.  A command that is not a LOAD into
the SRAM of the instructions held waits until the queue is empty
(``cmd_ready``), so the ports' direction and the SRAM they use never change
while a burst is in flight; with several ports a second LOAD also needs a
narrow port per bank of that SRAM and SRAM rows disjoint from the held
LOAD's (``_multi_port``; ``fsa.hw.dmarules.second_load_ok``).  With the
config's ``dma_rw_overlap`` a LOAD and a STORE may also be held together
(``_rw_admit``: other direction, other SRAM, disjoint memory bytes;
``fsa.hw.dmarules.load_store_ok``): each port then has a read and a write half
(``rtl/fsa_dma.py``), and a finishing burst belongs to the slot of its
half's direction (``_port_counts_rw``).
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from rtl.convert import comb_expr, sig
from rtl.prim import zext

__all__ = ["inflight_queue"]


@block
def inflight_queue(clk, rst, QD, _S_IDLE, _S_CHECK, _S_RUN, _CNT_BITS, *, state, rp, wp, cur,
                   occ, iss0, iss1, h_iss, rdy, acc_cmd, seq_end, hd_done, fslot, done_r,
                   err_r, aborting, c_rep, c_size, szbad, sz_lo, srbad, rowerr, issue, lastb,
                   cmd_func, cmd_is_accum, cmd_valid, c_store, c_accum,
                   fins, cmd_size, BB, tp, errs, cmd, bp, w_fins=None):
    """The queue's logic (see the module docstring); `QD` = 2 slots.  `fins`
    and `errs` are the ports' burst-finished and AXI-error flags, `cmd` the
    command bundle, `bp` (spad, acc): whether each SRAM has a narrow port
    per bank; `w_fins`: with ``dma_rw_overlap``, the write halves' flags
    (`fins` are then the read halves')."""
    P = len(fins)
    insts = []

    @always_comb
    def head_sel():
        if rp:
            h_iss.next = iss1
        else:
            h_iss.next = iss0
    insts.append(head_sel)

    @always_comb
    def ending():
        if state == _S_CHECK:
            seq_end.next = (err_r or aborting or c_rep == 0 or c_size == 0 or szbad
                            or sz_lo != 0 or srbad)
        elif state == _S_RUN:
            seq_end.next = err_r or aborting or rowerr or (issue and lastb)
        else:
            seq_end.next = 0
    insts.append(ending)

    second_ok = sig(1)          # a second instruction may join the one held
    if P == 1 and not (bp[0] or bp[1]):
        # one port: its bursts finish in order, so a burst count per slot
        # tells when the oldest instruction's last burst has finished
        cnt0, cnt1, hz = sig(_CNT_BITS), sig(_CNT_BITS), sig(1)
        insts.append(comb_expr(
            second_ok, f"occ < {QD} and not cmd_func and not c_store and cmd_is_accum == c_accum "
            f"and c_size <= {BB} and cmd_size <= {BB}", occ=occ, cmd_func=cmd_func,
            c_store=c_store, cmd_is_accum=cmd_is_accum, c_accum=c_accum, c_size=c_size,
            cmd_size=cmd_size))
        # (nothing in flight: a stray beat or response is the oldest's error)
        insts.append(_port_counts(clk, rst, rp, cur, h_iss, issue, fins[0], cnt0, cnt1, hz,
                                  fslot))
        insts.append(comb_expr(hd_done, "occ != 0 and not h_iss and hz", occ=occ, h_iss=h_iss,
                               hz=hz))
    else:
        insts.append(_multi_port(clk, rst, QD, _CNT_BITS, rp=rp, wp=wp, cur=cur, occ=occ,
                                 h_iss=h_iss, w_fins=w_fins,
                                 n_ok=second_ok, acc_cmd=acc_cmd, hd_done=hd_done,
                                 fslot=fslot, issue=issue, tp=tp, cmd_func=cmd_func,
                                 cmd_is_accum=cmd_is_accum, c_store=c_store, c_accum=c_accum,
                                 fins=fins, errs=errs, cmd=cmd, bp=bp))

    @always_comb
    def admit():
        rdy.next = state == _S_IDLE and (occ == 0 or second_ok)
        acc_cmd.next = state == _S_IDLE and not aborting and cmd_valid and (occ == 0 or second_ok)
    insts.append(admit)

    @always_seq(clk.posedge, reset=rst)
    def track():
        done_r.next = hd_done
        if acc_cmd:
            cur.next = wp
            wp.next = not wp
        if hd_done:
            rp.next = not rp
        if acc_cmd and not hd_done:
            occ.next = occ + 1
        elif hd_done and not acc_cmd:
            occ.next = occ - 1
        if acc_cmd and not wp:
            iss0.next = 1
        elif seq_end and not cur:
            iss0.next = 0
        if acc_cmd and wp:
            iss1.next = 1
        elif seq_end and cur:
            iss1.next = 0
    insts.append(track)
    return insts


#: offset added to SRAM row spans so that they are never negative
#: (``(repeat - 1) * |stride| < 2**14``)
_SPAN_OFF = 1 << 14
_SPAN_BITS = 21


@block
def _multi_port(clk, rst, QD, _CNT_BITS, *, rp, wp, cur, occ, h_iss, n_ok, acc_cmd, hd_done, fslot,
                issue, tp, cmd_func, cmd_is_accum, c_store, c_accum, fins, errs, cmd, bp,
                w_fins=None):
    """Several ports: `n_ok`, a second LOAD may join the LOAD held: both go
    into the same SRAM, that SRAM has a narrow port per bank, both move
    rows, neither writes one row over and over (stride 0) and their SRAM row
    spans are disjoint (:func:`fsa.hw.dmarules.second_load_ok`): the ports'
    beats then reach the SRAM in no fixed order without changing the result.  Each port counts
    its bursts queued and not finished per slot (its bursts finish in
    order, so a finishing burst belongs to the oldest slot with one
    unfinished on that port); the oldest slot is done when it issues no more
    and no port holds a burst of it.  An AXI error belongs to the slot of
    the oldest unfinished burst on the lowest-numbered port reporting one."""
    P = len(fins)
    SBP, ABP = int(bool(bp[0])), int(bool(bp[1]))
    insts = []
    # ---- the command's SRAM row span (offset by _SPAN_OFF), and the held one's
    n_rm1, n_smag, n_prod = sig(9), sig(5), sig(14)
    n_lo, n_hi, h_lo, h_hi = (sig(_SPAN_BITS) for _ in range(4))
    n_nz, h_nz = sig(1), sig(1)
    n_solo, h_solo = sig(1), sig(1)     # one row over and over (all on port 0)
    c_rep, c_str, c_sz = cmd.repeat, cmd.sram_stride, cmd.size
    c_addr = zext(cmd.sram_addr, _SPAN_BITS)
    prod_w = zext(n_prod, _SPAN_BITS)

    @always_comb
    def span():
        if c_rep != 0:
            n_rm1.next = c_rep - 1
        else:
            n_rm1.next = 0
    insts.append(span)
    insts.append(_magnitude(c_str, n_smag))

    @always_comb
    def span2():
        n_prod.next = n_rm1 * n_smag
    insts.append(span2)

    @always_comb
    def span3():
        if c_str[4]:
            n_lo.next = c_addr + _SPAN_OFF - prod_w
            n_hi.next = c_addr + _SPAN_OFF
        else:
            n_lo.next = c_addr + _SPAN_OFF
            n_hi.next = c_addr + _SPAN_OFF + prod_w
        n_nz.next = c_rep != 0 and c_sz != 0
        n_solo.next = c_str == 0 and n_rm1 != 0
    insts.append(span3)

    ld_ok = sig(1)              # a second LOAD (fsa.hw.dmarules.second_load_ok)
    rw_ok = sig(1)              # a LOAD and a STORE (fsa.hw.dmarules.load_store_ok; overlap only)

    @always_comb
    def admit():
        ld_ok.next = (occ < QD and not cmd_func and not c_store and cmd_is_accum == c_accum
                      and ((not cmd_is_accum and SBP == 1) or (cmd_is_accum and ABP == 1))
                      and n_nz and h_nz and not n_solo and not h_solo
                      and (h_hi < n_lo or n_hi < h_lo))
    insts.append(admit)
    OV = w_fins is not None
    if OV:
        insts.append(_rw_admit(clk, rst, QD, occ, acc_cmd, cmd, cmd_func, cmd_is_accum, c_store,
                               c_accum, n_rm1, n_nz, h_nz, rw_ok))
        insts.append(comb_expr(n_ok, "a or b", a=ld_ok, b=rw_ok))
    else:
        insts.append(comb_expr(n_ok, "a", a=ld_ok))

    @always_seq(clk.posedge, reset=rst)
    def held():
        if acc_cmd:
            h_lo.next = n_lo
            h_hi.next = n_hi
            h_nz.next = n_nz
            h_solo.next = n_solo
    insts.append(held)

    # ---- per port: bursts unfinished per slot
    hzs, fss, pes = [], [], []
    if OV:      # the slots' directions (1: STORE)
        k0, k1 = sig(1), sig(1)
        insts.append(_slot_kinds(clk, rst, acc_cmd, wp, cmd_func, k0, k1))
    for p in range(P):
        c0, c1 = sig(_CNT_BITS), sig(_CNT_BITS)
        hz, fs, push, pe = sig(1), sig(1), sig(1), sig(1)
        fin = fins[p]
        insts.append(comb_expr(push, f"issue and tp == {p}", issue=issue, tp=tp))
        insts.append(comb_expr(pe, "r or w", r=errs[p][0], w=errs[p][1]))
        if OV:
            insts.append(_port_counts_rw(clk, rst, rp, cur, h_iss, occ, k0, k1, push, fin,
                                         w_fins[p], errs[p][0], c0, c1, hz, fs))
        else:
            insts.append(_port_counts(clk, rst, rp, cur, h_iss, push, fin, c0, c1, hz, fs))
        hzs.append(hz)
        fss.append(fs)
        pes.append(pe)
    names = {f"z{p}": hzs[p] for p in range(P)}
    insts.append(comb_expr(hd_done, "occ != 0 and not h_iss and "
                           + " and ".join(f"z{p}" for p in range(P)),
                           occ=occ, h_iss=h_iss, **names))
    # the slot of the lowest-numbered port with an AXI error (port 0's when none)
    terms, none_before = [], []
    for p in range(P):
        terms.append("(" + " and ".join(none_before + [f"e{p}", f"f{p}"]) + ")")
        none_before.append(f"not e{p}")
    terms.append("(" + " and ".join(none_before + ["f0"]) + ")")
    sigs = {f"e{p}": pes[p] for p in range(P)}
    sigs.update({f"f{p}": fss[p] for p in range(P)})
    insts.append(comb_expr(fslot, " or ".join(terms), **sigs))
    return insts


@block
def _oldest(rp, h_iss, c0, c1, hz, fs):
    """From one port's per-slot counts of unfinished bursts: `hz`, none of
    the oldest slot's; `fs`, the slot of its oldest unfinished burst (the
    oldest slot while that one still issues or the port holds nothing)."""
    @always_comb
    def view():
        if rp:
            hz.next = c1 == 0
            if h_iss or c1 != 0 or c0 == 0:
                fs.next = 1
            else:
                fs.next = 0
        else:
            hz.next = c0 == 0
            if h_iss or c0 != 0 or c1 == 0:
                fs.next = 0
            else:
                fs.next = 1
    return view


@block
def _port_counts(clk, rst, rp, cur, h_iss, push, fin, c0, c1, hz, fs):
    """One port's counts of bursts queued and not finished, per slot; `hz`
    and `fs`: :func:`_oldest`."""
    view = _oldest(rp, h_iss, c0, c1, hz, fs)

    @always_seq(clk.posedge, reset=rst)
    def counts():
        if push and not cur and not (fin and not fs):
            c0.next = c0 + 1
        elif fin and not fs and not (push and not cur):
            c0.next = c0 - 1
        if push and cur and not (fin and fs):
            c1.next = c1 + 1
        elif fin and fs and not (push and cur):
            c1.next = c1 - 1
    return view, counts


#: offset added to memory byte spans so that they are never negative
#: (``(repeat - 1) * |mem_stride| < 2**29``)
_MSPAN_OFF = 1 << 29
_MSPAN_BITS = 41


@block
def _rw_admit(clk, rst, QD, occ, acc_cmd, cmd, cmd_func, cmd_is_accum, c_store, c_accum, n_rm1,
              n_nz, h_nz, rw_ok):
    """``dma_rw_overlap``: `rw_ok`, the command may join the instruction
    held as a LOAD and a STORE at once (:func:`fsa.hw.dmarules.load_store_ok`):
    the other direction, the other SRAM, both move rows, and the memory
    byte ranges ``[lo, hi)`` (offset by ``_MSPAN_OFF``) are disjoint.  The
    held instruction's range is latched when it is accepted; `n_rm1` is the
    command's ``repeat - 1`` (``_multi_port``'s)."""
    mmag = sig(21)
    prod = sig(30)                  # (repeat - 1) * |mem stride|
    n_lo, n_hi, h_lo, h_hi = (sig(_MSPAN_BITS) for _ in range(4))
    c_str, c_sz = cmd.mem_stride, cmd.size
    addr = zext(cmd.mem_addr, _MSPAN_BITS)
    prod_w = zext(prod, _MSPAN_BITS)
    size_w = zext(c_sz, _MSPAN_BITS)
    mag = _magnitude(c_str, mmag)

    @always_comb
    def mspan2():
        prod.next = n_rm1 * mmag

    @always_comb
    def mspan3():
        if c_str[20]:
            n_lo.next = addr + _MSPAN_OFF - prod_w
            n_hi.next = addr + _MSPAN_OFF + size_w
        else:
            n_lo.next = addr + _MSPAN_OFF
            n_hi.next = addr + _MSPAN_OFF + prod_w + size_w

    @always_comb
    def admit():
        rw_ok.next = (occ < QD and cmd_func != c_store and cmd_is_accum != c_accum
                      and n_nz and h_nz and (h_hi <= n_lo or n_hi <= h_lo))

    @always_seq(clk.posedge, reset=rst)
    def held():
        if acc_cmd:
            h_lo.next = n_lo
            h_hi.next = n_hi
    return mag, mspan2, mspan3, admit, held


@block
def _magnitude(stride, mag):
    """`mag` = the magnitude of the two's-complement `stride` (one bit
    wider than needed for the most negative value)."""
    top = len(stride) - 1

    @always_comb
    def absval():
        if stride[top]:
            mag.next = (~stride) + 1
        else:
            mag.next = stride
    return absval


@block
def _slot_kinds(clk, rst, acc_cmd, wp, cmd_func, k0, k1):
    """The direction of the instruction in each slot (1: STORE), set on accept."""
    @always_seq(clk.posedge, reset=rst)
    def kinds():
        if acc_cmd:
            if wp:
                k1.next = cmd_func
            else:
                k0.next = cmd_func
    return kinds


@block
def _port_counts_rw(clk, rst, rp, cur, h_iss, occ, k0, k1, push, fin_r, fin_w, rd_err, c0, c1,
                    hz, fs):
    """:func:`_port_counts` for a port with a read half and a write half
    (``dma_rw_overlap``): with a LOAD and a STORE in flight (two slots of
    different directions) a read half's burst belongs to the LOAD's slot
    and a write half's to the STORE's, both of which may finish in one
    cycle; otherwise only one half has bursts, and they finish in order as
    with one half.  `fs`: the slot of an AXI error this cycle (the read
    half's when `rd_err`)."""
    fo = sig(1)                 # the oldest unfinished burst's slot (as _port_counts)
    fr, fw = sig(1), sig(1)     # the slots of the read and the write half's bursts
    d0, d1 = sig(1), sig(1)     # a burst of slot 0 / 1 finishes
    view = _oldest(rp, h_iss, c0, c1, hz, fo)

    @always_comb
    def halves():
        if occ == 2 and k0 != k1:
            fr.next = k0        # the LOAD's slot: 0 when slot 0 holds it (k0 = 0)
            fw.next = not k0
        else:
            fr.next = fo
            fw.next = fo

    @always_comb
    def finishing():
        d0.next = (fin_r and not fr) or (fin_w and not fw)
        d1.next = (fin_r and fr) or (fin_w and fw)
        if rd_err:
            fs.next = fr
        else:
            fs.next = fw

    @always_seq(clk.posedge, reset=rst)
    def counts():
        if push and not cur and not d0:
            c0.next = c0 + 1
        elif d0 and not (push and not cur):
            c0.next = c0 - 1
        if push and cur and not d1:
            c1.next = c1 + 1
        elif d1 and not (push and cur):
            c1.next = c1 - 1
    return view, halves, finishing, counts
