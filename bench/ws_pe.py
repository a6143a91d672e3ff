"""A plain weight-stationary PE, the baseline of the area comparison
(bench/area.py).

Same formats as ``fsa_pe`` (E x E + A), MAC only::

              u_in (A)
                 |
    l_in (E) -> [ reg (E), FMA reg*l_in + u_in ] -> r_out (E)
    ctrl_in  -> [                              ] -> ctrl_out
                 v
              d_out (A)

* ``ctrl_in`` bit 0 ``mac``: ``d_out <= reg * l_in + u_in`` (rounded to A),
  ``r_out <= l_in`` (the input passes right);
* bit 1 ``load``: ``reg <= l_in``, ``r_out <= reg`` (weights shift in
  along the row, like FSA's ``load_reg_li``);
* ``ctrl_out <= ctrl_in``; everything else holds; synchronous reset.

The multiply-add reuses ``rtl/fp/fsa_fma.py`` (the same arithmetic as the
FSA PE: RNE, subnormals) with its ``exp2`` input tied to 0, so synthesis
removes the exp2 datapath; ``fsa_fma``'s E-format output and piece logic are
left unconnected (also removed).
"""
from __future__ import annotations

from pathlib import Path

from myhdl import ResetSignal, always_comb, always_seq, block

import common  # noqa: F401  (sys.path)
from fsa.formats import get_format
from rtl.convert import Const, convert_block, sig, submodule
from rtl.fp import fsa_fma

MODULE = "ws_pe"
MAC, LOAD = 0, 1


@block
def ws_pe(clk, rst, l_in, u_in, ctrl_in, r_out, d_out, ctrl_out, e_type="fp16", a_type="fp32",
          pieces=8):
    ew, aw = get_format(e_type).width, get_format(a_type).width
    sreg = sig(ew)
    f_a, f_e = sig(aw), sig(ew)
    piece = sig(max(1, (pieces - 1).bit_length()))
    match = sig(1)
    u_fma = submodule(fsa_fma.fsa_fma, (sreg, l_in, u_in, Const(1, 0), f_a, f_e, piece, match),
                      dict(mul=e_type, add=a_type, pieces=pieces),
                      fsa_fma.module_name(e_type, a_type, pieces), "u_fma",
                      {"a": sreg, "b": l_in, "c": u_in, "exp2": Const(1, 0), "out_a": f_a,
                       "out_e": f_e, "piece": piece, "match": match},
                      {"out_a", "out_e", "piece", "match"})
    unused = sig(ew + len(piece) + 1)

    @always_comb
    def sink():
        unused.next = (f_e << (len(piece) + 1)) | (piece << 1) | match

    @always_seq(clk.posedge, reset=rst)
    def step():
        ctrl_out.next = ctrl_in
        if ctrl_in[LOAD]:
            sreg.next = l_in
            r_out.next = sreg
        elif ctrl_in[MAC]:
            d_out.next = f_a
            r_out.next = l_in

    return u_fma, sink, step


def convert(outdir: "str | Path", e_type: str = "fp16", a_type: str = "fp32",
            pieces: int = 8) -> list[Path]:
    """Write ``ws_pe.v`` and the ``fsa_fma`` module it instantiates."""
    ew, aw = get_format(e_type).width, get_format(a_type).width
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), l_in=sig(ew), u_in=sig(aw),
             ctrl_in=sig(2), r_out=sig(ew), d_out=sig(aw), ctrl_out=sig(2))
    pe = convert_block(lambda: ws_pe(**p, e_type=e_type, a_type=a_type, pieces=pieces), MODULE,
                       outdir)
    fma = fsa_fma.convert(outdir, mul=e_type, add=a_type, pieces=pieces)
    return [fma, pe]


if __name__ == "__main__":
    import sys
    out = convert(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ws_pe")
    print("\n".join(map(str, out)))
