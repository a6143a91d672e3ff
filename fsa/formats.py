"""Floating-point formats used by FSA (IEEE 754 binary layouts).

The single place that knows the bit layouts of the element (E) and
accumulate (A) formats.  Both the bit-exact model (`fsa.numerics`) and the
MyHDL hardware (`rtl.fp`) read their widths from here.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FPFormat", "FORMATS", "get_format"]


@dataclass(frozen=True)
class FPFormat:
    """An IEEE 754 binary format.

    Attributes:
        name: "fp16", "bf16" or "fp32".
        exp_bits: width of the biased exponent field.
        man_bits: width of the stored mantissa (fraction) field.
    """

    name: str
    exp_bits: int
    man_bits: int

    @property
    def width(self) -> int:
        """Total width in bits (sign + exponent + mantissa)."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def precision(self) -> int:
        """Significand precision in bits, hidden bit included."""
        return self.man_bits + 1

    @property
    def exp_max(self) -> int:
        """All-ones exponent field (inf / NaN)."""
        return (1 << self.exp_bits) - 1

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest finite number."""
        return self.exp_max - 1 - self.bias

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def canonical_nan(self) -> int:
        """Positive quiet NaN with only the top mantissa bit set."""
        return (self.exp_max << self.man_bits) | (1 << (self.man_bits - 1))

    @property
    def pos_inf(self) -> int:
        return self.exp_max << self.man_bits

    @property
    def one(self) -> int:
        return self.bias << self.man_bits

    @property
    def numpy_uint(self) -> str:
        return "uint16" if self.width == 16 else "uint32"

    @property
    def bytes(self) -> int:
        return self.width // 8


FORMATS: dict[str, FPFormat] = {
    "fp16": FPFormat("fp16", 5, 10),
    "bf16": FPFormat("bf16", 8, 7),
    "fp32": FPFormat("fp32", 8, 23),
}


def get_format(name: "str | FPFormat") -> FPFormat:
    """Return the format called `name` ("fp16", "bf16", "fp32").

    Raises:
        ValueError: for an unknown name.
    """
    if isinstance(name, FPFormat):
        return name
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(
            f"unknown floating-point format {name!r}; use one of {sorted(FORMATS)}"
        ) from None
