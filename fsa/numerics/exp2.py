"""Bit-exact model of the exp2 mode of the FSA multiply-add units: exp2 by
``P`` piecewise-linear chords (``docs/numerics.md``, section exp2), the chord
constants the hardware stores (slopes and encoded intercepts) and the
per-step view the PE pipeline uses.  Part of :mod:`fsa.numerics` (import
through it); the IEEE operations it builds on are in :mod:`fsa.numerics.ieee`.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from fsa.formats import FPFormat, get_format
from fsa.numerics.ieee import (ArrayLike, FormatLike, _as_bits, _check_out, _dtype, _round_f64,
                               _two_sum, from_float64, to_float64)

__all__ = [
    "exp2_pwl",
    "exp2_piece",
    "exp2_step",
    "pwl_constants",
    "encode_intercept",
    "decode_intercept",
    "check_pieces",
]

# xi below this makes every exp2 result round to +0 in every format (see
# _exp2_core); clamping to it keeps np.ldexp exact (no float64 underflow).
_XI_MIN = -200


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
