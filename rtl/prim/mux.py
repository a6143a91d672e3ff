"""``o = inputs[sel]`` as a balanced tree of 2:1 multiplexers."""
from __future__ import annotations

from myhdl import always_comb, block

from rtl.convert import sig
from rtl.prim.bits import clog2

__all__ = ["mux_tree"]


@block
def _mux2(s, x0, x1, o):
    @always_comb
    def mux():
        if s:
            o.next = x1
        else:
            o.next = x0
    return mux


@block
def mux_tree(inputs, sel, o):
    """``o = inputs[sel]`` (combinational) as a tree of 2:1 muxes on the bits
    of `sel`, least significant bit first.

    Args:
        inputs: at least two signals, each ``len(o)`` bits wide.
        sel: the index; ``len(sel) >= clog2(len(inputs))``.  Indices past the
            end select the last input (out of range is unspecified for the
            users).
        o: the output.

    A tree of 2:1 muxes (rather than one ``case``) keeps each Verilog block
    small and lets pairs of equal inputs share a mux (padding to a power of
    two repeats the last input without adding muxes).
    """
    if len(inputs) < 2:
        raise ValueError(f"mux_tree: needs at least 2 inputs, got {len(inputs)}")
    nbits = clog2(len(inputs))
    width = len(o)
    level = list(inputs)
    insts = []
    for k in range(nbits):
        if len(level) % 2:
            level.append(level[-1])
        last = k == nbits - 1
        nxt = []
        for i in range(0, len(level), 2):
            if level[i] is level[i + 1] and not last:
                nxt.append(level[i])
                continue
            out = o if last else sig(width)
            insts.append(_mux2(sel(k), level[i], level[i + 1], out))
            nxt.append(out)
        level = nxt
    return insts
