"""Floating-point format conversion, combinational.

``fsa_cvt`` converts raw IEEE bits of format `src` to format `dst` following
``docs/numerics.md`` ("Conversion"): ``y = RNE_dst(x)``, exact when
widening; subnormal inputs and results are exact-rounded (no flush to zero);
values at or above max finite + half an ulp of `dst` become ``±inf``; ±inf
and ±0 keep their sign; every NaN becomes the canonical quiet NaN of `dst`.

Supported pairs: any of fp16, bf16, fp32 to any of them.  The ones FSA uses
(and the bench covers) are fp32->fp16, fp32->bf16, fp16->fp32, bf16->fp32 and
same->same (NaN canonicalisation only).  The hardware picks one of four
datapaths at elaboration:

* same format: pass-through with NaN canonicalisation;
* exact widening (fp16->fp32, bf16->fp32): rebias and shift, fp16
  subnormals normalised by a leading-zero count;
* same exponent width, fewer mantissa bits (fp32->bf16): round the
  magnitude bits to nearest even; a carry out of the mantissa moves into the
  exponent and max finite rounds up to inf by itself;
* anything else (fp32->fp16, fp16<->bf16): normalise, rebias, shift right for
  subnormal results, round to nearest even, saturate to inf.

Ports:

======  ===  ================================================
x       in   source value, ``width(src)`` bits
y       out  converted value, ``width(dst)`` bits
======  ===  ================================================

Latency: 0 cycles (purely combinational, no clock).
"""
from __future__ import annotations

from pathlib import Path

from myhdl import always_comb, block, concat, intbv

from fsa.formats import get_format
from rtl.convert import convert_block, sig
from rtl.prim import normalise

__all__ = ["fsa_cvt", "module_name", "convert", "LINT_WAIVERS", "PAIRS"]

#: Verilator ``-Wall`` waivers needed by the generated Verilog.  None: every
#: generated module is clean under ``verilator --lint-only -Wall``.
LINT_WAIVERS: dict[str, str] = {}

FORMATS_OK = ("fp16", "bf16", "fp32")

#: The (src, dst) pairs FSA uses.
PAIRS = (("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp32"), ("bf16", "fp32"),
         ("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"))


def _check(src: str, dst: str) -> None:
    for what, v in (("src", src), ("dst", dst)):
        if v not in FORMATS_OK:
            raise ValueError(f"fsa_cvt: {what} must be one of {FORMATS_OK}, got {v!r}")


def module_name(src: str = "fp32", dst: str = "fp16") -> str:
    """Verilog module name, e.g. ``fsa_cvt_fp32_fp16``."""
    _check(src, dst)
    return f"fsa_cvt_{src}_{dst}"


@block
def fsa_cvt(x, y, src="fp32", dst="fp16"):
    """Combinational ``y = RNE_dst(x)`` (see the module docstring).

    Args:
        x: input signal, ``width(src)`` bits.
        y: output signal, ``width(dst)`` bits.
        src, dst: "fp16", "bf16" or "fp32".

    Raises:
        ValueError: for an unknown format or ports of the wrong width.
    """
    _check(src, dst)
    fs, fd = get_format(src), get_format(dst)
    WS, ES, MS = fs.width, fs.exp_bits, fs.man_bits
    WD, ED, MD = fd.width, fd.exp_bits, fd.man_bits
    if len(x) != WS:
        raise ValueError(f"fsa_cvt({src}->{dst}): port x must be {WS} bits, got {len(x)}")
    if len(y) != WD:
        raise ValueError(f"fsa_cvt({src}->{dst}): port y must be {WD} bits, got {len(y)}")
    EMS, EMD = fs.exp_max, fd.exp_max
    SS, SD = WS - 1, WD - 1            # sign bit positions
    NAND = fd.canonical_nan

    if src == dst:
        @always_comb
        def same():
            if x[SS:MS] == EMS and x[MS:] != 0:
                y.next = NAND
            else:
                y.next = x
        return same

    if ES == ED and MD > MS:
        # bf16 -> fp32: the same number with more (zero) mantissa bits
        @always_comb
        def pad():
            if x[SS:MS] == EMS and x[MS:] != 0:
                y.next = NAND
            else:
                y.next = concat(x, intbv(0)[MD - MS:])
        return pad

    if ES == ED:
        # fp32 -> bf16: round the magnitude at the new mantissa width
        DROP = MS - MD

        @always_comb
        def narrow_man():
            r = intbv(0)[SD:]
            r[:] = x[SS:DROP]
            if x[SS:MS] != EMS and x[DROP - 1] and (x[DROP - 1:] != 0 or x[DROP]):
                r[:] = r + 1          # a carry out of max finite gives inf
            if x[SS:MS] == EMS and x[MS:] != 0:
                y.next = NAND
            else:
                y.next = concat(x[SS], r)
        return narrow_man

    # subnormal sources: leading-zero count and normalising shift of the
    # mantissa by rtl.prim.normalise (inlined into this module)
    if ED > ES and MD >= MS:
        # fp16 -> fp32: exact; subnormal sources become normal numbers
        OFF = fd.bias - fs.bias          # rebias for normal sources
        # a subnormal source with lz leading zeros is 1.f * 2^(emin_src - 1 - lz):
        # biased dst exponent SUB0 - lz
        SUB0 = OFF
        lz = sig(ED)                     # leading zeros of a subnormal mantissa
        mnorm = sig(MS)                  # ... and the mantissa shifted by them
        u_norm = normalise(x(MS, 0), lz, mnorm)

        @always_comb
        def widen():
            m = intbv(0)[MS:]
            m[:] = x[MS:]
            ew = intbv(0)[ED:]           # source exponent, dst width
            ew[:] = concat(intbv(0)[ED - ES:], x[SS:MS])
            mn = intbv(0)[MS:]           # mantissa after the hidden one
            mn[:] = concat(mnorm[MS - 1:], False)
            e = intbv(0)[ED:]
            fr = intbv(0)[MS:]
            if x[SS:MS] == EMS:
                e[:] = EMD
                fr[:] = 0
            elif x[SS:MS] == 0:
                if m == 0:
                    e[:] = 0
                    fr[:] = 0
                else:
                    e[:] = SUB0 - lz
                    fr[:] = mn
            else:
                e[:] = ew + OFF
                fr[:] = m
            if x[SS:MS] == EMS and m != 0:
                y.next = NAND
            else:
                y.next = concat(x[SS], e, fr, intbv(0)[MD - MS:])
        return u_norm, widen

    # ---- general: normalise, rebias, denormalise, round -------------------------
    # bo = biased dst exponent + K.  K keeps every intermediate non-negative
    # and is a multiple of 2^ED, so the low ED bits of bo are the exponent.
    K = max(0, fs.bias - fd.bias) + MS + 1
    K = -(-K // (1 << ED)) * (1 << ED)
    C = fd.bias - fs.bias + K            # bo = e_src + C (normal source)
    F = max(MS, MD + 2)                  # fraction bits kept before rounding
    SHM = MD + 2                         # right shifts beyond this: all sticky
    BOW = max(C + EMS, EMD + K + 1).bit_length()   # width of bo
    lz = sig(BOW)                        # leading zeros of a subnormal mantissa
    mnorm = sig(MS)                      # ... and the mantissa shifted by them
    u_norm = normalise(x(MS, 0), lz, mnorm)

    @always_comb
    def general():
        m = intbv(0)[MS:]
        m[:] = x[MS:]
        esrc = intbv(0)[ES:]
        esrc[:] = x[SS:MS]
        ew = intbv(0)[BOW:]          # source exponent, width of bo
        ew[:] = concat(intbv(0)[BOW - ES:], esrc)
        # normalised fraction and biased dst exponent + K
        fr = intbv(0)[MS:]
        bo = intbv(0)[BOW:]
        if esrc == 0 and m == 0:
            fr[:] = 0
            bo[:] = 0
        elif esrc == 0:
            fr[:] = concat(mnorm[MS - 1:], False)
            bo[:] = C - lz
        else:
            fr[:] = m
            bo[:] = ew + C
        # right shift for subnormal results: 1 - be = K + 1 - bo, clamped
        sh = intbv(0)[BOW:]
        if bo > K:
            sh[:] = 0
        elif bo + SHM > K:
            sh[:] = K + 1 - bo
        else:
            sh[:] = SHM
        tw = intbv(0)[1 + F + SHM:]
        tw[:] = concat(True, fr, intbv(0)[F - MS + SHM:])
        tw[:] = tw >> sh
        ts = intbv(0)[F:]             # fraction bits (hidden bit dropped)
        ts[:] = tw[F + SHM:SHM]
        ef = intbv(0)[ED:]
        if bo > K and bo < EMD + K:
            ef[:] = bo[ED:]          # = bo - K

        pk = intbv(0)[SD:]
        pk[:] = concat(ef, ts[F:F - MD])
        if ts[F - MD - 1] and (ts[F - MD - 1:] != 0 or tw[SHM:] != 0 or ts[F - MD]):
            pk[:] = pk + 1            # a carry out of max finite gives inf
        if bo >= EMD + K or esrc == EMS:
            pk[:] = 0
            pk[SD:MD] = EMD
        elif esrc == 0 and m == 0:
            pk[:] = 0
        if esrc == EMS and m != 0:
            y.next = NAND
        else:
            y.next = concat(x[SS], pk)
    return u_norm, general


def convert(outdir: "str | Path", src: str = "fp32", dst: str = "fp16") -> Path:
    """Write ``<outdir>/<module_name(src, dst)>.v`` and return its path."""
    name = module_name(src, dst)
    x = sig(get_format(src).width)
    y = sig(get_format(dst).width)
    return convert_block(lambda: fsa_cvt(x, y, src=src, dst=dst), name, outdir)
