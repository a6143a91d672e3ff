"""ISA layout contract: the bit position, width and range of every
instruction field, per instruction type (bit-compatible with the reference
encoding).

An instruction is 1 (fence), 3 (matrix) or 4 (DMA) 32-bit words, sent least
significant word first.  Bits 31..29 of word 0 give the type
(:data:`TYPE_FIELD`).  Each :class:`Field` is made of one or more *parts*
``(word, hi, lo)``, most significant part first; a value's bits are the
concatenation of its parts.  Two fields are split that way: the DMA's
``mem_addr`` (word 3 [31:0] then word 2 [31:25], 39 bits) and ``mem_stride``
(word 1 [5:0] then word 2 [24:10], 21 bits).

==============  ==================  ==============  ==========================
type            field               word [bits]     range
==============  ==================  ==============  ==========================
all             type                0 [31:29]       0 fence, 1 matrix, 2 DMA
fence           mx                  0 [28]          flag: wait for the matrix engine
                dma                 0 [27]          flag: wait for the DMA engine
                stop                0 [26]          flag: end of program
matrix, DMA     sem_id              0 [28:24]       0..31
                acquire_valid       0 [23]          flag
                acquire_value       0 [22:20]       0..7
                release_valid       0 [19]          flag
                release_value       0 [18:16]       0..7
matrix          func                0 [15:11]       0..4 (fsa.isa.MxFunc); 5..10 on UD hardware
                wait_prev_acc       0 [10]          flag
                reset_max           0 [9]           flag: UD KSTEP/STEP, reset the bottom CMP row's maxima
                early_release       0 [8]           flag: UD only, release after the last scratchpad read
                spad_addr           1 [31:12]       0..2^20-1
                spad_stride         1 [11:7]        -16..15 (two's complement)
                rev_input           1 [6]           flag
                rev_output          1 [5]           flag
                delay_output        1 [4]           flag
                acc_addr            2 [31:12]       0..2^20-1
                acc_stride          2 [11:7]        -16..15
                zero                2 [6]           flag
                causal              2 [5]           flag
                mask_keys           2 [4]           flag: key-limit mask (ATTENTION_SCORE)
DMA             func                0 [15:12]       0..1 (fsa.isa.DmaFunc)
                repeat              0 [11:3]        1..511 rows
                sram_addr           1 [31:12]       0..2^20-1
                sram_stride         1 [11:7]        -16..15
                is_accum            1 [6]           flag
                mem_stride          1 [5:0], 2 [24:10]   -2^20..2^20-1 bytes
                mem_addr            3 [31:0], 2 [31:25]  0..2^39-1 bytes
                size                2 [9:0]         1..1023 bytes per row
==============  ==================  ==============  ==========================

Every bit no field covers is reserved: encoded as 0, and a stream with a
reserved bit set is rejected (:data:`RESERVED_MASKS`, computed from the
table).  The semaphores are :data:`SEM_IDS` registers of
:data:`SEM_VALUE_BITS` bits (the widths of ``sem_id`` and the values).

The matrix functions are one table, :data:`MX_FUNC_TABLE` (name and
dataflow by ISA code).  The field ``func`` accepts the reference codes 0..4
(:data:`MX_FUNCS`); a
device built with ``dataflow = "ud"`` also accepts :data:`UD_MX_FUNCS`
(codes 5..10, docs/ud.md), and every other device rejects them
(ILLEGAL_FUNC): :func:`mx_func_max` is the largest code a configuration's
decoder accepts.  ``reset_max`` and ``early_release`` are meaningful only to
the UD functions (``reset_max``: the K part's bottom-row RESET in KSTEP and
STEP; ``early_release``: the semaphore release takes effect the cycle after
the instruction's last scratchpad read, :attr:`fsa.plan.Plan.read_release`,
instead of after its last action); the reference functions ignore them.

``mask_keys`` (ATTENTION_SCORE): mask (to -inf, like ``causal``) every score
whose key index within the block (the k-th key row the instruction reads) is
``>= key_limit``, the run-time register of ``fsa.hw.regs``; combined with
the causal mask when both are set.  Other functions ignore it.

``fsa/isa.py`` encodes and decodes with this table; the hardware decoder
(``rtl/fsa_decode.py``, ``rtl/fsa_dispatch.py``) slices the words with it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Field", "TYPE_FIELD", "TYPES", "WORDS", "FIELDS", "RESERVED_MASKS", "field",
           "SEM_IDS", "SEM_VALUE_BITS", "MX_FUNC_TABLE", "ALL_MX_FUNCS", "MX_FUNCS", "DMA_FUNCS",
           "UD_MX_FUNCS", "mx_funcs", "mx_func_max", "UD_ONLY_FIELDS"]


@dataclass(frozen=True)
class Field:
    """One instruction field.

    Attributes:
        name: the field name (that of the :mod:`fsa.isa` dataclass attribute).
        parts: ``(word, hi, lo)`` bit ranges, most significant part first.
        signed: two's complement.
        lo_val, hi_val: the accepted values (a flag is 0..1).
    """

    name: str
    parts: tuple[tuple[int, int, int], ...]
    signed: bool = False
    lo_val: int = 0
    hi_val: "int | None" = None

    @property
    def width(self) -> int:
        return sum(hi - lo + 1 for _, hi, lo in self.parts)

    @property
    def range(self) -> tuple[int, int]:
        """(min, max) accepted value."""
        if self.signed:
            return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1
        hi = (1 << self.width) - 1 if self.hi_val is None else self.hi_val
        return self.lo_val, hi

    @property
    def word(self) -> int:
        """Word of a single-part field."""
        assert len(self.parts) == 1, f"{self.name} is split over words"
        return self.parts[0][0]

    @property
    def hi(self) -> int:
        """Most significant bit (in its word) of a single-part field."""
        assert len(self.parts) == 1, f"{self.name} is split over words"
        return self.parts[0][1]

    @property
    def lo(self) -> int:
        """Least significant bit (in its word) of a single-part field."""
        assert len(self.parts) == 1, f"{self.name} is split over words"
        return self.parts[0][2]

    def insert(self, words: list[int], value: int) -> None:
        """Put `value` (range-checked by the caller) into `words` in place."""
        u = value & ((1 << self.width) - 1)
        shift = self.width
        for w, hi, lo in self.parts:
            n = hi - lo + 1
            shift -= n
            words[w] |= ((u >> shift) & ((1 << n) - 1)) << lo

    def extract(self, words) -> int:
        """The field's value in `words` (sign-extended if signed)."""
        u = 0
        for w, hi, lo in self.parts:
            n = hi - lo + 1
            u = (u << n) | ((words[w] >> lo) & ((1 << n) - 1))
        if self.signed and u >> (self.width - 1):
            u -= 1 << self.width
        return u


def _f(name: str, word: int, hi: int, lo: "int | None" = None, **kw) -> Field:
    return Field(name, ((word, hi, hi if lo is None else lo),), **kw)


#: Bits 31..29 of word 0: the instruction type.
TYPE_FIELD = _f("type", 0, 31, 29)
#: Type codes.
TYPES = {"FENCE": 0, "MATRIX": 1, "DMA": 2}
#: Words per instruction type.
WORDS = {"FENCE": 1, "MATRIX": 3, "DMA": 4}
#: The matrix function table (word 0 [15:11]): every function, indexed by
#: its ISA code, with the dataflow whose devices accept it.  The enum
#: ``fsa.isa.MxFunc``, the plan functions (``fsa.plan``) and the decoder's
#: largest code (:func:`mx_func_max`) are all built from it.
MX_FUNC_TABLE: tuple[tuple[str, str], ...] = (
    ("LOAD_STATIONARY", "reference"),
    ("ATTENTION_SCORE", "reference"),
    ("ATTENTION_VALUE", "reference"),
    ("ATTENTION_LSE_NORM_SCALE", "reference"),
    ("ATTENTION_LSE_NORM", "reference"),
    # the UD dataflow's (docs/ud.md): accepted only with ``dataflow = "ud"``
    ("LOAD_Q", "ud"),
    ("KSTEP", "ud"),
    ("STEP", "ud"),
    ("PVSTEP", "ud"),
    ("NORM_SCALE", "ud"),
    ("NORM", "ud"),
)
#: Every matrix function name, indexed by ISA code.
ALL_MX_FUNCS = tuple(name for name, _ in MX_FUNC_TABLE)
#: The reference functions (codes 0..4), accepted by every device.
MX_FUNCS = tuple(name for name, df in MX_FUNC_TABLE if df == "reference")
#: The UD dataflow's functions (codes 5..10, in this order): accepted only by
#: a device built with ``dataflow = "ud"``.
UD_MX_FUNCS = tuple(name for name, df in MX_FUNC_TABLE if df == "ud")
#: DMA function codes (word 0 [15:12]).
DMA_FUNCS = ("LOAD", "STORE")


#: Matrix fields only the UD functions use: a device without UD does not read
#: them (their bits behave as reserved there).
UD_ONLY_FIELDS = ("reset_max", "early_release")


def mx_funcs(dataflow: str = "reference") -> tuple[str, ...]:
    """The matrix functions a device with this dataflow accepts, indexed by
    ISA code (a prefix of :data:`ALL_MX_FUNCS`)."""
    names = tuple(name for name, df in MX_FUNC_TABLE if df in ("reference", dataflow))
    assert names == ALL_MX_FUNCS[:len(names)], "a dataflow's functions must be a code prefix"
    return names


def mx_func_max(dataflow: str = "reference") -> int:
    """The largest matrix function code the decoder of a device with this
    dataflow accepts (4 reference, 10 UD)."""
    return len(mx_funcs(dataflow)) - 1

_SEM = (_f("sem_id", 0, 28, 24), _f("acquire_valid", 0, 23), _f("acquire_value", 0, 22, 20),
        _f("release_valid", 0, 19), _f("release_value", 0, 18, 16))

#: Per type, its fields (the type field itself excluded).
FIELDS: dict[str, tuple[Field, ...]] = {
    "FENCE": (_f("mx", 0, 28), _f("dma", 0, 27), _f("stop", 0, 26)),
    "MATRIX": _SEM + (
        _f("func", 0, 15, 11, hi_val=len(MX_FUNCS) - 1), _f("wait_prev_acc", 0, 10),
        _f("reset_max", 0, 9), _f("early_release", 0, 8),
        _f("spad_addr", 1, 31, 12), _f("spad_stride", 1, 11, 7, signed=True),
        _f("rev_input", 1, 6), _f("rev_output", 1, 5), _f("delay_output", 1, 4),
        _f("acc_addr", 2, 31, 12), _f("acc_stride", 2, 11, 7, signed=True),
        _f("zero", 2, 6), _f("causal", 2, 5), _f("mask_keys", 2, 4)),
    "DMA": _SEM + (
        _f("func", 0, 15, 12, hi_val=len(DMA_FUNCS) - 1), _f("repeat", 0, 11, 3, lo_val=1),
        _f("sram_addr", 1, 31, 12), _f("sram_stride", 1, 11, 7, signed=True),
        _f("is_accum", 1, 6),
        Field("mem_stride", ((1, 5, 0), (2, 24, 10)), signed=True),
        Field("mem_addr", ((3, 31, 0), (2, 31, 25))),
        _f("size", 2, 9, 0, lo_val=1)),
}


def field(kind: str, name: str) -> Field:
    """The field `name` of instruction type `kind` ("FENCE", "MATRIX", "DMA")."""
    for f in FIELDS[kind]:
        if f.name == name:
            return f
    raise KeyError(f"{kind} has no field {name!r}")


def _reserved(kind: str) -> tuple[int, ...]:
    used = [0] * WORDS[kind]
    for f in (TYPE_FIELD,) + FIELDS[kind]:
        for w, hi, lo in f.parts:
            used[w] |= ((1 << (hi - lo + 1)) - 1) << lo
    return tuple(~u & 0xFFFF_FFFF for u in used)


#: Per type, the mask of reserved bits of each word (they must be 0).
RESERVED_MASKS: dict[str, tuple[int, ...]] = {k: _reserved(k) for k in WORDS}

#: Semaphore registers (ids 0..SEM_IDS-1) and the bits of their values.
SEM_IDS = 1 << field("MATRIX", "sem_id").width
SEM_VALUE_BITS = field("MATRIX", "acquire_value").width
