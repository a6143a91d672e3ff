"""Control-port contract: device states, counters and the AXI4-Lite
register map (the reference's offsets 0x00-0x30, then ours).

Device states (:class:`State`, the ``state`` register, 2 bits): IDLE after
reset; ``start`` moves IDLE or DONE to ACTIVE; a ``stop`` fence moves ACTIVE
to DONE; an error moves ACTIVE to ERROR.

Restart.  Every accepted start (from IDLE or DONE) begins a fresh program:
the semaphores are all 0 and free, the instruction index (error register)
counts from 0, the error register reads NONE, and the ten counters are
cleared, except ``enq``, which is set to the words already waiting in the
queue (pushed while IDLE or DONE: they belong to the new program).  So at
any time ``enq - deq`` is the queue's occupancy and ``words == deq``; a
program's counters read after its end (DONE) cover exactly that program
(with ``enq`` also counting words pushed for the next one before the end).
The SRAM contents, the PE registers, the CMP maxima and the ACC scale are
kept (a program relies on its own LOAD/zero flags, as the kernel does).
A start while ACTIVE, aborting or in ERROR is ignored: ERROR is left only
through an abort (or ``rst``), so the error register stays readable until
the host acknowledges it.

Abort (soft reset, register ``abort`` 0x50, any data, any state): the device
stops issuing (no new instruction, no new AXI burst), lets the matrix
instructions in its slots finish and the DMA drain every burst already
issued (every R beat and B response owed is accepted, the W data of issued
AW bursts is sent: no dangling AXI transaction), then empties the queue,
drops the decoded and pending instructions, resets the semaphores, the
instruction index, the error register (and the DMA engine's sticky error),
sends a CMP RESET along the comparator row, and enters IDLE.  While the
abort drains, ``state`` reads ACTIVE, ``irq`` is low and writes to ``push``
and ``start`` are held (no B response) until it is over, so a host may write
abort and then its next program at once without losing a word.  The counters
are kept until the next start.

Deadlock and a program that runs dry end in ERROR with DEADLOCK or NO_STOP
(``fsa.hw.errors``: DEADLOCK_CYCLES, IDLE_CYCLES).

Program fetch (``rtl/fsa_fetch.py``, docs/architecture.md "Program fetch").
The host writes a program's byte address (``fetch_lo`` bits [31:0],
``fetch_hi`` bits [38:32]) and its length in 32-bit words (``fetch_words``),
then ``fetch_start``: a start exactly like ``start`` (same states, same fresh
program) that also puts the device in *fetch mode*: the fetch unit reads the
words over memory port 0 (AXI ID all ones, INCR bursts) into the queue as
space frees.  Words already in the queue (pushed before) run first.  The
address must be a multiple of the AXI beat size and ``[addr, addr + 4 *
words)`` inside the memory window, else the program ends at once in ERROR
FETCH_RANGE.  A read error response ends it in FETCH_RD_ERR.  Once every
word is in the queue and the program runs dry (the ``dry`` rule of
``fsa.hw.errors``), it ends at once with NO_STOP (or DEADLOCK), without
waiting IDLE_CYCLES.  While in fetch mode, ``push`` answers SLVERR (the word
is dropped).  When a fetch-mode program ends (DONE or ERROR) the fetch unit
drains its burst in flight, then the queue is emptied (words prefetched past
the stop are dropped) and fetch mode ends; until then writes to ``push``,
``start`` and ``fetch_start`` are held, as during an abort.  ``enq`` counts
the prefetched words too.  An abort drains the fetch unit's burst like the
DMA's.  The three registers keep their values across programs (a program
is re-run by writing ``fetch_start`` again).

Register map (:data:`REGS`; only address bits [7:0] are decoded)::

    offset  name        access  meaning
    0x00    push        W       push one instruction word; while the queue is full
                                the write is held if the device is ACTIVE, refused
                                with SLVERR otherwise (nothing would drain it)
    0x04    start       W       start: IDLE or DONE -> ACTIVE, a fresh program (above)
    0x08    state       R       State: 0 idle, 1 active, 2 done, 3 error
    0x0C    exec        R       execution cycles (ACTIVE)
    0x10    bubble      R       ACTIVE cycles with the matrix engine idle
    0x14    mx_active   R       matrix-engine busy cycles
    0x18    dma_active  R       DMA busy cycles
    0x1C    words       R       instruction words decoded
    0x20    mx          R       matrix instructions issued
    0x24    dma         R       DMA instructions issued
    0x28    fence       R       fences
    0x2C    enq         R       words enqueued
    0x30    deq         R       words dequeued
    0x34    error       R       [3:0] error code (fsa.hw.errors), [31:16] index of
                                the instruction that caused it
    0x38    q_free      R       free words in the instruction queue
    0x3C    identity    R       :func:`identity`
    0x40    magic       R       MAGIC, 0x46534131 ("FSA1")
    0x44    spad_rows   R       scratchpad rows
    0x48    acc_rows    R       accumulator rows
    0x4C    queue       R       instruction queue size (words)
    0x50    abort       W       abort / soft reset (any data; above)
    0x54    wait        R       after DEADLOCK: [4:0] semaphore id, [7:5] the value
                                the blocked instruction waits for, [10:8] the value
                                the semaphore holds (0 otherwise)
    0x58    scale_e     RW      softmax scale times log2(e), E-format bits: the PEs'
                                `scale` constant (reset: log2(e)/sqrt(R) in E)
    0x5C    scale_a     RW      the same in A format: the ACC's EXP_S1 factor
                                (reset: log2(e)/sqrt(R) in A)
    0x60    key_limit   RW      0..R (reset R): an ATTENTION_SCORE with `mask_keys`
                                masks the scores of keys k >= key_limit of its block
    0x64    fetch_lo    RW      program fetch: byte address bits [31:0]
    0x68    fetch_hi    RW      program fetch: byte address bits [38:32] (in [6:0])
    0x6C    fetch_words RW      program fetch: length in 32-bit words
    0x70    fetch_start W       start in fetch mode (any data; above)
    0x74    fetched     R       words the fetch unit put into the queue (this program)

Unmapped offsets, writes to read-only registers and reads of write-only ones
answer SLVERR; the fetch registers (0x64-0x6C) read back what was written
(reset: 0) and may be written in any state (they act at ``fetch_start``).

Settings (:data:`SETTINGS`: ``scale_e``, ``scale_a``, ``key_limit``): read
and write registers the host sets before a start.  Reset (``rst`` only) gives
:func:`setting_defaults` (today's constants and no key mask, so a program that
never writes them computes what it always did); start and abort keep them.
A write while the state reads ACTIVE (running, or an abort draining) is
refused with SLVERR and the register keeps its value (a running program sees
constant settings); so is a value outside :func:`setting_range` (scale bits
wider than the format, ``key_limit > R``).  For a user softmax scale ``s``
the values are ``fsa.config.scale_bits(cfg, s)``: ``s * log2(e)`` in float64
rounded (RNE) to E and to A.  A key-limit mask works like the causal mask:
the score becomes -inf and contributes exactly 0 when the query's running
max is finite; a query column whose every key so far is masked (its max is
still -inf: every key of its first key block masked) gets NaN (-inf - -inf),
so a kernel masks only blocks after a block with a valid key, or a block
keeping at least one key (key_limit >= 1).  The counters 0x0C..0x30 are 32 bits, in :data:`COUNTERS`
order.
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass

__all__ = ["State", "STATE_BITS", "COUNTERS", "COUNTER_BITS", "Reg", "REGS", "OFFSETS",
           "READ_OFFSETS", "MAGIC", "VERSION", "FMT_CODE", "ADDR_DECODE_BITS", "identity",
           "ERR_INDEX_BITS", "ERR_INDEX_LSB", "WAIT_FIELDS", "decode_wait", "SETTINGS",
           "setting_defaults", "setting_range", "check_setting",
           "FETCH_HI_BITS"]


class State(enum.IntEnum):
    """Device states (the ``state`` register)."""

    IDLE = 0
    ACTIVE = 1
    DONE = 2
    ERROR = 3


STATE_BITS = 2
#: The performance counters, in register order (0x0C, 0x10, ...).
COUNTERS = ("exec", "bubble", "mx_active", "dma_active", "words", "mx", "dma", "fence",
            "enq", "deq")
COUNTER_BITS = 32
#: The error register: code in [ERR_BITS-1:0] (fsa.hw.errors), index at [31:16].
ERR_INDEX_LSB = 16
ERR_INDEX_BITS = 16
#: the wait register: field -> (lsb, bits)
WAIT_FIELDS = {"sem_id": (0, 5), "want": (5, 3), "have": (8, 3)}
MAGIC = 0x46534131
VERSION = 1
FMT_CODE = {"fp16": 0, "bf16": 1, "fp32": 2}
#: Address bits the register block decodes (a 256-byte window).
ADDR_DECODE_BITS = 8


@dataclass(frozen=True)
class Reg:
    """One register: byte offset, name, access ("R", "W" or "RW"), meaning."""

    offset: int
    name: str
    access: str
    meaning: str


_COUNTER_MEANING = {
    "exec": "execution cycles (ACTIVE)", "bubble": "ACTIVE cycles with the matrix engine idle",
    "mx_active": "matrix-engine busy cycles", "dma_active": "DMA busy cycles",
    "words": "instruction words decoded", "mx": "matrix instructions issued",
    "dma": "DMA instructions issued", "fence": "fences", "enq": "words enqueued",
    "deq": "words dequeued"}

REGS: tuple[Reg, ...] = (
    Reg(0x00, "push", "W", "push one instruction word"),
    Reg(0x04, "start", "W", "start a fresh program (from IDLE or DONE)"),
    Reg(0x08, "state", "R", "device state (State)"),
    *(Reg(0x0C + 4 * i, c, "R", _COUNTER_MEANING[c]) for i, c in enumerate(COUNTERS)),
    Reg(0x34, "error", "R", "[3:0] error code, [31:16] instruction index"),
    Reg(0x38, "q_free", "R", "free words in the instruction queue"),
    Reg(0x3C, "identity", "R", "rows, columns, formats, exp2 pieces, ports, version"),
    Reg(0x40, "magic", "R", "0x46534131 (\"FSA1\")"),
    Reg(0x44, "spad_rows", "R", "scratchpad rows"),
    Reg(0x48, "acc_rows", "R", "accumulator rows"),
    Reg(0x4C, "queue", "R", "instruction queue size (words)"),
    Reg(0x50, "abort", "W", "abort / soft reset: drain, empty the queue, IDLE"),
    Reg(0x54, "wait", "R", "DEADLOCK: [4:0] semaphore, [7:5] value waited for, [10:8] its value"),
    Reg(0x58, "scale_e", "RW", "softmax scale * log2(e), E bits (the PEs' scale constant)"),
    Reg(0x5C, "scale_a", "RW", "softmax scale * log2(e), A bits (the ACC's EXP_S1 factor)"),
    Reg(0x60, "key_limit", "RW", "0..R: mask_keys masks the keys k >= key_limit of a block"),
    # program fetch (rtl/fsa_fetch.py)
    Reg(0x64, "fetch_lo", "RW", "program fetch: byte address bits [31:0]"),
    Reg(0x68, "fetch_hi", "RW", "program fetch: byte address bits [38:32]"),
    Reg(0x6C, "fetch_words", "RW", "program fetch: length in 32-bit words"),
    Reg(0x70, "fetch_start", "W", "start a fresh program in fetch mode"),
    Reg(0x74, "fetched", "R", "words the fetch unit put into the queue (this program)"),
)
#: The host settings (read/write registers kept across start and abort).
SETTINGS: tuple[str, ...] = ("scale_e", "scale_a", "key_limit")
#: name -> offset
OFFSETS: dict[str, int] = {r.name: r.offset for r in REGS}
#: offsets of the readable registers
READ_OFFSETS: tuple[int, ...] = tuple(r.offset for r in REGS if "R" in r.access)
#: fetch_hi's width: the ISA's 39-bit addresses
FETCH_HI_BITS = 7


def identity(cfg) -> int:
    """The identity register of a config: [7:0] rows-1, [15:8] cols-1,
    [17:16] E format, [19:18] A format (FMT_CODE), [23:20] log2(exp2 pieces),
    [27:24] memory ports, [31:28] VERSION."""
    return (((cfg.sa_rows - 1) & 0xFF) | (((cfg.sa_cols - 1) & 0xFF) << 8)
            | (FMT_CODE[cfg.e_type] << 16) | (FMT_CODE[cfg.a_type] << 18)
            | ((cfg.exp2_pieces.bit_length() - 1) << 20) | ((cfg.mem_ports & 0xF) << 24)
            | (VERSION << 28))


def decode_wait(word: int) -> dict:
    """The wait register's fields: {"sem_id", "want", "have"}."""
    return {k: (word >> lo) & ((1 << n) - 1) for k, (lo, n) in WAIT_FIELDS.items()}


def setting_defaults(cfg) -> dict[str, int]:
    """The settings after ``rst``: the scale log2(e)/sqrt(R) in E and in A
    (``cfg.attention_scale_bits``) and ``key_limit = R`` (no key masked)."""
    return {"scale_e": int(cfg.attention_scale_bits(cfg.e_type)),
            "scale_a": int(cfg.attention_scale_bits(cfg.a_type)),
            "key_limit": int(cfg.sa_rows)}


def setting_range(cfg, name: str) -> tuple[int, int]:
    """(min, max) value the register `name` accepts: any bit pattern of its
    format for the scales, 0..R for key_limit."""
    if name == "scale_e":
        return 0, (1 << cfg.e_fmt.width) - 1
    if name == "scale_a":
        return 0, (1 << cfg.a_fmt.width) - 1
    if name == "key_limit":
        return 0, int(cfg.sa_rows)
    raise KeyError(f"{name!r} is not a setting; settings: {', '.join(SETTINGS)}")


def check_setting(cfg, name: str, value) -> int:
    """`value` as an int if register `name` accepts it (what the device
    writes without SLVERR), else ValueError naming the register and range."""
    lo, hi = setting_range(cfg, name)
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"setting {name}: must be an integer in {lo}..{hi}, got {value!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"setting {name}: must be in {lo}..{hi}, got {v}")
    return v
