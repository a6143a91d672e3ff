"""Device error codes (the error register of the control port, and the
codes of the golden model). One table for hardware and software."""
from __future__ import annotations

#: code -> (name, meaning)
ERRORS: dict[int, tuple[str, str]] = {
    0: ("NONE", "no error"),
    1: ("ILLEGAL_TYPE", "instruction type (word 0 bits 31..29) is not fence/matrix/DMA"),
    2: ("ILLEGAL_FUNC", "unknown matrix or DMA function code"),
    3: ("SRAM_RANGE", "a matrix instruction addresses a scratchpad/accumulator row outside the SRAM"),
    4: ("DMA_SRAM_RANGE", "a DMA row outside the scratchpad/accumulator"),
    5: ("MEM_RANGE", "a DMA row outside the configured memory window"),
    6: ("DMA_ALIGN", "a DMA row address or size is not a multiple of the AXI beat size"),
    7: ("DMA_SIZE", "a DMA row size exceeds the SRAM row"),
    8: ("AXI_RD_ERR", "SLVERR/DECERR on an AXI read"),
    9: ("AXI_WR_ERR", "SLVERR/DECERR on an AXI write response"),
}
CODES: dict[str, int] = {name: code for code, (name, _) in ERRORS.items()}
ERR_BITS = 4


def name(code: int) -> str:
    """Name of an error code ("UNKNOWN_<n>" for codes not in the table)."""
    return ERRORS.get(code, (f"UNKNOWN_{code}", ""))[0]
