"""Bit-exact numeric model of the FSA arithmetic units.

Implements the contract in ``docs/numerics.md`` on raw bit patterns
(``uint16`` arrays for fp16/bf16, ``uint32`` for fp32), vectorised with
numpy.  Every function accepts numpy arrays, Python lists or scalars of
integer bit patterns and returns numpy arrays of the format's unsigned
dtype (0-d arrays for scalar inputs).  Inputs of several operands are
broadcast against each other.

How exactness is obtained (no arbitrary-precision arithmetic needed):

* Every value of fp16, bf16 and fp32 is exactly a float64, and the product
  of two such values has at most 48 significant bits and an exponent in
  [-298, 256], so the float64 product ``p = a*b`` is exact.
* ``s = fl64(p + c)`` and the error ``e = (p + c) - s`` from Knuth's TwoSum
  (exact: no overflow is possible, and all operands are multiples of
  2^-298, far above the float64 subnormal range) represent the exact sum
  ``p + c = s + e`` with ``|e| <= ulp64(s) / 2``.
* Every representable number and every rounding midpoint of the target
  formats (subnormal range and the overflow threshold ``max + ulp/2``
  included) is a float64.  Since round-to-nearest is monotone, the exact
  value and ``s`` lie on the same side of each such point, except that
  ``s`` may equal a midpoint that the exact value only approaches; in that
  case the sign of ``e`` says on which side the exact value lies.  So RNE of
  ``s`` to the target, with ``e`` breaking exact-midpoint cases, is the
  correctly rounded result of the exact value: one rounding.
* The float64 -> target rounding itself is done with integer bit operations
  on the float64 encoding.

Formats are named "fp16", "bf16", "fp32" (or given as
:class:`fsa.formats.FPFormat`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Union

import numpy as np

from fsa.formats import FPFormat, get_format

__all__ = [
    "fma",
    "sub",
    "maximum",
    "reciprocal",
    "convert",
    "exp2_pwl",
    "exp2_piece",
    "exp2_step",
    "pwl_constants",
    "encode_intercept",
    "decode_intercept",
    "check_pieces",
    "to_float64",
    "from_float64",
    "canonical_nan",
]

FormatLike = Union[str, FPFormat]
ArrayLike = Any  # numpy array, list or scalar of integer bit patterns

_M52 = np.uint64((1 << 52) - 1)
_HIDDEN = np.int64(1 << 52)
# xi below this makes every exp2 result round to +0 in every format (see
# _exp2_core); clamping to it keeps np.ldexp exact (no float64 underflow).
_XI_MIN = -200
_OUT_CHOICES = ("acc", "elem", "both")


# --------------------------------------------------------------------------
# bit-pattern helpers
# --------------------------------------------------------------------------
def _dtype(f: FPFormat) -> np.dtype:
    return np.dtype(f.numpy_uint)


def _as_bits(x: ArrayLike, f: FPFormat) -> np.ndarray:
    """Return ``x`` as an array of raw bit patterns of format ``f``.

    Raises:
        TypeError: if ``x`` is not of an integer type.
        ValueError: if a value does not fit the format's width.
    """
    arr = np.asarray(x)
    dt = _dtype(f)
    if arr.dtype == dt:
        return arr
    if arr.dtype.kind not in "ui":
        raise TypeError(
            f"expected raw {f.name} bit patterns (unsigned integers), got dtype "
            f"{arr.dtype}; convert real numbers with from_float64() first"
        )
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= (1 << f.width)):
        raise ValueError(f"bit pattern out of range for {f.name} ({f.width} bits)")
    return arr.astype(dt)


def canonical_nan(fmt: FormatLike) -> np.generic:
    """The canonical quiet NaN of ``fmt`` (fp16 0x7E00, bf16 0x7FC0, fp32 0x7FC00000).

    Args:
        fmt: format name or FPFormat.

    Returns:
        A numpy unsigned scalar of the format's dtype.

    Raises:
        ValueError: for an unknown format.
    """
    f = get_format(fmt)
    return _dtype(f).type(f.canonical_nan)


def to_float64(bits: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """Decode raw bit patterns exactly to float64.

    Args:
        bits: bit patterns of format ``fmt``.
        fmt: format name or FPFormat.

    Returns:
        float64 array of the same shape (exact; NaNs stay NaN, payloads are
        not meaningful).

    Raises:
        ValueError: for an unknown or unmodelled format or out-of-range bit
            patterns.
        TypeError: for non-integer input.
    """
    f = get_format(fmt)
    b = _as_bits(bits, f)
    with np.errstate(invalid="ignore"):
        if f.name == "fp16":
            return b.view(np.float16).astype(np.float64)
        if f.name == "fp32":
            return b.view(np.float32).astype(np.float64)
        if f.name == "bf16":
            return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    raise ValueError(f"format {f.name!r} is not modelled; use fp16, bf16 or fp32")


def _round_f64(s: np.ndarray, e: "np.ndarray | None", f: FPFormat) -> np.ndarray:
    """Round ``s + e`` (float64 pair, ``|e| <= ulp64(s)/2``) to ``f`` with RNE.

    Only the sign of ``e`` (and whether it is zero) is used, to resolve the
    case where ``s`` is exactly a midpoint of ``f``.  ``e=None`` means exact.

    Args:
        s: float64 array (may contain inf / NaN; float64 subnormals round to 0).
        e: float64 residual array broadcastable to ``s``, or None.
        f: target format.

    Returns:
        Bit patterns of ``f`` (NaN -> canonical NaN, sign kept on inf/zero).
    """
    s = np.asarray(s, dtype=np.float64)
    u = s.view(np.uint64)
    neg = (u >> np.uint64(63)).astype(bool)
    exp64 = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    sig = (u & _M52).astype(np.int64) | _HIDDEN
    E = exp64 - 1023
    m = f.man_bits
    base_shift = 52 - m
    # extra right shift in the target's subnormal range; capped so that the
    # total shift stays <= 60 (>= 54 already rounds everything to 0 or 1 ulp)
    shift = base_shift + np.clip(f.emin - E, 0, 60 - base_shift)
    q = sig >> shift
    rem = sig & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    tie = rem == half
    if e is None:
        tie_up = (q & 1).astype(bool)
    else:
        e = np.asarray(e, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            away = (e != 0) & (np.signbit(e) == neg)
            tie_up = np.where(e == 0, (q & 1).astype(bool), away)
    up = (rem > half) | (tie & tie_up)
    enc = (np.maximum(E - f.emin, 0) << m) + q + up
    inf = f.pos_inf
    enc = np.where(E > f.emax, inf, enc)  # also catches float64 inf / NaN
    enc = np.where(exp64 == 0, 0, enc)  # +-0 (and float64 subnormals)
    enc = enc | (neg.astype(np.int64) << (f.width - 1))
    enc = np.where(np.isnan(s), f.canonical_nan, enc)
    return enc.astype(_dtype(f))


def from_float64(x: Any, fmt: FormatLike) -> np.ndarray:
    """Round float64 values to ``fmt`` with RNE (correctly rounded).

    Args:
        x: float64 array-like.
        fmt: target format.

    Returns:
        Bit patterns of ``fmt``; NaN becomes the canonical NaN.

    Raises:
        ValueError: for an unknown format.
    """
    f = get_format(fmt)
    return _round_f64(np.asarray(x, dtype=np.float64), None, f)


def _two_sum(p: np.ndarray, c: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """Knuth's TwoSum: ``s = fl(p + c)`` and the exact error ``e``."""
    s = p + c
    bb = s - p
    aa = s - bb
    e = (p - aa) + (c - bb)
    return s, e


def _check_out(out: str) -> None:
    if out not in _OUT_CHOICES:
        raise ValueError(f"out must be one of {_OUT_CHOICES}, got {out!r}")


# --------------------------------------------------------------------------
# operations
# --------------------------------------------------------------------------
def fma(
    a: ArrayLike,
    b: ArrayLike,
    c: ArrayLike,
    mul: FormatLike = "fp16",
    acc: FormatLike = "fp32",
    out: str = "acc",
) -> "np.ndarray | tuple[np.ndarray, np.ndarray]":
    """Fused multiply-add ``a*b + c``: exact product, one RNE rounding.

    Args:
        a: multiplicand bits, format ``mul``.
        b: multiplier bits, format ``mul``.
        c: addend bits, format ``acc``.
        mul: multiply format M.
        acc: add / accumulate format A.
        out: "acc" -> RNE to A; "elem" -> RNE to M; "both" -> (acc, elem),
            both from the same exact value.

    Returns:
        Bit array(s) of the broadcast shape.

    Raises:
        ValueError: unknown format or ``out``, or out-of-range bits.
        TypeError: non-integer inputs.
    """
    fm, fa = get_format(mul), get_format(acc)
    _check_out(out)
    av = to_float64(a, fm)
    bv = to_float64(b, fm)
    cv = to_float64(c, fa)
    with np.errstate(all="ignore"):
        p = av * bv  # exact
        s, e = _two_sum(p, cv)
        if out == "acc":
            return _round_f64(s, e, fa)
        if out == "elem":
            return _round_f64(s, e, fm)
        return _round_f64(s, e, fa), _round_f64(s, e, fm)


def sub(a: ArrayLike, b: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """``RNE(a - b)`` in ``fmt`` with IEEE special cases.

    ``inf - inf`` -> NaN, ``x - x`` -> +0, ``(-0) - (+0)`` -> -0.

    Args:
        a: minuend bits.
        b: subtrahend bits.
        fmt: format of a, b and the result.

    Returns:
        Bit array of the broadcast shape.

    Raises:
        ValueError: unknown format or out-of-range bits.
        TypeError: non-integer inputs.
    """
    f = get_format(fmt)
    av = to_float64(a, f)
    bv = to_float64(b, f)
    with np.errstate(all="ignore"):
        s, e = _two_sum(av, -bv)
        return _round_f64(s, e, f)


def maximum(a: ArrayLike, b: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """Running maximum as the CMP unit does it.

    NaN in either operand -> canonical NaN.  Otherwise ``b`` if ``b > a``
    numerically (+0 == -0), else ``a`` bit for bit (ties keep the first
    operand).

    Args:
        a: first operand (the running max), bits of ``fmt``.
        b: second operand, bits of ``fmt``.
        fmt: format.

    Returns:
        Bit array of the broadcast shape.

    Raises:
        ValueError: unknown format or out-of-range bits.
        TypeError: non-integer inputs.
    """
    f = get_format(fmt)
    ab = _as_bits(a, f)
    bb = _as_bits(b, f)
    ab, bb = np.broadcast_arrays(ab, bb)
    av = to_float64(ab, f)
    bv = to_float64(bb, f)
    with np.errstate(invalid="ignore"):
        res = np.where(bv > av, bb, ab)
    res = np.where(np.isnan(av) | np.isnan(bv), f.canonical_nan, res)
    return res.astype(_dtype(f))


def reciprocal(x: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """``RNE(1 / x)`` in ``fmt``.

    ``1/+-0 = +-inf``, ``1/+-inf = +-0``, NaN -> canonical NaN.  Computing
    ``1/x`` in float64 first is harmless: for significands of <= 24 bits the
    exact quotient is never a target midpoint and lies at relative distance
    >= 2^-49 from every midpoint, more than float64's half ulp (2^-53).

    Args:
        x: bits of ``fmt``.
        fmt: format.

    Returns:
        Bit array of the same shape.

    Raises:
        ValueError: unknown format or out-of-range bits.
        TypeError: non-integer inputs.
    """
    f = get_format(fmt)
    xv = to_float64(x, f)
    with np.errstate(all="ignore"):
        return _round_f64(1.0 / xv, None, f)


def convert(x: ArrayLike, src: FormatLike, dst: FormatLike) -> np.ndarray:
    """Convert ``x`` from ``src`` to ``dst`` with RNE.

    Exact when widening; NaN -> canonical NaN of ``dst``; +-inf and +-0
    keep their sign.

    Args:
        x: bits of ``src``.
        src: source format.
        dst: destination format.

    Returns:
        Bit array of ``dst``.

    Raises:
        ValueError: unknown format or out-of-range bits.
        TypeError: non-integer inputs.
    """
    fs, fd = get_format(src), get_format(dst)
    return _round_f64(to_float64(x, fs), None, fd)


# --------------------------------------------------------------------------
# exp2 by piecewise-linear chords
# --------------------------------------------------------------------------
def check_pieces(pieces: int, intercept_fmt: "FormatLike | None" = None) -> int:
    """Validate the number of exp2 pieces ``P``.

    Args:
        pieces: P, must be a power of two in 2..32.
        intercept_fmt: if given, P must also fit that format's exponent
            field (``P <= 2^exp_bits - 1``) for the intercept encoding.

    Returns:
        ``log2(P)``.

    Raises:
        ValueError: saying what to change.
    """
    if isinstance(pieces, bool) or not isinstance(pieces, (int, np.integer)):
        raise ValueError(f"pieces must be an int power of two in 2..32, got {pieces!r}")
    p = int(pieces)
    if p < 2 or p > 32 or (p & (p - 1)) != 0:
        raise ValueError(
            f"pieces={p} is not allowed: use a power of two between 2 and 32 "
            f"(2, 4, 8, 16 or 32)"
        )
    if intercept_fmt is not None:
        fi = get_format(intercept_fmt)
        limit = (1 << fi.exp_bits) - 1
        if p > limit:
            raise ValueError(
                f"pieces={p} does not fit the {fi.name} intercept exponent field "
                f"(the piece index k travels in it, so pieces must be <= {limit}); "
                f"use pieces <= {1 << (limit.bit_length() - 1)} or a wider accumulate format"
            )
    return p.bit_length() - 1


def _iroot(n: int, p: int) -> int:
    """floor(n ** (1/p)) for integers n >= 1, p >= 1 (Newton from above)."""
    x = 1 << -(-n.bit_length() // p)
    while True:
        y = ((p - 1) * x + n // x ** (p - 1)) // p
        if y >= x:
            return x
        x = y


@lru_cache(maxsize=None)
def _exp2_neg_frac(k: int, pieces: int) -> float:
    """``2^(-k/pieces)`` correctly rounded to float64 (platform independent).

    For non-integer exponents the value is irrational, so with Y = floor of
    it scaled by 2^128, the float64 rounding of (Y + 1/2) / 2^128 equals the
    rounding of the true value (no float64 midpoint lies strictly between
    two consecutive multiples of 2^-128 in [0.5, 1]).
    """
    if k % pieces == 0:
        return math.ldexp(1.0, -(k // pieces))
    m = 128
    y = _iroot(1 << (m * pieces - k), pieces)
    return float(Fraction(2 * y + 1, 1 << (m + 1)))


@lru_cache(maxsize=None)
def _pwl_constants_cached(pieces: int, fs: FPFormat, fi: FPFormat) -> "tuple[tuple[int, ...], tuple[int, ...]]":
    slopes: list[int] = []
    icpts: list[int] = []
    for k in range(pieces):
        x0 = -k / pieces
        x1 = -(k + 1) / pieces
        y0 = _exp2_neg_frac(k, pieces)
        y1 = _exp2_neg_frac(k + 1, pieces)
        slope64 = (y1 - y0) / (x1 - x0)
        sb = int(from_float64(slope64, fs))
        sv = float(to_float64(sb, fs))
        icpt64 = y0 - sv * x0
        ib = int(from_float64(icpt64, fi))
        slopes.append(sb)
        icpts.append(ib)
    # the properties the intercept encoding relies on
    one = fi.one
    if icpts[0] != one:  # pragma: no cover - 2^0 - s*0 is exactly 1
        raise ValueError("intercept_0 is not 1.0")
    for k in range(1, pieces):
        v = float(to_float64(icpts[k], fi))
        if not 0.5 < v < 1.0:
            raise ValueError(
                f"with pieces={pieces} and {fi.name} intercepts, intercept_{k} rounds to "
                f"{v!r}, outside (0.5, 1), so it cannot be encoded with k in its exponent "
                f"field; use fewer pieces or a wider intercept (accumulate) format"
            )
    return tuple(slopes), tuple(icpts)


def pwl_constants(
    pieces: int, slope_fmt: FormatLike, intercept_fmt: FormatLike
) -> "tuple[np.ndarray, np.ndarray]":
    """Chord slopes and intercepts of the exp2 PWL approximation.

    For piece ``k``, ``x0 = -k/P``, ``x1 = -(k+1)/P``:
    ``slope_k = RNE_slope((2^x1 - 2^x0) / (x1 - x0))`` and
    ``intercept_k = RNE_icpt(2^x0 - s_k * x0)`` with ``s_k`` the rounded
    slope, both computed in float64 (``2^x0`` correctly rounded to float64)
    and then rounded once to the target format.

    Args:
        pieces: P (power of two, 2..32, ``<= 2^exp_bits(intercept_fmt) - 1``).
        slope_fmt: format of the slopes (the multiply format M).
        intercept_fmt: format of the intercepts (the accumulate format A).

    Returns:
        ``(slopes_bits, intercepts_bits)``, arrays of length P.

    Raises:
        ValueError: bad ``pieces`` or format, or an intercept that the
            exp2-mode encoding cannot carry (see :func:`encode_intercept`).
    """
    fs, fi = get_format(slope_fmt), get_format(intercept_fmt)
    check_pieces(pieces, fi)
    s, i = _pwl_constants_cached(int(pieces), fs, fi)
    return np.array(s, dtype=_dtype(fs)), np.array(i, dtype=_dtype(fi))


def encode_intercept(icpt_bits: ArrayLike, k: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """Encode intercept ``k`` for the exp2 mode of the FMA unit.

    The word has sign 0, exponent field ``k`` and the mantissa field of the
    intercept.

    Args:
        icpt_bits: intercept bits (format ``fmt``); 1.0 for ``k == 0``, in
            [0.5, 1) for ``k >= 1``.
        k: piece index, ``0 <= k <= 2^exp_bits - 2``.
        fmt: intercept (accumulate) format.

    Returns:
        Encoded words (bits of ``fmt``), broadcast shape.

    Raises:
        ValueError: if an intercept or ``k`` cannot be encoded.
    """
    f = get_format(fmt)
    ib = _as_bits(icpt_bits, f).astype(np.int64)
    kk = np.asarray(k)
    if kk.dtype.kind not in "ui":
        raise ValueError(f"k must be integers, got dtype {kk.dtype}")
    kk = kk.astype(np.int64)
    ib, kk = np.broadcast_arrays(ib, kk)
    if kk.size and (kk.min() < 0 or kk.max() > f.exp_max - 1):
        raise ValueError(f"k must be in 0..{f.exp_max - 1} for a {f.name} intercept")
    man_mask = (1 << f.man_bits) - 1
    half_exp = (f.bias - 1) << f.man_bits
    ok0 = (kk != 0) | (ib == f.one)
    okk = (kk == 0) | ((ib & ~man_mask) == half_exp)
    if not (np.all(ok0) and np.all(okk)):
        raise ValueError(
            "intercept not encodable: intercept_0 must be 1.0 and the others must lie in "
            "[0.5, 1); use fewer pieces or a wider intercept format"
        )
    word = (kk << f.man_bits) | (ib & man_mask)
    return word.astype(_dtype(f))


def decode_intercept(word: ArrayLike, fmt: FormatLike) -> "tuple[np.ndarray, np.ndarray]":
    """Decode an exp2-mode intercept word.

    Args:
        word: encoded word(s), bits of ``fmt``.
        fmt: intercept (accumulate) format.

    Returns:
        ``(k, value_bits)``: ``k`` = exponent field (int64); value = 1.0 if
        ``k == 0``, else ``1.mantissa * 2^-1``.

    Raises:
        ValueError: unknown format or out-of-range bits.
        TypeError: non-integer inputs.
    """
    f = get_format(fmt)
    w = _as_bits(word, f).astype(np.int64)
    man_mask = (1 << f.man_bits) - 1
    k = (w >> f.man_bits) & f.exp_max
    val = np.where(k == 0, f.one, ((f.bias - 1) << f.man_bits) | (w & man_mask))
    return k, val.astype(_dtype(f))


def _exp2_split(xv: np.ndarray, pieces: int) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    """Clamp and split x: returns (xi_clamped_int, xf, k, is_nan, is_ninf)."""
    with np.errstate(invalid="ignore"):
        nan = np.isnan(xv)
        ninf = xv == -np.inf
        x = np.where(nan | ninf | (xv >= 0), 0.0, xv)  # x > 0, +inf, -0 -> +0
        xi = np.ceil(x)
        xf = x - xi  # exact, in (-1, 0]
        k = np.floor(-xf * pieces).astype(np.int64)  # top log2(P) bits of |xf|
        xi_i = np.maximum(xi, _XI_MIN).astype(np.int64)
    return xi_i, xf, k, nan, ninf


def _exp2_core(
    xi: np.ndarray, xf: np.ndarray, sv: np.ndarray, iv: np.ndarray,
    nan: np.ndarray, ninf: np.ndarray, fm: FPFormat, fa: FPFormat, out: str,
) -> "np.ndarray | tuple[np.ndarray, np.ndarray]":
    """RNE((sv * xf + iv) * 2^xi) to A and/or M, specials applied.

    ``sv * xf + iv`` lies in about [0.5, 1], so for xi <= -152 the result is
    below 2^-151 and rounds to +0 in every format; clamping xi at -200 keeps
    that answer while keeping ``ldexp`` exact (result >= 2^-202, a normal
    float64).  The residual ``e`` is not scaled: only its sign is needed.
    """
    with np.errstate(all="ignore"):
        p = sv * xf  # exact (<= 24 x 24 bits)
        s, e = _two_sum(p, iv)
        s = np.ldexp(s, xi)
        s = np.where(ninf, 0.0, s)
        s = np.where(nan, np.nan, s)
        e = np.where(ninf | nan, 0.0, e)
        if out == "acc":
            return _round_f64(s, e, fa)
        if out == "elem":
            return _round_f64(s, e, fm)
        return _round_f64(s, e, fa), _round_f64(s, e, fm)


def exp2_piece(x: ArrayLike, fmt: FormatLike = "fp16", pieces: int = 8) -> np.ndarray:
    """Piece index ``k = floor(|xf| * P)`` of each input (step 3 of the doc).

    ``x > 0`` (incl. +inf) and ``-0`` count as 0; NaN and -inf give 0.

    Args:
        x: bits of ``fmt``.
        fmt: format of x (the multiply format M).
        pieces: P.

    Returns:
        int64 array of piece indices in 0..P-1.

    Raises:
        ValueError: bad ``pieces``, unknown format or out-of-range bits.
    """
    f = get_format(fmt)
    check_pieces(pieces)
    _, _, k, _, _ = _exp2_split(to_float64(x, f), int(pieces))
    return k


def exp2_pwl(
    x: ArrayLike,
    fmt: FormatLike = "fp16",
    pieces: int = 8,
    acc: FormatLike = "fp32",
    out: str = "elem",
) -> "np.ndarray | tuple[np.ndarray, np.ndarray]":
    """``2^x`` for ``x <= 0`` by P-piece chords, one rounding after scaling.

    Result ``RNE((slope_k * xf + intercept_k) * 2^xi)`` with
    ``xi = ceil(x)``, ``xf = x - xi``, slopes in ``fmt`` and intercepts in
    ``acc`` (from :func:`pwl_constants`).  ``x > 0`` is clamped to 0
    (result 1.0), -inf gives +0, NaN gives the canonical NaN.

    Args:
        x: bits of ``fmt``.
        fmt: format of x and of the slopes (M).
        pieces: P.
        acc: format of the intercepts (A).
        out: "elem" -> RNE to M; "acc" -> RNE to A; "both" -> (acc, elem).

    Returns:
        Bit array(s).

    Raises:
        ValueError: bad ``pieces``/``out``/format, or out-of-range bits.
    """
    fm, fa = get_format(fmt), get_format(acc)
    _check_out(out)
    sb, ib = pwl_constants(pieces, fm, fa)
    sv = to_float64(sb, fm)
    iv = to_float64(ib, fa)
    xi, xf, k, nan, ninf = _exp2_split(to_float64(x, fm), int(pieces))
    return _exp2_core(xi, xf, sv[k], iv[k], nan, ninf, fm, fa, out)


def exp2_step(
    x: ArrayLike,
    slope: ArrayLike,
    word: ArrayLike,
    fmt: FormatLike = "fp16",
    pieces: int = 8,
    acc: FormatLike = "fp32",
) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    """One cycle of the FMA unit in exp2 mode.

    ``a = x`` (M), ``b = slope`` (M), ``c = word`` (encoded intercept, A).
    The slope follows FMA rules (NaN slope -> NaN, ``inf * 0`` -> NaN), and
    ``xi`` is clamped at ``_XI_MIN = -200`` before the scaling; for slopes
    of the contract (|slope| < 1) the clamp never changes a result, for
    arbitrary slopes it defines the result (the RTL uses the same constant).

    Args:
        x: register value bits (M).
        slope: slope bits arriving this cycle (M).
        word: encoded intercept word arriving this cycle (A).
        fmt: M.
        pieces: P (selects how many bits of |xf| form the piece index).
        acc: A.

    Returns:
        ``(out_a, out_e, piece, match)``: the results of
        ``RNE((slope * xf + decoded_intercept) * 2^xi)`` in A and M (same
        specials as :func:`exp2_pwl`), the piece index of x, and
        ``piece == k`` of the word (bool).

    Raises:
        ValueError: bad ``pieces``, unknown format or out-of-range bits.
    """
    fm, fa = get_format(fmt), get_format(acc)
    check_pieces(pieces, fa)
    kc, ivb = decode_intercept(word, fa)
    sv = to_float64(slope, fm)
    iv = to_float64(ivb, fa)
    xi, xf, k, nan, ninf = _exp2_split(to_float64(x, fm), int(pieces))
    xi, xf, k, nan, ninf, sv, iv, kc = np.broadcast_arrays(xi, xf, k, nan, ninf, sv, iv, kc)
    oa, oe = _exp2_core(xi, xf, sv, iv, nan, ninf, fm, fa, "both")
    return oa, oe, k.copy(), (k == kc)
