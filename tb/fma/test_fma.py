"""Bench of the FMA unit ``rtl/fp/fsa_fma.py`` against ``fsa.numerics``.

Per format pair: ~24k vectors (16k normal-mode, 8k exp2-mode) with the
expected bits from the bit-exact model, streamed through the converted
Verilog by ``tb/fma/tb_fma.py`` on ``$SIM`` (verilator or icarus).

Normal-mode vectors: uniform random bits, operands drawn by class (normal,
sparse mantissas, subnormal, +-0, +-inf, NaN payloads, extremes),
cancellation (``c ~ -a*b``), ties of the A rounding (product = half an ulp
of c, and neighbours), ties of the M rounding (c on an M midpoint plus a
tiny or zero product), overflow, subnormal results, far-apart exponents.

Exp2-mode vectors: x over negative values (tiny, subnormal, around the
pieces, integers, beyond the xi clamp), subnormal and underflowing
results, +-0, positive x, +-inf, NaN; slope / intercept of the matching
piece, of another piece, random slopes and raw random intercept words.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from fsa import numerics as nm
from fsa.formats import FPFormat, get_format
from fsa import simrun
from tb.common.sources import unit_deps

ROOT = Path(__file__).resolve().parents[2]

#: (mul, add, pieces) cases; the last one exercises another piece count.
CASES = [
    ("fp16", "fp32", 8),
    ("bf16", "fp32", 8),
    ("fp32", "fp32", 8),
    ("fp16", "fp16", 8),
    ("bf16", "bf16", 8),
    ("fp16", "fp16", 16),
]
N_FMA = 14400
N_EXP2 = 10000


# ------------------------------------------------------------------ Verilog
def fma_verilog(mul: str, add: str, pieces: int) -> Path:
    """Converted Verilog of one configuration (cached by a hash of the inputs)."""
    from rtl.fp import fsa_fma

    name = fsa_fma.module_name(mul, add, pieces)
    return simrun.cached_convert(name, lambda d: fsa_fma.convert(d, mul, add, pieces),
                                 f"{mul}|{add}|{pieces}", unit_deps("rtl.fp.fsa_fma"),
                                 waivers=fsa_fma.LINT_WAIVERS)


def _bits(sign, field, man, f: FPFormat) -> np.ndarray:
    return ((np.asarray(sign, np.int64) << (f.width - 1))
            | (np.asarray(field, np.int64) << f.man_bits)
            | np.asarray(man, np.int64))


def _enc(x, f: FPFormat) -> np.ndarray:
    """float64 values -> bits of f (RNE)."""
    return nm.from_float64(np.asarray(x, np.float64), f).astype(np.int64)


def _val(bits, f: FPFormat) -> np.ndarray:
    return nm.to_float64(np.asarray(bits).astype(f.numpy_uint), f)


def _rand_class(rng: np.random.Generator, f: FPFormat, n: int) -> np.ndarray:
    """Operands of format f drawn from a mixture of classes."""
    m = f.man_bits
    sign = rng.integers(0, 2, n)
    man = rng.integers(0, 1 << m, n)
    cls = rng.choice(9, n, p=[0.16, 0.24, 0.10, 0.06, 0.05, 0.05, 0.08, 0.14, 0.12])
    out = np.zeros(n, np.int64)
    # 0: uniform bits
    out = np.where(cls == 0, rng.integers(0, 1 << f.width, n), out)
    # 1: normal near 1.0
    fld = np.clip(f.bias + rng.integers(-6, 7, n), 1, f.exp_max - 1)
    out = np.where(cls == 1, _bits(sign, fld, man, f), out)
    # 2: subnormal (nonzero)
    out = np.where(cls == 2, _bits(sign, 0, np.maximum(man, 1), f), out)
    # 3: +-0
    out = np.where(cls == 3, _bits(sign, 0, 0, f), out)
    # 4: +-inf
    out = np.where(cls == 4, _bits(sign, f.exp_max, 0, f), out)
    # 5: NaN, random payload (quiet and signalling)
    out = np.where(cls == 5, _bits(sign, f.exp_max, np.maximum(man, 1), f), out)
    # 6: extremes: max finite, min normal, min subnormal, max subnormal
    ext = np.array([_bits(0, f.exp_max - 1, (1 << m) - 1, f), _bits(0, 1, 0, f),
                    1, (1 << m) - 1], np.int64)
    out = np.where(cls == 6, ext[rng.integers(0, 4, n)] | (sign << (f.width - 1)), out)
    # 7: normal, any exponent
    out = np.where(cls == 7, _bits(sign, rng.integers(1, f.exp_max, n), man, f), out)
    # 8: sparse mantissa (short significands: exact products, ties)
    keep = rng.integers(0, min(m, 4) + 1, n)
    sman = (man >> (m - keep)) << (m - keep)
    out = np.where(cls == 8, _bits(sign, fld, sman, f), out)
    return out


def _pow2(e, f: FPFormat) -> np.ndarray:
    """Bits of 2^e in f (clamped into the subnormal / overflow range)."""
    return _enc(np.ldexp(1.0, np.clip(e, -400, 400).astype(np.int64)), f)


def fma_vectors(rng: np.random.Generator, fm: FPFormat, fa: FPFormat, n: int):
    """Normal-mode (a, b, c) triples, about n of them, by group."""
    parts = []
    g = n // 8

    def add(a, b, c):
        parts.append((np.asarray(a, np.int64), np.asarray(b, np.int64), np.asarray(c, np.int64)))

    # 1. uniform bits and class mixture
    add(rng.integers(0, 1 << fm.width, g), rng.integers(0, 1 << fm.width, g),
        rng.integers(0, 1 << fa.width, g))
    add(_rand_class(rng, fm, 2 * g), _rand_class(rng, fm, 2 * g), _rand_class(rng, fa, 2 * g))
    # 2. cancellation: c = -RNE_A(a*b), then nudged by a few ulps
    a, b = _rand_class(rng, fm, g), _rand_class(rng, fm, g)
    p = nm.fma(a.astype(fm.numpy_uint), b.astype(fm.numpy_uint), np.zeros(g, fa.numpy_uint),
               fm, fa, out="acc").astype(np.int64)
    c = p ^ fa.sign_mask
    c = np.clip(c + rng.integers(-3, 4, g) * (rng.random(g) < 0.6), 0, (1 << fa.width) - 1)
    add(a, b, c)
    # 3. ties of the A rounding: |a*b| = (1, 1.5, 1+2^-k, 3) * half an ulp of c
    c = _rand_class(rng, fa, g)
    cv = np.abs(_val(c, fa))
    cv = np.where(np.isfinite(cv) & (cv > 0), cv, 1.0)
    ec = np.floor(np.log2(cv)).astype(np.int64)
    half = np.maximum(ec - fa.man_bits, fa.emin - fa.man_bits) - 1
    mult = np.array([1.0, 1.5, 1.0 + 2.0 ** -fm.man_bits, 3.0, 0.75, 1.0 - 2.0 ** -fm.precision])
    ea_ = rng.integers(-(fm.bias // 2), fm.bias // 2 + 1, g)
    a = _enc(mult[rng.integers(0, len(mult), g)] * np.ldexp(1.0, np.clip(ea_, -300, 300)), fm)
    a = a | (rng.integers(0, 2, g) << (fm.width - 1))
    b = _pow2(half - ea_, fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    add(a, b, c)
    # 4. ties of the M rounding: c on an M midpoint (when A is wider), product
    #    zero, tiny, or half an A ulp
    r = _rand_class(rng, fm, g)
    rv = _val(r, fm)
    rv = np.where(np.isfinite(rv) & (rv != 0), rv, 1.0)
    er = np.floor(np.log2(np.abs(rv))).astype(np.int64)
    hm = np.ldexp(1.0, np.maximum(er - fm.man_bits, fm.emin - fm.man_bits) - 1)
    c = _enc(rv + np.sign(rv) * hm * rng.choice([1.0, -1.0], g), fa)
    cv = np.abs(_val(c, fa))
    cv = np.where(np.isfinite(cv) & (cv > 0), cv, 1.0)
    ec = np.floor(np.log2(cv)).astype(np.int64)
    tiny = np.where(rng.random(g) < 0.5, ec - fa.precision - rng.integers(1, 40, g),
                    np.maximum(ec - fa.man_bits, fa.emin - fa.man_bits) - 1)
    ea_ = tiny // 2
    a = np.where(rng.random(g) < 0.3, 0, _pow2(ea_, fm)) | (rng.integers(0, 2, g) << (fm.width - 1))
    b = _pow2(tiny - ea_, fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    add(a, b, c)
    # 5. overflow: products and sums around the largest finite values
    big_m = np.log2(float(_val(_bits(0, fm.exp_max - 1, (1 << fm.man_bits) - 1, fm), fm)))
    big_a = np.log2(float(_val(_bits(0, fa.exp_max - 1, (1 << fa.man_bits) - 1, fa), fa)))
    tgt = np.where(rng.random(g) < 0.5, big_a, big_m) + rng.uniform(-1.5, 0.5, g)
    ea_ = rng.uniform(0.3, 0.7, g) * tgt
    a = _enc(np.exp2(np.minimum(ea_, big_m)), fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    b = _enc(np.exp2(np.minimum(tgt - ea_, big_m)), fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    cexp = np.minimum(tgt + rng.uniform(-3, 0.2, g), big_a)
    c = np.where(rng.random(g) < 0.5, _enc(np.exp2(cexp), fa), 0) | (rng.integers(0, 2, g) << (fa.width - 1))
    add(a, b, c)
    # 6. subnormal results of A or M
    emin = np.where(rng.random(g) < 0.5, fa.emin - fa.man_bits, fm.emin - fm.man_bits)
    tgt = emin + rng.uniform(-3, fm.precision + 3, g)
    ea_ = rng.uniform(0.3, 0.7, g) * tgt
    a = _enc(np.exp2(ea_) * rng.uniform(1, 2, g), fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    b = _enc(np.exp2(tgt - ea_), fm) | (rng.integers(0, 2, g) << (fm.width - 1))
    c = np.where(rng.random(g) < 0.5, _enc(np.exp2(emin + rng.uniform(0, 12, g)), fa),
                 rng.integers(0, 4, g)) | (rng.integers(0, 2, g) << (fa.width - 1))
    add(a, b, c)
    # 7. far-apart exponents (the far operand is only a sticky bit)
    a, b = _rand_class(rng, fm, g), _rand_class(rng, fm, g)
    pv = np.abs(_val(a, fm) * _val(b, fm))
    pv = np.where(np.isfinite(pv) & (pv > 0), pv, 1.0)
    sh = rng.integers(fa.precision - 2, 2 * fa.precision + 2 * fm.precision + 8, g)
    sh = np.where(rng.random(g) < 0.5, sh, -sh)
    c = _enc(pv * np.exp2(sh.astype(np.float64)) * rng.uniform(1, 2, g), fa)
    c = c | (rng.integers(0, 2, g) << (fa.width - 1))
    add(a, b, c)
    a, b, c = (np.concatenate(x) for x in zip(*parts))
    return a, b, c


def exp2_vectors(rng: np.random.Generator, fm: FPFormat, fa: FPFormat, pieces: int, n: int):
    """Exp2-mode (x, slope, word) triples."""
    xs = []
    g = n // 8
    neg = fm.sign_mask
    # x: negative normals over the whole exponent range, and around 1
    xs.append(_bits(1, rng.integers(1, fm.exp_max, g), rng.integers(0, 1 << fm.man_bits, g), fm))
    xs.append(_bits(1, np.clip(fm.bias + rng.integers(-8, 10, 2 * g), 1, fm.exp_max - 1),
                    rng.integers(0, 1 << fm.man_bits, 2 * g), fm))
    # integers, incl. the xi clamp boundary and the subnormal range of A
    ints = np.concatenate([np.arange(0, 40), np.arange(120, 160), np.arange(190, 210),
                           rng.integers(0, 70000, 64)]).astype(np.float64)
    xs.append(_enc(-ints, fm))
    # around piece boundaries: -(n + j/P) and neighbours (+-1 ulp)
    nn = rng.integers(0, 30, g)
    jj = rng.integers(0, pieces + 1, g)
    xb = _enc(-(nn + jj / pieces), fm) + rng.integers(-1, 2, g)
    xs.append(np.where(xb < neg, neg, xb))
    # results near and below the subnormal ranges of A and M
    lo = np.where(rng.random(g) < 0.5, fa.emin - fa.man_bits, fm.emin - fm.man_bits)
    xs.append(_enc(lo + rng.uniform(-4, fm.precision + 4, g), fm) | neg)
    # specials and positive x
    sp = np.array([0, neg, fm.pos_inf, fm.pos_inf | neg, fm.canonical_nan,
                   fm.canonical_nan | neg, fm.pos_inf | 1, 1 | neg, ((1 << fm.man_bits) - 1) | neg,
                   fm.one, fm.one | neg], np.int64)
    xs.append(sp[rng.integers(0, len(sp), g // 2)])
    xs.append(_rand_class(rng, fm, g // 2))
    x = np.concatenate(xs)
    m = len(x)
    x = x[rng.permutation(m)]
    # slope / intercept word for piece k
    slopes, icpts = nm.pwl_constants(pieces, fm, fa)
    slopes, icpts = slopes.astype(np.int64), icpts.astype(np.int64)
    kx = nm.exp2_piece(x.astype(fm.numpy_uint), fm, pieces)
    kind = rng.choice(4, m, p=[0.5, 0.35, 0.10, 0.05])
    k = np.where(kind == 0, kx, rng.integers(0, pieces, m))
    slope = slopes[k]
    word = nm.encode_intercept(icpts[k].astype(fa.numpy_uint), k, fa).astype(np.int64)
    slope = np.where(kind == 2, _rand_class(rng, fm, m), slope)
    raw = _bits(rng.integers(0, 2, m), rng.integers(0, fa.exp_max + 1, m),
                rng.integers(0, 1 << fa.man_bits, m), fa)
    word = np.where(kind == 3, raw, word)
    return x, slope, word


def make_vectors(mul: str, add: str, pieces: int, seed: int, path: Path) -> dict:
    fm, fa = get_format(mul), get_format(add)
    rng = np.random.default_rng([seed, fm.width, fa.width, fm.exp_bits, pieces])
    with np.errstate(all="ignore"):  # inf * 0 etc. while picking operands
        a, b, c = fma_vectors(rng, fm, fa, N_FMA)
        x, s, w = exp2_vectors(rng, fm, fa, pieces, N_EXP2)
    oa, oe = nm.fma(a.astype(fm.numpy_uint), b.astype(fm.numpy_uint), c.astype(fa.numpy_uint),
                    fm, fa, out="both")
    xa, xe, xp, xm = nm.exp2_step(x.astype(fm.numpy_uint), s.astype(fm.numpy_uint),
                                  w.astype(fa.numpy_uint), fm, pieces, fa)
    nf, ne = len(a), len(x)
    vec = {
        "a": np.concatenate([a, x]), "b": np.concatenate([b, s]), "c": np.concatenate([c, w]),
        "exp2": np.concatenate([np.zeros(nf, np.int64), np.ones(ne, np.int64)]),
        "out_a": np.concatenate([oa, xa]).astype(np.int64),
        "out_e": np.concatenate([oe, xe]).astype(np.int64),
        "piece": np.concatenate([np.zeros(nf, np.int64), xp]).astype(np.int64),
        "match": np.concatenate([np.zeros(nf, np.int64), xm]).astype(np.int64),
        "wm": fm.width, "wa": fa.width,
    }
    np.savez(path, **vec)
    return vec


# ------------------------------------------------------------------ tests
@pytest.mark.sim
@pytest.mark.parametrize("mul,add,pieces", CASES, ids=[f"{m}_{a}_p{p}" for m, a, p in CASES])
def test_fma_vectors(mul, add, pieces, tmp_path):
    sim = simrun.get_sim()
    seed = int(os.environ.get("SEED", "1"))
    npz = tmp_path / "vectors.npz"
    vec = make_vectors(mul, add, pieces, seed, npz)
    n = len(vec["a"])
    assert n >= 20000 and int(vec["exp2"].sum()) >= 7000
    src = fma_verilog(mul, add, pieces)
    top = src.stem
    t0 = time.monotonic()
    simrun.run(top, [src], "tb.fma.tb_fma", sim=sim, extra_env={"FSA_FMA_VECTORS": str(npz)},
               timeout_s=600)
    print(f"{top} on {sim}: {n} vectors in {time.monotonic() - t0:.1f} s")


def test_fma_vector_coverage():
    """The generated vectors reach the classes the bench promises."""
    fm, fa = get_format("fp16"), get_format("fp32")
    import tempfile
    with tempfile.TemporaryDirectory() as td:
        v = make_vectors("fp16", "fp32", 8, 1, Path(td) / "v.npz")
    e2 = v["exp2"] == 1
    oa, oe = v["out_a"], v["out_e"]
    nan_a = oa == fa.canonical_nan
    # subnormal, zero, inf and NaN results in both formats; both signs of zero
    for out, f in ((oa, fa), (oe, fm)):
        mag = out & (f.sign_mask - 1)
        assert np.sum((mag > 0) & (mag < (1 << f.man_bits))) > 100
        assert np.sum(mag == f.pos_inf) > 100
        assert np.sum(out == 0) > 50 and np.sum(out == f.sign_mask) > 50
    assert np.sum(nan_a & ~e2) > 500 and np.sum(nan_a & e2) > 50
    # exp2: every piece, matches and non-matches, subnormal results
    assert set(v["piece"][e2].tolist()) == set(range(8))
    assert 0.3 < v["match"][e2].mean() < 0.8
    assert np.sum(e2 & (oa > 0) & (oa < (1 << fa.man_bits))) > 50
    assert np.sum(e2 & (oe > 0) & (oe < (1 << fm.man_bits))) > 50


def test_fma_params_validated():
    from rtl.fp import fsa_fma

    assert fsa_fma.module_name("fp16", "fp32", 8) == "fsa_fma_fp16_fp32_p8"
    with pytest.raises(ValueError, match="not supported"):
        fsa_fma.module_name("fp32", "fp16", 8)
    with pytest.raises(ValueError, match="unknown floating-point format"):
        fsa_fma.module_name("fp8", "fp32", 8)
    for bad in (1, 3, 64, 0):
        with pytest.raises(ValueError, match="pieces"):
            fsa_fma.module_name("fp16", "fp32", bad)
    with pytest.raises(ValueError, match="pieces <= 16"):
        fsa_fma.module_name("fp16", "fp16", 32)
    from rtl.convert import sig
    with pytest.raises(ValueError, match="port a must be 16 bits"):
        fsa_fma.fsa_fma(sig(32), sig(16), sig(32), sig(1), sig(32), sig(16), sig(3), sig(1))


@pytest.mark.parametrize("mul,add,pieces", [("fp16", "fp32", 2), ("fp32", "fp32", 32),
                                            ("bf16", "bf16", 4)])
def test_fma_lint(mul, add, pieces, tmp_path):
    """Generated Verilog is Verilator -Wall clean (with LINT_WAIVERS) and
    compiles in Icarus when it is installed."""
    import shutil
    import subprocess

    from rtl.fp import fsa_fma

    simrun.setup_tool_env()
    path = fsa_fma.convert(tmp_path, mul, add, pieces)
    r = subprocess.run(["verilator", "--lint-only", "-Wall", *fsa_fma.LINT_WAIVERS, str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    if shutil.which("iverilog"):
        r = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "a.vvp"), str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
