"""Round-robin arbiter whose grant holds until the request is accepted."""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

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
    rsig = {f"r{q}": reqs[q] for q in range(N)}
    for p in range(N):
        terms = []
        for r in range(N):
            ahead = [q for q in range(N) if (q - r) % N < (p - r) % N]
            cond = " and ".join([f"rr == {r}"] + [f"not r{q}" for q in ahead])
            terms.append(f"({cond})")
        insts.append(comb_expr(grants[p], f"r{p} and ({' or '.join(terms)})", rr=rr, **rsig))
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
