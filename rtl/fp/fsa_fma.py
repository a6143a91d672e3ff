"""Fused multiply-add unit of the FSA processing element (MyHDL).

``fsa_fma`` computes ``a*b + c`` exactly and rounds the exact value once,
round-to-nearest-even, to two formats at the same time: the add format A
(``out_a``) and the multiply format M (``out_e``).  An exp2 mode reuses the
same datapath for one step of the piecewise-linear ``2^x`` of
``docs/numerics.md`` (the PE runs it for ``P`` cycles, one per piece).

Ports (all combinational; the PE registers around the unit)::

    a      in   M width   multiplicand; in exp2 mode x
    b      in   M width   multiplier;   in exp2 mode slope_k
    c      in   A width   addend;       in exp2 mode the ENCODED intercept k
    exp2   in   1         0: normal FMA, 1: exp2 mode
    out_a  out  A width   result rounded to A
    out_e  out  M width   result rounded to M (from the same exact value)
    piece  out  log2(P)   exp2 mode: k = floor(|xf| * P); normal mode: 0
    match  out  1         exp2 mode: piece == exponent field of c; normal: 0
    en     in   1         only in the gated variant (``gated=True``, module
                          ``<name>_en``, the PE's and the ACC's): 0 gives
                          all outputs 0

Gated variant (operand isolation, for the PE, whose FMA result is used only
in its ``mac`` / ``update_reg`` / ``exp2`` cycles, and the ACC, whose FMA
result is used only by EXP_S1, EXP_S2, ACC_SA and ACC): the wide part of the
datapath (alignment, add, class), the normaliser and both roundings sit
under ``if (en)`` in their ``always`` blocks, so a simulator such as
Verilator skips them while the PE is idle (the bare harness of
bench/simspeed.py, attention: 16x16 4.3k -> 11.6k cycles per CPU second,
8x8 on a 64-bit bus 30.7k -> 108.5k; docs/testing.md); with ``en = 1``
every output equals the ungated unit's.  The
ungated unit (the unit benches') has the same blocks with ``en``
a constant 1 (``wire en = 1``), which Verilator and synthesis fold away.

Latency: 0 cycles (purely combinational: the ``always`` blocks ``fma_comb``
(unpack to the exact sum and the result class), ``rtl.prim.normalise``,
``exponent``, ``rtl.prim.round_rne`` twice (A and M) and ``pack``).

Behaviour (bit-exact with ``fsa.numerics.fma(..., out="both")`` and
``fsa.numerics.exp2_step``):

* Normal mode: ``r = a*b + c`` with the exact product, rounded once (RNE) to
  A and to M.  Full IEEE 754: subnormal inputs and outputs (no flushing),
  signed zeros (exact cancellation gives +0, ``(-0) + (-0) = -0``), overflow
  to +-inf, infinities; every NaN result is the canonical quiet NaN
  (``inf * 0``, ``inf - inf`` and NaN inputs).
* Exp2 mode: ``x = a`` is clamped (``x >= 0`` and ``-0`` act as 0), split
  into ``xi = ceil(x)`` and ``xf = x - xi`` (the fraction bits of x), and
  ``RNE((b * xf + intercept) * 2^xi)`` is produced in both formats with one
  rounding after the scaling (subnormal results are correctly rounded).
  The intercept is decoded from ``c``: ``k`` = exponent field, value 1.0 if
  ``k == 0`` else ``1.mantissa * 2^-1`` (the sign bit of ``c`` is ignored).
  ``x = -inf`` gives +0, NaN x gives the canonical NaN; ``xi`` is clamped at
  ``-XI_CLAMP`` exactly as the model does (every result of an in-contract
  slope is +0 there).  ``b`` follows FMA rules (NaN slope -> NaN,
  ``inf * (xf = 0)`` -> NaN).

Datapath (shared by both modes)::

    unpack -> exact product sigA*sigB (2*pM bits)
           -> align addend in a (2*pA + 2*pM + 3)-bit window
              (an operand that falls outside becomes a sticky bit)
           -> add / subtract magnitudes
           -> leading-zero count and normalise (rtl.prim.normalise)
           -> round to A and to M separately (rtl.prim.round_rne, one
              instance per format: the rounding position follows the result
              exponent, so subnormal outputs round at the right bit)
           -> pack: NaN / inf / zero / the rounded value, with the sign

In exp2 mode the multiplicand significand is the fraction bits of x (an
unnormalised significand with x's exponent), the addend is the decoded
intercept, and ``xi`` is added to the result exponent before rounding.
All exponent arithmetic is unsigned with a fixed offset (no signed
arithmetic in the generated Verilog).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import Signal, always_comb, block, concat, intbv

from fsa.formats import FPFormat, get_format
from rtl.convert import convert_block, sig
from rtl.prim import normalise, round_rne

__all__ = ["fsa_fma", "module_name", "convert", "SUPPORTED_PAIRS", "LINT_WAIVERS",
           "XI_CLAMP"]

#: (multiply format, add format) pairs the unit is built and tested for.
SUPPORTED_PAIRS = (("fp16", "fp32"), ("bf16", "fp32"), ("fp32", "fp32"),
                   ("fp16", "fp16"), ("bf16", "bf16"))

#: exp2 mode clamps ``xi = ceil(x)`` to ``>= -XI_CLAMP``; the same constant as
#: ``fsa.numerics`` (``_XI_MIN``), so the two agree bit for bit on every input.
XI_CLAMP = 200

#: Verilator ``-Wall`` waivers for the generated Verilog (flag -> reason).
#: None needed: every operand is sized explicitly (zero extensions by
#: ``concat``, truncations by slices), so the module is -Wall clean as it is.
LINT_WAIVERS: dict[str, str] = {}


@dataclass(frozen=True)
class _Params:
    """Elaboration constants of one (mul, add, pieces) configuration."""

    fm: FPFormat
    fa: FPFormat
    pieces: int

    @property
    def lp(self) -> int:
        return self.pieces.bit_length() - 1


def _validate(mul, add, pieces) -> _Params:
    """Check the parameters; return the formats. Raises ValueError."""
    try:
        fm, fa = get_format(mul), get_format(add)
    except ValueError as e:
        raise ValueError(f"fsa_fma: {e}") from None
    if (fm.name, fa.name) not in SUPPORTED_PAIRS:
        pairs = ", ".join(f"({m}, {a})" for m, a in SUPPORTED_PAIRS)
        raise ValueError(f"fsa_fma: (mul, add) = ({fm.name}, {fa.name}) is not supported; "
                         f"use one of {pairs}")
    if isinstance(pieces, bool) or not isinstance(pieces, int):
        raise ValueError(f"fsa_fma: pieces must be an int power of two in 2..32, got {pieces!r}")
    if pieces < 2 or pieces > 32 or pieces & (pieces - 1):
        raise ValueError(f"fsa_fma: pieces={pieces} is not allowed: use 2, 4, 8, 16 or 32")
    if pieces > (1 << fa.exp_bits) - 1:
        raise ValueError(
            f"fsa_fma: pieces={pieces} does not fit the {fa.name} intercept exponent field "
            f"(the piece index travels in it): use pieces <= "
            f"{1 << (((1 << fa.exp_bits) - 1).bit_length() - 1)} or a wider add format")
    return _Params(fm, fa, pieces)


def module_name(mul: str = "fp16", add: str = "fp32", pieces: int = 8,
                gated: bool = False) -> str:
    """Verilog module name of one configuration, e.g. ``fsa_fma_fp16_fp32_p8``
    (``..._en``: the gated variant with the ``en`` port)."""
    p = _validate(mul, add, pieces)
    return f"fsa_fma_{p.fm.name}_{p.fa.name}_p{p.pieces}" + ("_en" if gated else "")


def _bits(v: int) -> int:
    """Unsigned width holding 0..v."""
    return max(1, int(v).bit_length())


def _check_port(name: str, port, width: int) -> None:
    n = len(port)
    if n != width:
        raise ValueError(f"fsa_fma: port {name} must be {width} bits wide, got {n}")


@block
def fsa_fma(a, b, c, exp2, out_a, out_e, piece, match, mul="fp16", add="fp32", pieces=8,
            en=None, pipe=None, clk=None):
    """Combinational FMA with exp2 mode (see the module docstring).

    Args:
        a, b: M-format inputs (exp2 mode: x and slope).
        c: A-format input (exp2 mode: encoded intercept).
        exp2: mode select (bool).
        out_a: A-format result. out_e: M-format result.
        piece: log2(pieces)-bit piece index of x (exp2 mode, else 0).
        match: piece == k of the intercept word (exp2 mode, else 0).
        mul, add: the format names of M and A.
        pieces: P, number of exp2 pieces.
        en: None (the ungated unit) or the 1-bit enable of the gated variant
            (module docstring): outputs all 0 while it is 0.

    Raises:
        ValueError: unsupported formats / pieces, or wrong port widths.
    """
    prm = _validate(mul, add, pieces)
    fm, fa, LP = prm.fm, prm.fa, prm.lp
    # ---- format constants
    WM, EM, MM, PM, BM = fm.width, fm.exp_bits, fm.man_bits, fm.precision, fm.bias
    WA, EA, MA, PA, BA = fa.width, fa.exp_bits, fa.man_bits, fa.precision, fa.bias
    XM, XA = fm.exp_max, fa.exp_max
    _check_port("a", a, WM)
    _check_port("b", b, WM)
    _check_port("c", c, WA)
    _check_port("exp2", exp2, 1)
    _check_port("out_a", out_a, WA)
    _check_port("out_e", out_e, WM)
    _check_port("piece", piece, LP)
    _check_port("match", match, 1)
    gated = en is not None
    if gated:
        _check_port("en", en, 1)
    else:
        en = Signal(bool(1))        # a constant: `wire en = 1` in the Verilog
    # The rounding position of M is never below that of A for the supported
    # pairs (needed by the sticky argument of the window below).
    assert MM <= MA and fm.emin - MM >= fa.emin - MA

    # ---- alignment window (bit positions inside the extended window X):
    # X bit 0 is the sticky slot, window bit j is X bit j+1.  The product sits
    # at window bits [G, G+2PM); the addend at window bit SH = G + d where
    # d = (addend LSB exponent) - (product LSB exponent), for -G <= d <= 2PM+1.
    # Outside that range one operand is replaced by a value strictly inside
    # (0, 1) window-LSB (the sticky slot), which rounds identically because
    # the output LSB then lies >= 2 bits above X bit 0:
    #  * d < -G: |c| < |p|/4, so the result keeps >= the product's LSB
    #    exponent - 1 as its top bit and its rounding LSB (>= top - MA, and
    #    M rounds no lower than A) is above window bit 0 (G = PA + 2 > PA + 1);
    #  * d > 2PM+1: |p| < 2^(c LSB - 2) and the result's rounding LSB is
    #    >= c's LSB - 1, so only the sign of p matters (sticky).
    # A zero product or a zero addend never takes these paths.
    G = PA + 2
    SHMAX = G + 2 * PM + 1
    W = SHMAX + PA
    NX = W + 2  # + sticky slot + carry
    # t = ec + TOFF - ea - eb (always >= 0); SH = t + SH0
    TOFF = 2 * XM
    SH0 = G - BA - MA + 2 * BM + 2 * MM - TOFF
    if SH0 >= 0:  # keep SH0 < 0 so that "addend below the window" is t < T_LO
        TOFF += SH0 + 1
        SH0 = -1
    T_LO = -SH0                       # t < T_LO  <=>  SH < 0 (addend below window)
    T_HI = SHMAX - SH0                # t > T_HI  <=>  addend far above the product
    TMAX = XA + TOFF
    TW = _bits(TMAX)
    assert 0 < T_LO <= T_HI < TMAX
    RSMAX = PA + 1                    # right shifts beyond this leave only sticky
    # ---- exponents: every exponent is kept as E + OFS (unsigned)
    OFS = 1024
    LW_P = OFS - 2 * BM - 2 * MM - G   # L = ea + eb + LW_P - xim
    LW_CG = OFS - BA - MA - G          # L = ec + LW_CG - xim  (zero product)
    LW_CF = OFS - BA - MA - SHMAX      # L = ec + LW_CF - xim  (addend far above)
    e_lo = min(2 + LW_P, 1 + LW_CG, 1 + LW_CF) - XI_CLAMP - 1
    e_hi = max(2 * XM + LW_P, XA + LW_CG, XA + LW_CF) + NX
    assert e_lo >= 0 and min(LW_P, LW_CG, LW_CF) >= 0
    EW = _bits(e_hi)
    # ---- exp2 split of x
    FOFF = 1 << EM                    # fbb = fb + FOFF, fb = MM + BM - ex (fraction bits)
    FBB0 = MM + BM + FOFF
    FBW = _bits(FBB0)
    XIW = _bits(XI_CLAMP)             # |x| >= 2^XIW  =>  xi clamps
    assert FOFF > XIW
    PMASK = (1 << LP) - 1
    FCW, FPW, SXW, RSW = _bits(PM), _bits(PM + LP), _bits(PM + XIW), _bits(RSMAX)

    # ---- constants named here so that the Verilog gets plain literals
    FB_BIG = MM + FOFF - XIW          # fbb <= FB_BIG  <=>  |x| >= 2^XIW
    T_LO1 = T_LO - 1
    NX2 = NX - 2
    G1, SHMAX1 = G + 1, SHMAX + 1
    # the low FCW / FPW / SXW bits of fbb are those of fb (FOFF = 2^EM)
    assert max(FCW, FPW, SXW) <= EM and TW <= EW and LP < EA
    assert XIW <= PM + XIW and RSW <= EW and NX > 2 * PM and NX > PA
    # result classes (the specials of the output stage)
    C_FIN, C_NAN, C_INF, C_ZERO = 0, 1, 2, 3
    NAN_A, NAN_M = fa.canonical_nan, fm.canonical_nan

    # ---- stage signals (all combinational)
    s_sum = sig(NX)         # |exact result| in the window (0: exact zero)
    s_lw = sig(EW)          # exponent (+ OFS) of window bit 0
    s_cls = sig(2)          # result class: C_FIN, C_NAN, C_INF, C_ZERO
    s_sgn = sig(1)          # result sign
    s_lz = sig(EW)          # leading zeros of s_sum
    s_y = sig(NX)           # s_sum normalised
    s_emsb = sig(EW)        # exponent (+ OFS) of s_y's top bit
    enc_a = sig(EA + MA + 1)    # magnitude rounded to A (saturated to inf)
    enc_m = sig(EM + MM + 1)    # magnitude rounded to M

    @always_comb
    def fma_comb():
        # Every variable is assigned before the gate (no latch on either path);
        # the datapath runs only while en is 1 (always 1 in the ungated unit).
        a_s = bool(0)
        b_s = bool(0)
        c_s = bool(0)
        a_inf = bool(0)
        a_nan = bool(0)
        b_inf = bool(0)
        b_nan = bool(0)
        a_zero = bool(0)
        b_zero = bool(0)
        x_nan = bool(0)
        x_ninf = bool(0)
        x_zero_cl = bool(0)
        a_e = intbv(0)[EM:]
        a_m = intbv(0)[MM:]
        b_e = intbv(0)[EM:]
        b_m = intbv(0)[MM:]
        c_e = intbv(0)[EA:]
        c_m = intbv(0)[MA:]
        ea = intbv(0)[EM:]
        sa = intbv(0)[PM:]
        eb = intbv(0)[EM:]
        sb = intbv(0)[PM:]
        fbb = intbv(0)[FBW:]
        fbc = intbv(0)[FCW:]         # clamp(fb, 0, PM)
        fbp = intbv(0)[FPW:]    # clamp(fb, 0, PM + LP)
        xint = intbv(0)[PM:]
        xfrac = intbv(0)[PM:]
        pwide = intbv(0)[PM + LP:]
        unused_pw_hi = intbv(0)[PM:]        # (read so that lint sees every bit used)
        sx = intbv(0)[SXW:]
        xiw = intbv(0)[PM + XIW:]
        xim = intbv(0)[XIW:]
        pc = intbv(0)[LP:]
        kc = intbv(0)[EA:]
        ps = bool(0)        # product sign
        sA = intbv(0)[PM:]  # multiplicand significand
        p_nan = bool(0)
        p_inf = bool(0)
        p_zero = bool(0)
        ce = intbv(0)[EA:]
        sc = intbv(0)[PA:]
        cs = bool(0)
        c_nan = bool(0)
        c_inf = bool(0)
        c_zero = bool(0)
        xs = intbv(0)[XIW:]
        eaw = intbv(0)[EW:]
        ebw = intbv(0)[EW:]
        cew = intbv(0)[EW:]
        xsw = intbv(0)[EW:]
        prod = intbv(0)[2 * PM:]
        prodx = intbv(0)[NX:]
        scx = intbv(0)[NX:]
        t = intbv(0)[EW:]
        xp = intbv(0)[NX:]
        xc = intbv(0)[NX:]
        lw = intbv(0)[EW:]
        rsd = intbv(0)[EW:]
        rs = intbv(0)[RSW:]
        sct = intbv(0)[PA:]
        sctx = intbv(0)[NX:]
        shc = intbv(0)[EW:]
        xsum = intbv(0)[NX:]
        rsgn = bool(0)
        cls = intbv(0)[2:]
        sgn = bool(0)
        if en:
            # ------------------------------------------------------------ unpack
            a_s = a[WM - 1]
            a_e[:] = a[WM - 1:MM]
            a_m[:] = a[MM:]
            b_s = b[WM - 1]
            b_e[:] = b[WM - 1:MM]
            b_m[:] = b[MM:]
            c_s = c[WA - 1]
            c_e[:] = c[WA - 1:MA]
            c_m[:] = c[MA:]

            a_inf = (a_e == XM) and (a_m == 0)
            a_nan = (a_e == XM) and (a_m != 0)
            b_inf = (b_e == XM) and (b_m == 0)
            b_nan = (b_e == XM) and (b_m != 0)
            a_zero = (a_e == 0) and (a_m == 0)
            b_zero = (b_e == 0) and (b_m == 0)

            # effective exponents (subnormal: 1) and significands
            if a_e == 0:
                ea[:] = 1
                sa[:] = concat(False, a_m)
            else:
                ea[:] = a_e
                sa[:] = concat(True, a_m)
            if b_e == 0:
                eb[:] = 1
                sb[:] = concat(False, b_m)
            else:
                eb[:] = b_e
                sb[:] = concat(True, b_m)

            # ------------------------------------------------- exp2 split of x = a
            # fb = number of fraction bits of x = MM + BM - ea; fbb = fb + FOFF
            fbb[:] = FBB0 - ea
            if fbb <= FOFF:
                fbc[:] = 0
            elif fbb >= FOFF + PM:
                fbc[:] = PM
            else:
                fbc[:] = fbb[FCW:]      # = fb: FOFF is a multiple of 2^FCW
            if fbb <= FOFF:
                fbp[:] = 0
            elif fbb >= FOFF + PM + LP:
                fbp[:] = PM + LP
            else:
                fbp[:] = fbb[FPW:]      # = fb (likewise)
            xint[:] = sa >> fbc
            xfrac[:] = sa - (xint << fbc)
            pwide[:] = (xfrac << LP) >> fbp     # < P: only its low LP bits can be 1
            unused_pw_hi[:] = pwide[PM + LP:LP]
            # floor(|x|), clamped at XI_CLAMP
            if fbb <= FB_BIG:                 # |x| >= 2^XIW
                sx[:] = 0
            elif fbb >= FOFF + PM:
                sx[:] = PM + XIW
            else:
                sx[:] = fbb[SXW:] + XIW     # = fbb - (FOFF - XIW) modulo 2^SXW
            xiw[:] = concat(sa, intbv(0)[XIW:]) >> sx
            if fbb <= FB_BIG or xiw >= XI_CLAMP:
                xim[:] = XI_CLAMP
            else:
                xim[:] = xiw[XIW:]

            x_nan = a_nan
            x_ninf = a_inf and a_s
            x_zero_cl = (not a_s) or a_zero   # x >= 0 or -0
            kc[:] = c_e

            # ------------------------------------------------ operand selection
            if exp2:
                # product = slope * xf, xf = -(fraction bits of |x|)  (<= 0)
                if x_nan or x_ninf or x_zero_cl:
                    sA[:] = 0
                    xs[:] = 0
                    pc[:] = 0
                else:
                    sA[:] = xfrac
                    xs[:] = xim
                    pc[:] = pwide[LP:]
                ps = not b_s
                p_nan = b_nan or (b_inf and sA == 0)
                p_inf = b_inf and sA != 0
                p_zero = (sA == 0) or b_zero
                # decoded intercept: 1.0 (k == 0) or 1.mantissa * 2^-1
                cs = False
                c_nan = False
                c_inf = False
                c_zero = False
                if c_e == 0:
                    ce[:] = BA
                    sc[:] = 1 << MA
                else:
                    ce[:] = BA - 1
                    sc[:] = concat(True, c_m)
            else:
                sA[:] = sa
                xs[:] = 0
                pc[:] = 0
                ps = a_s != b_s
                p_nan = a_nan or b_nan or (a_inf and b_zero) or (b_inf and a_zero)
                p_inf = (a_inf or b_inf) and not p_nan
                p_zero = a_zero or b_zero
                cs = c_s
                c_nan = (c_e == XA) and (c_m != 0)
                c_inf = (c_e == XA) and (c_m == 0)
                c_zero = (c_e == 0) and (c_m == 0)
                if c_e == 0:
                    ce[:] = 1
                    sc[:] = concat(False, c_m)
                else:
                    ce[:] = c_e
                    sc[:] = concat(True, c_m)

            # --------------------------------------------- product and alignment
            # exponents and significands widened to their arithmetic's width
            eaw[:] = concat(intbv(0)[EW - EM:], ea)
            ebw[:] = concat(intbv(0)[EW - EM:], eb)
            cew[:] = concat(intbv(0)[EW - EA:], ce)
            xsw[:] = concat(intbv(0)[EW - XIW:], xs)
            prod[:] = sA * sb
            prodx[:] = concat(intbv(0)[NX - 2 * PM:], prod)
            scx[:] = concat(intbv(0)[NX - PA:], sc)
            t[:] = cew + TOFF - eaw - ebw
            if p_zero:
                xp[:] = 0
                xc[:] = scx << G1
                lw[:] = cew + LW_CG - xsw
            elif c_zero:
                xp[:] = prodx << G1
                xc[:] = 0
                lw[:] = eaw + ebw + LW_P - xsw
            elif t > T_HI:
                # addend far above: the product only decides the sticky bit
                xp[:] = 1
                xc[:] = scx << SHMAX1
                lw[:] = cew + LW_CF - xsw
            elif t < T_LO:
                # addend (partly) below the window: shift right with sticky
                rsd[:] = T_LO - t
                if rsd >= RSMAX:
                    rs[:] = RSMAX
                else:
                    rs[:] = rsd[RSW:]
                sct[:] = sc >> rs
                sctx[:] = concat(intbv(0)[NX - PA:], sct)
                xp[:] = prodx << G1
                if (sct << rs) != sc:
                    xc[:] = (sctx << 1) + 1
                else:
                    xc[:] = sctx << 1
                lw[:] = eaw + ebw + LW_P - xsw
            else:
                shc[:] = t - T_LO1
                xp[:] = prodx << G1
                xc[:] = scx << shc
                lw[:] = eaw + ebw + LW_P - xsw

            # ------------------------------------------------------- add / sub
            if ps == cs:
                xsum[:] = xp + xc
                rsgn = ps
            elif xp >= xc:
                xsum[:] = xp - xc
                rsgn = ps
            else:
                xsum[:] = xc - xp
                rsgn = cs

            # ------------------------------------- result class (specials first)
            if exp2 and x_nan:
                cls[:] = C_NAN
            elif exp2 and x_ninf:
                cls[:] = C_ZERO
            elif p_nan or c_nan or (p_inf and c_inf and ps != cs):
                cls[:] = C_NAN
            elif p_inf:
                cls[:] = C_INF
                sgn = ps
            elif c_inf:
                cls[:] = C_INF
                sgn = cs
            elif xsum == 0:
                cls[:] = C_ZERO
                sgn = ps and cs
            else:
                cls[:] = C_FIN
                sgn = rsgn

            s_sum.next = xsum
            s_lw.next = lw
            s_cls.next = cls
            s_sgn.next = sgn
            piece.next = pc
            match.next = exp2 and (concat(intbv(0)[EA - LP:], pc) == kc)
        else:
            s_sum.next = 0
            s_lw.next = 0
            s_cls.next = 0
            s_sgn.next = 0
            piece.next = 0
            match.next = False

    # ---- normalise (leading-zero count), then round to A and to M
    u_norm = normalise(s_sum, s_lz, s_y, en if gated else None)

    @always_comb
    def exponent():
        s_emsb.next = s_lw + NX2 - s_lz

    u_rnd_a = round_rne(s_y, s_emsb, enc_a, fa, OFS, en if gated else None)
    u_rnd_m = round_rne(s_y, s_emsb, enc_m, fm, OFS, en if gated else None)

    @always_comb
    def pack():
        ma = intbv(0)[WA - 1:]
        me = intbv(0)[WM - 1:]
        if s_cls == C_INF:
            ma[:] = 0
            ma[WA - 1:MA] = XA
            me[:] = 0
            me[WM - 1:MM] = XM
        elif s_cls == C_ZERO:
            ma[:] = 0
            me[:] = 0
        else:
            ma[:] = enc_a[WA - 1:]
            me[:] = enc_m[WM - 1:]
        if s_cls == C_NAN:
            out_a.next = NAN_A
            out_e.next = NAN_M
        else:
            out_a.next = concat(s_sgn, ma)
            out_e.next = concat(s_sgn, me)

    if pipe is not None:    # a pipelined variant (rtl/fp/fsa_fma_pipe.py, with its clk)
        return pipe(fma_comb, exponent, pack, locals())
    return fma_comb, u_norm, exponent, u_rnd_a, u_rnd_m, pack


def convert(outdir: "str | Path", mul: str = "fp16", add: str = "fp32", pieces: int = 8,
            gated: bool = False) -> Path:
    """Write ``<outdir>/<module_name(mul, add, pieces, gated)>.v``; return its
    path (`gated`: the variant with the ``en`` port).

    Raises:
        ValueError: unsupported formats or pieces.
    """
    prm = _validate(mul, add, pieces)
    fm, fa = prm.fm, prm.fa
    name = module_name(mul, add, pieces, gated)

    def factory():
        return fsa_fma(sig(fm.width), sig(fm.width), sig(fa.width), sig(1),
                       sig(fa.width), sig(fm.width), sig(prm.lp), sig(1),
                       mul=fm.name, add=fa.name, pieces=pieces, en=sig(1) if gated else None)

    return convert_block(factory, name, outdir)
