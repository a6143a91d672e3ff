"""cocotb benches of ``fsa_fcmp``, ``fsa_cvt`` and ``fsa_div`` (driven from
``tb/fp_misc/test_fp_misc.py``).

The units under test are instances in one wrapper toplevel (built once for
all cases); ``$FSA_FP_PREFIX`` names the instance's port prefix (e.g.
``fcmp_fp32_``: ports ``fcmp_fp32_a`` ...; empty when the unit itself is the
toplevel).  The vectors and the expected bits (from ``fsa.numerics``) come in
an .npz file named by ``$FSA_FP_VECTORS``:

* fcmp: ``a``, ``b``, ``diff``, ``mx``, scalar ``w`` (width);
* cvt: ``x``, ``y``, scalars ``ws``, ``wd`` (source / destination widths);
* div: ``x``, ``y``, scalars ``w`` and ``latency``.

Driver: combinational units get one vector per 1 ns step; the divider gets
back-to-back starts (Python wakes on the start edge and on the rising edge
of ``done`` only, not on every clock).  Monitor: records the outputs (and,
for the divider, the cycles from the start edge to ``done``).  Checker:
compares everything in bulk at the end and fails with the number of
mismatches and the first few (inputs and both bit patterns in hex).  NaN
results are compared as raw bits: the units and the model both produce the
canonical NaN.
"""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

#: how many mismatching vectors the failure message lists
SHOW = 12
#: divider clock period (ns)
PERIOD = 10
#: the divider watchdog fails the test when no done comes for this many cycles
WATCH = 200


def _load() -> "np.lib.npyio.NpzFile":
    return np.load(os.environ["FSA_FP_VECTORS"])


class _Ports:
    """The unit's ports: ``ports.a`` is ``dut.<prefix>a``."""

    def __init__(self, dut):
        self._dut = dut
        self._prefix = os.environ.get("FSA_FP_PREFIX", "")

    def __getattr__(self, name):
        return getattr(self._dut, self._prefix + name)


def _read(handle) -> int:
    """Integer value of an output; -1 if it holds X/Z (Icarus)."""
    try:
        return int(handle.value)
    except ValueError:
        return -1


def _hex(v: int, width: int) -> str:
    digits = (width + 3) // 4
    return "X" * digits if v < 0 else f"{v:0{digits}x}"


def _check(unit: str, n: int, bad: np.ndarray, describe) -> None:
    """Fail with the mismatch count and the first `SHOW` mismatches."""
    nbad = int(bad.sum())
    if nbad:
        lines = [describe(int(i)) for i in np.flatnonzero(bad)[:SHOW]]
        raise AssertionError(f"{unit}: {nbad} of {n} vectors mismatch; first {len(lines)}:\n"
                             + "\n".join(lines))


# ---------------------------------------------------------------------- fcmp
@cocotb.test()
async def fcmp_vectors(dut):
    """Stream (a, b) pairs through fsa_fcmp; check diff and mx."""
    d = _load()
    a, b = d["a"].astype(np.int64).tolist(), d["b"].astype(np.int64).tolist()
    exp_d, exp_m = d["diff"].astype(np.int64), d["mx"].astype(np.int64)
    w = int(d["w"])
    n = len(a)
    u = _Ports(dut)
    ha, hb, hd, hm = u.a, u.b, u.diff, u.mx
    got_d, got_m = [], []
    for i in range(n):
        ha.value = a[i]
        hb.value = b[i]
        await Timer(1, unit="ns")
        got_d.append(_read(hd))
        got_m.append(_read(hm))
    gd, gm = np.array(got_d), np.array(got_m)
    bad = (gd != exp_d) | (gm != exp_m)
    dut._log.info("fsa_fcmp: %d vectors, %d mismatches", n, int(bad.sum()))
    _check("fsa_fcmp", n, bad, lambda i: (
        f"  #{i} a={_hex(a[i], w)} b={_hex(b[i], w)} | diff got {_hex(got_d[i], w)} "
        f"exp {_hex(int(exp_d[i]), w)} | mx got {_hex(got_m[i], w)} exp {_hex(int(exp_m[i]), w)}"))


# ----------------------------------------------------------------------- cvt
@cocotb.test()
async def cvt_vectors(dut):
    """Stream x through fsa_cvt; check y."""
    d = _load()
    x = d["x"].astype(np.int64).tolist()
    exp = d["y"].astype(np.int64)
    ws, wd = int(d["ws"]), int(d["wd"])
    n = len(x)
    u = _Ports(dut)
    hx, hy = u.x, u.y
    got = []
    for i in range(n):
        hx.value = x[i]
        await Timer(1, unit="ns")
        got.append(_read(hy))
    g = np.array(got)
    bad = g != exp
    dut._log.info("fsa_cvt: %d vectors, %d mismatches", n, int(bad.sum()))
    _check("fsa_cvt", n, bad, lambda i: (
        f"  #{i} x={_hex(x[i], ws)} | y got {_hex(got[i], wd)} exp {_hex(int(exp[i]), wd)}"))


# ----------------------------------------------------------------------- div
async def _reset(u: _Ports) -> None:
    u.rst.value = 1
    u.start.value = 0
    u.x.value = 0
    await ClockCycles(u.clk, 2)
    u.rst.value = 0
    await RisingEdge(u.clk)


@cocotb.test()
async def div_vectors(dut):
    """Back-to-back reciprocals: check every y and that done comes exactly
    `latency` cycles after each start edge."""
    u = _Ports(dut)
    d = _load()
    x = d["x"].astype(np.int64).tolist()
    exp = d["y"].astype(np.int64)
    w, lat = int(d["w"]), int(d["latency"])
    n = len(x)
    cocotb.start_soon(Clock(u.clk, PERIOD, unit="ns").start())
    await _reset(u)
    hx, hs, hy, hdone, hclk = u.x, u.start, u.y, u.done, u.clk
    got, cycles = [], []

    async def watchdog():
        # cheap cycle limit: wakes once per WATCH cycles, not per vector
        seen = -1
        while True:
            await Timer(WATCH * PERIOD, unit="ns")
            if len(got) == seen:
                i = len(got)
                raise AssertionError(f"fsa_div: no done for {WATCH} cycles (latency {lat}) "
                                     f"after the start of vector #{i} (x={_hex(x[i], w)})")
            seen = len(got)

    cocotb.start_soon(watchdog())
    for i in range(n):
        hx.value = x[i]
        hs.value = 1
        await RisingEdge(hclk)                # this edge samples start
        t0 = get_sim_time("ns")
        hs.value = 0
        await RisingEdge(hdone)
        cycles.append(round((get_sim_time("ns") - t0) / PERIOD))
        got.append(_read(hy))
    g, c = np.array(got), np.array(cycles)
    bad = (g != exp) | (c != lat)
    dut._log.info("fsa_div: %d vectors, latency %d, %d mismatches", n, lat, int(bad.sum()))
    _check("fsa_div", n, bad, lambda i: (
        f"  #{i} x={_hex(x[i], w)} | y got {_hex(got[i], w)} exp {_hex(int(exp[i]), w)} "
        f"| done after {cycles[i]} cycles, exp {lat}"))


@cocotb.test()
async def div_handshake(dut):
    """ready/done/y protocol: ready high while idle, done exactly one cycle
    (at edge `latency`), y held afterwards, start ignored while busy, and a
    reset in mid-operation returns the unit to ready with no done."""
    u = _Ports(dut)
    d = _load()
    w, lat = int(d["w"]), int(d["latency"])
    x0, y0 = int(d["x"][0]), int(d["y"][0])
    x1, y1 = int(d["x"][1]), int(d["y"][1])
    cocotb.start_soon(Clock(u.clk, PERIOD, unit="ns").start())
    await _reset(u)
    await ReadOnly()
    assert int(u.ready.value) == 1, "ready low after reset"
    assert int(u.done.value) == 0, "done high after reset"

    # one operation, sampled every cycle: ready/done waveform and y hold
    await RisingEdge(u.clk)
    u.x.value = x0
    u.start.value = 1
    await RisingEdge(u.clk)                 # edge 0: start sampled
    u.start.value = 0
    trace = []
    for k in range(1, lat + 5):
        await RisingEdge(u.clk)             # edge k
        await ReadOnly()
        trace.append((k, int(u.ready.value), int(u.done.value)))
        if k == lat:
            assert int(u.y.value) == y0, (
                f"y={_hex(int(u.y.value), w)} at done, expected {_hex(y0, w)}")
    for k, rdy, dn in trace:
        assert dn == (1 if k == lat else 0), f"done={dn} after edge {k} (latency {lat}): {trace}"
        assert rdy == (1 if k >= lat else 0), f"ready={rdy} after edge {k} (latency {lat}): {trace}"
    assert int(u.y.value) == y0, "y did not hold its value after done"

    # start held high while busy: only the first start counts
    await RisingEdge(u.clk)
    u.x.value = x1
    u.start.value = 1
    await RisingEdge(u.clk)                 # edge 0
    u.x.value = x0                          # must be ignored (busy)
    for k in range(1, lat + 1):
        await RisingEdge(u.clk)
        await ReadOnly()
        if k < lat:
            assert int(u.done.value) == 0, f"done early, after edge {k}"
    assert int(u.done.value) == 1, "no done after a start held high"
    assert int(u.y.value) == y1, f"y={_hex(int(u.y.value), w)}, expected {_hex(y1, w)}"
    await RisingEdge(u.clk)                 # edge lat + 1: start sampled again (x0)
    u.start.value = 0

    # reset in mid-operation
    for k in range(3):
        await RisingEdge(u.clk)
    await ReadOnly()
    assert int(u.ready.value) == 0, "ready high in mid-operation"
    await RisingEdge(u.clk)
    u.rst.value = 1
    await RisingEdge(u.clk)
    u.rst.value = 0
    await ReadOnly()
    assert int(u.ready.value) == 1, "ready low after a reset in mid-operation"
    assert int(u.done.value) == 0, "done high after a reset"
    assert int(u.y.value) == 0, "y not reset"
    for k in range(lat + 4):
        await RisingEdge(u.clk)
        await ReadOnly()
        assert int(u.done.value) == 0, f"done {k + 1} cycles after a reset with no start"
        assert int(u.ready.value) == 1, "ready dropped with no start"

    # and the unit works again
    await RisingEdge(u.clk)
    u.x.value = x1
    u.start.value = 1
    await RisingEdge(u.clk)
    u.start.value = 0
    await ClockCycles(u.clk, lat)
    await ReadOnly()
    assert int(u.done.value) == 1, "no done after reset and a new start"
    assert int(u.y.value) == y1, "wrong y after reset and a new start"
