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

Precedence (:data:`STAGES`, :data:`PRECEDENCE`, :func:`sram_walks`; the RTL,
``rtl/fsa_decode.py``, ``rtl/fsa_dispatch.py``, ``rtl/fsa_status.py``, and
the golden model, ``fsa/golden/machine.py``, follow it).  An instruction is
checked at the first of these stages it reaches, in program order:

* ``decode``: the decoder holds it (ILLEGAL_TYPE as soon as word 0 is seen,
  ILLEGAL_FUNC once the instruction is complete: a matrix code above the
  dataflow's largest, a UD code on a reference device, a DMA code above 1).
  The decoder reaches instruction ``k`` once ``k - 1`` has been handed on.
* ``pending``: a matrix instruction enters its engine's pending register
  (SRAM_RANGE: a row of a walk of :func:`sram_walks` outside its SRAM; the
  semaphore is not looked at, so a range fault wins over a semaphore that
  never comes).
* ``issue``: the DMA engine takes the instruction (its semaphore acquired):
  DMA_SIZE, DMA_ALIGN (size), DMA_SRAM_RANGE, then row by row DMA_ALIGN
  (address) and MEM_RANGE before the row moves (earlier rows have moved),
  AXI_RD_ERR / AXI_WR_ERR while it runs; a DMA with ``repeat`` or ``size``
  0 moves nothing and is never wrong.
* ``quiet``: nothing can change any more: DEADLOCK, NO_STOP (above).

A ``decode`` or ``pending`` fault (:data:`DEFERRED`) stops dispatch at the
faulty instruction (nothing younger is handed on) and is reported once the
older instructions have *settled*: each has finished, or waits for a
semaphore nothing running can release (the deadlock detector's quiet).  An
older DMA instruction that fails meanwhile is reported instead (its error
comes first in program order); a DEADLOCK of the older ones is not
reported: the fault is.  So the device reports the error of the first
faulty instruction in program order among those that get to their check,
with its index; the ``wait`` register (0x54) is 0 except for DEADLOCK.
When several conditions hold in one cycle, ``fsa_status`` takes the first
of :data:`PRECEDENCE` (a pending matrix instruction is older than the one
the decoder holds, so SRAM_RANGE comes before the decoder's faults).  A
semaphore has one holder: when both pending instructions would take it in
one cycle, the matrix one does (``rtl/fsa_sem.py``; the golden model gives
it to the older one, the same where the matrix one is older).
"""
from __future__ import annotations

__all__ = ["ERRORS", "CODES", "DMA_CODE_BASE", "ERR_BITS", "name", "DEADLOCK_CYCLES",
           "IDLE_CYCLES", "STAGES", "DEFERRED", "PRECEDENCE", "sram_walks"]

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


#: error name -> the stage at which the device finds it (module docstring)
STAGES: dict[str, str] = {
    "ILLEGAL_TYPE": "decode", "ILLEGAL_FUNC": "decode", "SRAM_RANGE": "pending",
    "AXI_RD_ERR": "issue", "AXI_WR_ERR": "issue", "MEM_RANGE": "issue", "DMA_ALIGN": "issue",
    "DMA_SIZE": "issue", "DMA_SRAM_RANGE": "issue", "DEADLOCK": "quiet", "NO_STOP": "quiet",
    "FETCH_RD_ERR": "fetch", "FETCH_RANGE": "fetch",
}
#: the faults that stop dispatch and wait for the older instructions to settle
DEFERRED: tuple[str, ...] = tuple(n for n, st in STAGES.items() if st in ("decode", "pending"))
#: ``fsa_status``'s order when several conditions hold in one cycle ("DMA":
#: any DMA engine code; "DONE": the stop fence; "QUIET": DEADLOCK or NO_STOP)
PRECEDENCE: tuple[str, ...] = ("SRAM_RANGE", "ILLEGAL_TYPE", "ILLEGAL_FUNC", "DMA", "FETCH",
                               "DONE", "QUIET")


def sram_walks(func: str, rows: int, cols: int) -> tuple[tuple[str, int, bool], ...]:
    """The SRAM rows matrix function `func` (a name of ``fsa.hw.isa``) walks,
    for an array of `rows` x `cols`, as ``(sram, n, strided)``: ``n`` rows of
    ``"spad"`` (from ``spad_addr`` by ``spad_stride``) or ``"acc"`` (from
    ``acc_addr``, by ``acc_stride`` when `strided`, else the one row
    ``acc_addr``).  SRAM_RANGE: one of these rows outside its SRAM."""
    R, C = rows, cols
    table = {
        "LOAD_STATIONARY": (("spad", C, True),),
        "ATTENTION_SCORE": (("spad", R, True), ("acc", 1, False)),
        "ATTENTION_VALUE": (("spad", R, True), ("acc", R, True)),
        "ATTENTION_LSE_NORM_SCALE": (("acc", 1, False),),
        "ATTENTION_LSE_NORM": (("acc", R, True),),
        "LOAD_Q": (("spad", C, True),),
        "KSTEP": (("spad", R, True),),
        "STEP": (("spad", 2 * R, True), ("acc", R + 1, True)),
        "PVSTEP": (("spad", R, True), ("acc", R + 1, True)),
        "NORM_SCALE": (("acc", 1, False),),
        "NORM": (("acc", R, True),),
    }
    if func not in table:
        raise ValueError(f"unknown matrix function {func!r}; known: {', '.join(table)}")
    return table[func]
