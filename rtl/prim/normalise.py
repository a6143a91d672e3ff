"""Leading-zero count and normalising left shift (a logarithmic shifter)."""
from __future__ import annotations

from myhdl import always_comb, block, concat, intbv

__all__ = ["normalise"]


@block
def normalise(x, lz, xn, en=None):
    """``lz`` = leading zeros of `x`, ``xn = x << lz`` (combinational).

    `x` (``N`` bits) is padded with zeros at the bottom to ``L2`` bits, the
    next power of two (``L2 = 2**S``), and shifted left in ``S`` stages of
    ``L2/2, L2/4, ..., 1`` bits, each taken when the top that many bits are
    zero; stage ``j`` sets bit ``S-1-j`` of the count.  For ``x != 0``:
    ``lz`` is the exact leading-zero count (``< N``) and the top bit of
    ``xn`` is 1.  For ``x == 0``: ``lz = L2 - 1`` and ``xn = 0`` (users
    treat zero separately).

    Args:
        x: the value, ``N >= 2`` bits.
        lz: the count, at least ``S`` bits (wider: the top bits are 0, so a
            user can take it at the width of its exponent arithmetic).
        xn: the normalised value, ``N`` bits.

        en: optional 1-bit enable (operand isolation, used by the PE's
            FMA): the count and the shift are computed only while ``en`` is
            1 (a procedural ``if``, so a simulator skips them), ``lz = xn =
            0`` while it is 0.  None (default): no enable, the original block.

    The block's variables are prefixed ``nz_`` (they are declared inside the
    user's module, where a plain name could hide one of its signals).
    """
    N = len(x)
    L2 = 1 << (N - 1).bit_length()
    NST = L2.bit_length() - 1
    TOP = L2 >> 1
    LZW = len(lz)
    if N < 2 or len(xn) != N or LZW < NST:
        raise ValueError(f"normalise: x must be >= 2 bits, xn {N} bits and lz >= {NST} bits; "
                         f"got {N}, {len(xn)}, {LZW}")

    if en is not None:
        return _normalise_en(x, lz, xn, en, N, L2, NST, TOP, LZW)

    if L2 == N:
        @always_comb
        def lzc():
            nz_lv = intbv(0)[L2:]
            nz_cnt = intbv(0)[LZW:]
            nz_st = intbv(0)[NST + 1:]
            nz_ra = intbv(0)[NST + 1:]
            nz_lv[:] = x
            nz_st[:] = TOP
            for j in range(NST):
                nz_ra[:] = L2 - nz_st
                if (nz_lv >> nz_ra) == 0:
                    nz_lv[:] = nz_lv << nz_st
                    nz_cnt[NST - 1 - j] = 1
                nz_st[:] = nz_st >> 1
            lz.next = nz_cnt
            xn.next = nz_lv
        return lzc

    @always_comb
    def lzc_pad():
        nz_lv = intbv(0)[L2:]
        nz_cnt = intbv(0)[LZW:]
        nz_st = intbv(0)[NST + 1:]
        nz_ra = intbv(0)[NST + 1:]
        nz_lv[:] = concat(x, intbv(0)[L2 - N:])
        nz_st[:] = TOP
        for j in range(NST):
            nz_ra[:] = L2 - nz_st
            if (nz_lv >> nz_ra) == 0:
                nz_lv[:] = nz_lv << nz_st
                nz_cnt[NST - 1 - j] = 1
            nz_st[:] = nz_st >> 1
        lz.next = nz_cnt
        xn.next = nz_lv[L2:L2 - N]
    return lzc_pad


@block
def _normalise_en(x, lz, xn, en, N, L2, NST, TOP, LZW):
    """:func:`normalise` with its enable: the same shifter, each stage under
    ``if en``.  Every variable is assigned on both paths, the loop variable
    too: the loop itself runs unconditionally (a loop inside ``if en``
    leaves the Verilog ``integer`` unassigned while ``en`` is 0, which
    synthesis infers as a latch).  While ``en`` is 0 no stage runs, so the
    count and the shifted value keep their initial 0."""
    if L2 == N:
        raise ValueError(f"normalise: the enable is implemented for widths that are not a "
                         f"power of two (the FMA's windows); got {N} bits")

    @always_comb
    def lzc_pad_en():
        nz_lv = intbv(0)[L2:]
        nz_cnt = intbv(0)[LZW:]
        nz_st = intbv(0)[NST + 1:]
        nz_ra = intbv(0)[NST + 1:]
        if en:
            nz_lv[:] = concat(x, intbv(0)[L2 - N:])
            nz_st[:] = TOP
        for j in range(NST):
            if en:
                nz_ra[:] = L2 - nz_st
                if (nz_lv >> nz_ra) == 0:
                    nz_lv[:] = nz_lv << nz_st
                    nz_cnt[NST - 1 - j] = 1
                nz_st[:] = nz_st >> 1
        lz.next = nz_cnt
        xn.next = nz_lv[L2:L2 - N]
    return lzc_pad_en
