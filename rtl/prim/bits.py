"""Elaboration helpers for widths (no hardware of their own)."""
from __future__ import annotations

from myhdl import ConcatSignal, intbv

__all__ = ["clog2", "zext", "vsig", "Bundle"]


def clog2(n: int) -> int:
    """Bits for an index in ``0..n-1`` (at least 1)."""
    return max(1, (n - 1).bit_length())


def zext(s, width: int):
    """`s` zero-extended (or cut to its low bits) to `width` bits, as a signal
    (a ``ConcatSignal`` or a shadow slice: wiring only, no logic)."""
    n = len(s)
    if n == width:
        return s
    if n > width:
        return s(width, 0)
    return ConcatSignal(intbv(0)[width - n:], s)


def vsig(width: int, init: int = 0):
    """An intbv signal, also for one bit (a bit vector that can be sliced
    and takes part in arithmetic), unlike :func:`rtl.convert.sig`."""
    from myhdl import Signal

    return Signal(intbv(init)[width:])


class Bundle:
    """A group of signals (attributes).  MyHDL expands a top-level argument
    ``x`` holding attributes ``a, b`` into ports ``x_a, x_b`` (nested:
    ``x_y_a``), so a bundle names a unit's ports by group."""

    def __init__(self, **signals):
        self.__dict__.update(signals)
