"""cocotb bench of one array unit (fsa_pe, fsa_cmp or fsa_acc, driven from
``tb/units/test_units.py``; the UD fsa_pe and fsa_bcmp, driven from
``tb/units/test_ud_units.py``), one cocotb test per unit, ``replay_<unit>``
(named so that no test's name ends with another's: cocotb_tools selects a
``testcase`` by the end of its name).

The pytest side generates a per-cycle input sequence and the expected
outputs from the models of ``tb/units/models.py`` / ``tb/units/ud_models.py``
and passes them in an .npz (``tb.units.stimuli.npz_case``) named by
``$FSA_UNIT_CASE``:

* ``inputs``: names of the input ports driven each cycle, arrays ``in_<name>``
  (``rst`` among them: a synchronous reset pulse in mid-sequence);
* ``regs``: registered outputs and internal state registers (``sreg``,
  ``new_max``, ``old_max``, ``scale``), arrays ``exp_<name>`` (value after the
  edge ending cycle t) and ``rst_<name>`` (value after the reset);
* ``combs``: combinational outputs (ACC ``wb``), arrays ``exp_<name>`` (value
  during cycle t) and ``valid_<name>`` (cycles where the contract defines it);
* ``w_<name>``: widths in bits (for hex in messages); ``labels``: a short
  text per cycle (the command or control bits) for messages.

Driver: synchronous reset first (two edges), then one input vector per
clock cycle, written right after the rising edge.  Monitor: in the ReadOnly
phase of every cycle it records the registered outputs (the values written
at the previous edge) and the combinational ones (this cycle's).  Checker:
bulk comparison at the end; the failure message gives the number of
mismatching cycles and the first few (cycle, inputs, got, model, in hex).
"""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

#: how many mismatching cycles the failure message lists
SHOW = 10


def _read(handle) -> int:
    """Integer value of a signal; -1 if it holds X/Z."""
    try:
        return int(handle.value)
    except ValueError:
        return -1


def _hex(v: int, bits: int) -> str:
    d = (bits + 3) // 4
    return "X" * d if v < 0 else f"{v:0{d}x}"


async def _run(dut, unit: str) -> None:
    d = np.load(os.environ["FSA_UNIT_CASE"])
    assert str(d["unit"]) == unit, f"case is for {d['unit']}, bench is {unit}"
    inputs = [str(x) for x in d["inputs"]]
    regs = [str(x) for x in d["regs"]]
    combs = [str(x) for x in d["combs"]]
    width = {k[2:]: int(d[k]) for k in d.files if k.startswith("w_")}
    labels = [str(x) for x in d["labels"]]
    vin = {k: d[f"in_{k}"].astype(np.int64).tolist() for k in inputs}
    n = len(vin[inputs[0]])
    h_in = {k: getattr(dut, k) for k in inputs}
    h_reg = {k: getattr(dut, k) for k in regs}
    h_comb = {k: getattr(dut, k) for k in combs}

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for k, h in h_in.items():
        h.value = 0
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0

    got_reg = {k: [0] * (n + 1) for k in regs}
    got_comb = {k: [0] * n for k in combs}
    cols_in = [(h_in[k], vin[k]) for k in inputs]
    cols_reg = [(h_reg[k], got_reg[k]) for k in regs]
    cols_comb = [(h_comb[k], got_comb[k]) for k in combs]
    for t in range(n):
        for h, v in cols_in:
            h.value = v[t]
        await ReadOnly()
        for h, g in cols_reg:
            g[t] = _read(h)
        for h, g in cols_comb:
            g[t] = _read(h)
        await RisingEdge(dut.clk)
    await ReadOnly()
    for h, g in cols_reg:
        g[n] = _read(h)

    # ---- check
    bad = np.zeros(n + 1, dtype=bool)          # index t+1: state after cycle t; 0: after reset
    diff: dict[str, np.ndarray] = {}
    for k in regs:
        exp = np.concatenate([[int(d[f"rst_{k}"])], d[f"exp_{k}"].astype(np.int64)])
        diff[k] = np.asarray(got_reg[k], np.int64) != exp
        bad |= diff[k]
    for k in combs:
        valid = d[f"valid_{k}"].astype(bool)
        m = (np.asarray(got_comb[k], np.int64) != d[f"exp_{k}"].astype(np.int64)) & valid
        diff[k] = np.zeros(n + 1, dtype=bool)
        diff[k][1:] = m                            # cycle t's value at index t + 1
        bad |= diff[k]
    nbad = int(bad.sum())
    ncomb = sum(int(d[f"valid_{k}"].sum()) for k in combs)
    dut._log.info("%s: %d cycles, %d register/state values and %d combinational values "
                  "checked (%s), %d mismatching cycles", unit, n, (n + 1) * len(regs),
                  ncomb, ", ".join(regs + combs), nbad)
    if nbad:
        lines = []
        for i in np.flatnonzero(bad)[:SHOW]:
            i = int(i)
            t = i - 1
            if t < 0:
                head = "  after reset:"
            else:
                ins = " ".join(f"{k}={_hex(vin[k][t], width[k])}" for k in inputs)
                head = f"  cycle {t} [{labels[t]}] {ins}:"
            parts = []
            for k in regs:
                if diff[k][i]:
                    exp = int(d[f"rst_{k}"]) if t < 0 else int(d[f"exp_{k}"][t])
                    parts.append(f"{k} got {_hex(got_reg[k][i], width[k])} "
                                 f"model {_hex(exp, width[k])}")
            for k in combs:
                if diff[k][i]:
                    parts.append(f"{k} got {_hex(got_comb[k][t], width[k])} "
                                 f"model {_hex(int(d[f'exp_{k}'][t]), width[k])}")
            lines.append(head + " " + "; ".join(parts))
        raise AssertionError(f"{unit}: {nbad} of {n + 1} cycles mismatch; first "
                             f"{len(lines)}:\n" + "\n".join(lines))


@cocotb.test()
async def replay_pe(dut):
    """fsa_pe against tb.units.models.PEModel."""
    await _run(dut, "pe")


@cocotb.test()
async def replay_cmp(dut):
    """fsa_cmp against tb.units.models.CMPModel."""
    await _run(dut, "cmp")


@cocotb.test()
async def replay_acc(dut):
    """fsa_acc against tb.units.models.ACCModel."""
    await _run(dut, "acc")


@cocotb.test()
async def replay_pe_ud(dut):
    """The UD fsa_pe against tb.units.ud_models.UDPEModel."""
    await _run(dut, "pe_ud")


@cocotb.test()
async def replay_bcmp(dut):
    """fsa_bcmp against tb.units.ud_models.BCMPModel."""
    await _run(dut, "bcmp")
