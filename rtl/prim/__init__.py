"""Shared hardware primitives, written once and used by several units.

======================  =========================================  ==========================
primitive               what                                       used by
======================  =========================================  ==========================
:func:`mux_tree`        ``o = inputs[sel]`` as a tree of 2:1 muxes  fsa_sram, fsa_dma
:func:`fifo`            circular-buffer FIFO (memory + pointers)    fsa_dma_port (twice)
:func:`normalise`       leading-zero count and normalising shift    fsa_cvt, fsa_div, fsa_fma
:func:`round_rne`       round a normalised magnitude to a format    fsa_fma (twice)
:func:`clog2`,          elaboration helpers (index widths,          fsa_sram, fsa_dma,
:func:`zext`, :func:`vsig` zero extension, bit-vector signals)     fsa_dma_port
======================  =========================================  ==========================

Each primitive is a MyHDL ``@block`` that is *inlined* into the module of the
unit that uses it (MyHDL flattens sub-blocks into the converted module: one
``always`` block or memory per primitive instance, named after the instance),
not a Verilog module of its own.  Why: the primitives are a few lines of
Verilog each (a 2:1 mux, a 7-stage shifter) and are parameterised by widths
and constants, so separate modules would mean one tiny module per width
combination, a port list longer than the logic, and every unit bench would
need extra files (each unit converts to exactly one ``.v`` file).  Inlined,
the reader sees the logic where it is used, and Verilator optimises across it
as before (simulation speed unchanged).  The units that deserve a module of
their own (the DMA's per-port engine, the SRAM) are converted separately
through :func:`rtl.convert.submodule`.

The generated Verilog of every primitive is ``verilator --lint-only -Wall``
clean at the widths its users instantiate (checked by ``tb/test_prim.py`` and
the lint of each user).
"""
from rtl.prim.arbiter import rr_arbiter
from rtl.prim.bits import Bundle, clog2, vsig, zext
from rtl.prim.fifo import fifo
from rtl.prim.mux import mux_tree
from rtl.prim.normalise import normalise
from rtl.prim.rounding import round_rne

__all__ = ["Bundle", "clog2", "zext", "vsig", "fifo", "mux_tree", "normalise", "round_rne",
           "rr_arbiter"]
