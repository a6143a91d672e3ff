"""Input delayer (ID) and output delayer (OD) of the array (docs/array.md).

``fsa_idelay`` (between the scratchpad and the array's left edge)::

    din (R x E, element e at bits [e*E +: E]), valid, rev_in, rev_out, delay
        element e -> position p = rev_in ? R-1-e : e
                  -> delayed (delay ? p : 0) cycles (flags travel with the data)
                  -> lane (rev_out ? R-1-p : p)
    dout (R x E): lane r = row r's l_in at column 0; 0 when nothing lands.

    Latency: 0 cycles for position 0 / undelayed reads (combinational from
    din: the SRAM's read latency is the one cycle), p cycles for position p.

``fsa_odelay`` (between the array's bottom and the ACC row)::

    din (C x A) -> dout (C x A): column c delayed by C-1-c cycles
    (registers), so all columns of one event leave together.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat

from fsa.formats import get_format
from rtl.convert import convert_block, sig


@block
def _position(din, valid, rev_in, rev_out, delay, clk, rst, out_data, out_valid, out_rev,
              p, R, W):
    """Position p of the ID: input select, p-stage delay line, output."""
    e_hi, e_lo = (p + 1) * W, p * W                 # element p
    r_hi, r_lo = (R - p) * W, (R - 1 - p) * W       # element R-1-p
    insts = []
    sel = sig(W)

    @always_comb
    def select():
        if rev_in:
            sel.next = din[r_hi:r_lo]
        else:
            sel.next = din[e_hi:e_lo]
    insts.append(select)

    if p == 0:
        @always_comb
        def direct():
            out_data.next = sel
            out_valid.next = valid
            out_rev.next = rev_out
        insts.append(direct)
        return insts

    E = W + 2                                       # entry: rev_out, valid, data
    line = sig(p * E)

    entry = sig(E)

    @always_comb
    def make_entry():
        entry.next = concat(rev_out, valid and delay, sel)

    if p == 1:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            line.next = entry
    else:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            line.next = concat(line[(p - 1) * E:], entry)
    insts.append(make_entry)

    @always_comb
    def output():
        if valid and not delay:
            out_data.next = sel
            out_valid.next = True
            out_rev.next = rev_out
        else:
            out_data.next = line[p * E - 2:(p - 1) * E]
            out_valid.next = line[p * E - 2]
            out_rev.next = line[p * E - 1]
    insts += [shift, output]
    return insts


@block
def _lane(pd, pv, pr, qd, qv, qr, lane, W):
    """Row r's lane: position r un-reversed, or position R-1-r reversed."""
    @always_comb
    def pick():
        if pv and not pr:
            lane.next = pd
        elif qv and qr:
            lane.next = qd
        else:
            lane.next = 0
    return pick


@block
def fsa_idelay(clk, rst, din, valid, rev_in, rev_out, delay, dout, R=4, e_type="fp16"):
    """Input delayer; see the module docstring."""
    W = get_format(e_type).width
    if len(din) != R * W or len(dout) != R * W:
        raise ValueError(f"fsa_idelay: din/dout must be R*{W} = {R * W} bits")
    pdat = [sig(W) for _ in range(R)]
    pval = [sig(1) for _ in range(R)]
    prev = [sig(1) for _ in range(R)]
    lanes = [sig(W) for _ in range(R)]
    insts = []
    for p in range(R):
        insts.append(_position(din, valid, rev_in, rev_out, delay, clk, rst,
                               pdat[p], pval[p], prev[p], p, R, W))
    for r in range(R):
        q = R - 1 - r
        insts.append(_lane(pdat[r], pval[r], prev[r], pdat[q], pval[q], prev[q], lanes[r], W))
    all_lanes = ConcatSignal(*reversed(lanes))

    @always_comb
    def pack():
        dout.next = all_lanes
    insts.append(pack)
    return insts


@block
def _column_delay(clk, rst, din, dout, c, C, W):
    """Column c: din[c] delayed C-1-c cycles into dout (its own W-bit signal)."""
    n = C - 1 - c
    hi, lo = (c + 1) * W, c * W
    if n == 0:
        @always_comb
        def through():
            dout.next = din[hi:lo]
        return through
    line = sig(n * W)

    if n == 1:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            line.next = din[hi:lo]
    else:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            line.next = concat(line[(n - 1) * W:], din[hi:lo])

    @always_comb
    def out():
        dout.next = line[n * W:(n - 1) * W]
    return shift, out


@block
def fsa_odelay(clk, rst, din, dout, C=4, a_type="fp32"):
    """Output delayer; see the module docstring."""
    W = get_format(a_type).width
    if len(din) != C * W or len(dout) != C * W:
        raise ValueError(f"fsa_odelay: din/dout must be C*{W} = {C * W} bits")
    cols = [sig(W) for _ in range(C)]
    insts = [_column_delay(clk, rst, din, cols[c], c, C, W) for c in range(C)]
    all_cols = ConcatSignal(*reversed(cols))

    @always_comb
    def pack():
        dout.next = all_cols
    insts.append(pack)
    return insts


def _rst():
    from myhdl import ResetSignal
    return ResetSignal(0, active=1, isasync=False)


def convert_idelay(outdir, R: int = 4, e_type: str = "fp16"):
    W = get_format(e_type).width
    p = dict(clk=sig(1), rst=_rst(), din=sig(R * W), valid=sig(1), rev_in=sig(1),
             rev_out=sig(1), delay=sig(1), dout=sig(R * W))
    return convert_block(lambda: fsa_idelay(**p, R=R, e_type=e_type), "fsa_idelay", outdir)


def convert_odelay(outdir, C: int = 4, a_type: str = "fp32"):
    W = get_format(a_type).width
    p = dict(clk=sig(1), rst=_rst(), din=sig(C * W), dout=sig(C * W))
    return convert_block(lambda: fsa_odelay(**p, C=C, a_type=a_type), "fsa_odelay", outdir)
