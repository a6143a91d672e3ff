"""Bit-exactness tests of fsa.numerics against Berkeley SoftFloat 3e.

Oracles (all provably exact, i.e. they give the correctly rounded result
of the exact operation):

* fp16, bf16 and fp32 values convert exactly to fp32 (``f16_to_f32``,
  ``bf16_to_f32``), so for an fp32 result ``f32_mul_add`` / ``f32_sub`` /
  ``f32_div`` on the converted operands IS the correctly rounded exact
  operation (SoftFloat computes the exact result and rounds once).
* For fp16 results with fp16 operands we call ``f16_mul_add`` etc. directly.
* For the remaining (narrower-than-fp32, mixed-format) results we use
  round-to-odd: the SoftFloat fp32 operation in round-toward-zero mode plus
  "jamming" the inexact flag into the last mantissa bit is exactly RO_24(r)
  (the value with 24-bit precision that truncates r and is odd when r is
  not representable).  By Boldo & Melquiond ("Emulation of FMA and
  correctly rounded sums: proved algorithms using rounding to odd", IEEE
  TC 2008), RNE_p(RO_q(r)) == RNE_p(r) whenever q >= p + 2 and the q-grid
  refines the p-grid everywhere.  Here q = 24 >= 11 + 2 (fp16) and
  >= 8 + 2 (bf16); fp32's subnormal grid (2^-149) refines both targets'
  subnormal grids, and an fp32 overflow under round-toward-zero returns
  fp32's max finite, which still rounds to inf in fp16/bf16 (the exact value
  is >= 2^128, above both overflow thresholds).  So ``f32_to_f16`` /
  ``f32_to_bf16`` (RNE) of that value is the correctly rounded result.
  (A plain f128 or f64 intermediate would NOT do: e.g. a*b = 1 + 2^-11
  exactly plus c = 2^-149 rounds to the fp16 tie 1 + 2^-11 in f128 and then
  wrongly to 1.0.)
* exp2 and a cross-check of the FMA oracle use exact ``Fraction``
  arithmetic with an independent RNE written here.

NaN results are compared as a class (any NaN equals any NaN), and the
model's NaNs must additionally be the canonical NaN.
"""
from __future__ import annotations

import decimal
import math
import zlib
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest

from fsa import numerics as N
from fsa.formats import FPFormat, get_format

sf = pytest.importorskip("softfloatpy")

FP16, BF16, FP32 = get_format("fp16"), get_format("bf16"), get_format("fp32")
NVEC = 200_000
INEXACT = int(sf.ExceptionFlag.INEXACT)


# --------------------------------------------------------------------------
# SoftFloat plumbing
# --------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _near_even():
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    yield
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)


def _be(f):
    return ">u2" if f.width == 16 else ">u4"


def _to_sf(bits, f):
    """numpy bit array -> list of SoftFloat objects."""
    cls = {"fp16": sf.Float16, "bf16": sf.BFloat16, "fp32": sf.Float32}[f.name]
    raw = np.asarray(bits).astype(_be(f)).tobytes()
    w = f.bytes
    fb = cls.from_bytes
    return [fb(raw[i:i + w]) for i in range(0, len(raw), w)]


def _from_sf(objs, f):
    """list of SoftFloat objects -> numpy bit array."""
    return np.frombuffer(b"".join(o.to_bytes() for o in objs), dtype=_be(f)).astype(f.numpy_uint)


def _to_f32(objs, f):
    """Exact conversion to SoftFloat Float32."""
    if f.name == "fp32":
        return objs
    conv = sf.f16_to_f32 if f.name == "fp16" else sf.bf16_to_f32
    return [conv(o) for o in objs]


def _ro32(fn, *cols):
    """Round-to-odd fp32 result of ``fn`` (an exact-then-round SoftFloat op)."""
    sf.set_rounding_mode(sf.RoundingMode.MIN_MAG)
    setf, getf, frb = sf.set_exception_flags, sf.get_exception_flags, sf.Float32.from_bytes
    out = []
    try:
        for args in zip(*cols):
            setf(0)
            r = fn(*args)
            if getf() & INEXACT:
                b = bytearray(r.to_bytes())
                b[-1] |= 1
                r = frb(bytes(b))
            out.append(r)
    finally:
        sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    return out


def _narrow(objs32, f):
    """RNE from SoftFloat Float32 to format f."""
    if f.name == "fp32":
        return objs32
    conv = sf.f32_to_f16 if f.name == "fp16" else sf.f32_to_bf16
    return [conv(o) for o in objs32]


def sf_fma(a, b, c, fm, fa, target):
    """Correctly rounded a*b+c (a, b in fm, c in fa) to ``target``, by SoftFloat."""
    if fm.name == fa.name == target.name == "fp16":
        res = list(map(sf.f16_mul_add, _to_sf(a, fm), _to_sf(b, fm), _to_sf(c, fa)))
        return _from_sf(res, target)
    A = _to_f32(_to_sf(a, fm), fm)
    B = _to_f32(_to_sf(b, fm), fm)
    C = _to_f32(_to_sf(c, fa), fa)
    if target.name == "fp32":
        return _from_sf(list(map(sf.f32_mul_add, A, B, C)), FP32)
    return _from_sf(_narrow(_ro32(sf.f32_mul_add, A, B, C), target), target)


def sf_sub(a, b, f):
    if f.name == "fp16":
        return _from_sf(list(map(sf.f16_sub, _to_sf(a, f), _to_sf(b, f))), f)
    A, B = _to_f32(_to_sf(a, f), f), _to_f32(_to_sf(b, f), f)
    if f.name == "fp32":
        return _from_sf(list(map(sf.f32_sub, A, B)), f)
    return _from_sf(_narrow(_ro32(sf.f32_sub, A, B), f), f)


def sf_recip(x, f):
    if f.name == "fp16":
        one = sf.Float16.from_bytes(b"\x3c\x00")
        return _from_sf([sf.f16_div(one, v) for v in _to_sf(x, f)], f)
    X = _to_f32(_to_sf(x, f), f)
    one = sf.Float32.from_bytes(b"\x3f\x80\x00\x00")
    if f.name == "fp32":
        return _from_sf([sf.f32_div(one, v) for v in X], f)
    return _from_sf(_narrow(_ro32(sf.f32_div, [one] * len(X), X), f), f)


def sf_convert(x, fs, fd):
    # exact widening to fp32 (f16_to_f32 / bf16_to_f32), then one RNE
    return _from_sf(_narrow(_to_f32(_to_sf(x, fs), fs), fd), fd)


def sf_max(a, b, f):
    A, B = _to_f32(_to_sf(a, f), f), _to_f32(_to_sf(b, f), f)
    ab, bb = np.asarray(a), np.asarray(b)
    out = np.empty(len(A), dtype=f.numpy_uint)
    for i, (x, y) in enumerate(zip(A, B)):
        if sf.f32_is_nan(x) or sf.f32_is_nan(y):
            out[i] = f.canonical_nan
        else:
            out[i] = bb[i] if sf.f32_lt_quiet(x, y) else ab[i]
    return out


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------
def is_nan_bits(bits, f):
    b = np.asarray(bits).astype(np.int64)
    return ((b >> f.man_bits) & f.exp_max == f.exp_max) & (b & ((1 << f.man_bits) - 1) != 0)


def assert_bits_equal(got, exp, f, what, inputs=()):
    got = np.asarray(got)
    exp = np.asarray(exp)
    assert got.dtype == np.dtype(f.numpy_uint), f"{what}: dtype {got.dtype}"
    assert got.shape == exp.shape
    gn, en = is_nan_bits(got, f), is_nan_bits(exp, f)
    ok = np.where(gn | en, gn & en, got == exp)
    if not ok.all():
        idx = np.flatnonzero(~ok)[:8]
        w = f.width // 4
        lines = [
            f"  in=({', '.join(hex(int(np.asarray(x)[i])) for x in inputs)}) "
            f"got={int(got[i]):#0{w + 2}x} exp={int(exp[i]):#0{w + 2}x}"
            for i in idx
        ]
        pytest.fail(f"{what}: {int((~ok).sum())} of {ok.size} mismatches\n" + "\n".join(lines))
    assert np.all(got[gn] == f.canonical_nan), f"{what}: non-canonical NaN from the model"


# --------------------------------------------------------------------------
# independent exact arithmetic (Fraction) and RNE
# --------------------------------------------------------------------------
def frac_of(bits, f):
    """Exact value of a finite bit pattern as Fraction, plus its sign bit."""
    b = int(bits)
    neg = b >> (f.width - 1)
    e = (b >> f.man_bits) & f.exp_max
    m = b & ((1 << f.man_bits) - 1)
    assert e != f.exp_max
    if e == 0:
        sh = f.emin - f.man_bits
    else:
        m += 1 << f.man_bits
        sh = e - f.bias - f.man_bits
    v = Fraction(m << sh) if sh >= 0 else Fraction(m, 1 << -sh)
    return (-v if neg else v), neg


def rne_frac(q, f, neg_zero=False):
    """Round an exact Fraction to format f (RNE) with integer arithmetic only;
    independent of the model."""
    if q == 0:
        return (1 << (f.width - 1)) if neg_zero else 0
    sign = 1 << (f.width - 1) if q < 0 else 0
    num, den = abs(q.numerator), q.denominator
    e = num.bit_length() - den.bit_length()  # 2^e <= q < 2^(e+1) after the fix
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    e = max(e, f.emin)
    sh = e - f.man_bits  # q / 2^sh = n + r / d
    n, r = divmod(num, den << sh) if sh >= 0 else divmod(num << -sh, den)
    d = den << sh if sh >= 0 else den
    if 2 * r > d or (2 * r == d and n & 1):
        n += 1
    if n == 1 << (f.man_bits + 1):
        n >>= 1
        e += 1
    if e > f.emax:
        return sign | f.pos_inf
    if n < (1 << f.man_bits):  # subnormal (or zero)
        return sign | n
    return sign | ((e + f.bias) << f.man_bits) | (n - (1 << f.man_bits))


def ref_fma_frac(a, b, c, fm, fa, target):
    """Exact FMA with Fractions (finite inputs only), IEEE zero signs."""
    A, sa = frac_of(a, fm)
    B, sb = frac_of(b, fm)
    C, sc = frac_of(c, fa)
    r = A * B + C
    if r == 0:
        prod_neg = sa ^ sb
        neg_zero = bool(A * B == 0 and C == 0 and prod_neg and sc)
        return rne_frac(r, target, neg_zero)
    return rne_frac(r, target)


# --------------------------------------------------------------------------
# edge-biased vector generation
# --------------------------------------------------------------------------
def specials(f):
    m = f.man_bits
    s = f.sign_mask
    vals = [0, f.one, f.pos_inf, f.canonical_nan, f.pos_inf | 1,  # sNaN
            (f.exp_max << m) | ((1 << m) - 1), 1, (1 << m) - 1, 1 << m,
            f.pos_inf - 1, f.one + 1, f.one - 1, (f.bias + 1) << m]
    return np.array(vals + [v | s for v in vals], dtype=np.int64)


def rand_bits(rng, f, n):
    """Mixture: uniform patterns, moderate exponents, subnormals, extremes, specials."""
    m, w = f.man_bits, f.width
    kind = rng.integers(0, 6, n)
    man = rng.integers(0, 1 << m, n, dtype=np.int64)
    sign = rng.integers(0, 2, n, dtype=np.int64) << (w - 1)
    uni = rng.integers(0, 1 << w, n, dtype=np.int64)
    mod = (f.bias + rng.integers(-6, 7, n)) << m | man | sign
    sub = man | sign
    hi = (f.exp_max - 1 - rng.integers(0, 3, n)) << m | man | sign
    lo = (1 + rng.integers(0, 3, n)) << m | man | sign
    sp = rng.choice(specials(f), n)
    out = np.choose(kind, [uni, mod, sub, hi, lo, sp])
    return out.astype(f.numpy_uint)


def exact_in(x, f):
    """Mask: float64 values exactly representable (and finite) in f."""
    b = N.from_float64(x, f)
    with np.errstate(invalid="ignore"):
        return (N.to_float64(b, f) == x) & np.isfinite(x), b


def tie_vectors(rng, fm, fa, target, n):
    """(a, b, c) with a*b + c at (or 1 ulp next to) a midpoint of ``target``.

    a*b = Ia*Ib*2^t with Ia, Ib odd and small, c = +-K*2^(t+1).  In the
    normal range (K in [1.5*2^m, 2^(m+1)), |a*b| < |c|/12) the sum is an odd
    multiple of 2^t in a binade whose ulp is 2^(t+1): a midpoint.  Near the
    target's subnormal range (ulp constant) any K works.  K = 2^(m+1)-1 with
    a*b = 2^t gives exactly the overflow threshold max + ulp/2.  t is drawn
    near the subnormal range, near the overflow end, and in between, within
    what products of ``fm`` values can reach.  Finally a fifth of the vectors
    keep the exact tie and the rest nudge c or a by one bit pattern.
    """
    mt = target.man_bits
    nb = max(1, min((mt - 2) // 2, fm.precision))
    lo_m = fm.emin - fm.man_bits  # exponent of the smallest subnormal of M
    t_lo = max(target.emin - mt - 1, 2 * lo_m)
    t_hi = min(target.emax - mt - 1, 2 * (fm.emax - nb))
    zone = rng.integers(0, 3, n)
    t = np.where(zone == 0, t_lo + rng.integers(0, 4, n),
                 np.where(zone == 1, t_hi - rng.integers(0, 3, n),
                          rng.integers(t_lo, t_hi + 1, n)))
    ia = 2 * rng.integers(0, 1 << (nb - 1), n) + 1
    ib = 2 * rng.integers(0, 1 << (nb - 1), n) + 1
    # split t = ea + eb with both factors representable in M
    ea_lo = np.maximum(lo_m, t - (fm.emax - nb))
    ea_hi = np.minimum(fm.emax - nb, t - lo_m)
    ea = ea_lo + rng.integers(0, 1 << 30, n) % np.maximum(ea_hi - ea_lo + 1, 1)
    a = np.ldexp(ia.astype(np.float64), ea) * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    b = np.ldexp(ib.astype(np.float64), t - ea)
    K = np.where(zone == 0, rng.integers(0, 1 << (mt + 1), n),
                 rng.integers(3 << (mt - 1), 1 << (mt + 1), n))
    maxk = rng.random(n) < 0.1
    K = np.where(maxk, (1 << (mt + 1)) - 1, K)
    a = np.where(maxk, np.abs(np.ldexp(1.0, ea)), a)
    b = np.where(maxk, np.ldexp(1.0, t - ea), b)
    c = np.ldexp(K.astype(np.float64), t + 1) * np.where(
        maxk | (rng.random(n) < 0.5), 1.0, -1.0)
    oka, ab_ = exact_in(a, fm)
    okb, bb_ = exact_in(b, fm)
    okc, cb_ = exact_in(c, fa)
    ok = oka & okb & okc
    ab_, bb_, cb_ = ab_[ok].astype(np.int64), bb_[ok].astype(np.int64), cb_[ok].astype(np.int64)
    k = len(ab_)
    nudge = rng.integers(0, 5, k)
    cb_ = np.where(nudge == 1, cb_ + 1, np.where(nudge == 2, np.maximum(cb_ - 1, 0), cb_))
    ab_ = np.where(nudge == 3, ab_ + 1, np.where(nudge == 4, np.maximum(ab_ - 1, 0), ab_))
    return ab_.astype(fm.numpy_uint), bb_.astype(fm.numpy_uint), cb_.astype(fa.numpy_uint)


def residual_vectors(rng, fm, fa, target, n):
    """Midpoint plus a far smaller term: only the sign of the tiny part decides.

    R1: a*b is exactly a midpoint of ``target`` (an odd product with
    precision+1 bits) and |c| is 2^-20 .. 2^-100 of it, either sign.
    R2 (when A can hold a target midpoint): c is the midpoint and a*b is the
    tiny term.  float64 rounding of such sums often lands exactly on the
    midpoint, so these catch a wrong tie-break.
    """
    L = target.precision + 1
    out_a, out_b, out_c = [], [], []
    lo_m = fm.emin - fm.man_bits
    for kind in ("R1", "R2"):
        if kind == "R1" and L > 2 * fm.precision:
            continue
        if kind == "R2" and L > fa.precision:
            continue
        if kind == "R1":
            la = rng.integers(max(1, L - fm.precision), min(fm.precision, L) + 1, 4 * n)
            lb = L - la + rng.integers(0, 2, 4 * n)
            ok = (lb >= 1) & (lb <= fm.precision)
            la, lb = la[ok], lb[ok]
            ia = (rng.integers(0, 1 << 62, len(la)) % (1 << (la - 1).clip(0))) | (1 << (la - 1)) | 1
            ib = (rng.integers(0, 1 << 62, len(lb)) % (1 << (lb - 1).clip(0))) | (1 << (lb - 1)) | 1
            prod = ia * ib
            okl = np.floor(np.log2(prod.astype(np.float64))).astype(np.int64) + 1 == L
            ia, ib, la, lb = ia[okl], ib[okl], la[okl], lb[okl]
            m = len(ia)
            top = rng.integers(target.emin, target.emax + 1, m)
            t = top - L + 1
            ea_lo = np.maximum(lo_m, t - (fm.emax - lb + 1))
            ea_hi = np.minimum(fm.emax - la + 1, t - lo_m)
            ea = ea_lo + rng.integers(0, 1 << 30, m) % np.maximum(ea_hi - ea_lo + 1, 1)
            a = np.ldexp(ia.astype(np.float64), ea)
            b = np.ldexp(ib.astype(np.float64), t - ea)
            big = np.ldexp(1.0, top)
            c = big * np.ldexp(1.0 + rng.random(m), -rng.integers(20, 101, m))
        else:
            m = 2 * n
            top = rng.integers(target.emin, target.emax + 1, m)
            K = (rng.integers(0, 1 << 62, m) % (1 << (L - 1))) | (1 << (L - 1)) | 1
            c = np.ldexp(K.astype(np.float64), top - L + 1)
            small = top - rng.integers(20, 101, m)
            ea = rng.integers(fm.emin, fm.emax + 1, m)
            ea = np.clip(ea, small - fm.emax, small - fm.emin)
            a = np.ldexp(1.0 + rng.random(m), ea)
            b = np.ldexp(1.0 + rng.random(m), small - ea)
            with np.errstate(invalid="ignore", over="ignore"):
                a = N.to_float64(N.from_float64(a, fm), fm)
                b = N.to_float64(N.from_float64(b, fm), fm)
        a = a * np.where(rng.random(len(a)) < 0.5, -1.0, 1.0)
        c = c * np.where(rng.random(len(c)) < 0.5, -1.0, 1.0)
        oka, ab_ = exact_in(a, fm)
        okb, bb_ = exact_in(b, fm)
        cb_ = N.from_float64(c, fa)
        ok = oka & okb & np.isfinite(c)
        out_a.append(ab_[ok])
        out_b.append(bb_[ok])
        out_c.append(cb_[ok])
    if not out_a:
        e = np.zeros(0, dtype=np.int64)
        return e.astype(fm.numpy_uint), e.astype(fm.numpy_uint), e.astype(fa.numpy_uint)
    a, b, c = (np.concatenate(v) for v in (out_a, out_b, out_c))
    sel = rng.permutation(len(a))[:n]
    return a[sel], b[sel], c[sel]


def cancel_vectors(rng, fm, fa, n):
    """c ~= -a*b (RNE of -a*b in A, nudged by 0..3 bit patterns)."""
    a = rand_bits(rng, fm, n)
    b = rand_bits(rng, fm, n)
    with np.errstate(invalid="ignore"):
        p = N.to_float64(a, fm) * N.to_float64(b, fm)
        c = N.from_float64(-p, fa).astype(np.int64)
    c = c + rng.integers(-3, 4, n) * (rng.random(n) < 0.7)
    c = np.clip(c, 0, (1 << fa.width) - 1)
    return a, b, c.astype(fa.numpy_uint)


@lru_cache(maxsize=None)
def fma_vectors(mul, acc, target, n=NVEC, seed=1):
    fm, fa, ft = get_format(mul), get_format(acc), get_format(target)
    rng = np.random.default_rng(zlib.crc32(f"{mul}/{acc}/{target}/{seed}".encode()))
    n_tie, n_can = n // 4, n // 5
    ta, tb, tc = tie_vectors(rng, fm, fa, ft, int(n_tie * 1.6))
    ta, tb, tc = ta[:n_tie], tb[:n_tie], tc[:n_tie]
    ca, cb, cc = cancel_vectors(rng, fm, fa, n_can)
    xa, xb, xc = residual_vectors(rng, fm, fa, ft, n // 10)
    rest = n - len(ta) - n_can - len(xa)
    ra, rb, rc = rand_bits(rng, fm, rest), rand_bits(rng, fm, rest), rand_bits(rng, fa, rest)
    a = np.concatenate([ta, xa, ca, ra])
    b = np.concatenate([tb, xb, cb, rb])
    c = np.concatenate([tc, xc, cc, rc])
    assert len(a) == n
    return a, b, c, len(ta)


# (mul, acc) pairs of the reference configurations
PAIRS = [("fp16", "fp32"), ("bf16", "fp32"), ("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16")]


@pytest.mark.parametrize("mul,acc", PAIRS)
def test_fma_acc_vs_softfloat(mul, acc):
    fm, fa = get_format(mul), get_format(acc)
    a, b, c, _ = fma_vectors(mul, acc, acc)
    exp = sf_fma(a, b, c, fm, fa, fa)
    got = N.fma(a, b, c, mul=mul, acc=acc, out="acc")
    assert_bits_equal(got, exp, fa, f"fma {mul}x{mul}+{acc} -> {acc}", (a, b, c))


@pytest.mark.parametrize("mul,acc", [("fp16", "fp32"), ("bf16", "fp32")])
def test_fma_elem_vs_softfloat(mul, acc):
    fm, fa = get_format(mul), get_format(acc)
    a, b, c, _ = fma_vectors(mul, acc, mul)  # ties placed on the E grid
    exp = sf_fma(a, b, c, fm, fa, fm)
    got = N.fma(a, b, c, mul=mul, acc=acc, out="elem")
    assert_bits_equal(got, exp, fm, f"fma {mul}x{mul}+{acc} -> {mul}", (a, b, c))
    # "both" gives the same two roundings of the same exact value
    ga, ge = N.fma(a, b, c, mul=mul, acc=acc, out="both")
    assert_bits_equal(ge, got, fm, "both/elem")
    assert_bits_equal(ga, N.fma(a, b, c, mul=mul, acc=acc), fa, "both/acc")


@pytest.mark.parametrize("mul,acc,target", [
    ("fp16", "fp32", "fp32"), ("fp16", "fp32", "fp16"), ("bf16", "fp32", "bf16"),
    ("fp32", "fp32", "fp32"), ("bf16", "bf16", "bf16"), ("fp16", "fp16", "fp16"),
])
def test_tie_vectors_hit_midpoints_and_oracle_agrees_with_fractions(mul, acc, target):
    """The tie generator really produces exact midpoints, and on finite
    vectors the SoftFloat oracle and the model both agree with Fractions."""
    fm, fa, ft = get_format(mul), get_format(acc), get_format(target)
    a, b, c, n_tie = fma_vectors(mul, acc, target)
    rng = np.random.default_rng(7)
    idx = np.concatenate([rng.choice(n_tie, 1200, replace=False),
                          rng.choice(np.arange(n_tie, len(a)), 800, replace=False)])
    finite = ~(is_nan_bits(a[idx], fm) | is_nan_bits(b[idx], fm) | is_nan_bits(c[idx], fa))
    for arr, f in ((a, fm), (b, fm), (c, fa)):
        finite &= (arr[idx].astype(np.int64) & (f.pos_inf)) != f.pos_inf
    idx = idx[finite]
    ties = 0
    ref = []
    for i in idx:
        ref.append(ref_fma_frac(a[i], b[i], c[i], fm, fa, ft))
        if i < n_tie:
            r = abs(frac_of(a[i], fm)[0] * frac_of(b[i], fm)[0] + frac_of(c[i], fa)[0])
            ties += r != 0 and (r / _ulp_at(r, ft)).denominator == 2  # exact midpoint
    ref = np.array(ref, dtype=np.int64).astype(ft.numpy_uint)
    assert ties >= 200, f"only {ties} exact ties among 1200 tie vectors"
    got = N.fma(a[idx], b[idx], c[idx], mul=mul, acc=acc, out="acc" if target == acc else "elem")
    assert_bits_equal(got, ref, ft, "model vs Fraction", (a[idx], b[idx], c[idx]))
    assert_bits_equal(sf_fma(a[idx], b[idx], c[idx], fm, fa, ft), ref, ft, "SoftFloat vs Fraction")


def _ulp_at(q, f):
    """ulp of format f for magnitude q (Fraction > 0)."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    return Fraction(2) ** (max(e, f.emin) - f.man_bits)


def test_fma_known_cases():
    # fp16 tie 1+2^-11 (= 1.5 * 683/1024) plus a tiny fp32 addend: exact value
    # is above the midpoint, so it rounds up (a double rounding via f128 fails).
    a = N.from_float64(1.5, "fp16")
    b = N.from_float64(683 / 1024, "fp16")
    tiny = np.uint32(1)  # 2^-149
    assert int(N.fma(a, b, tiny, out="elem")) == 0x3C01
    assert int(N.fma(a, b, tiny | np.uint32(0x80000000), out="elem")) == 0x3C00
    assert int(N.fma(a, b, 0, out="elem")) == 0x3C00  # exact tie -> even
    # zero signs: exact cancellation -> +0; (-0)+(-0) -> -0; product sign XOR
    one, mone = 0x3C00, 0xBC00
    assert int(N.fma(one, one, 0xBF800000)) == 0
    assert int(N.fma(0x8000, one, 0x80000000)) == 0x80000000
    assert int(N.fma(0x8000, mone, 0x80000000)) == 0
    # inf*0 and inf-inf are NaN; overflow at max + ulp/2 goes to inf
    assert int(N.fma(0x7C00, 0, 0)) == 0x7FC00000
    assert int(N.fma(0x7C00, one, 0xFF800000)) == 0x7FC00000
    assert int(N.fma(0x7BFF, one, N.from_float64(16.0, "fp32"), out="elem")) == 0x7C00
    assert int(N.fma(0x7BFF, one, N.from_float64(15.99, "fp32"), out="elem")) == 0x7BFF


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_sub_vs_softfloat(fmt):
    f = get_format(fmt)
    rng = np.random.default_rng(11)
    n = NVEC
    a = rand_bits(rng, f, n)
    b = rand_bits(rng, f, n)
    # near-equal operands (massive cancellation) and exact equality
    k = n // 4
    b[:k] = (a[:k].astype(np.int64) + rng.integers(-2, 3, k)).clip(0, (1 << f.width) - 1)
    b[k:k + 1000] = a[k:k + 1000]  # x - x
    got = N.sub(a, b, fmt)
    assert_bits_equal(got, sf_sub(a, b, f), f, f"sub {fmt}", (a, b))
    assert int(N.sub(f.sign_mask, 0, fmt)) == f.sign_mask  # (-0) - (+0) = -0
    assert int(N.sub(f.one, f.one, fmt)) == 0
    assert int(N.sub(f.pos_inf, f.pos_inf, fmt)) == f.canonical_nan


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_reciprocal_vs_softfloat(fmt):
    f = get_format(fmt)
    if f.width == 16:
        x = np.arange(1 << 16, dtype=np.uint32).astype(f.numpy_uint)  # exhaustive
    else:
        rng = np.random.default_rng(12)
        x = rand_bits(rng, f, NVEC)
        # significands near 1 and near 2 (quotients near powers of two / ties)
        x[:2000] = (f.one + np.arange(2000)).astype(f.numpy_uint)
        x[2000:4000] = (f.one - 1 - np.arange(2000)).astype(f.numpy_uint)
    got = N.reciprocal(x, fmt)
    assert_bits_equal(got, sf_recip(x, f), f, f"reciprocal {fmt}", (x,))
    assert int(N.reciprocal(f.sign_mask, fmt)) == f.sign_mask | f.pos_inf
    assert int(N.reciprocal(f.pos_inf, fmt)) == 0


@pytest.mark.parametrize("src,dst", [
    ("fp16", "fp32"), ("bf16", "fp32"), ("fp16", "bf16"), ("bf16", "fp16"),
    ("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp16"), ("fp32", "fp32"),
])
def test_convert_vs_softfloat(src, dst):
    fs, fd = get_format(src), get_format(dst)
    if fs.width == 16:
        x = np.arange(1 << 16, dtype=np.uint32).astype(fs.numpy_uint)  # exhaustive
    else:
        rng = np.random.default_rng(13)
        x = rand_bits(rng, fs, NVEC)
        # exact ties of the destination grid: low bits = 100..0, and neighbours
        drop = max(23 - fd.man_bits, 1)
        k = 50_000
        xt = (x[:k].astype(np.int64) >> drop << drop) | (1 << (drop - 1))
        xt += rng.integers(-1, 2, k)
        x[:k] = xt.clip(0, (1 << 32) - 1).astype(np.uint32)
    got = N.convert(x, src, dst)
    assert_bits_equal(got, sf_convert(x, fs, fd), fd, f"convert {src}->{dst}", (x,))


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_maximum_vs_softfloat(fmt):
    f = get_format(fmt)
    rng = np.random.default_rng(14)
    n = NVEC
    a = rand_bits(rng, f, n)
    b = rand_bits(rng, f, n)
    b[: n // 4] = a[: n // 4] ^ np.array(f.sign_mask, dtype=f.numpy_uint) * (rng.random(n // 4) < 0.5)
    got = N.maximum(a, b, fmt)
    assert_bits_equal(got, sf_max(a, b, f), f, f"maximum {fmt}", (a, b))
    # ties (+0 vs -0) return the first operand bit for bit
    assert int(N.maximum(0, f.sign_mask, fmt)) == 0
    assert int(N.maximum(f.sign_mask, 0, fmt)) == f.sign_mask
    assert int(N.maximum(f.one, f.canonical_nan | f.sign_mask, fmt)) == f.canonical_nan


# --------------------------------------------------------------------------
# exp2
# --------------------------------------------------------------------------
def ref_constants(P, fs, fi):
    """Independent pwl constants: 2^x0 via 60-digit Decimal, RNE via Fractions."""
    ctx = decimal.Context(prec=60)

    def e2(k):
        return float(ctx.power(decimal.Decimal(2), decimal.Decimal(-k) / decimal.Decimal(P)))

    sl, ic = [], []
    for k in range(P):
        x0, x1 = -k / P, -(k + 1) / P
        y0, y1 = e2(k), e2(k + 1)
        sb = rne_frac(Fraction((y1 - y0) / (x1 - x0)), fs)
        sv = float(frac_of(sb, fs)[0])
        ib = rne_frac(Fraction(y0 - sv * x0), fi)
        sl.append(sb)
        ic.append(ib)
    return sl, ic


def exp2_ref(xbits, fm, fa, P, target):
    """Exact reference of exp2_pwl with Fractions."""
    sl, ic = ref_constant_fracs(P, fm.name, fa.name)
    b = int(xbits)
    e = (b >> fm.man_bits) & fm.exp_max
    man = b & ((1 << fm.man_bits) - 1)
    neg = b >> (fm.width - 1)
    if e == fm.exp_max:
        if man:
            return target.canonical_nan
        if neg:
            return 0  # -inf -> +0
        x = Fraction(0)  # +inf clamps to 0
    else:
        x = frac_of(b, fm)[0]
        if x > 0:
            x = Fraction(0)
    xi = math.ceil(x)
    xf = x - xi
    k = math.floor(-xf * P)
    assert 0 <= k < P
    v = sl[k] * xf + ic[k]
    assert Fraction(1, 4) < v <= 1
    if xi < -1000:  # v <= 1: value < 2^-1000, far below every half-ulp of subnormals
        return 0
    return rne_frac(v / (1 << -xi), target)


@lru_cache(maxsize=None)
def ref_constants_cached(P, fs, fi):
    return ref_constants(P, get_format(fs), get_format(fi))


@lru_cache(maxsize=None)
def ref_constant_fracs(P, fs, fi):
    sl, ic = ref_constants_cached(P, fs, fi)
    return ([frac_of(b, get_format(fs))[0] for b in sl], [frac_of(b, get_format(fi))[0] for b in ic])


@pytest.mark.parametrize("P,fs,fi", [
    (P, fs, fi) for P in (2, 4, 8, 16, 32)
    for fs, fi in PAIRS if not (fi == "fp16" and P == 32) and not (fi == "bf16" and P >= 16)
])
def test_pwl_constants(P, fs, fi):
    sl, ic = N.pwl_constants(P, fs, fi)
    f_s, f_i = get_format(fs), get_format(fi)
    rs, ri = ref_constants_cached(P, fs, fi)
    assert sl.dtype == np.dtype(f_s.numpy_uint) and ic.dtype == np.dtype(f_i.numpy_uint)
    assert list(map(int, sl)) == rs
    assert list(map(int, ic)) == ri
    assert int(ic[0]) == f_i.one
    iv = N.to_float64(ic, fi)
    assert np.all((iv[1:] > 0.5) & (iv[1:] < 1.0))
    sv = N.to_float64(sl, fs)
    assert np.all(np.diff(sv) < 0) or fs == "bf16"  # bf16 slopes may repeat
    assert np.all(np.diff(sv) <= 0) and np.all(sv > 0.3) and np.all(sv < 0.7)
    # encode / decode round trip
    words = N.encode_intercept(ic, np.arange(P), fi)
    k, val = N.decode_intercept(words, fi)
    assert list(k) == list(range(P))
    assert np.array_equal(val, ic)
    assert np.all(words.astype(np.int64) >> (f_i.width - 1) == 0)


def test_exp2_pwl_all_negative_fp16_exhaustive():
    """All 31744 negative finite fp16 inputs (-0 included), P=8, fp32 A, both outputs."""
    x = np.arange(0x8000, 0xFC00, dtype=np.uint32).astype(np.uint16)
    assert len(x) == 31744
    ga, ge = N.exp2_pwl(x, "fp16", 8, "fp32", out="both")
    ref_a = np.array([exp2_ref(v, FP16, FP32, 8, FP32) for v in x], dtype=np.uint32)
    # the E result is the fp16 rounding of the same exact value: derive it
    ref_e = np.array([exp2_ref(v, FP16, FP32, 8, FP16) for v in x], dtype=np.uint16)
    assert_bits_equal(ga, ref_a, FP32, "exp2 fp16/P8 -> fp32", (x,))
    assert_bits_equal(ge, ref_e, FP16, "exp2 fp16/P8 -> fp16", (x,))
    assert_bits_equal(N.exp2_pwl(x, "fp16", 8, "fp32"), ge, FP16, "default out=elem")
    # subnormal results exist and are not flushed; large |x| gives +0
    assert np.any((ge > 0) & (ge < 0x0400))
    assert int(N.exp2_pwl(0xFBFF)) == 0


def exp2_near_midpoints(rng, fm, fa, P, target, n):
    """x in (-1, 0] whose value slope_k*x + intercept_k is within a few ulps
    of x of a midpoint of ``target`` (for fp32 x, float64 may round such a
    sum onto the midpoint, so the residual decides)."""
    sl, ic = N.pwl_constants(P, fm, fa)
    sv, iv = N.to_float64(sl, fm), N.to_float64(ic, fa)
    k = rng.integers(0, P, n)
    u = rng.random(n)
    # half in piece 0 with |x| log-uniform down to 2^-30: fine-grained products
    small = rng.random(n) < 0.5
    k = np.where(small, 0, k)
    u = np.where(small, np.exp2(-rng.uniform(0, 30 - math.log2(P), n)), u)
    v = sv[k] * (-(k + u) / P) + iv[k]
    ulp = 2.0 ** -target.precision  # ulp of [0.5, 1)
    m = (np.floor(v / ulp) + 0.5) * ulp
    xf = (m - iv[k]) / sv[k]
    xb = N.from_float64(np.minimum(xf, 0.0), fm).astype(np.int64) + rng.integers(-2, 3, n)
    return np.clip(xb, fm.sign_mask, fm.sign_mask | (fm.one - 1))


@pytest.mark.parametrize("fm,fa,P,n", [
    ("fp16", "fp16", 16, None), ("bf16", "fp32", 8, None), ("bf16", "bf16", 4, None),
    ("fp16", "fp32", 2, 6000), ("fp16", "fp32", 32, 6000), ("fp32", "fp32", 8, 6000),
])
def test_exp2_pwl_vs_fraction(fm, fa, P, n):
    f_m, f_a = get_format(fm), get_format(fa)
    if n is None:  # all negative finite values of the 16-bit format (-0 included)
        x = np.arange(f_m.sign_mask, f_m.sign_mask | f_m.pos_inf, dtype=np.uint32)
    else:
        rng = np.random.default_rng(21)
        mid = rng.integers(f_m.sign_mask | ((f_m.bias - 4) << f_m.man_bits),
                           f_m.sign_mask | ((f_m.bias + 8) << f_m.man_bits), n // 2)
        x = np.concatenate([rand_bits(rng, f_m, n // 2).astype(np.int64), mid])
    # inputs whose chord value lies at / next to a midpoint of either output
    rng = np.random.default_rng(22)
    near = [exp2_near_midpoints(rng, f_m, f_a, P, t, 3000) for t in (f_a, f_m)]
    x = np.concatenate([np.asarray(x, dtype=np.int64)] + near)
    edge = [f_m.sign_mask | f_m.pos_inf, f_m.canonical_nan, f_m.pos_inf, 0, f_m.sign_mask,
            f_m.one, f_m.sign_mask | f_m.one, f_m.sign_mask | 1, 1, f_m.pos_inf - 1,
            f_m.sign_mask | (f_m.pos_inf - 1)]
    x = np.concatenate([np.asarray(x, dtype=np.int64), edge]).astype(f_m.numpy_uint)
    ga, ge = N.exp2_pwl(x, fm, P, fa, out="both")
    ref_a = np.array([exp2_ref(v, f_m, f_a, P, f_a) for v in x], dtype=np.int64)
    ref_e = np.array([exp2_ref(v, f_m, f_a, P, f_m) for v in x], dtype=np.int64)
    assert_bits_equal(ga, ref_a.astype(f_a.numpy_uint), f_a, f"exp2 {fm}/{fa} P{P} acc", (x,))
    assert_bits_equal(ge, ref_e.astype(f_m.numpy_uint), f_m, f"exp2 {fm}/{fa} P{P} elem", (x,))


def exp2_fp32_traps(P):
    """All fp32 x = -X*2^-q in piece 0 (searched over the relevant q, and
    multiples j up to 2^22) with 1 + s0*x within 2^-54 of, but not on, the fp32
    midpoint 1 - j*2^-25.  float64 rounds such sums onto the midpoint, so only
    the TwoSum residual gets them right.  (For k >= 1 or |x| >= 1 the inner
    value is exact in float64: no such traps exist there.)"""
    sl, _ = N.pwl_constants(P, FP32, FP32)
    s0 = frac_of(sl[0], FP32)[0]
    S, es = s0.numerator, s0.denominator.bit_length() - 1
    out = set()
    for q in range(24, 80):
        sh = es + q - 25
        if sh < 0 or sh > 49 or es + q < 54:
            continue
        j = np.arange(1, max(3, min(2 ** 22, 2 ** (50 - sh))), 2, dtype=np.int64)
        J = j << sh  # j*2^-25 in units of 2^-(es+q)
        X0 = np.rint(J / S).astype(np.int64)
        for d in (-1, 0, 1):
            X = X0 + d
            D = J - S * X
            ok = (X > 0) & (X < 2 ** 24) & (X * P < 2 ** q) & (D != 0) & (np.abs(D) <= 2 ** (es + q - 54))
            out.update(int(x) * 2.0 ** -q for x in X[ok])
    return N.from_float64(-np.array(sorted(out)), FP32)


@pytest.mark.parametrize("P", [2, 8])
def test_exp2_fp32_float64_traps(P):
    x = exp2_fp32_traps(P)
    assert len(x) >= 1
    s0 = frac_of(N.pwl_constants(P, FP32, FP32)[0][0], FP32)[0]
    for xb in x:  # the trap property, checked with exact arithmetic
        v = 1 + s0 * frac_of(xb, FP32)[0]
        fv = Fraction(float(v))  # float64 rounding of the exact inner value
        assert fv != v and (fv * 2 ** 25).denominator == 1 and (fv * 2 ** 24).denominator == 2
    ref = np.array([exp2_ref(v, FP32, FP32, P, FP32) for v in x], dtype=np.uint32)
    assert_bits_equal(N.exp2_pwl(x, "fp32", P, "fp32", out="acc"), ref, FP32, "exp2 traps", (x,))


def test_exp2_pwl_special_values():
    f = FP16
    x = np.array([0xFC00, 0x7E00, 0xFE01, 0x7C00, 0x3C00, 0x0000, 0x8000, 0xC000,
                  0xCE00, 0xCE40, 0xCC80], dtype=np.uint16)
    ea, ee = N.exp2_pwl(x, "fp16", 8, "fp32", out="both")
    assert ee.tolist()[:8] == [0, 0x7E00, 0x7E00, 0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3400]
    assert ea.tolist()[:8] == [0, 0x7FC00000, 0x7FC00000, 0x3F800000, 0x3F800000,
                               0x3F800000, 0x3F800000, 0x3E800000]
    # -24 -> 2^-24 = smallest fp16 subnormal; -24.5 -> below it but above half
    # of it (rounds to 2^-24); -25 -> exactly half of it: a tie, rounds to +0
    assert ee.tolist()[8:] == [0x0001, 0x0000, 64]  # -24, -25 (a tie -> 0), -18
    assert int(N.exp2_pwl(N.from_float64(-24.0, "fp16"))) == 0x0001
    assert int(N.exp2_pwl(N.from_float64(-24.5, "fp16"))) == 0x0001
    assert int(N.exp2_pwl(N.from_float64(-25.0, "fp16"))) == 0x0000
    assert int(N.exp2_pwl(N.from_float64(-25.0, "fp16"), acc="fp32", out="acc")) == 0x33000000


def test_exp2_piece_and_step():
    x = np.arange(0x8000, 0xFC00, dtype=np.uint32).astype(np.uint16)
    for P in (4, 8):
        k = N.exp2_piece(x, "fp16", P)
        xv = N.to_float64(x, "fp16")
        frac = xv - np.ceil(xv)
        assert np.array_equal(k, np.floor(-frac * P).astype(np.int64))
        assert k.min() == 0 and k.max() == P - 1
    # piece 0 for NaN, -inf, positives
    assert N.exp2_piece([0xFC00, 0x7E00, 0x3C00, 0x3A00], "fp16", 8).tolist() == [0, 0, 0, 0]
    assert N.exp2_piece([0xB800, 0xBB00], "fp16", 8).tolist() == [4, 7]  # -0.5, -0.875
    # P cycles of the exp2 mode reproduce exp2_pwl where match is set
    P = 8
    sl, ic = N.pwl_constants(P, "fp16", "fp32")
    words = N.encode_intercept(ic, np.arange(P), "fp32")
    ref_a, ref_e = N.exp2_pwl(x, "fp16", P, "fp32", out="both")
    reg_a = np.zeros_like(ref_a)
    reg_e = np.zeros_like(ref_e)
    hits = np.zeros(len(x), dtype=np.int64)
    for kk in range(P):
        oa, oe, piece, match = N.exp2_step(x, sl[kk], words[kk], "fp16", P, "fp32")
        reg_a = np.where(match, oa, reg_a)
        reg_e = np.where(match, oe, reg_e)
        hits += match
    assert np.all(hits == 1)
    assert np.array_equal(reg_a, ref_a) and np.array_equal(reg_e, ref_e)


def test_intercept_encoding():
    w = N.encode_intercept(0x3F800000, 0, "fp32")
    assert int(w) == 0x00000000
    v = N.from_float64(0.75, "fp32")
    w = N.encode_intercept(v, 5, "fp32")
    assert int(w) == (5 << 23) | (int(v) & 0x7FFFFF)
    k, val = N.decode_intercept(w, "fp32")
    assert int(k) == 5 and int(val) == int(v)
    k, val = N.decode_intercept(0x0000, "fp16")
    assert int(k) == 0 and int(val) == 0x3C00
    with pytest.raises(ValueError, match="encodable"):
        N.encode_intercept(0x3F800000, 1, "fp32")  # 1.0 only for k = 0
    with pytest.raises(ValueError, match="encodable"):
        N.encode_intercept(N.from_float64(0.75, "fp32"), 0, "fp32")
    with pytest.raises(ValueError, match="encodable"):
        N.encode_intercept(N.from_float64(0.25, "fp32"), 3, "fp32")
    with pytest.raises(ValueError, match="k must be"):
        N.encode_intercept(N.from_float64(0.75, "fp16"), 31, "fp16")


def test_value_errors():
    for bad in (0, 1, 3, 6, 64, 2.0, True):
        with pytest.raises(ValueError, match="pieces"):
            N.pwl_constants(bad, "fp16", "fp32")
        with pytest.raises(ValueError, match="pieces"):
            N.exp2_piece(0xBC00, "fp16", bad)
    with pytest.raises(ValueError, match="exponent field"):
        N.pwl_constants(32, "fp16", "fp16")
    with pytest.raises(ValueError, match="exponent field"):
        N.exp2_pwl(0xBC00, "fp16", 32, acc="fp16")
    # bf16 intercepts: intercept_1 rounds to 1.0 for P >= 16 (not encodable)
    with pytest.raises(ValueError, match="intercept_1"):
        N.pwl_constants(16, "bf16", "bf16")
    with pytest.raises(ValueError, match="out must be"):
        N.fma(0, 0, 0, out="fp32")
    with pytest.raises(ValueError, match="out must be"):
        N.exp2_pwl(0, out="x")
    with pytest.raises(ValueError, match="unknown floating-point format"):
        N.fma(0, 0, 0, mul="fp8")
    with pytest.raises(ValueError, match="out of range"):
        N.sub(0x10000, 0, "fp16")
    with pytest.raises(ValueError, match="out of range"):
        N.convert(-1, "fp32", "fp16")
    with pytest.raises(TypeError, match="bit patterns"):
        N.reciprocal(1.5, "fp32")
    with pytest.raises(ValueError, match="not modelled"):
        N.to_float64(0, FPFormat("fp8", 4, 3))


def test_api_shapes_and_dtypes():
    r = N.fma(0x3C00, 0x3C00, 0)
    assert isinstance(r, np.ndarray) and r.dtype == np.uint32 and r.shape == () and int(r) == 0x3F800000
    r = N.fma([0x3C00, 0x4000], 0x4000, [[0], [0x3F800000]], out="elem")
    assert r.dtype == np.uint16 and r.shape == (2, 2)
    assert r.tolist() == [[0x4000, 0x4400], [0x4200, 0x4500]]
    assert N.convert([0x3C00], "fp16", "bf16").dtype == np.uint16
    assert N.from_float64([1.0, -2.0, np.nan, 1e-300, -1e-300], "bf16").tolist() == \
        [0x3F80, 0xC000, 0x7FC0, 0x0000, 0x8000]
    assert N.to_float64(np.array([0x0001], dtype=np.uint16), "fp16")[0] == 2.0 ** -24
    assert N.canonical_nan("fp16") == 0x7E00 and N.canonical_nan("fp32") == 0x7FC00000
    assert N.canonical_nan("bf16").dtype == np.uint16


def test_large_arrays_keep_shape_and_dtype():
    """The model is vectorised over arbitrary shapes (throughput: bench/numerics.py)."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1 << 16, (100, 1000)).astype(np.uint16)
    c = rng.integers(0, 1 << 32, (100, 1000)).astype(np.uint32)
    out = N.fma(a, a, c)
    assert out.shape == (100, 1000) and out.dtype == np.uint32


# --------------------------------------------------------------------------
# the fast path (fsa/numerics/fast.py) of the vectorised golden model:
# float64 sums rounded by numpy's casts, the exact path for the
# double-rounding cases
# --------------------------------------------------------------------------
FAST_CASES = [(m, a, a) for m, a in PAIRS] + [("fp16", "fp32", "fp16"), ("bf16", "fp32", "bf16")]


def _fast():
    from fsa.numerics import fast
    return fast


def _products(a, b, c, fm, fa):
    return N.to_float64(a, fm) * N.to_float64(b, fm), N.to_float64(c, fa)


@pytest.mark.parametrize("mul,acc,target", FAST_CASES)
def test_fast_add_round_vs_softfloat(mul, acc, target):
    F = _fast()
    fm, fa, ft = get_format(mul), get_format(acc), get_format(target)
    a, b, c, _ = fma_vectors(mul, acc, target)
    exp = sf_fma(a, b, c, fm, fa, ft)
    with np.errstate(all="ignore"):
        p, cv = _products(a, b, c, fm, fa)
    got = F.add_round(p, cv, target, bits=True)
    assert_bits_equal(got, exp, ft, f"fast {mul}x{mul}+{acc} -> {target}", (a, b, c))
    vals = F.add_round(p, cv, target)                 # the float64-values form
    assert vals.dtype == np.float64
    assert_bits_equal(F.to_bits(vals, target), exp, ft, "fast values -> bits", (a, b, c))


@pytest.mark.parametrize("mul,acc,target", [("bf16", "bf16", "bf16"), ("fp32", "fp32", "fp32"),
                                            ("fp16", "fp32", "fp16")])
def test_fast_midpoint_check_is_needed(mul, acc, target):
    """Products wider than the target: the residual vectors hold real
    double-rounding traps, which only the midpoint check gets right.
    (fp16 x fp16 + fp16 has none: its range is too narrow for an inexact
    float64 sum near an fp16 midpoint; the check is still run for it.)"""
    F = _fast()
    fm, fa, ft = get_format(mul), get_format(acc), get_format(target)
    a, b, c, _ = fma_vectors(mul, acc, target)
    with np.errstate(all="ignore"):
        p, cv = _products(a, b, c, fm, fa)
    exp = N.fma(a, b, c, mul=mul, acc=acc, out="acc" if target == acc else "elem")
    naive = F.add_round(p, cv, target, trap_free=True, bits=True)
    wrong = ~(is_nan_bits(naive, ft) & is_nan_bits(exp, ft)) & (naive != exp)
    assert wrong.sum() >= 20, f"only {wrong.sum()} traps among the vectors"
    assert_bits_equal(F.add_round(p, cv, target, bits=True), exp, ft, "checked", (a, b, c))


@pytest.mark.parametrize("mul", ["fp16", "bf16"])
def test_fast_trap_free_products_accumulated_in_fp32(mul):
    """E x E + fp32 -> fp32 with 2 p_E <= 24: no midpoint test needed (the
    proof in fsa/numerics/fast.py), on the tie, residual and cancellation
    vectors."""
    F = _fast()
    fm, fa = get_format(mul), FP32
    a, b, c, _ = fma_vectors(mul, "fp32", "fp32")
    with np.errstate(all="ignore"):
        p, cv = _products(a, b, c, fm, fa)
    got = F.add_round(p, cv, "fp32", trap_free=True, bits=True)
    assert_bits_equal(got, sf_fma(a, b, c, fm, fa, fa), fa, f"trap-free {mul}", (a, b, c))


@pytest.mark.parametrize("x,y,target", [("fp16", "fp16", "fp16"), ("bf16", "bf16", "bf16"),
                                        ("fp32", "fp32", "fp32"), ("fp16", "fp32", "fp32"),
                                        ("bf16", "fp32", "fp32")])
def test_fast_trap_free_sums_of_values_at_most_the_target_precision(x, y, target):
    """x + y with both operands of at most the target's precision, far apart
    (inexact in float64) or close, every sign: direct rounding is exact."""
    F = _fast()
    fx, fy, ft = get_format(x), get_format(y), get_format(target)
    rng = np.random.default_rng(zlib.crc32(f"{x}/{y}".encode()))
    n = 100_000
    big = rand_bits(rng, fx, n)
    small = rand_bits(rng, fy, n)
    # half of the small operands get the big one's binade minus 20..90 (a
    # float64 sum then drops bits), the other half stay as drawn
    bv = N.to_float64(big, fx)
    with np.errstate(all="ignore"):
        mag = np.floor(np.log2(np.abs(bv)))
        mag = np.where(np.isfinite(mag), mag, 0).astype(np.int64)
        far = np.ldexp(1.0 + rng.random(n), mag - rng.integers(20, 90, n))
    far = np.where(rng.random(n) < 0.5, far, -far)
    sv = np.where(rng.random(n) < 0.5, N.to_float64(small, fy), far)
    small = N.from_float64(sv, fy)                     # a y value (rounded where needed)
    sv = N.to_float64(small, fy)
    exp = N.fma(big, fx.one, small, mul=x, acc=y, out="acc" if target == y else "elem")
    with np.errstate(all="ignore"):
        got = F.add_round(bv, sv, target, trap_free=True, bits=True)
    with np.errstate(all="ignore"):
        s = bv + sv
        inexact = int((np.isfinite(s) & (((s - bv) != sv) | ((s - sv) != bv))).sum())
    if fy.name != "fp16":         # (fp16's range is too narrow for an inexact sum)
        assert inexact > 1000, inexact                 # the far cases are inexact in float64
    assert_bits_equal(got, exp, ft, f"trap-free {x} + {y} -> {target}", (big, small))


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_fast_to_bits_and_round_values_vs_exact_path(fmt):
    F = _fast()
    f = get_format(fmt)
    rng = np.random.default_rng(zlib.crc32(fmt.encode()))
    n = 200_000
    # float64 values around the whole range of the format, its midpoints
    # (exact, and one float64 ulp either side), specials
    e = rng.integers(f.emin - f.man_bits - 4, f.emax + 3, n)
    x = np.ldexp(1.0 + rng.random(n), e)
    mids = N.to_float64(rand_bits(rng, f, n // 4), f)
    with np.errstate(all="ignore"):
        ulp = np.ldexp(1.0, np.maximum(np.floor(np.log2(np.abs(mids))), f.emin).astype(np.int64)
                       - f.man_bits)
        mids = mids + ulp / 2
        mids = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    x = np.concatenate([x, -x[: n // 2], mids, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]])
    exp = N.from_float64(x, fmt)
    assert_bits_equal(F.to_bits(x, fmt), exp, f, "to_bits")
    rv = F.round_values(x, fmt)
    assert_bits_equal(F.to_bits(rv, fmt), exp, f, "round_values")
    fin = np.isfinite(rv)
    assert np.array_equal(rv[fin], N.to_float64(exp, fmt)[fin])
