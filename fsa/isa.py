"""The FSA instruction set, bit-compatible with the reference encoding.

Instructions are frozen dataclasses (:class:`Fence`, :class:`Matrix`,
:class:`Dma`) whose fields are range-checked at construction: a value that
does not fit its field raises :class:`ValueError` naming the field, its range
and the value; nothing is ever truncated. :func:`encode` turns a list of
instructions into 32-bit words, :func:`decode` reverses it strictly,
:func:`disassemble` prints a stream, :func:`to_bytes` / :func:`from_bytes`
convert to and from the reference simulator's ``inst.bin`` format
(little-endian 32-bit words).

Bit layout (the field table is :mod:`fsa.hw.isa`, which this module encodes
and decodes with; docs/architecture.md section 8). An instruction of ``n`` words is one
``32*n``-bit integer ``B``, sent least significant word first: word ``k`` is
``B[32k+31 : 32k]``. Bits 31..29 of word 0 give the type: 0 fence (1 word),
1 matrix (3 words), 2 DMA (4 words).

Semaphore header fields (word 0 of matrix and DMA)::

    [28:24] sem_id  [23] acquire_valid  [22:20] acquire_value
    [19] release_valid  [18:16] release_value

Fence (1 word)::

    word 0: [31:29]=0 [28] mx [27] dma [26] stop          reserved [25:0]

Matrix (3 words)::

    word 0: [31:29]=1 semaphore [15:11] func [10] wait_prev_acc
            [9] reset_max [8] early_release (UD only)             reserved [7:0]
    word 1: [31:12] spad_addr [11:7] spad_stride (signed)
            [6] rev_input [5] rev_output [4] delay_output         reserved [3:0]
    word 2: [31:12] acc_addr [11:7] acc_stride (signed)
            [6] zero [5] causal [4] mask_keys                     reserved [3:0]

DMA (4 words)::

    word 0: [31:29]=2 semaphore [15:12] func [11:3] repeat        reserved [2:0]
    word 1: [31:12] sram_addr [11:7] sram_stride (signed) [6] is_accum
            [5:0] mem_stride[20:15]
    words 2-3 (the 64-bit memory field M, word 2 = M[31:0], word 3 = M[63:32]):
            M[63:25] mem_addr (39 bits)  M[24:10] mem_stride[14:0]
            M[9:0] size (bytes per row)
    i.e. word 2: [31:25] mem_addr[6:0] [24:10] mem_stride[14:0] [9:0] size
         word 3: [31:0] mem_addr[38:7]

Field ranges: semaphore id 0..31, acquire/release values 0..7, spad/acc/sram
row addresses 0..2^20-1, spad/acc/sram strides -16..15 (5-bit two's
complement), DMA repeat 1..511 (9 bits; 0 rows is rejected), memory address
0..2^39-1, memory stride -2^20..2^20-1 (21-bit two's complement, bytes),
size 1..1023 (10 bits; 0 bytes per row is rejected).

Reserved bits: the bits listed as "reserved" above (fence word 0 [25:0],
matrix word 0 [7:0], word 1 [3:0], word 2 [3:0], DMA word 0 [2:0]; the DMA's
words 1-3 have none) are always encoded as 0, and :func:`decode` rejects a
stream in which any of them is 1, so ``encode(decode(w)) == w`` holds for
every stream ``decode`` accepts. Function codes other than those of
:class:`MxFunc` (5-bit field) and :class:`DmaFunc` (4-bit field) are rejected
as well, as are DMA instructions with ``repeat == 0`` or ``size == 0``.
``decode`` is stricter than the hardware: the device's decoder
(:func:`decode_device`, rtl/fsa_decode.py) ignores reserved bits and
completes a DMA of 0 rows or bytes without moving anything; it stops with
ILLEGAL_TYPE / ILLEGAL_FUNC only on an unknown type or function code.
``fsa exec`` runs such streams as the device does, with a warning. The matrix codes 5..10
(LOAD_Q, KSTEP, STEP, PVSTEP, NORM_SCALE, NORM: the UD dataflow, docs/ud.md) are part of
:class:`MxFunc`, so these config-free tools accept them; a device (and the
golden model) whose config is not ``dataflow = "ud"`` rejects them with
ILLEGAL_FUNC.

Example::

    >>> from fsa.isa import Matrix, MxFunc, Fence, encode, decode
    >>> w = encode([Matrix(MxFunc.ATTENTION_SCORE, spad_addr=8), Fence(stop=True)])
    >>> [hex(x) for x in w]
    ['0x20000800', '0x8000', '0x0', '0x4000000']
    >>> decode(w)[1]
    Fence(mx=False, dma=False, stop=True)
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, fields
from typing import Iterable, Sequence, Union

from fsa.hw import isa as hwisa

__all__ = [
    "MxFunc", "DmaFunc", "InstrType", "Fence", "Matrix", "Dma", "Instruction",
    "encode", "decode", "disassemble", "to_bytes", "from_bytes", "words_of",
    "RESERVED_MASKS", "SIZES", "IllegalInstruction", "decode_device",
]


def _enum(name: str, names, doc: str) -> type[enum.IntEnum]:
    """An IntEnum of `names` coded by position (a table of fsa.hw.isa)."""
    cls = enum.IntEnum(name, [(n, i) for i, n in enumerate(names)], module=__name__)
    cls.__doc__ = doc
    return cls


#: Instruction type: bits 31..29 of the first word (fsa.hw.isa.TYPES).
InstrType = _enum("InstrType", sorted(hwisa.TYPES, key=hwisa.TYPES.get),
                  "Instruction type: bits 31..29 of the first word.")
#: Matrix function codes (word 0 bits [15:11]), built from the function table
#: fsa.hw.isa.MX_FUNC_TABLE: LOAD_STATIONARY 0 .. ATTENTION_LSE_NORM 4, then
#: the UD dataflow's LOAD_Q 5 .. NORM 10 (docs/ud.md), rejected with
#: ILLEGAL_FUNC by a device (and the golden model) of another dataflow.
MxFunc = _enum("MxFunc", hwisa.ALL_MX_FUNCS, "Matrix function codes (word 0 bits [15:11]).")
#: DMA function codes (word 0 bits [15:12]): LOAD = 0 memory -> scratchpad (or
#: accumulator with is_accum), STORE = 1 accumulator -> memory.
DmaFunc = _enum("DmaFunc", hwisa.DMA_FUNCS, "DMA function codes (word 0 bits [15:12]).")


#: Words per instruction type (fsa.hw.isa.WORDS).
SIZES = {t: hwisa.WORDS[t.name] for t in InstrType}

#: Per type, the mask of reserved bits of each word (must be 0), computed
#: from the field table (fsa.hw.isa.RESERVED_MASKS).
RESERVED_MASKS = {t: hwisa.RESERVED_MASKS[t.name] for t in InstrType}

# --------------------------------------------------------------------------
# Field checking
# --------------------------------------------------------------------------
_KIND = {"Fence": "FENCE", "Matrix": "MATRIX", "Dma": "DMA"}
#: class name -> {field: (min, max)} of the numeric fields (flags and func
#: are checked by type)
_RANGES = {cls: {f.name: f.range for f in hwisa.FIELDS[kind] if f.width > 1 and f.name != "func"}
           for cls, kind in _KIND.items()}
_ZERO_HINT = {"size": " (a row of 0 bytes is meaningless)",
              "repeat": " (a DMA of 0 rows is meaningless)"}


def _check(obj: object) -> None:
    """Validate and normalise every field of an instruction in place."""
    cls = type(obj).__name__
    ranges = _RANGES[cls]
    for f in fields(obj):
        name, v = f.name, getattr(obj, f.name)
        if name == "func":
            enum_cls = MxFunc if cls == "Matrix" else DmaFunc
            try:
                code = operator.index(v)
            except TypeError:
                raise ValueError(f"{cls}.func must be a {enum_cls.__name__} or its integer "
                                 f"code, got {v!r}") from None
            try:
                object.__setattr__(obj, name, enum_cls(code))
            except ValueError:
                valid = ", ".join(f"{m.value} {m.name}" for m in enum_cls)
                raise ValueError(f"{cls}.func: unknown function code {code}; valid: {valid}") from None
        elif f.type in ("bool", bool):
            if isinstance(v, bool):
                continue
            try:
                iv = operator.index(v)
            except TypeError:
                iv = None
            if iv not in (0, 1):
                raise ValueError(f"{cls}.{name} is a 1-bit flag: must be a bool (or 0/1), got {v!r}")
            object.__setattr__(obj, name, bool(iv))
        else:
            lo, hi = ranges[name]
            if isinstance(v, bool):
                raise ValueError(f"{cls}.{name} must be an integer in {lo}..{hi}, got {v!r}")
            try:
                iv = operator.index(v)
            except TypeError:
                raise ValueError(f"{cls}.{name} must be an integer in {lo}..{hi}, "
                                 f"got {v!r}") from None
            if not lo <= iv <= hi:
                hint = _ZERO_HINT.get(name, "") if iv == 0 else ""
                raise ValueError(f"{cls}.{name} must be in {lo}..{hi}, got {iv}{hint}")
            object.__setattr__(obj, name, iv)


# --------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Fence:
    """Wait until the named engines are idle; `stop` ends the program.

    Attributes:
        mx: wait for the matrix engine (word 0 bit 28).
        dma: wait for the DMA engine (bit 27).
        stop: end the program, state -> done (bit 26).

    Raises:
        ValueError: a flag that is not a bool or 0/1.
    """

    mx: bool = False
    dma: bool = False
    stop: bool = False

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class Matrix:
    """One matrix-engine instruction (3 words).

    Attributes:
        func: :class:`MxFunc` (or its code: 0..4, and 5..10 for UD hardware).
        sem_id, acquire_valid, acquire_value, release_valid, release_value:
            semaphore header (id 0..31, values 0..7).
        wait_prev_acc: wait until both instruction slots are idle.
        reset_max: UD KSTEP/STEP only: reset the bottom comparator row's
            maxima before the K part (the first key block of a query block).
        early_release: UD functions only: the semaphore release takes effect
            after the instruction's last scratchpad read instead of after its
            last action (its buffers are free; its ACC writes go on).
        spad_addr: first scratchpad row (0..2^20-1).
        spad_stride: scratchpad row stride, -16..15.
        rev_input, rev_output, delay_output: input-delayer flags.
        acc_addr: first accumulator row (0..2^20-1).
        acc_stride: accumulator row stride, -16..15.
        zero: read 0 instead of the accumulator SRAM (first key block).
        causal: apply the causal mask (diagonal score block).
        mask_keys: ATTENTION_SCORE: mask the keys whose index within the
            block is >= the ``key_limit`` register (fsa.hw.regs; padded keys),
            together with the causal mask when both are set.

    Raises:
        ValueError: a field out of its range (named in the message) or an
            unknown function code.
    """

    func: MxFunc = MxFunc.LOAD_STATIONARY
    sem_id: int = 0
    acquire_valid: bool = False
    acquire_value: int = 0
    release_valid: bool = False
    release_value: int = 0
    wait_prev_acc: bool = False
    reset_max: bool = False
    early_release: bool = False
    spad_addr: int = 0
    spad_stride: int = 0
    rev_input: bool = False
    rev_output: bool = False
    delay_output: bool = False
    acc_addr: int = 0
    acc_stride: int = 0
    zero: bool = False
    causal: bool = False
    mask_keys: bool = False

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class Dma:
    """One DMA instruction (4 words).

    Attributes:
        func: :class:`DmaFunc` (LOAD = 0 memory -> SRAM, STORE = 1
            accumulator -> memory) or its code.
        sem_id, acquire_valid, acquire_value, release_valid, release_value:
            semaphore header.
        repeat: number of rows, 1..511.
        sram_addr: first SRAM row (0..2^20-1).
        sram_stride: SRAM row stride, -16..15.
        is_accum: the SRAM side is the accumulator (else the scratchpad).
        mem_addr: byte address of the first row, 0..2^39-1.
        mem_stride: byte stride between rows, -2^20..2^20-1.
        size: bytes per row, 1..1023.

    Raises:
        ValueError: a field out of its range (named in the message) or an
            unknown function code.
    """

    func: DmaFunc = DmaFunc.LOAD
    sem_id: int = 0
    acquire_valid: bool = False
    acquire_value: int = 0
    release_valid: bool = False
    release_value: int = 0
    repeat: int = 1
    sram_addr: int = 0
    sram_stride: int = 0
    is_accum: bool = False
    mem_addr: int = 0
    mem_stride: int = 0
    size: int = 1

    def __post_init__(self) -> None:
        _check(self)


Instruction = Union[Fence, Matrix, Dma]

# --------------------------------------------------------------------------
# Bit layout: the field table of fsa.hw.isa
# --------------------------------------------------------------------------
_TYPE_OF = {Fence: InstrType.FENCE, Matrix: InstrType.MATRIX, Dma: InstrType.DMA}
_CLASS_OF = {v: k for k, v in _TYPE_OF.items()}
_LAYOUT = {cls: hwisa.FIELDS[t.name] for cls, t in _TYPE_OF.items()}


def words_of(ins: Instruction) -> list[int]:
    """The 32-bit words of one instruction, least significant word first.

    Raises:
        TypeError: `ins` is not a Fence, Matrix or Dma.
    """
    if type(ins) not in _TYPE_OF:
        raise TypeError(f"not an instruction: {ins!r}")
    t = _TYPE_OF[type(ins)]
    words = [0] * SIZES[t]
    hwisa.TYPE_FIELD.insert(words, int(t))
    for f in _LAYOUT[type(ins)]:
        f.insert(words, int(getattr(ins, f.name)))
    return words


def encode(instrs: Iterable[Instruction]) -> list[int]:
    """Encode instructions into 32-bit words.

    Args:
        instrs: Fence / Matrix / Dma instances (already range-checked).

    Returns:
        The words, least significant word of each instruction first (fence
        1 word, matrix 3, DMA 4), concatenated in order.

    Raises:
        TypeError: an element is not an instruction.
    """
    out: list[int] = []
    for ins in instrs:
        out.extend(words_of(ins))
    return out


def decode(words: Sequence[int]) -> list[Instruction]:
    """Decode a stream of 32-bit words (strictly).

    Args:
        words: 32-bit unsigned integers, as produced by :func:`encode`.

    Returns:
        The instructions, in order.

    Raises:
        ValueError: a word outside 0..2^32-1; an unknown type (bits 31..29 of
            an instruction's first word not 0, 1 or 2); an unknown function
            code; a reserved bit set; a stream that ends inside an
            instruction; a field value the instruction rejects (DMA repeat or
            size 0). The message names the word index.
    """
    ws = list(words)
    for i, w in enumerate(ws):
        try:
            iw = operator.index(w)
        except TypeError:
            raise ValueError(f"word {i}: not an integer: {w!r}") from None
        if not 0 <= iw <= 0xFFFF_FFFF:
            raise ValueError(f"word {i}: 0x{iw:x} does not fit in 32 bits" if iw >= 0
                             else f"word {i}: negative value {iw}")
        ws[i] = iw
    out: list[Instruction] = []
    i = 0
    while i < len(ws):
        t = hwisa.TYPE_FIELD.extract(ws[i:i + 1])
        try:
            typ = InstrType(t)
        except ValueError:
            raise ValueError(f"word {i} (0x{ws[i]:08x}): unknown instruction type {t} "
                             f"in bits 31..29 (0 fence, 1 matrix, 2 DMA)") from None
        n = SIZES[typ]
        if i + n > len(ws):
            raise ValueError(f"word {i}: truncated {typ.name.lower()} instruction: needs {n} "
                             f"words, only {len(ws) - i} left in the stream")
        chunk = ws[i:i + n]
        for k, (w, mask) in enumerate(zip(chunk, RESERVED_MASKS[typ])):
            if w & mask:
                raise ValueError(f"word {i + k} (0x{w:08x}): reserved bits set in word {k} of a "
                                 f"{typ.name.lower()} instruction: 0x{w & mask:08x} "
                                 f"(reserved mask 0x{mask:08x} must be 0)")
        cls = _CLASS_OF[typ]
        kw = {f.name: f.extract(chunk) for f in _LAYOUT[cls]}
        for f in fields(cls):
            if f.type in ("bool", bool):
                kw[f.name] = bool(kw[f.name])
        if "func" in kw:
            enum_cls = MxFunc if cls is Matrix else DmaFunc
            if kw["func"] not in enum_cls._value2member_map_:
                valid = ", ".join(f"{m.value} {m.name}" for m in enum_cls)
                raise ValueError(f"word {i} (0x{ws[i]:08x}): unknown {typ.name.lower()} "
                                 f"function code {kw['func']}; valid: {valid}")
        try:
            out.append(cls(**kw))
        except ValueError as e:
            raise ValueError(f"word {i}: invalid {typ.name.lower()} instruction: {e}") from None
        i += n
    return out


def _fmt_fields(ins: Instruction) -> str:
    parts = []
    defaults = type(ins)()
    for f in fields(ins):
        if f.name == "func":
            continue
        v = getattr(ins, f.name)
        if isinstance(v, bool):
            if v:
                parts.append(f.name)
        elif type(ins) is Dma and f.name in ("repeat", "size"):
            parts.append(f"{f.name}={v}")           # always shown
        elif v != getattr(defaults, f.name):
            parts.append(f"{f.name}=0x{v:x}" if f.name == "mem_addr" else f"{f.name}={v}")
    return " ".join(parts)


def disassemble(words: Sequence[int]) -> str:
    """Human-readable listing of an instruction stream.

    One line per instruction: its word offset (4 hex digits), the type and
    function (``FENCE``, ``MATRIX ATTENTION_SCORE``, ``DMA LOAD`` ...), then
    the fields that differ from their default (flags by name, numbers as
    ``name=value``; a DMA always shows repeat and size).

    Raises:
        ValueError: as :func:`decode`.
    """
    lines = []
    off = 0
    for ins in decode(words):
        typ = _TYPE_OF[type(ins)]
        head = typ.name if typ is InstrType.FENCE else f"{typ.name} {ins.func.name}"
        rest = _fmt_fields(ins)
        lines.append(f"{off:04x}: {head}" + (f" {rest}" if rest else ""))
        off += SIZES[typ]
    return "\n".join(lines)


def to_bytes(words: Sequence[int]) -> bytes:
    """Little-endian 32-bit words (the reference simulator's inst.bin).

    Raises:
        ValueError: a word outside 0..2^32-1.
    """
    out = bytearray()
    for i, w in enumerate(words):
        w = operator.index(w)
        if not 0 <= w <= 0xFFFF_FFFF:
            raise ValueError(f"word {i}: {w} does not fit in 32 bits")
        out += w.to_bytes(4, "little")
    return bytes(out)


def from_bytes(b: "bytes | bytearray | memoryview") -> list[int]:
    """Split an inst.bin image into 32-bit little-endian words.

    Raises:
        ValueError: the length is not a multiple of 4.
    """
    b = bytes(b)
    if len(b) % 4:
        raise ValueError(f"instruction image length {len(b)} bytes is not a multiple of 4 "
                         f"({len(b) % 4} trailing bytes)")
    return [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b), 4)]


class IllegalInstruction(ValueError):
    """An instruction the device rejects while running: `code` is the
    device's error name (``ILLEGAL_TYPE`` or ``ILLEGAL_FUNC``,
    ``fsa/hw/errors.py``)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def decode_device(words: Sequence[int], start: int) -> "tuple[Instruction, int] | None":
    """Decode the one instruction at word `start` as the device's decoder
    does (``rtl/fsa_decode.py``), for models that run a word stream
    instruction by instruction.

    Unlike :func:`decode` (strict, for tools), this follows the hardware:
    reserved bits are ignored, a DMA with ``repeat`` or ``size`` 0 is legal
    and moves nothing (the returned :class:`Dma` then carries that 0, outside
    the dataclass's documented range), and a stream that ends inside an
    instruction is not an error (the device waits for its remaining words).

    Returns:
        ``(instruction, words it takes)``, or None when the stream ends at
        or inside the instruction.

    Raises:
        IllegalInstruction: an unknown type in word 0 (``ILLEGAL_TYPE``,
            reported as soon as word 0 is seen) or, for a complete
            instruction, an unknown function code (``ILLEGAL_FUNC``).
    """
    if start >= len(words):
        return None
    w0 = int(words[start]) & 0xFFFF_FFFF
    t = hwisa.TYPE_FIELD.extract([w0])
    try:
        typ = InstrType(t)
    except ValueError:
        raise IllegalInstruction("ILLEGAL_TYPE", f"word {start} (0x{w0:08x}): unknown "
                                 f"instruction type {t}") from None
    n = SIZES[typ]
    if start + n > len(words):
        return None
    chunk = [(int(w) & 0xFFFF_FFFF) & ~mask for w, mask in
             zip(words[start:start + n], RESERVED_MASKS[typ])]
    cls = _CLASS_OF[typ]
    kw = {f.name: f.extract(chunk) for f in _LAYOUT[cls]}
    if "func" in kw:
        enum_cls = MxFunc if cls is Matrix else DmaFunc
        if kw["func"] not in enum_cls._value2member_map_:
            raise IllegalInstruction("ILLEGAL_FUNC", f"word {start} (0x{w0:08x}): unknown "
                                     f"{typ.name.lower()} function code {kw['func']}")
    idle = {k: kw[k] for k in ("repeat", "size") if cls is Dma and kw[k] == 0}
    ins = cls(**{**kw, **{k: 1 for k in idle}})
    for k, v in idle.items():
        object.__setattr__(ins, k, v)          # the device's no-op DMA
    return ins, n
