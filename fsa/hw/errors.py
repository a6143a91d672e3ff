"""Error contract: the codes of the error register (``[3:0]`` of register
0x34) and of the golden model.

The core reports its own errors (codes 1-3, 10, 11) and the DMA engine's: a
DMA engine code ``c`` (1..6, ``rtl/fsa_dma.py``) appears as
``DMA_CODE_BASE + c``.  The device stops in the ERROR state with the code
and the index of the offending instruction.

Deadlock detection (``rtl/fsa_status.py``, the golden model reports the same
code, index and semaphore): the device is *quiet* when no matrix instruction
runs, no DMA instruction is in flight and each pending instruction (one per
engine) waits for a semaphore acquire that fails (the value differs, or the
semaphore is held: acquired by an instruction that does not release it).  Nothing can then change
but a host push.

* DEADLOCK, decoder blocked: quiet, and the decoder holds a complete
  instruction it cannot hand on (its engine's pending register is full, or a
  fence waits for a pending engine), or both engines' pending registers are
  full, for DEADLOCK_CYCLES consecutive cycles (nothing the host pushes can
  help: it queues behind).
* Queue run dry: quiet, the decoder holds no complete instruction, the queue
  is empty and nothing is pushed, for IDLE_CYCLES consecutive cycles (a push
  restarts the count, so a host that keeps feeding the queue is never
  punished): DEADLOCK if an instruction is pending (it waits for a semaphore
  no later instruction can release now), else NO_STOP (the program ended
  without a stop fence; the empty program too).

DEADLOCK reports the oldest blocked pending instruction (lowest index) and,
in the ``wait`` register (0x54), its semaphore id, the value it waits for and
the value the semaphore holds; NO_STOP reports the index the next
instruction would have (the number of instructions taken).
"""
from __future__ import annotations

__all__ = ["ERRORS", "CODES", "DMA_CODE_BASE", "ERR_BITS", "name", "DEADLOCK_CYCLES",
           "IDLE_CYCLES"]

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
    10: ("DEADLOCK", "every engine waits on a semaphore (or a fence on them) and nothing is in "
                     "flight; index: the oldest blocked instruction, register 0x54: its semaphore"),
    11: ("NO_STOP", "the program ran dry without a stop fence: the queue stayed empty, nothing "
                    "pushed, nothing pending or running, for IDLE_CYCLES (in fetch mode: at once "
                    "once every word was fetched); index: the next instruction's"),
    12: ("FETCH_RD_ERR", "program fetch: SLVERR/DECERR (or a wrong RLAST) on a fetch read; "
                         "index: the next instruction's"),
    13: ("FETCH_RANGE", "program fetch: the address is not a multiple of the AXI beat size or "
                        "the program is not inside the memory window; index 0"),
}
CODES: dict[str, int] = {n: code for code, (n, _) in ERRORS.items()}
#: the core reports a DMA engine error code c as DMA_CODE_BASE + c
DMA_CODE_BASE = 3
#: width of the error code
ERR_BITS = 4


def name(code: int) -> str:
    """Name of an error code ("UNKNOWN_<n>" for codes not in the table)."""
    return ERRORS.get(code, (f"UNKNOWN_{code}", ""))[0]


#: consecutive cycles of a blocked decoder (see above) before DEADLOCK
DEADLOCK_CYCLES = 16
#: consecutive idle cycles with the queue empty and nothing pushed before
#: NO_STOP (or DEADLOCK when an instruction is pending)
IDLE_CYCLES = 4096
