"""cocotb bench of ``fsa_fma`` (driven from ``tb/fma/test_fma.py``).

The vectors and the expected bits (from ``fsa.numerics``) come in an .npz
file named by ``$FSA_FMA_VECTORS``: arrays ``a``, ``b``, ``c``, ``exp2``,
``out_a``, ``out_e``, ``piece``, ``match`` and the scalars ``wm``, ``wa``
(hex widths for messages); for the gated variant (``fsa_fma_..._en``) also
``en``, driven on its ``en`` port (the expected outputs are 0 where it is 0).

Driver: one vector per 1 ns step (the unit is combinational).  Monitor:
records the four outputs after each step.  Checker: compares everything in
bulk at the end and fails with the number of mismatches and the first few
(inputs and both bit patterns in hex).  NaN results are compared as raw
bits (the unit and the model both produce the canonical NaN).
"""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.triggers import Timer

#: how many mismatching vectors the failure message lists
SHOW = 12


def _hex(v: int, digits: int) -> str:
    return "X" * digits if v < 0 else f"{v:0{digits}x}"


def _read(handle) -> int:
    """Integer value of an output; -1 if it holds X/Z (Icarus)."""
    try:
        return int(handle.value)
    except ValueError:
        return -1


def mismatch_lines(bad, label: str, a, b, c, e2, got, want, wm: int, wa: int,
                   en=None) -> "list[str]":
    """The failure message's lines for the first `SHOW` entries where `bad`
    holds: `label` and the index, the inputs (and `en` where given), and the
    outputs ``out_a``, ``out_e``, ``piece``, ``match`` (rows 0..3 of `got` /
    `want`) in hex, X for an unknown value."""
    hm, ha_ = (wm + 3) // 4, (wa + 3) // 4
    lines = []
    for i in np.flatnonzero(bad)[:SHOW]:
        i = int(i)
        lines.append(
            f"  {label}{i} {'exp2' if e2[i] else 'fma '}"
            f"{'' if en is None else f' en={en[i]}'} a={a[i]:0{hm}x} b={b[i]:0{hm}x} "
            f"c={c[i]:0{ha_}x} | out_a got {_hex(int(got[0][i]), ha_)} exp "
            f"{int(want[0][i]):0{ha_}x} | out_e got {_hex(int(got[1][i]), hm)} exp "
            f"{int(want[1][i]):0{hm}x} | piece got {got[2][i]} exp {want[2][i]} | match "
            f"got {got[3][i]} exp {want[3][i]}")
    return lines


@cocotb.test()
async def fma_vectors(dut):
    """Stream all vectors through the unit and compare with the model."""
    path = os.environ["FSA_FMA_VECTORS"]
    d = np.load(path)
    a, b, c, e2 = (d[k].astype(np.int64).tolist() for k in ("a", "b", "c", "exp2"))
    n = len(a)
    wm, wa = int(d["wm"]), int(d["wa"])
    en = d["en"].astype(np.int64).tolist() if "en" in d.files else None
    ha, hb, hc, he = dut.a, dut.b, dut.c, dut.exp2
    hen = dut.en if en is not None else None
    hoa, hoe, hpc, hmt = dut.out_a, dut.out_e, dut.piece, dut.match
    got_a, got_e, got_p, got_m = [], [], [], []
    for i in range(n):
        ha.value = a[i]
        hb.value = b[i]
        hc.value = c[i]
        he.value = e2[i]
        if hen is not None:
            hen.value = en[i]
        await Timer(1, unit="ns")
        got_a.append(_read(hoa))
        got_e.append(_read(hoe))
        got_p.append(_read(hpc))
        got_m.append(_read(hmt))
    got = [np.array(g) for g in (got_a, got_e, got_p, got_m)]
    want = [d[k].astype(np.int64) for k in ("out_a", "out_e", "piece", "match")]
    bad = np.zeros(n, dtype=bool)
    for g, w in zip(got, want):
        bad |= g != w
    nbad = int(bad.sum())
    dut._log.info("fsa_fma: %d vectors (%d exp2-mode), %d mismatches",
                  n, int(np.sum(d["exp2"])), nbad)
    if nbad:
        lines = mismatch_lines(bad, "#", a, b, c, e2, got, want, wm, wa)
        raise AssertionError(f"fsa_fma: {nbad} of {n} vectors mismatch; first {len(lines)}:\n"
                             + "\n".join(lines))
