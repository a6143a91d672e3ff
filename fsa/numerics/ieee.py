"""Bit-exact numeric model of the FSA arithmetic units: bit patterns,
rounding, multiply-add, subtract, maximum, reciprocal and format conversion
(exp2 is in :mod:`fsa.numerics.exp2`; import both through :mod:`fsa.numerics`).

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

from typing import Any, Union

import numpy as np

from fsa.formats import FPFormat, get_format

__all__ = [
    "fma",
    "sub",
    "maximum",
    "reciprocal",
    "convert",
    "to_float64",
    "from_float64",
    "canonical_nan",
    "FormatLike",
    "ArrayLike",
]

FormatLike = Union[str, FPFormat]
ArrayLike = Any  # numpy array, list or scalar of integer bit patterns

_M52 = np.uint64((1 << 52) - 1)
_HIDDEN = np.int64(1 << 52)
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
