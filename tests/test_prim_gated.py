"""The enables of ``normalise`` and ``round_rne`` (rtl/prim/, used by the
PE's gated FMA): in MyHDL simulation, with ``en = 1`` the outputs equal the
ungated primitive's on the same inputs, with ``en = 0`` they are 0; a width
the gated normaliser does not implement is refused."""
from __future__ import annotations

import random

import pytest
from myhdl import Simulation, StopSimulation, delay, instance

from fsa.formats import get_format
from rtl.convert import sig
from rtl.prim import normalise, round_rne


def _run(*gens):
    Simulation(*gens).run(quiet=1)


@pytest.mark.parametrize("n", [37, 49, 75, 101])     # the FMA windows of the supported pairs
def test_normalise_enable(n):
    rng = random.Random(n)
    lzw = (1 << (n - 1).bit_length()).bit_length() + 2
    x, en = sig(n), sig(1)
    lz0, xn0, lz1, xn1 = sig(lzw), sig(n), sig(lzw), sig(n)
    ref, gated = normalise(x, lz0, xn0), normalise(x, lz1, xn1, en)
    vals = [0, 1, (1 << n) - 1, 1 << (n - 1)] + [rng.getrandbits(rng.randint(1, n))
                                                   for _ in range(200)]
    seen = []

    @instance
    def drive():
        for v in vals:
            for e in (1, 0):
                x.next, en.next = v, e
                yield delay(1)
                seen.append((v, e, int(lz0), int(xn0), int(lz1), int(xn1)))
        raise StopSimulation

    _run(ref, gated, drive)
    assert len(seen) == 2 * len(vals)
    for v, e, l0, x0, l1, x1 in seen:
        assert (l1, x1) == ((l0, x0) if e else (0, 0)), (v, e)
    assert any(l0 for _, e, l0, _, _, _ in seen if e)     # nonzero outputs were compared


def test_normalise_enable_refuses_power_of_two_widths():
    with pytest.raises(ValueError, match="power of two"):
        normalise(sig(64), sig(8), sig(64), sig(1))


@pytest.mark.parametrize("fname", ["fp16", "bf16", "fp32"])
def test_round_rne_enable(fname):
    fmt = get_format(fname)
    rng = random.Random(fname)
    NX, OFS, EW = fmt.precision + 12, 1024, 12
    y, emsb, en = sig(NX), sig(EW), sig(1)
    enc0, enc1 = sig(fmt.exp_bits + fmt.man_bits + 1), sig(fmt.exp_bits + fmt.man_bits + 1)
    ref, gated = round_rne(y, emsb, enc0, fmt, OFS), round_rne(y, emsb, enc1, fmt, OFS, en)
    cases = [((1 << (NX - 1)) | rng.getrandbits(NX - 1),
              OFS + rng.randint(fmt.emin - fmt.precision - 3, fmt.emax + 2)) for _ in range(300)]
    seen = []

    @instance
    def drive():
        for yv, ev in cases:
            for e in (1, 0):
                y.next, emsb.next, en.next = yv, ev, e
                yield delay(1)
                seen.append((e, int(enc0), int(enc1)))
        raise StopSimulation

    _run(ref, gated, drive)
    assert len(seen) == 2 * len(cases)
    for e, r0, r1 in seen:
        assert r1 == (r0 if e else 0)
    assert len({r0 for _, r0, _ in seen}) > 100       # many distinct roundings compared
