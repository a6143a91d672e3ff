"""Circular-buffer FIFO: a memory of ``depth`` words, write and read
pointers and an occupancy count."""
from __future__ import annotations

from myhdl import Signal, always, always_comb, always_seq, block, intbv

from rtl.convert import sig
from rtl.prim.bits import clog2

__all__ = ["fifo"]


@block
def fifo(clk, rst, push, din, pop, dout, count, depth):
    """A FIFO of `depth` words of ``len(din)`` bits.

    Ports:
        push: write `din` at the tail this cycle (the user guarantees that
            the FIFO is not full, or that a pop happens in the same cycle).
        pop: drop the head word this cycle (the user guarantees that the
            FIFO is not empty).
        dout: the head word, ``mem[read pointer]`` (combinational; stale
            contents while the FIFO is empty: gate it with ``count`` where
            that matters).
        count: words held, ``clog2(depth) + 1`` bits (registered).

    Timing: a word pushed at an edge is the head (and counted) from that edge
    on, so push and pop in the same cycle keep the count.  The pointers wrap
    at ``depth`` (any depth >= 2, not only powers of two).  `rst`
    (synchronous) empties the FIFO; the memory itself is not reset.
    """
    W = len(din)
    if depth < 2:
        raise ValueError(f"fifo: depth must be >= 2, got {depth}")
    if len(dout) != W or len(count) != clog2(depth) + 1:
        raise ValueError(f"fifo: dout must be {W} bits and count {clog2(depth) + 1} bits, "
                         f"got {len(dout)} and {len(count)}")
    PB = clog2(depth)
    mem = [Signal(intbv(0)[W:]) for _ in range(depth)]
    wp = sig(PB)
    rp = sig(PB)

    @always(clk.posedge)
    def write():
        if push:
            mem[wp].next = din

    @always_comb
    def head():
        dout.next = mem[rp]

    @always_seq(clk.posedge, reset=rst)
    def pointers():
        if push:
            if wp == depth - 1:
                wp.next = 0
            else:
                wp.next = wp + 1
        if pop:
            if rp == depth - 1:
                rp.next = 0
            else:
                rp.next = rp + 1
        if push and not pop:
            count.next = count + 1
        elif pop and not push:
            count.next = count - 1

    return write, head, pointers
