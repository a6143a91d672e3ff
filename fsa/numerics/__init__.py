"""Bit-exact numeric model of the FSA arithmetic units (the contract is
``docs/numerics.md``), on raw bit patterns (``uint16`` for fp16/bf16,
``uint32`` for fp32), vectorised with numpy.

Two parts, both imported here (``from fsa import numerics``; use these names,
not the submodules):

* :mod:`fsa.numerics.ieee`: bit patterns <-> float64, the one rounding step,
  ``fma`` (one rounding, optional second rounded output), ``sub``,
  ``maximum``, ``reciprocal``, ``convert``, ``canonical_nan``; how the
  results are made exact without arbitrary precision is explained there.
* :mod:`fsa.numerics.exp2`: exp2 by ``P`` piecewise-linear chords
  (``exp2_pwl``, ``exp2_piece``, ``exp2_step``), the chord constants the
  hardware stores (``pwl_constants``, ``encode_intercept``,
  ``decode_intercept``) and ``check_pieces``.

A third module, :mod:`fsa.numerics.fast` (imported by itself, not
re-exported here), rounds exact float64 values with numpy's casts where that
is provably the same result, for the vectorised golden model
(:mod:`fsa.golden.fast`); the functions above are the reference.

Formats are named "fp16", "bf16", "fp32" (or given as
:class:`fsa.formats.FPFormat`; ``FPFormat`` and ``get_format`` are
re-exported for convenience).
"""
from __future__ import annotations

from fsa.formats import FPFormat, get_format
from fsa.numerics.exp2 import (check_pieces, decode_intercept, encode_intercept, exp2_piece,
                               exp2_pwl, exp2_step, pwl_constants)
from fsa.numerics.ieee import (ArrayLike, FormatLike, canonical_nan, convert, fma, from_float64,
                               maximum, reciprocal, sub, to_float64)

__all__ = [
    "fma",
    "sub",
    "maximum",
    "reciprocal",
    "convert",
    "exp2_pwl",
    "exp2_piece",
    "exp2_step",
    "pwl_constants",
    "encode_intercept",
    "decode_intercept",
    "check_pieces",
    "to_float64",
    "from_float64",
    "canonical_nan",
]
