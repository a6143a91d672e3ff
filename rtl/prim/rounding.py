"""Round a normalised magnitude to a binary floating-point format."""
from __future__ import annotations

from myhdl import always_comb, block, concat, intbv

__all__ = ["round_rne"]


@block
def round_rne(y, emsb, enc, fmt, ofs):
    """``enc`` = the magnitude bits (exponent field and mantissa, no sign) of
    ``RNE_fmt(value)``, saturated to infinity (combinational).

    The value is ``y * 2^(emsb - ofs - (NX - 1))``: `y` (``NX`` bits) is
    normalised (top bit 1), `emsb` is the exponent of that top bit plus the
    offset `ofs` (unsigned exponent arithmetic).  Normal results keep
    ``precision`` bits; below ``emin`` the rounding position moves up with
    the exponent (``k = emin - exponent`` more bits go, at most
    ``precision + 1``), so subnormal results are correctly rounded; a carry
    out of the mantissa moves into the exponent field, and anything at or
    above max finite + half an ulp gives ``fmt.pos_inf``.  Every bit of `y`
    below the round bit is sticky.  ``y == 0`` gives an unspecified `enc`
    (users treat zero separately).

    Args:
        y: the normalised magnitude, ``NX >= precision + 2`` bits.
        emsb: its exponent + `ofs`; ``fmt.emin + ofs`` must fit its width.
        enc: ``exp_bits + man_bits + 1`` bits (one more than the magnitude
            field, so that infinity is reached before any wrap).
        fmt: the target :class:`fsa.formats.FPFormat`.
        ofs: the exponent offset of `emsb`.
    """
    NX, EW = len(y), len(emsb)
    P, M, E = fmt.precision, fmt.man_bits, fmt.exp_bits
    EMIN, XMAX, INF = fmt.emin + ofs, fmt.exp_max, fmt.pos_inf
    ENC = E + M + 1
    KW = (P + 1).bit_length()
    if len(enc) != ENC or NX < P + 2 or not 0 < EMIN < (1 << EW):
        raise ValueError(f"round_rne({fmt.name}): enc must be {ENC} bits, y >= {P + 2} bits "
                         f"and emin + ofs = {EMIN} must fit emsb ({EW} bits)")

    @always_comb
    def rnd():
        d = intbv(0)[EW:]           # distance of emsb from emin (either side)
        k = intbv(0)[KW:]           # extra bits dropped for a subnormal result
        base = intbv(0)[E:]         # exponent field before the rounding carry
        if emsb < EMIN:
            d[:] = EMIN - emsb
            base[:] = 0
            if d >= P + 1:
                k[:] = P + 1
            else:
                k[:] = d[KW:]
        else:
            d[:] = emsb - EMIN
            k[:] = 0
            if d >= XMAX:
                base[:] = XMAX
            else:
                base[:] = d[E:]
        yt = intbv(0)[P + 1:]       # kept bits and the round bit
        yt[:] = y[NX:NX - P - 1]
        z = intbv(0)[P + 1:]
        z[:] = yt >> k
        st = (y[NX - P - 1:] != 0) or ((z << k) != yt)
        q = intbv(0)[P:]
        q[:] = z[P + 1:1]
        up = z[0] and (st or q[0])
        e = intbv(0)[ENC:]
        e[:] = concat(False, base, intbv(0)[M:]) + concat(intbv(0)[ENC - P:], q)
        if up:
            e[:] = e + 1
        if e >= INF:
            e[:] = INF
        enc.next = e
    return rnd
