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
cannot happen when both operands have at most ``t`` significant bits, ``t``
the target's precision (t <= 24), and the addend ``c`` is a number of the
target format:

    An inexact float64 sum needs more than 53 bits, so the smaller operand
    ``b`` lies more than ``2^(52 - t)`` times below the larger ``B``: no
    cancellation, and ``|b| < 2^-t |x| / 8`` for the exact sum ``x``.  If
    ``B`` is below the target's normal range, ``b`` cannot be the non-zero
    target number ``c`` (that is at least the smallest subnormal, far above
    ``2^(t - 52) |B|``) nor ``p`` with ``c = 0`` (then the sum is exact).  So
    ``B`` (at most t bits) is a multiple of the target's midpoint spacing
    around ``x`` (``ulp_t(s) / 2``, or the fixed subnormal spacing).  With
    ``b'`` the float64 rounding of ``b``, ``s = B + b'``: ``b' = 0`` gives
    ``s = B``, which has at most t bits and is not a midpoint; otherwise
    ``0 < |b'|`` is below the midpoint spacing, so ``s`` is off the grid of
    midpoints.

So callers pass ``trap_free=True`` for such sums (products of two E values
plus an fp32 partial sum, rounded to fp32, when ``2 p_E <= 24``; E values
plus A values rounded to A; differences of numbers of the target format)
and for exact sums.  For
other sums, candidates are found by the float64 encoding: ``s`` has the
bit pattern of a target midpoint (the bit after the target's last mantissa
bit set, all lower bits zero) or lies below the target's normal range;
``e`` is computed for the candidates only, and those with ``e != 0`` are
rounded by the exact path.

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

__all__ = ["round_values", "to_bits", "add_round"]

_NP = {"fp16": np.float16, "fp32": np.float32}


def _candidates(s: np.ndarray, f: FPFormat) -> np.ndarray:
    """Flat indices where ``s`` may be a midpoint of `f`: the normal-range
    midpoint bit pattern, or below `f`'s normal range (subnormal midpoints)."""
    sb = s.view(np.uint64)
    m = f.man_bits
    mid = (sb & np.uint64((1 << (52 - m)) - 1)) == np.uint64(1 << (51 - m))
    with np.errstate(invalid="ignore"):
        mid |= np.abs(s) < 2.0 ** f.emin
    return np.flatnonzero(mid)


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


def add_round(p: np.ndarray, c, fmt: FormatLike, trap_free: bool = False,
              bits: bool = False) -> np.ndarray:
    """RNE(p + c) to `fmt`: the multiply-add's one rounding, given the exact
    float64 product ``p`` and addend ``c``.

    Args:
        p: float64 array, an exact product (or any exact value).
        c: float64 addend (array or scalar, broadcastable to ``p``), exact.
        fmt: target format.
        trap_free: the caller guarantees that ``fl64(p + c)`` is never a
            midpoint of `fmt` unless exact (an exact sum, or operands of at
            most the target's precision with ``c`` a number of `fmt`: see the
            module docstring); skips the midpoint test.
        bits: return raw bits of `fmt` instead of float64 values.

    Returns:
        float64 values (or bits) of the broadcast shape, equal to the exact
        path's ``_round_f64(s, e, fmt)``.
    """
    f = get_format(fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.asarray(p + c, np.float64)
    out = to_bits(s, f) if bits else round_values(s, f)
    if trap_free:
        return out
    idx = _candidates(s, f)
    if not idx.size:
        return out
    where = np.unravel_index(idx, s.shape)
    pb = np.broadcast_to(p, s.shape)[where]
    cb = np.broadcast_to(np.asarray(c, np.float64), s.shape)[where]
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = _two_sum(pb, cb)
        bad = np.abs(e) > 0                          # (NaN residuals: inf/NaN sums, exact)
    if not bad.any():
        return out
    idx, e = idx[bad], e[bad]
    fixed = _round_f64(s.ravel()[idx], e, f)
    out = np.array(out, copy=True)
    out.ravel()[idx] = fixed if bits else to_float64(fixed, f)
    return out
