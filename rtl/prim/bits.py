"""Elaboration helpers for widths (no hardware of their own)."""
from __future__ import annotations

from myhdl import ConcatSignal, intbv

__all__ = ["clog2", "zext"]


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
