"""A fast path for the roundings of :mod:`fsa.numerics.ieee`, on float64
*values* instead of raw bit patterns, for the vectorised golden model
(:mod:`fsa.golden.fast`).

The exact path (:func:`fsa.numerics.fma` and friends) decodes bits to
float64, forms ``s = fl64(p + c)`` and the TwoSum residual ``e``, and
rounds ``s`` to the target with integer operations, using the sign of ``e``
only when ``s`` is exactly a midpoint of the target format.  Here the same
``s`` is rounded by numpy's float64 -> float32 / float16 casts, which round
to nearest even correctly from float64 (checked by the tests against the
exact path and SoftFloat), so the result is the exact path's whenever

* the sum is exact in float64 (``e == 0``; e.g. ``c == 0``, or the caller
  knows both operands lie on a common grid of at most 53 bits), or
* ``s`` is not a midpoint of the target format.

The one remaining case, ``s`` exactly on a target midpoint while ``e != 0``
(the double-rounding trap: e.g. ``1 + 2^-11`` plus a tiny addend, to fp16),
is found by a cheap test on the float64 encoding (every midpoint of a format
with ``m`` mantissa bits has its low ``51 - m`` float64 mantissa bits zero);
only when such candidates exist is ``e`` computed, and the elements with
``e != 0`` among them are rounded by the exact path.

Values are float64 arrays holding exactly representable numbers of the
format; NaN stays a (non-canonical) float64 NaN until :func:`to_bits`, which
gives the canonical NaN as the exact path does.  bf16 has no numpy type: a
float64 is first rounded to odd at fp32 precision (24 >= 8 + 2 bits, and
fp32's grid refines bf16's everywhere, so the second rounding is correct),
then to bf16 with integer operations.
"""
from __future__ import annotations

import numpy as np

from fsa.formats import FPFormat, get_format
from fsa.numerics.ieee import FormatLike, _round_f64, _two_sum, to_float64

__all__ = ["values", "round_values", "to_bits", "add_round", "midpoint_mask"]

_NP = {"fp16": np.float16, "fp32": np.float32}


def values(bits, fmt: FormatLike) -> np.ndarray:
    """Bit patterns -> float64 values (exact; same as :func:`fsa.numerics.to_float64`)."""
    return to_float64(bits, fmt)


def midpoint_mask(fmt: FormatLike) -> np.uint64:
    """The float64 mantissa bits that are zero in every midpoint of `fmt`
    (a midpoint has ``man_bits + 2`` significant bits; subnormal-range and
    overflow-threshold midpoints have fewer)."""
    f = get_format(fmt)
    return np.uint64((1 << (51 - f.man_bits)) - 1)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """RNE of exact float64 values to bf16 bits (NaN -> canonical NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float32)
        back = y.astype(np.float64)
        inexact = back != x                         # also True for NaN (harmless: fixed below)
        yb = y.view(np.uint32).astype(np.uint64)
        if inexact.any():
            # round to odd at fp32 precision: truncate towards zero, set the last bit
            down = inexact & (np.abs(back) > np.abs(x))
            yb = (yb - down.astype(np.uint64)) | inexact.astype(np.uint64)
        r = ((yb + np.uint64(0x7FFF) + ((yb >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16))
        r = r.astype(np.uint16)
        nan = np.isnan(x)
        if nan.any():
            r = np.where(nan, np.uint16(0x7FC0), r)
    return r


def to_bits(x: np.ndarray, fmt: FormatLike) -> np.ndarray:
    """RNE of exact float64 values to raw bits of `fmt` (NaN -> canonical NaN).

    For values already representable in `fmt` this is the encoding."""
    f = get_format(fmt)
    x = np.asarray(x, np.float64)
    if f.name == "bf16":
        return _bf16_bits(x)
    with np.errstate(over="ignore", invalid="ignore"):
        b = x.astype(_NP[f.name]).view(f.numpy_uint)
    if x.size and np.isnan(np.max(x)):
        b = np.where(np.isnan(x), np.dtype(f.numpy_uint).type(f.canonical_nan), b)
    return b


def round_values(x: np.ndarray, fmt: FormatLike) -> np.ndarray:
    """RNE of exact float64 values to `fmt`, as float64 values (NaN stays NaN)."""
    f = get_format(fmt)
    if f.name == "bf16":
        b = _bf16_bits(np.asarray(x, np.float64))
        return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float64).astype(_NP[f.name]).astype(np.float64)


def add_round(p: np.ndarray, c, fmt: FormatLike, exact: bool = False,
              bits: bool = False) -> np.ndarray:
    """RNE(p + c) to `fmt`: the multiply-add's one rounding, given the exact
    float64 product ``p`` (and addend ``c``, broadcastable to ``p``).

    Args:
        p: float64 array, an exact product (or any exact value).
        c: float64 addend (array or scalar), an exact value.
        fmt: target format.
        exact: the caller guarantees ``p + c`` is exact in float64 (skips the
            midpoint test).
        bits: return raw bits of `fmt` instead of float64 values.

    Returns:
        float64 values (or bits) of the broadcast shape, equal to the exact
        path's ``_round_f64(s, e, fmt)``.
    """
    f = get_format(fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c
    out = to_bits(s, f) if bits else round_values(s, f)
    if exact:
        return out
    sb = s.view(np.uint64) if s.flags.c_contiguous else np.ascontiguousarray(s).view(np.uint64)
    low = sb & midpoint_mask(f)
    if low.all():
        return out
    # candidates: s may be a target midpoint; the residual decides
    pb = np.broadcast_to(p, s.shape)
    cb = np.broadcast_to(np.asarray(c, np.float64), s.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = _two_sum(pb, cb)
        bad = (low == 0) & (np.abs(e) > 0)
    if not bad.any():
        return out
    fixed = _round_f64(s[bad], e[bad], f)
    out = np.array(out, copy=True)
    out[bad] = fixed if bits else to_float64(fixed, f)
    return out
