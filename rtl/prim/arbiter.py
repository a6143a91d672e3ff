"""Round-robin arbiter whose grant holds until the request is accepted."""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, modbv

from rtl.convert import comb_expr, sig
from rtl.prim.bits import clog2, vsig

__all__ = ["rr_arbiter"]


@block
def rr_arbiter(clk, rst, reqs, any_req, accept, grants, gidx):
    """Grant one of ``N = len(reqs) >= 2`` requesters, round robin.

    Ports:
        reqs: the request bits (list of 1-bit signals).
        any_req: ``OR(reqs)``, computed by the user (it needs it anyway).
        accept: the granted request is accepted this cycle.
        grants: one-hot grant bits (list, combinational from reqs and the
            priority pointer).
        gidx: the granted index, ``clog2(N)`` bits (0 when nothing is
            requested).

    The priority pointer ``rr`` (registered, 0 after reset) names the
    requester with the highest priority, then ``rr+1``, ... (mod N).  In a
    cycle with a request: if it is accepted the pointer moves to the one
    after the granted index (fairness), else it moves *to* the granted index,
    so a stalled request keeps its grant (its fields stay stable until
    accepted, as valid/ready requires) even if a higher-priority one arrives.
    """
    N = len(reqs)
    TB = clog2(N)
    if N < 2 or len(grants) != N or len(gidx) != TB:
        raise ValueError(f"rr_arbiter: needs >= 2 requesters, {N} grants and a {TB}-bit gidx")
    insts = []
    rr = vsig(TB)
    # Word-level: the requests at or after the pointer (``reqs & ~(2**rr - 1)``),
    # or all of them when there are none; the grant is the lowest set bit of
    # that word (``x & (~x + 1)``): a few word operations, where one
    # expression per grant over every pointer value was cubic in N (the
    # 8-port DMA's Verilog 1.23 -> 0.89 MB, Yosys cells of the 4-port one
    # -7 to -10 %).
    rcat = ConcatSignal(*reversed(reqs))
    gv = vsig(N)
    ALL = (1 << N) - 1

    @always_comb
    def pick():
        hi = modbv(0)[N:]
        x = modbv(0)[N:]
        hi[:] = rcat & ((ALL << rr) & ALL)
        if hi != 0:
            x[:] = hi
        else:
            x[:] = rcat
        gv.next = x & (~x + 1)
    insts.append(pick)
    for q in range(N):
        insts.append(comb_expr(grants[q], "g", g=gv(q)))
    gbits = [sig(1) for _ in range(TB)]
    gsig = {f"g{q}": grants[q] for q in range(N)}
    for k in range(TB):
        ones = [f"g{q}" for q in range(N) if (q >> k) & 1]
        insts.append(comb_expr(gbits[k], " or ".join(ones), **gsig))
    if TB == 1:
        gbits0 = gbits[0]

        @always_comb
        def gidx1():
            gidx.next = gbits0
        insts.append(gidx1)
    else:
        gcat = ConcatSignal(*reversed(gbits))

        @always_comb
        def gidxn():
            gidx.next = gcat
        insts.append(gidxn)

    @always_seq(clk.posedge, reset=rst)
    def rrupd():
        if any_req:
            if accept:
                if gidx == N - 1:
                    rr.next = 0
                else:
                    rr.next = gidx + 1
            else:
                rr.next = gidx
    insts.append(rrupd)
    return insts
