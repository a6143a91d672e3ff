"""Device error codes (the error register of the control port, and the
codes of the golden model). One table for hardware and software."""
from __future__ import annotations

#: code -> (name, meaning)
ERRORS: dict[int, tuple[str, str]] = {
    0: ("NONE", "no error"),
    1: ("ILLEGAL_TYPE", "instruction type (word 0 bits 31..29) is not fence/matrix/DMA"),
    2: ("ILLEGAL_FUNC", "unknown matrix or DMA function code"),
    3: ("SRAM_RANGE", "a matrix instruction addresses a scratchpad/accumulator row outside the SRAM"),
    # 4..9: the DMA engine's codes (rtl/fsa_dma.py ERR_*) + 3
    4: ("AXI_RD_ERR", "SLVERR/DECERR (or a protocol violation) on an AXI read"),
    5: ("AXI_WR_ERR", "SLVERR/DECERR (or a protocol violation) on an AXI write response"),
    6: ("MEM_RANGE", "a DMA row outside the configured memory window"),
    7: ("DMA_ALIGN", "a DMA row address or size is not a multiple of the AXI beat size"),
    8: ("DMA_SIZE", "a DMA row size exceeds the SRAM row"),
    9: ("DMA_SRAM_RANGE", "a DMA row outside the scratchpad/accumulator"),
}
CODES: dict[str, int] = {name: code for code, (name, _) in ERRORS.items()}
#: the core reports a DMA engine error code c as DMA_CODE_BASE + c
DMA_CODE_BASE = 3
ERR_BITS = 4


def name(code: int) -> str:
    """Name of an error code ("UNKNOWN_<n>" for codes not in the table)."""
    return ERRORS.get(code, (f"UNKNOWN_{code}", ""))[0]
