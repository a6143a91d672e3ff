"""CMP arithmetic: IEEE subtraction and maximum, one format, combinational.

``fsa_fcmp`` is the arithmetic of the comparator row (architecture section
4): ``diff = RNE(a - b)`` for ``PROP_MAX_DIFF`` and ``mx = maximum(a, b)``
for ``UPDATE``.  It is a dedicated floating-point adder (swap, align with
guard/round/sticky, add or subtract, normalise, round), not an FMA.  The
rules are those of ``docs/numerics.md`` ("Subtract / maximum"):

* ``diff``: ``a - b`` rounded once, to nearest, ties to even; subnormal
  inputs and results are exact-rounded (no flush to zero); overflow gives
  ``±inf``; ``inf - inf`` (same signs) and any NaN input give the canonical
  quiet NaN; an exact zero difference is ``+0`` except
  ``(-0) - (+0) = -0``.
* ``mx``: the canonical NaN if either input is NaN; else ``b`` if ``b > a``
  numerically (``+0`` and ``-0`` compare equal); else ``a`` bit for bit (so
  ties, ``+0`` versus ``-0`` included, return the first operand).

Ports (all ``W`` bits, ``W`` = format width; fp16/bf16: 16, fp32: 32):

======  ===  ==============================================
a       in   first operand (the running maximum)
b       in   second operand
diff    out  ``RNE(a - b)``
mx      out  ``maximum(a, b)``
======  ===  ==============================================

Latency: 0 cycles (purely combinational, no clock).
"""
from __future__ import annotations

from pathlib import Path

from myhdl import always_comb, block, concat, intbv

from fsa.formats import get_format
from rtl.convert import convert_block, sig

__all__ = ["fsa_fcmp", "module_name", "convert", "LINT_WAIVERS"]

#: Verilator ``-Wall`` waivers needed by the generated Verilog.  None: the
#: generated module is clean under ``verilator --lint-only -Wall``.
LINT_WAIVERS: dict[str, str] = {}

FORMATS_OK = ("fp16", "bf16", "fp32")


def _check_fmt(fmt: str) -> None:
    if fmt not in FORMATS_OK:
        raise ValueError(f"fsa_fcmp: fmt must be one of {FORMATS_OK}, got {fmt!r}")


def module_name(fmt: str = "fp32") -> str:
    """Verilog module name for this configuration, e.g. ``fsa_fcmp_fp32``."""
    _check_fmt(fmt)
    return f"fsa_fcmp_{fmt}"


@block
def fsa_fcmp(a, b, diff, mx, fmt="fp32"):
    """Combinational ``diff = RNE(a - b)`` and ``mx = maximum(a, b)``.

    Args:
        a, b: input signals, ``W`` bits (raw IEEE bits of format `fmt`).
        diff, mx: output signals, ``W`` bits.
        fmt: "fp16", "bf16" or "fp32".

    Raises:
        ValueError: for an unknown format or ports of the wrong width.
    """
    _check_fmt(fmt)
    f = get_format(fmt)
    W, EB, MB = f.width, f.exp_bits, f.man_bits
    for name, s in (("a", a), ("b", b), ("diff", diff), ("mx", mx)):
        if len(s) != W:
            raise ValueError(f"fsa_fcmp({fmt}): port {name} must be {W} bits, got {len(s)}")
    P = MB + 1                 # significand precision
    G = P + 3                  # significand + guard, round, sticky
    EMAX = f.exp_max
    NAN = f.canonical_nan
    SIGN = W - 1
    G2 = 1 << (G - 1).bit_length()          # G rounded up to a power of two
    NST = G2.bit_length() - 1                # leading-zero count stages
    TOP = G2 >> 1                            # first stage shifts by G2/2

    @always_comb
    def comb():
        # ---- operand decode (b is negated: diff = a + (-b)) --------------
        sa = bool(a[SIGN])
        sb = not b[SIGN]
        ea = intbv(0)[EB:]
        eb = intbv(0)[EB:]
        ea[:] = a[SIGN:MB]
        eb[:] = b[SIGN:MB]
        maga = intbv(0)[SIGN:]
        magb = intbv(0)[SIGN:]
        maga[:] = a[SIGN:]
        magb[:] = b[SIGN:]
        a_nan = ea == EMAX and a[MB:] != 0
        b_nan = eb == EMAX and b[MB:] != 0
        a_inf = ea == EMAX and a[MB:] == 0
        b_inf = eb == EMAX and b[MB:] == 0

        # ---- maximum -------------------------------------------------------
        b_gt = False
        if a[SIGN] != b[SIGN]:
            b_gt = bool(a[SIGN]) and (maga != 0 or magb != 0)
        elif a[SIGN] == 0:
            b_gt = magb > maga
        else:
            b_gt = magb < maga
        if a_nan or b_nan:
            mx.next = NAN
        elif b_gt:
            mx.next = b
        else:
            mx.next = a

        # ---- subtraction: order by magnitude, |x| >= |y| ----------------
        sx = False
        sy = False
        ex = intbv(0)[EB:]
        ey = intbv(0)[EB:]
        fx = intbv(0)[MB:]
        fy = intbv(0)[MB:]
        if magb > maga:
            sx = sb
            sy = sa
            ex[:] = eb
            ey[:] = ea
            fx[:] = b[MB:]
            fy[:] = a[MB:]
        else:
            sx = sa
            sy = sb
            ex[:] = ea
            ey[:] = eb
            fx[:] = a[MB:]
            fy[:] = b[MB:]
        # effective exponents (subnormals live at exponent 1) and significands
        hx = ex != 0
        hy = ey != 0
        ux = intbv(0)[EB:]
        uy = intbv(0)[EB:]
        ux[:] = ex
        uy[:] = ey
        if not hx:
            ux[:] = 1
        if not hy:
            uy[:] = 1
        # alignment distance, clamped: beyond G the whole of y is sticky
        d = intbv(0)[EB:]
        d[:] = ux - uy
        dc = intbv(0)[EB:]
        if d > G:
            dc[:] = G
        else:
            dc[:] = d
        yw = intbv(0)[P + G:]
        yw[:] = concat(hy, fy, intbv(0)[G:])
        yw[:] = yw >> dc
        ya = intbv(0)[G:]
        ya[:] = yw[P + G:P]
        if yw[P:] != 0:
            ya[0] = 1
        xa = intbv(0)[G:]
        xa[:] = concat(hx, fx, intbv(0)[3:])
        # add or subtract (x >= y, so the difference is never negative)
        s = intbv(0)[G + 1:]
        if sx == sy:
            s[:] = xa + ya
        else:
            s[:] = xa - ya
        # ---- normalise -------------------------------------------------------
        # leading-zero count of the low G bits (log-depth, constant shifts)
        sl = intbv(0)[G:]
        sl[:] = s[G:]
        lv = intbv(0)[G2:]
        lv[:] = concat(sl, intbv(0)[G2 - G:])
        lz = intbv(0)[EB:]
        st = intbv(0)[NST:]          # this stage's shift: G2/2, G2/4, ..., 1
        ra = intbv(0)[NST + 1:]      # G2 - st: shift that exposes the top st bits
        st[:] = TOP
        for j in range(NST):
            ra[:] = G2 - st
            if (lv >> ra) == 0:
                lv[:] = lv << st
                lz[NST - 1 - j] = 1
            st[:] = st >> 1
        # shift left by lz, but not below the smallest normal exponent
        sh = intbv(0)[EB:]
        if lz + 1 < ux:
            sh[:] = lz
        else:
            sh[:] = ux - 1
        n = intbv(0)[G:]
        ef = intbv(0)[EB + 1:]
        if s[G]:
            # carry out: one place right, keep the lost bit as sticky
            n[:] = s[G + 1:1]
            n[0] = s[1] or s[0]
            ef[:] = ux + 1
        else:
            n[:] = sl << sh
            if n[G - 1]:
                ef[:] = ux - sh
            else:
                ef[:] = 0
        # ---- round to nearest even and pack -------------------------------
        pk = intbv(0)[SIGN + 1:]
        pk[:] = concat(ef, n[G - 1:3])
        if n[2] and (n[1] or n[0] or n[3]):
            pk[:] = pk + 1
        if ef >= EMAX:
            pk[:] = 0
            pk[SIGN:MB] = EMAX
        # ---- specials -----------------------------------------------------
        rs = False
        rm = intbv(0)[SIGN:]
        rm[:] = pk[SIGN:]
        rs = sx
        if a_inf or b_inf:
            if a_inf:
                rs = sa
            else:
                rs = sb
            rm[:] = 0
            rm[SIGN:MB] = EMAX
        elif s == 0:
            rs = sa and sb
            rm[:] = 0
        if a_nan or b_nan or (a_inf and b_inf and sa != sb):
            diff.next = NAN
        else:
            diff.next = concat(rs, rm)

    return comb


def convert(outdir: "str | Path", fmt: str = "fp32") -> Path:
    """Write ``<outdir>/<module_name(fmt)>.v`` and return its path."""
    name = module_name(fmt)
    w = get_format(fmt).width
    a, b, diff, mx = sig(w), sig(w), sig(w), sig(w)
    return convert_block(lambda: fsa_fcmp(a, b, diff, mx, fmt=fmt), name, outdir)
