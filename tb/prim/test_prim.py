"""Shared hardware primitives (``rtl/prim/``): each one simulated in MyHDL
against a plain Python reference, each one converted inside a small wrapper
and linted with ``verilator --lint-only -Wall`` (no waivers), and the SRAM's
simulation-only memory zeroing.

The primitives' Verilog is also checked bit for bit through their users'
benches (``tb/fma/test_fma.py``, ``tb/fp_misc/test_fp_misc.py``, ``tb/dma/test_dma.py``,
``tb/sram/test_sram.py``).
"""
from __future__ import annotations

import random
import re
import subprocess
from collections import deque
from fractions import Fraction

import pytest
from myhdl import ResetSignal, Signal, Simulation, StopSimulation, block, delay, instance, intbv

from fsa.formats import get_format
from rtl.convert import convert_block, sig
from rtl.prim import clog2, fifo, mux_tree, normalise, round_rne, rr_arbiter
from fsa import simrun


def _run(*gens):
    Simulation(*gens).run(quiet=1)


# ------------------------------------------------------------ normalise
def _lz(v: int, n: int) -> int:
    return n - v.bit_length()


@pytest.mark.parametrize("n", [7, 10, 16, 23, 75])
def test_normalise(n):
    """lz is the leading-zero count and xn = x << lz for every nonzero x
    (edge values and random ones); zero gives xn = 0."""
    rng = random.Random(n)
    lzw = clog2(1 << (n - 1).bit_length()) + 2      # wider than needed: top bits stay 0
    x, lz, xn = sig(n), sig(lzw), sig(n)
    dut = normalise(x, lz, xn)
    vals = [0, 1, 2, 3, (1 << n) - 1, 1 << (n - 1)] + [1 << k for k in range(n)]
    vals += [rng.getrandbits(rng.randint(1, n)) for _ in range(300)]
    seen = []

    @instance
    def drive():
        for v in vals:
            x.next = v
            yield delay(1)
            seen.append((v, int(lz), int(xn)))
        raise StopSimulation

    _run(dut, drive)
    assert len(seen) == len(vals)
    for v, got_lz, got_xn in seen:
        if v == 0:
            assert got_xn == 0
            continue
        assert got_lz == _lz(v, n), (v, got_lz)
        assert got_xn == (v << got_lz) and got_xn >> (n - 1) == 1, (v, got_xn)


# ------------------------------------------------------------ round_rne
def _rne_ref(value: Fraction, fmt) -> int:
    """Magnitude bits of RNE_fmt(value) (value > 0), inf on overflow."""
    e = value.numerator.bit_length() - value.denominator.bit_length()
    while Fraction(2) ** e > value:
        e -= 1
    while Fraction(2) ** (e + 1) <= value:
        e += 1
    e = max(e, fmt.emin)                         # subnormal: fixed quantum
    q = value / Fraction(2) ** (e - fmt.man_bits)
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n & 1):
        n += 1
    if n == 1 << fmt.precision:                  # carry into the next binade
        n >>= 1
        e += 1
    if n < 1 << fmt.man_bits:                    # subnormal (or rounded to 0)
        return n
    if e > fmt.emax:
        return fmt.pos_inf
    return ((e + fmt.bias) << fmt.man_bits) | (n - (1 << fmt.man_bits))


@pytest.mark.parametrize("fname", ["fp16", "bf16", "fp32"])
def test_round_rne(fname):
    """Against an exact rational reference: normal, subnormal, tiny (rounds
    to 0 or the smallest subnormal), overflow to inf, ties both ways."""
    fmt = get_format(fname)
    rng = random.Random(fname)
    NX, OFS, EW = fmt.precision + 12, 1024, 12
    y, emsb, enc = sig(NX), sig(EW), sig(fmt.exp_bits + fmt.man_bits + 1)
    dut = round_rne(y, emsb, enc, fmt, OFS)
    cases = []
    for _ in range(600):
        e = rng.choice([rng.randint(fmt.emin - fmt.precision - 3, fmt.emax + 2),
                        rng.randint(fmt.emin - 3, fmt.emin + 2), fmt.emax, fmt.emax + 1])
        top = 1 << (NX - 1)
        kind = rng.random()
        if kind < 0.2:      # an exact tie at the normal rounding position
            low = 1 << (NX - 1 - fmt.precision)
            yv = top | (rng.getrandbits(fmt.precision - 1) << (NX - fmt.precision)) | low
        elif kind < 0.3:    # all ones (carries through)
            yv = (1 << NX) - 1
        else:
            yv = top | rng.getrandbits(NX - 1)
        cases.append((yv, e + OFS))
    seen = []

    @instance
    def drive():
        for yv, ev in cases:
            y.next = yv
            emsb.next = ev
            yield delay(1)
            seen.append(int(enc))
        raise StopSimulation

    _run(dut, drive)
    for (yv, ev), got in zip(cases, seen):
        value = Fraction(yv) * Fraction(2) ** (ev - OFS - (NX - 1))
        assert got == _rne_ref(value, fmt), (fname, hex(yv), ev - OFS, hex(got))


# ------------------------------------------------------------ fifo
@pytest.mark.parametrize("depth", [2, 3, 4, 8])
def test_fifo(depth):
    """Random pushes and pops (never past full or empty) against a deque:
    the head word and the count, every cycle; reset empties it."""
    rng = random.Random(depth)
    clk, rst = sig(1), ResetSignal(1, active=1, isasync=False)
    push, pop, din, dout = sig(1), sig(1), sig(12), sig(12)
    count = sig(clog2(depth) + 1)
    dut = fifo(clk, rst, push, din, pop, dout, count, depth)
    model: deque = deque()
    log = {"checked": 0}

    @instance
    def drive():
        clk.next = 0
        yield delay(1)
        clk.next = 1        # one edge in reset
        yield delay(1)
        rst.next = 0
        for cyc in range(400):
            clk.next = 0
            do_pop = bool(model) and rng.random() < 0.5
            do_push = (len(model) < depth or do_pop) and rng.random() < 0.55
            push.next, pop.next, din.next = do_push, do_pop, rng.getrandbits(12)
            yield delay(1)
            assert int(count) == len(model), cyc
            if model:
                assert int(dout) == model[0], cyc
                log["checked"] += 1
            v = int(din)
            clk.next = 1
            yield delay(1)
            if do_pop:
                model.popleft()
            if do_push:
                model.append(v)
        raise StopSimulation

    _run(dut, drive)
    assert log["checked"] > 100


# ------------------------------------------------------------ mux_tree
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_mux_tree(n):
    ins = [sig(8, 17 * i + 3) for i in range(n)]
    sel, o = Signal(intbv(0)[clog2(n):]), sig(8)
    dut = mux_tree(ins, sel, o)
    seen = []

    @instance
    def drive():
        for i in range(n):
            sel.next = i
            yield delay(1)
            seen.append(int(o))
        raise StopSimulation

    _run(dut, drive)
    assert seen == [17 * i + 3 for i in range(n)]


# ------------------------------------------------------------ rr_arbiter
@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_rr_arbiter(n):
    """The grant is exactly the round-robin choice: the first requester at or
    after the priority pointer (0 after reset; after an accepted grant the
    one after it, after a stalled one the stalled requester itself), so a
    stalled grant holds; with everyone requesting and every grant accepted,
    the grants rotate 0, 1, ..., n-1."""
    rng = random.Random(n)
    clk, rst = sig(1), ResetSignal(1, active=1, isasync=False)
    reqs, grants = [sig(1) for _ in range(n)], [sig(1) for _ in range(n)]
    any_req, accept, gidx = sig(1), sig(1), Signal(intbv(0)[clog2(n):])
    dut = rr_arbiter(clk, rst, reqs, any_req, accept, grants, gidx)
    order = []

    @instance
    def drive():
        clk.next = 0
        yield delay(1)
        clk.next = 1
        yield delay(1)
        rst.next = 0
        held = None
        ptr = 0         # the model's priority pointer
        for cyc in range(300 + n):
            clk.next = 0
            rotate = cyc >= 300
            r = [True] * n if rotate else [rng.random() < 0.5 for _ in range(n)]
            if held is not None:
                r[held] = True          # a stalled requester keeps asking
            for q in range(n):
                reqs[q].next = r[q]
            any_req.next = any(r)
            acc = rotate or rng.random() < 0.6
            accept.next = acc
            yield delay(1)
            g = [int(x) for x in grants]
            assert sum(g) == (1 if any(r) else 0), cyc
            if any(r):
                k = g.index(1)
                want = next(q % n for q in range(ptr, ptr + n) if r[q % n])
                assert k == want and int(gidx) == k, (cyc, r, ptr, k, want)
                if held is not None:
                    assert k == held, (cyc, k, held)
                held = None if acc else k
                ptr = (k + 1) % n if acc else k
                if rotate:
                    order.append(k)
            clk.next = 1
            yield delay(1)
        raise StopSimulation

    _run(dut, drive)
    start = order[0]
    assert order == [(start + i) % n for i in range(len(order))]


# ------------------------------------------------------------ Verilog lint
@block
def _prims_wrapper(clk, rst, a, b, sel, o, push, pop, cnt, lz, xn, emsb, enc, gr0, gr1, gi):
    """Every primitive at a width its users need, in one module."""
    fmt = get_format("fp32")
    return (mux_tree([a, b, xn], sel, o),
            fifo(clk, rst, push, a, pop, b, cnt, 4),
            normalise(a, lz, xn),
            round_rne(xn, emsb, enc, fmt, 1024),
            rr_arbiter(clk, rst, [push, pop], push, pop, [gr0, gr1], gi))


def test_prims_lint(tmp_path):
    """The primitives' Verilog (inlined into one wrapper module) is
    ``verilator --lint-only -Wall`` clean without waivers."""
    simrun.setup_tool_env()

    def factory():
        return _prims_wrapper(sig(1), ResetSignal(0, active=1, isasync=False), sig(75), sig(75),
                              Signal(intbv(0)[2:]), sig(75), sig(1), sig(1), sig(3), sig(11),
                              sig(75), sig(11), sig(32), sig(1), sig(1), Signal(intbv(0)[1:]))

    path = convert_block(factory, "prims_wrapper", tmp_path)
    text = path.read_text()
    for name in ("nz_lv", "rn_e", "rrupd"):
        assert name in text, name
    r = subprocess.run(["verilator", "--lint-only", "-Wall", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr[-3000:]


# ------------------------------------------------------------ SRAM init
def test_sram_memory_zeroing_is_simulation_only(tmp_path):
    """The SRAM's ``initial`` blocks are inside ```ifndef SYNTHESIS``: the
    preprocessed text has them without SYNTHESIS (Verilator, Icarus) and
    none with it (synthesis)."""
    from rtl import fsa_sram

    simrun.setup_tool_env()
    path = fsa_sram.convert(tmp_path, 24, 128, 64, 2)
    text = path.read_text()
    assert text.count("`ifndef SYNTHESIS") == text.count("initial begin") == 4   # 2 banks x 2 lanes

    def preprocessed(*defines):
        r = subprocess.run(["verilator", "-E", "-P", *defines, str(path)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout

    assert len(re.findall(r"\binitial\b", preprocessed())) == 4
    assert not re.search(r"\binitial\b", preprocessed("-DSYNTHESIS"))
    with pytest.raises(ValueError, match="initial block outside"):
        fsa_sram.simulation_only_init(text + "initial x = 1;\n")
