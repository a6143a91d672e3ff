"""cocotb bench of the pipelined FMA ``fsa_fma_..._s<N>[_en]`` (driven from
``tb/fma/test_fma_pipe.py``).

The stream comes in an .npz file named by ``$FSA_FMA_VECTORS``: per clock
cycle the inputs ``a``, ``b``, ``c``, ``exp2`` (and ``en`` for the gated
variant), the expected ``out_a``, ``out_e``, ``piece``, ``match`` of the
vector issued in that cycle, ``check`` (1 where they are to be compared: 0
for the ungated unit's gap cycles, whose inputs are junk), and the scalars
``stages`` (the latency), ``wm``, ``wa``.

Driver: one cycle's inputs at each falling edge of ``clk``.  Monitor: the
outputs at the same falling edge belong to the cycle issued ``stages``
cycles earlier (they settle after the rising edge in between).  Checker:
everything compared in bulk at the end, failing with the number of
mismatches and the first few.
"""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from tb.fma.tb_fma import _read, mismatch_lines


@cocotb.test()
async def fma_pipe_stream(dut):
    """Issue one vector (or a gap) per cycle; compare the outputs `stages` cycles later."""
    d = np.load(os.environ["FSA_FMA_VECTORS"])
    L, wm, wa = int(d["stages"]), int(d["wm"]), int(d["wa"])
    a, b, c, e2 = (d[k].astype(np.int64).tolist() for k in ("a", "b", "c", "exp2"))
    en = d["en"].astype(np.int64).tolist() if "en" in d.files else None
    n = len(a)
    cocotb.start_soon(Clock(dut.clk, 2, unit="ns").start())
    ha, hb, hc, he = dut.a, dut.b, dut.c, dut.exp2
    hen = dut.en if en is not None else None
    hoa, hoe, hpc, hmt = dut.out_a, dut.out_e, dut.piece, dut.match
    got = np.full((4, n), -2, np.int64)
    for j in range(n + L):
        await FallingEdge(dut.clk)
        if j >= L:
            got[:, j - L] = (_read(hoa), _read(hoe), _read(hpc), _read(hmt))
        if j < n:
            ha.value, hb.value, hc.value, he.value = a[j], b[j], c[j], e2[j]
            if hen is not None:
                hen.value = en[j]
    want = np.stack([d[k].astype(np.int64) for k in ("out_a", "out_e", "piece", "match")])
    check = d["check"].astype(bool)
    bad = check & np.any(got != want, axis=0)
    nbad = int(bad.sum())
    dut._log.info("fsa_fma_pipe (%d stages): %d cycles, %d checked, %d mismatches",
                  L, n, int(check.sum()), nbad)
    if nbad:
        lines = mismatch_lines(bad, "cycle ", a, b, c, e2, got, want, wm, wa, en)
        raise AssertionError(f"fsa_fma_pipe: {nbad} of {int(check.sum())} checked cycles "
                             f"mismatch; first {len(lines)}:\n" + "\n".join(lines))
