"""Shared hardware primitives, written once and used by several units.

* :func:`mux_tree`: ``o = inputs[sel]`` as a tree of 2:1 muxes
  (fsa_sram's read data, fsa_dma's granted-port request);
* :func:`fifo`: circular-buffer FIFO, memory + pointers + count
  (fsa_dma_port: the descriptor FIFO and the W data FIFO);
* :func:`normalise`: leading-zero count and normalising shift
  (fsa_cvt, fsa_div: subnormal mantissas; fsa_fma: the exact sum);
* :func:`round_rne`: round a normalised magnitude to a format, nearest
  even, subnormals and overflow included (fsa_fma: once to A, once to M);
* :func:`rr_arbiter`: round-robin arbiter whose grant holds until accepted
  (fsa_dma: the SRAM narrow port shared by the AXI ports);
* :func:`clog2`, :func:`zext`, :func:`vsig`, :class:`Bundle`: elaboration
  helpers (index widths, zero extension of a signal, bit-vector signals,
  groups of ports), no hardware of their own.

Each primitive is a MyHDL ``@block`` that is *inlined* into the module of the
unit that uses it (MyHDL flattens sub-blocks into the converted module: one
``always`` block or memory per primitive instance, named after the instance),
not a Verilog module of its own.  Why: the primitives are a few lines of
Verilog each (a 2:1 mux, a 7-stage shifter) and are parameterised by widths
and constants, so separate modules would mean one tiny module per width
combination, a port list longer than the logic, and every unit bench would
need extra files (each unit converts to exactly one ``.v`` file).  Inlined,
the reader sees the logic where it is used, and the simulated design gets no
extra module boundary or port (the simulators see the same kind of flat
``always`` blocks as before the primitives were shared).  The units that deserve a module of
their own (the DMA's per-port engine, the SRAM) are converted separately
through :func:`rtl.convert.submodule`.

The generated Verilog of every primitive is ``verilator --lint-only -Wall``
clean (``tb/prim/test_prim.py`` lints one wrapper holding them all; each user's
lint covers the widths it instantiates).
"""
from rtl.prim.arbiter import rr_arbiter
from rtl.prim.bits import Bundle, clog2, vsig, zext
from rtl.prim.fifo import fifo
from rtl.prim.mux import mux_tree
from rtl.prim.normalise import normalise
from rtl.prim.rounding import round_rne

__all__ = ["Bundle", "clog2", "zext", "vsig", "fifo", "mux_tree", "normalise", "round_rne",
           "rr_arbiter"]
