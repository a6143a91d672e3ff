"""Reciprocal unit: ``y = RNE(1 / x)`` by digit recurrence (the ACC divider).

``fsa_div`` computes the ACC's ``RECIPROCAL`` (architecture section 4) with
the rules of ``docs/numerics.md`` ("Reciprocal"): one rounding, to nearest,
ties to even; subnormal inputs (normalised first) and subnormal results
(denormalised before rounding) are exact-rounded; ``1/±0 = ±inf``,
``1/±inf = ±0``, NaN gives the canonical quiet NaN; results at or above
max finite + half an ulp become ``±inf``.

Algorithm.  ``x = m * 2^e`` with ``m`` in ``[1, 2)`` (``P`` = precision bits).
For ``m > 1`` the quotient ``2/m`` lies in ``(1, 2)``: its integer bit is
``1`` and the remainder starts at ``2 - m``.  Restoring division then
produces ``bits_per_cycle`` fraction bits per clock (that many
compare-subtract steps unrolled), ``N = ceil(P / bits_per_cycle)``
iterations, so at least ``P - 1`` mantissa bits plus a round bit; the final
remainder is the sticky bit.  ``m == 1`` starts with remainder 0 and one
exponent higher (the quotient is exactly 1).  The result exponent is
``-e - 1`` (``-e`` for ``m == 1``); it is at least ``-emax - 1``, so a
subnormal result needs a right shift of at most 2 before rounding.

Ports:

======  ===  ==========================================================
clk     in   clock (rising edge)
rst     in   synchronous reset, active high; every register is reset
start   in   sampled on a rising edge while ``ready``: capture ``x``
x       in   operand, ``W`` bits (raw IEEE bits of `fmt`)
ready   out  high while idle (combinational from the state register)
done    out  high for exactly one cycle when ``y`` becomes valid
y       out  ``RNE(1/x)``, ``W`` bits; holds its value until the next
             operation completes (in particular until the next start)
======  ===  ==========================================================

Latency: ``L = latency(fmt, bits_per_cycle) = N + 2`` with
``N = ceil((man_bits + 1) / bits_per_cycle)``: if rising edge 0 samples
``start``, ``done`` (and the new ``y``) is high right after rising edge
``L`` until rising edge ``L + 1`` (a synchronous consumer samples it at
edge ``L + 1``).  ``ready`` is low from edge 0 to edge ``L``; a new start
can be sampled at edge ``L + 1``, so back-to-back operations take
``L + 1`` cycles each.

=======  ================  ========================
fmt      bits_per_cycle    latency L (cycles)
=======  ================  ========================
fp32     1 / 2 / 4         26 / 14 / 8
fp16     1 / 2 / 4         13 / 8 / 5
bf16     1 / 2 / 4         10 / 6 / 4
=======  ================  ========================

(The reference's fp32 divider takes 15 cycles at 2 bits/cycle.)

Timing (fp32, 2 bits/cycle, L = 14; the bench raises ``start`` after edge
-1 and drops it after edge 0; ``state`` is internal)::

    edge   -1     0      1      2      ...    13     14     15
    clk   _/---\\__/---\\__/---\\__/---\\_ ...   _/---\\__/---\\__/---\\_
    start _/------\\___________________ ...   _____________________
    ready --------\\___________________ ...   ________/------------
    done  ____________________________ ...   ________/------\\_____
    state  |IDLE  |NORM  |ITER         ...    |ROUND |IDLE
    y      |old                        ...           |1/x0

* edge 0: ``start`` sampled, ``x`` captured;
* edge 1: normalise (subnormal leading-zero shift), exponent, specials,
  initial remainder;
* edges 2 .. N+1: ``bits_per_cycle`` quotient bits per edge;
* edge N+2 = L: denormalise (0..2 places), round, pack; ``done`` high,
  ``ready`` high again.
"""
from __future__ import annotations

from pathlib import Path

from myhdl import always, always_comb, block, concat, intbv

from fsa.formats import get_format
from fsa.hw import timing
from rtl.convert import convert_block, sig
from rtl.prim import normalise

__all__ = ["fsa_div", "latency", "module_name", "convert", "LINT_WAIVERS"]

#: Verilator ``-Wall`` waivers needed by the generated Verilog.  None: every
#: generated module is clean under ``verilator --lint-only -Wall``.
LINT_WAIVERS: dict[str, str] = {}

FORMATS_OK = timing.DIVIDER_FORMATS          # the contract: fsa/hw/timing.py
BITS_OK = timing.DIVIDER_BITS_PER_CYCLE

# state encoding
_IDLE, _NORM, _ITER, _ROUND = 0, 1, 2, 3


def _check(fmt: str, bits_per_cycle: int) -> None:
    if fmt not in FORMATS_OK:
        raise ValueError(f"fsa_div: fmt must be one of {FORMATS_OK}, got {fmt!r}")
    if isinstance(bits_per_cycle, bool) or bits_per_cycle not in BITS_OK:
        raise ValueError(f"fsa_div: bits_per_cycle must be one of {BITS_OK}, "
                         f"got {bits_per_cycle!r}")


def _iterations(fmt: str, bits_per_cycle: int) -> int:
    return timing.divider_iterations(fmt, bits_per_cycle)


def latency(fmt: str = "fp32", bits_per_cycle: int = 2) -> int:
    """Cycles from the rising edge that samples ``start`` to the rising edge
    after which ``done`` is high (see the module docstring): ``N + 2`` with
    ``N = ceil(precision / bits_per_cycle)``."""
    _check(fmt, bits_per_cycle)
    return timing.divider_latency(fmt, bits_per_cycle)


def module_name(fmt: str = "fp32", bits_per_cycle: int = 2) -> str:
    """Verilog module name, e.g. ``fsa_div_fp32_r2``."""
    _check(fmt, bits_per_cycle)
    return f"fsa_div_{fmt}_r{bits_per_cycle}"


@block
def fsa_div(clk, rst, start, x, ready, done, y, fmt="fp32", bits_per_cycle=2):
    """Multi-cycle ``y = RNE(1/x)`` with a start/done handshake.

    Args:
        clk, rst, start: 1-bit inputs (``rst`` synchronous, active high).
        x: input, ``W`` bits.
        ready, done: 1-bit outputs.
        y: output, ``W`` bits.
        fmt: "fp16", "bf16" or "fp32".
        bits_per_cycle: quotient bits per clock, 1, 2 or 4.

    Raises:
        ValueError: for an unknown format, an unsupported `bits_per_cycle`
            or ports of the wrong width.
    """
    _check(fmt, bits_per_cycle)
    f = get_format(fmt)
    W, EB, MB = f.width, f.exp_bits, f.man_bits
    for name, s, w in (("clk", clk, 1), ("rst", rst, 1), ("start", start, 1),
                       ("x", x, W), ("ready", ready, 1), ("done", done, 1), ("y", y, W)):
        if len(s) != w:
            raise ValueError(f"fsa_div({fmt}): port {name} must be {w} bits, got {len(s)}")
    SIGN = W - 1
    P = MB + 1                          # precision
    KB = bits_per_cycle
    N = _iterations(fmt, bits_per_cycle)
    QB = N * KB                         # quotient fraction bits (>= P)
    EMAX = f.exp_max
    NAN = f.canonical_nan
    # bx = biased result exponent + OFF, OFF a multiple of 2^EB (so the low
    # EB bits of bx are the exponent field) that keeps bx >= 0 (be >= -1).
    OFF = 1 << EB
    C1 = 2 * f.bias - 1 + OFF           # bx = C1 - e (+1 if m == 1), normal x
    BXW = (C1 + MB + 1).bit_length()    # largest: subnormal x, bx = C1 + lz + 1
    NM1 = N - 1
    CW = max(NM1, 1).bit_length()
    HALF = 1 << MB                      # 2 - m = HALF - fraction (units 2^-MB)
    TW = QB + 3                         # 1.q plus two zero bits for the shift

    state = sig(2)
    xr = sig(W)
    rem = sig(P)                        # partial remainder, < divisor
    dv = sig(P)                         # divisor: normalised significand
    q = sig(QB)                         # quotient fraction bits
    bx = sig(BXW)
    sgn = sig(1)
    spec = sig(2)                       # 0 finite, 1 NaN, 2 inf (x = 0), 3 zero (x = inf)
    cnt = sig(CW)

    # next-state values computed combinationally (the clocked process only
    # copies signals, so the Verilog has no blocking assignments in it)
    n_dv = sig(P)
    n_rem = sig(P)
    n_bx = sig(BXW)
    n_spec = sig(2)
    i_rem = sig(P)
    i_q = sig(QB)
    r_y = sig(W)
    # leading-zero count and normalising shift of a subnormal fraction
    # (rtl.prim.normalise, inlined into this module)
    lz = sig(BXW)
    mnorm = sig(MB)
    u_norm = normalise(xr(MB, 0), lz, mnorm)

    @always_comb
    def ready_out():
        ready.next = state == _IDLE

    @always_comb
    def unpack():
        # unpack xr, normalise a subnormal, exponent, specials, 2 - m
        e = intbv(0)[EB:]
        fr = intbv(0)[MB:]
        ew = intbv(0)[BXW:]
        mn = intbv(0)[MB:]
        fp = intbv(0)[P:]                # a fraction, widened to P bits
        e[:] = xr[SIGN:MB]
        fr[:] = xr[MB:]
        ew[:] = concat(intbv(0)[BXW - EB:], e)
        mn[:] = concat(mnorm[MB - 1:], False)   # fraction after the leading one
        if e == EMAX:
            n_dv.next = concat(True, fr)
            n_rem.next = 0
            n_bx.next = 0
            if fr != 0:
                n_spec.next = 1
            else:
                n_spec.next = 3
        elif e == 0:
            n_dv.next = concat(True, mn)
            if fr == 0:
                n_spec.next = 2
                n_rem.next = 0
                n_bx.next = 0
            elif mn == 0:
                n_spec.next = 0
                n_rem.next = 0
                n_bx.next = C1 + 1 + lz
            else:
                n_spec.next = 0
                fp[:] = concat(False, mn)
                n_rem.next = HALF - fp           # 2 - m
                n_bx.next = C1 + lz
        else:
            n_dv.next = concat(True, fr)
            n_spec.next = 0
            if fr == 0:
                n_rem.next = 0
                n_bx.next = C1 + 1 - ew
            else:
                fp[:] = concat(False, fr)
                n_rem.next = HALF - fp           # 2 - m
                n_bx.next = C1 - ew

    @always_comb
    def iterate():
        # KB restoring division steps
        # rv < dv, so 2*rv >= dv when its top bit is set or, else, when
        # 2*rv - dv (computed on P bits, df[P] = no borrow) does not borrow.
        rv = intbv(0)[P:]
        lo = intbv(0)[P:]
        df = intbv(0)[P + 1:]
        qv = intbv(0)[QB:]
        rv[:] = rem
        qv[:] = q
        for i in range(KB):
            lo[:] = concat(rv[P - 1:], False)
            df[:] = concat(True, lo) - concat(False, dv)
            if rv[P - 1] or df[P]:
                rv[:] = df[P:]
                qv[:] = concat(qv[QB - 1:], True)
            else:
                rv[:] = lo
                qv[:] = concat(qv[QB - 1:], False)
        i_rem.next = rv
        i_q.next = qv

    @always_comb
    def round_pack():
        # denormalise by 0..2 places, round to nearest even, pack
        tt = intbv(0)[TW:]
        ef = intbv(0)[EB:]
        pk = intbv(0)[SIGN:]
        tt[:] = concat(True, q, intbv(0)[2:])
        if bx == OFF:
            tt[:] = tt >> 1
        elif bx < OFF:
            tt[:] = tt >> 2
        if tt[TW - 1]:
            ef[:] = bx[EB:]
        pk[:] = concat(ef, tt[TW - 1:TW - 1 - MB])
        if bx >= EMAX + OFF or spec == 2:
            pk[:] = 0
            pk[SIGN:MB] = EMAX
        elif spec == 3:
            pk[:] = 0
        elif tt[TW - 2 - MB] and (tt[TW - 2 - MB:] != 0 or rem != 0 or tt[TW - 1 - MB]):
            pk[:] = pk + 1            # a carry out of max finite gives inf
        if spec == 1:
            r_y.next = NAN
        else:
            r_y.next = concat(sgn, pk)

    @always(clk.posedge)
    def seq():
        if rst:
            state.next = _IDLE
            xr.next = 0
            rem.next = 0
            dv.next = 0
            q.next = 0
            bx.next = 0
            sgn.next = 0
            spec.next = 0
            cnt.next = 0
            done.next = 0
            y.next = 0
        else:
            done.next = 0
            if state == _IDLE:
                if start:
                    xr.next = x
                    state.next = _NORM
            elif state == _NORM:
                dv.next = n_dv
                rem.next = n_rem
                bx.next = n_bx
                spec.next = n_spec
                sgn.next = xr[SIGN]
                q.next = 0
                cnt.next = NM1
                state.next = _ITER
            elif state == _ITER:
                rem.next = i_rem
                q.next = i_q
                if cnt == 0:
                    state.next = _ROUND
                else:
                    cnt.next = cnt - 1
            else:
                y.next = r_y
                done.next = 1
                state.next = _IDLE

    return u_norm, ready_out, unpack, iterate, round_pack, seq


def convert(outdir: "str | Path", fmt: str = "fp32", bits_per_cycle: int = 2) -> Path:
    """Write ``<outdir>/<module_name(fmt, bits_per_cycle)>.v`` and return its path."""
    name = module_name(fmt, bits_per_cycle)
    w = get_format(fmt).width
    clk, rst, start, ready, done = sig(1), sig(1), sig(1), sig(1), sig(1)
    x, y = sig(w), sig(w)
    return convert_block(lambda: fsa_div(clk, rst, start, x, ready, done, y, fmt=fmt,
                                         bits_per_cycle=bits_per_cycle), name, outdir)
