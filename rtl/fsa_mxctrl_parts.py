"""Generic pieces of the matrix controller (rtl/fsa_mxctrl.py): interval
comparators over a slot's (function, cycle) pair, small per-function ROMs,
one-hot encoders, the wave shift registers and the instruction slot's
registers.  Nothing here knows the plans: fsa_mxctrl feeds them the tables
it derives from ``fsa/plan.py``.  Converted inside module ``fsa_mxctrl``
(these blocks are not Verilog modules of their own)."""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv, modbv

from fsa.hw import isa as hwisa
from rtl.convert import comb_expr, named, sig

__all__ = ["runs", "member", "per_func", "pack_bits", "encode", "chain", "delay1", "copy",
           "or3", "slot_regs"]

ADDR_BITS = hwisa.field("MATRIX", "spad_addr").width
STRIDE_BITS = hwisa.field("MATRIX", "spad_stride").width


def runs(cycles) -> list[tuple[int, int]]:
    """Sorted cycles -> [start, end) runs."""
    out: list[list[int]] = []
    for c in sorted(set(cycles)):
        if out and c == out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([c, c + 1])
    return [(s, e) for s, e in out]


@block
def member(func, t, hit, table):
    """hit = any((func == f) and s <= t < e for (f, s, e) in table)."""
    terms = []
    for f, s, e in table:
        if e == s + 1:
            cond = f"fn == {f} and t == {s}"
        elif s == 0:
            cond = f"fn == {f} and t < {e}"
        else:
            cond = f"fn == {f} and t >= {s} and t < {e}"
        terms.append(f"({cond})")
    expr = " or ".join(terms) if terms else "False"
    inst = comb_expr(hit, expr, fn=func, t=t)   # (a keyword `func` would clash with MyHDL)
    return inst


@block
def per_func(func, out, values, width):
    """out = values[func] (a small ROM)."""
    V = tuple(int(v) for v in values) + (0,) * ((1 << len(func)) - len(values))

    @always_comb
    def comb():
        out.next = V[func]
    return comb


@block
def pack_bits(bits, vec):
    from myhdl import ConcatSignal
    cat = ConcatSignal(*reversed(bits))

    @always_comb
    def comb():
        vec.next = cat
    return comb


@block
def encode(members, out):
    """out = code of the member that is high (they are mutually exclusive)."""
    codes = tuple(c for c, _ in members)
    n = len(members)
    if n == 0:
        @always_comb
        def none():
            out.next = 0
        return none
    from myhdl import ConcatSignal
    hits = ConcatSignal(*reversed([m for _, m in members])) if n > 1 else members[0][1]
    width = len(out)

    if n == 1:
        c0 = codes[0]

        @always_comb
        def one():
            if hits:
                out.next = c0
            else:
                out.next = 0
        return one

    @always_comb
    def comb():
        v = intbv(0)[width:]
        for i in range(n):
            if hits[i]:
                v[:] = codes[i]
        out.next = v
    return comb


@block
def chain(src, taps, R, NB, clk, rst):
    """taps[r] = src delayed r cycles (taps[0] = src)."""
    regs = [sig(NB) for _ in range(R - 1)]
    insts = []
    prev = src
    for r in range(R - 1):
        insts.append(named(delay1(prev, regs[r], clk, rst), f"stage{r + 1}"))
        prev = regs[r]
    taps_all = [src] + regs
    for r in range(R):
        insts.append(named(copy(taps_all[r], taps[r]), f"tap{r}"))
    return insts


@block
def delay1(a, q, clk, rst):
    @always_seq(clk.posedge, reset=rst)
    def seq():
        q.next = a
    return seq


@block
def copy(a, y):
    @always_comb
    def comb():
        y.next = a
    return comb


@block
def slot_regs(clk, rst, load, busy, func, t, sptr, sstr, aptr, astr, flags, zero, causal, maskk,
               rel, ret, sram_rd, acc_rd, ins):
    """One instruction slot: loaded with the accepted instruction, then its
    cycle counter runs and its SRAM pointers step until it retires."""
    (f_in, sa_in, ss_in, aa_in, as_in, ri_in, ro_in, dl_in, z_in, c_in, mk_in, rv_in, rid_in,
     rval_in) = ins
    AB, SB = ADDR_BITS, STRIDE_BITS
    EXT = (1 << (AB - SB)) - 1           # the sign extension of a negative stride

    @always_seq(clk.posedge, reset=rst)
    def slot():
        if load:
            busy.next = True
            func.next = f_in
            t.next = 0
            sptr.next = sa_in
            sstr.next = ss_in
            aptr.next = aa_in
            astr.next = as_in
            flags.next = concat(ri_in, ro_in, dl_in)
            zero.next = z_in
            causal.next = c_in
            maskk.next = mk_in
            rel.next = concat(rv_in, rid_in, rval_in)
        elif busy:
            t.next = t + 1
            if t + 1 >= ret:
                busy.next = False
            # pointer + sign-extended stride, modulo 2**ADDR_BITS (modbv wraps)
            step = intbv(0)[AB:]
            nxt = modbv(0)[AB:]
            if sram_rd:
                step[SB:] = sstr
                step[AB:SB] = EXT if sstr[SB - 1] else 0
                nxt[:] = sptr + step
                sptr.next = nxt[AB:]
            if acc_rd:
                step[SB:] = astr
                step[AB:SB] = EXT if astr[SB - 1] else 0
                nxt[:] = aptr + step
                aptr.next = nxt[AB:]
    return slot


@block
def or3(a, b, c, ctrl):
    @always_comb
    def comb():
        ctrl.next = a | b | c
    return comb


