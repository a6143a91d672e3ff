"""The reference dataflow (docs/architecture.md sections 3-7): the five
functions of :data:`fsa.hw.isa.MX_FUNCS`, the reference kernel
(:mod:`fsa.kernels.reference`), no functions of its own in the golden model
beyond the machine's."""
from __future__ import annotations

from fsa.dataflows.base import Dataflow

__all__ = ["REFERENCE", "Reference"]


class Reference(Dataflow):
    """The reference dataflow (all defaults of :class:`Dataflow`)."""

    def period(self, R: int, C: int, P: int) -> int:
        """The reference schedule's key-block period C + 2R + P + 4 + max(2R-1, R+C+1)."""
        return C + 2 * R + P + 4 + max(2 * R - 1, R + C + 1)


REFERENCE = Reference()
