"""Round a normalised magnitude to a binary floating-point format."""
from __future__ import annotations

from myhdl import always_comb, block, concat, intbv

__all__ = ["round_rne"]


@block
def round_rne(y, emsb, enc, fmt, ofs, en=None):
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
        en: optional 1-bit enable (operand isolation, used by the PE's FMA):
            the rounding is computed only while ``en`` is 1 (a procedural
            ``if``, so a simulator skips it), ``enc = 0`` while it is 0.
            None (default): no enable, the original block.

    The block's variables are prefixed ``rn_`` (they are declared inside the
    user's module, where a plain name could hide one of its signals).
    """
    NX, EW = len(y), len(emsb)
    P, M, E = fmt.precision, fmt.man_bits, fmt.exp_bits
    EMIN, XMAX, INF = fmt.emin + ofs, fmt.exp_max, fmt.pos_inf
    ENC = E + M + 1
    KW = (P + 1).bit_length()
    if len(enc) != ENC or NX < P + 2 or not 0 < EMIN < (1 << EW):
        raise ValueError(f"round_rne({fmt.name}): enc must be {ENC} bits, y >= {P + 2} bits "
                         f"and emin + ofs = {EMIN} must fit emsb ({EW} bits)")
    if en is not None:
        return _round_rne_en(y, emsb, enc, en, NX, EW, P, M, E, EMIN, XMAX, INF, ENC, KW)

    @always_comb
    def rnd():
        rn_d = intbv(0)[EW:]           # distance of emsb from emin (either side)
        rn_k = intbv(0)[KW:]           # extra bits dropped for a subnormal result
        rn_base = intbv(0)[E:]         # exponent field before the rounding carry
        if emsb < EMIN:
            rn_d[:] = EMIN - emsb
            rn_base[:] = 0
            if rn_d >= P + 1:
                rn_k[:] = P + 1
            else:
                rn_k[:] = rn_d[KW:]
        else:
            rn_d[:] = emsb - EMIN
            rn_k[:] = 0
            if rn_d >= XMAX:
                rn_base[:] = XMAX
            else:
                rn_base[:] = rn_d[E:]
        rn_yt = intbv(0)[P + 1:]       # kept bits and the round bit
        rn_yt[:] = y[NX:NX - P - 1]
        rn_z = intbv(0)[P + 1:]
        rn_z[:] = rn_yt >> rn_k
        rn_st = (y[NX - P - 1:] != 0) or ((rn_z << rn_k) != rn_yt)
        rn_q = intbv(0)[P:]
        rn_q[:] = rn_z[P + 1:1]
        rn_up = rn_z[0] and (rn_st or rn_q[0])
        rn_e = intbv(0)[ENC:]
        rn_e[:] = concat(False, rn_base, intbv(0)[M:]) + concat(intbv(0)[ENC - P:], rn_q)
        if rn_up:
            rn_e[:] = rn_e + 1
        if rn_e >= INF:
            rn_e[:] = INF
        enc.next = rn_e
    return rnd


@block
def _round_rne_en(y, emsb, enc, en, NX, EW, P, M, E, EMIN, XMAX, INF, ENC, KW):
    """:func:`round_rne` with its enable: the same rounding under ``if en``
    (every variable is assigned before the ``if``: no latch on either path)."""

    @always_comb
    def rnd_en():
        rn_d = intbv(0)[EW:]
        rn_k = intbv(0)[KW:]
        rn_base = intbv(0)[E:]
        rn_yt = intbv(0)[P + 1:]
        rn_z = intbv(0)[P + 1:]
        rn_st = bool(0)
        rn_q = intbv(0)[P:]
        rn_up = bool(0)
        rn_e = intbv(0)[ENC:]
        if en:
            if emsb < EMIN:
                rn_d[:] = EMIN - emsb
                rn_base[:] = 0
                if rn_d >= P + 1:
                    rn_k[:] = P + 1
                else:
                    rn_k[:] = rn_d[KW:]
            else:
                rn_d[:] = emsb - EMIN
                rn_k[:] = 0
                if rn_d >= XMAX:
                    rn_base[:] = XMAX
                else:
                    rn_base[:] = rn_d[E:]
            rn_yt[:] = y[NX:NX - P - 1]
            rn_z[:] = rn_yt >> rn_k
            rn_st = (y[NX - P - 1:] != 0) or ((rn_z << rn_k) != rn_yt)
            rn_q[:] = rn_z[P + 1:1]
            rn_up = rn_z[0] and (rn_st or rn_q[0])
            rn_e[:] = concat(False, rn_base, intbv(0)[M:]) + concat(intbv(0)[ENC - P:], rn_q)
            if rn_up:
                rn_e[:] = rn_e + 1
            if rn_e >= INF:
                rn_e[:] = INF
            enc.next = rn_e
        else:
            enc.next = 0
    return rnd_en
