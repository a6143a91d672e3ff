"""Error contract: the codes of the error register (``[3:0]`` of register
0x34) and of the golden model.

The core reports its own errors (codes 1-3) and the DMA engine's: a DMA
engine code ``c`` (1..6, ``rtl/fsa_dma.py``) appears as
``DMA_CODE_BASE + c``.  The device stops in the ERROR state with the code
and the index of the offending instruction.
"""
from __future__ import annotations

__all__ = ["ERRORS", "CODES", "DMA_CODE_BASE", "ERR_BITS", "name"]

#: code -> (name, meaning)
ERRORS: dict[int, tuple[str, str]] = {
    0: ("NONE", "no error"),
    1: ("ILLEGAL_TYPE", "instruction type (word 0 bits 31..29) is not fence/matrix/DMA"),
    2: ("ILLEGAL_FUNC", "unknown matrix or DMA function code"),
    3: ("SRAM_RANGE", "a matrix instruction addresses a scratchpad/accumulator row outside the SRAM"),
    # 4..9: the DMA engine's codes (rtl/fsa_dma.py ERR_*) + DMA_CODE_BASE
    4: ("AXI_RD_ERR", "SLVERR/DECERR (or a protocol violation) on an AXI read"),
    5: ("AXI_WR_ERR", "SLVERR/DECERR (or a protocol violation) on an AXI write response"),
    6: ("MEM_RANGE", "a DMA row outside the configured memory window"),
    7: ("DMA_ALIGN", "a DMA row address or size is not a multiple of the AXI beat size"),
    8: ("DMA_SIZE", "a DMA row size exceeds the SRAM row"),
    9: ("DMA_SRAM_RANGE", "a DMA row outside the scratchpad/accumulator"),
}
CODES: dict[str, int] = {n: code for code, (n, _) in ERRORS.items()}
#: the core reports a DMA engine error code c as DMA_CODE_BASE + c
DMA_CODE_BASE = 3
#: width of the error code
ERR_BITS = 4


def name(code: int) -> str:
    """Name of an error code ("UNKNOWN_<n>" for codes not in the table)."""
    return ERRORS.get(code, (f"UNKNOWN_{code}", ""))[0]
