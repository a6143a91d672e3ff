"""Device error codes: a compatibility re-export of :mod:`fsa.hw.errors`
(the contract lives there)."""
from __future__ import annotations

from fsa.hw.errors import CODES, DMA_CODE_BASE, ERR_BITS, ERRORS, name

__all__ = ["ERRORS", "CODES", "DMA_CODE_BASE", "ERR_BITS", "name"]
