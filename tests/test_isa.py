"""The instruction set (fsa.isa): bit layout, range checks, strict decoding.

The expected bit positions here are written independently of fsa.isa, from
docs/architecture.md section 8 (the DOC table below), and a table of encodings
computed by hand checks the whole thing end to end.
"""
from __future__ import annotations

import dataclasses
import random
import zlib

import pytest

from fsa import isa
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc, decode, encode

# --------------------------------------------------------------------------
# Field positions from docs/architecture.md section 8, written out independently.
# Each field: list of segments (word, msb, lsb), most significant part first;
# signed fields are two's complement over the total width.
# --------------------------------------------------------------------------
SEM = {
    "sem_id": [(0, 28, 24)], "acquire_valid": [(0, 23, 23)], "acquire_value": [(0, 22, 20)],
    "release_valid": [(0, 19, 19)], "release_value": [(0, 18, 16)],
}
DOC = {
    Fence: {"mx": [(0, 28, 28)], "dma": [(0, 27, 27)], "stop": [(0, 26, 26)]},
    Matrix: {**SEM,
             "func": [(0, 15, 11)], "wait_prev_acc": [(0, 10, 10)], "reset_max": [(0, 9, 9)],
             "early_release": [(0, 8, 8)],
             "spad_addr": [(1, 31, 12)], "spad_stride": [(1, 11, 7)],
             "rev_input": [(1, 6, 6)], "rev_output": [(1, 5, 5)], "delay_output": [(1, 4, 4)],
             "acc_addr": [(2, 31, 12)], "acc_stride": [(2, 11, 7)],
             "zero": [(2, 6, 6)], "causal": [(2, 5, 5)], "mask_keys": [(2, 4, 4)]},
    Dma: {**SEM,
          "func": [(0, 15, 12)], "repeat": [(0, 11, 3)],
          "sram_addr": [(1, 31, 12)], "sram_stride": [(1, 11, 7)], "is_accum": [(1, 6, 6)],
          # mem field M = word3:word2; addr M[63:25] = word3[31:0] ++ word2[31:25]
          "mem_addr": [(3, 31, 0), (2, 31, 25)],
          # 21-bit stride: [20:15] in word1[5:0], [14:0] in M[24:10] = word2[24:10]
          "mem_stride": [(1, 5, 0), (2, 24, 10)],
          "size": [(2, 9, 0)]},
}
TYPE = {Fence: 0, Matrix: 1, Dma: 2}
NWORDS = {Fence: 1, Matrix: 3, Dma: 4}
SIGNED = {"spad_stride", "acc_stride", "sram_stride", "mem_stride"}
RANGES = {
    "sem_id": (0, 31), "acquire_value": (0, 7), "release_value": (0, 7),
    "spad_addr": (0, 2**20 - 1), "acc_addr": (0, 2**20 - 1), "sram_addr": (0, 2**20 - 1),
    "spad_stride": (-16, 15), "acc_stride": (-16, 15), "sram_stride": (-16, 15),
    "repeat": (1, 511), "size": (1, 1023),
    "mem_addr": (0, 2**39 - 1), "mem_stride": (-2**20, 2**20 - 1),
}
FUNC_RANGE = {Matrix: range(11), Dma: range(2)}     # matrix 5..10: the UD functions
#: Reserved bits per word (everything not covered by DOC nor the type field).
RESERVED = {Fence: [0x03FF_FFFF], Matrix: [0xFF, 0xF, 0xF], Dma: [0x7, 0, 0, 0]}


def seg_width(segs):
    return sum(m - l + 1 for _, m, l in segs)


def seg_mask(cls):
    """Per-word mask of each field."""
    out = {}
    for name, segs in DOC[cls].items():
        m = [0] * NWORDS[cls]
        for w, msb, lsb in segs:
            m[w] |= ((1 << (msb - lsb + 1)) - 1) << lsb
        out[name] = m
    return out


def place(cls, name, value):
    """Words with only field `name` = value placed per DOC."""
    segs = DOC[cls][name]
    width = seg_width(segs)
    u = int(value) & ((1 << width) - 1)
    words = [0] * NWORDS[cls]
    pos = width
    for w, msb, lsb in segs:
        n = msb - lsb + 1
        pos -= n
        words[w] |= ((u >> pos) & ((1 << n) - 1)) << lsb
    return words


def ref_encode(ins):
    """Independent encoder built from the DOC table."""
    cls = type(ins)
    words = [0] * NWORDS[cls]
    words[0] |= TYPE[cls] << 29
    for name in DOC[cls]:
        for i, w in enumerate(place(cls, name, getattr(ins, name))):
            words[i] |= w
    return words


def test_doc_table_covers_every_bit_exactly_once():
    for cls in DOC:
        masks = seg_mask(cls)
        assert set(masks) == {f.name for f in dataclasses.fields(cls)}, cls
        for w in range(NWORDS[cls]):
            used = (0xE000_0000 if w == 0 else 0) | RESERVED[cls][w]
            for name, m in masks.items():
                assert used & m[w] == 0, (cls, name, w)
                used |= m[w]
            assert used == 0xFFFF_FFFF, (cls, w, hex(used))
        assert tuple(RESERVED[cls]) == isa.RESERVED_MASKS[isa.InstrType(TYPE[cls])]


# --------------------------------------------------------------------------
# Hand-checked encodings (docs/architecture.md section 8, arithmetic in comments)
# --------------------------------------------------------------------------
HAND = [
    # fence, no flags: type 0, nothing else
    (Fence(), [0x0000_0000]),
    # fence stop only: bit 26 = 0x04000000
    (Fence(stop=True), [0x0400_0000]),
    # fence mx: bit 28 = 0x10000000
    (Fence(mx=True), [0x1000_0000]),
    # fence mx + dma: bits 28, 27 = 0x10000000 | 0x08000000
    (Fence(mx=True, dma=True), [0x1800_0000]),
    # matrix LOAD_STATIONARY, all zero: type 1 << 29 = 0x20000000
    (Matrix(MxFunc.LOAD_STATIONARY), [0x2000_0000, 0, 0]),
    # matrix ATTENTION_SCORE, semId 3, acquire valid value 1, spad addr 5 stride -1
    # revIn revOut delay, acc addr 0, zero:
    #  w0 = 1<<29 (0x20000000) | 3<<24 (0x03000000) | 1<<23 (0x00800000)
    #       | 1<<20 (0x00100000) | func 1<<11 (0x800)               = 0x23900800
    #  w1 = 5<<12 (0x5000) | (-1 & 0x1f)<<7 (0xf80) | 0x40 | 0x20 | 0x10 = 0x5ff0
    #  w2 = zero 1<<6                                               = 0x40
    (Matrix(MxFunc.ATTENTION_SCORE, sem_id=3, acquire_valid=True, acquire_value=1,
            spad_addr=5, spad_stride=-1, rev_input=True, rev_output=True,
            delay_output=True, acc_addr=0, zero=True),
     [0x2390_0800, 0x0000_5FF0, 0x0000_0040]),
    # matrix ATTENTION_VALUE, semId 31, release valid value 7, waitPrevAcc,
    # spad addr 0xFFFFF stride 15, acc addr 2 stride 1:
    #  w0 = 0x20000000 | 31<<24 (0x1f000000) | 1<<19 (0x80000) | 7<<16 (0x70000)
    #       | 2<<11 (0x1000) | 1<<10 (0x400)                        = 0x3f0f1400
    #  w1 = 0xfffff<<12 (0xfffff000) | 15<<7 (0x780)                = 0xfffff780
    #  w2 = 2<<12 (0x2000) | 1<<7 (0x80)                            = 0x2080
    (Matrix(MxFunc.ATTENTION_VALUE, sem_id=31, release_valid=True, release_value=7,
            wait_prev_acc=True, spad_addr=0xFFFFF, spad_stride=15, acc_addr=2, acc_stride=1),
     [0x3F0F_1400, 0xFFFF_F780, 0x0000_2080]),
    # matrix ATTENTION_LSE_NORM_SCALE: func 3<<11 = 0x1800
    (Matrix(MxFunc.ATTENTION_LSE_NORM_SCALE), [0x2000_1800, 0, 0]),
    # matrix ATTENTION_LSE_NORM, acc addr 1 stride 1: func 4<<11 = 0x2000;
    #  w2 = 1<<12 | 1<<7 = 0x1080
    (Matrix(MxFunc.ATTENTION_LSE_NORM, acc_addr=1, acc_stride=1), [0x2000_2000, 0, 0x1080]),
    # matrix ATTENTION_SCORE causal, acc stride -16 (0b10000 = 0x10):
    #  w2 = 0x10<<7 (0x800) | causal 1<<5 (0x20)                    = 0x820
    (Matrix(MxFunc.ATTENTION_SCORE, acc_stride=-16, causal=True), [0x2000_0800, 0, 0x820]),
    # DMA LOAD semId 1 acquire valid value 2, repeat 4, sram addr 3 stride 1,
    # mem addr 0x80000000, mem stride 8, size 8:
    #  w0 = 2<<29 (0x40000000) | 1<<24 (0x01000000) | 1<<23 (0x800000)
    #       | 2<<20 (0x200000) | func 0 | 4<<3 (0x20)               = 0x41a00020
    #  w1 = 3<<12 (0x3000) | 1<<7 (0x80) | stride[20:15] = 0        = 0x3080
    #  w2 = addr[6:0]=0 <<25 | stride[14:0]=8 <<10 (0x2000) | 8     = 0x2008
    #  w3 = addr >> 7 = 0x80000000 >> 7                             = 0x01000000
    (Dma(DmaFunc.LOAD, sem_id=1, acquire_valid=True, acquire_value=2, repeat=4,
         sram_addr=3, sram_stride=1, mem_addr=0x8000_0000, mem_stride=8, size=8),
     [0x41A0_0020, 0x0000_3080, 0x0000_2008, 0x0100_0000]),
    # DMA STORE repeat 4, sram addr 1, isAccum, mem addr 0x80000000, stride -64, size 32:
    #  -64 as 21 bits = 0x1fffc0: [20:15] = 0x3f, [14:0] = 0x7fc0
    #  w0 = 0x40000000 | func 1<<12 (0x1000) | 4<<3 (0x20)          = 0x40001020
    #  w1 = 1<<12 (0x1000) | isAccum 0x40 | 0x3f                    = 0x107f
    #  w2 = 0x7fc0<<10 (0x1ff0000) | 32 (0x20)                      = 0x01ff0020
    #  w3 = 0x80000000 >> 7                                         = 0x01000000
    (Dma(DmaFunc.STORE, repeat=4, sram_addr=1, is_accum=True, mem_addr=0x8000_0000,
         mem_stride=-64, size=32),
     [0x4000_1020, 0x0000_107F, 0x01FF_0020, 0x0100_0000]),
    # DMA LOAD repeat 1, mem addr 2^39-1, stride 2^20-1 (0x0fffff), size 1:
    #  stride [20:15] = 0x1f, [14:0] = 0x7fff
    #  w0 = 0x40000000 | 1<<3                                       = 0x40000008
    #  w1 = 0x1f                                                    = 0x1f
    #  w2 = 0x7f<<25 (0xfe000000) | 0x7fff<<10 (0x01fffc00) | 1     = 0xfffffc01
    #  w3 = (2^39-1) >> 7 = 2^32-1                                  = 0xffffffff
    (Dma(DmaFunc.LOAD, repeat=1, mem_addr=2**39 - 1, mem_stride=2**20 - 1, size=1),
     [0x4000_0008, 0x0000_001F, 0xFFFF_FC01, 0xFFFF_FFFF]),
    # DMA STORE repeat 511, sram stride -16, mem addr 0x80 (bit 7 -> word 3 bit 0),
    # stride -2^20 (0x100000: [20:15] = 0x20, [14:0] = 0), size 1023:
    #  w0 = 0x40000000 | 0x1000 | 511<<3 (0xff8)                    = 0x40001ff8
    #  w1 = 0x10<<7 (0x800) | 0x20                                  = 0x820
    #  w2 = 1023 (0x3ff)                                            = 0x3ff
    #  w3 = 0x80 >> 7                                               = 1
    (Dma(DmaFunc.STORE, repeat=511, sram_stride=-16, mem_addr=0x80, mem_stride=-2**20, size=1023),
     [0x4000_1FF8, 0x0000_0820, 0x0000_03FF, 0x0000_0001]),
]


@pytest.mark.parametrize("ins,words", HAND, ids=[f"hand{i}" for i in range(len(HAND))])
def test_hand_checked_encodings(ins, words):
    assert encode([ins]) == words
    assert ref_encode(ins) == words
    assert decode(words) == [ins]


def test_hand_table_concatenated_stream():
    stream = [w for _, ws in HAND for w in ws]
    assert encode([i for i, _ in HAND]) == stream
    assert decode(stream) == [i for i, _ in HAND]


# --------------------------------------------------------------------------
# Every field alone, at its extremes and random values
# --------------------------------------------------------------------------
def field_values(cls, name, rng):
    if name == "func":
        return list(FUNC_RANGE[cls])
    if name not in RANGES:                       # flag
        return [False, True]
    lo, hi = RANGES[name]
    vals = {lo, hi, lo + 1, hi - 1}
    vals.update(rng.randint(lo, hi) for _ in range(8))
    if name in SIGNED:
        vals.update({-1, 0, 1})
    return sorted(vals)


CASES = [(cls, name) for cls in DOC for name in DOC[cls]]


@pytest.mark.parametrize("cls,name", CASES, ids=[f"{c.__name__}.{n}" for c, n in CASES])
def test_field_lands_in_its_documented_bits_only(cls, name):
    rng = random.Random(zlib.crc32(f"{cls.__name__}.{name}".encode()))
    base = cls()
    base_words = encode([base])
    mask = seg_mask(cls)[name]
    for v in field_values(cls, name, rng):
        ins = dataclasses.replace(base, **{name: v})
        words = encode([ins])
        expect = [(b & ~m) | p for b, m, p in zip(base_words, mask, place(cls, name, v))]
        assert words == expect, (name, v, [hex(w) for w in words], [hex(w) for w in expect])
        got = decode(words)
        assert got == [ins] and getattr(got[0], name) == v
    # all-ones of the field covers exactly the documented mask
    if name != "func":
        lo, hi = RANGES.get(name, (0, 1))
        ones = -1 if name in SIGNED else hi
        if name in RANGES and name not in SIGNED:
            assert hi == (1 << seg_width(DOC[cls][name])) - 1
        w = encode([dataclasses.replace(base, **{name: ones if name in RANGES else True})])
        diff_or = [x | m for x, m in zip(base_words, mask)]
        assert w == diff_or, (name, [hex(x) for x in w])


def random_instr(rng):
    cls = rng.choice([Fence, Matrix, Dma])
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name == "func":
            kw["func"] = rng.choice(list(FUNC_RANGE[cls]))
        elif f.name in RANGES:
            kw[f.name] = rng.randint(*RANGES[f.name])
        else:
            kw[f.name] = rng.random() < 0.5
    return cls(**kw)


def test_random_round_trip_against_independent_encoder():
    rng = random.Random(1234)
    instrs = [random_instr(rng) for _ in range(2000)]
    words = encode(instrs)
    assert words == [w for i in instrs for w in ref_encode(i)]
    assert decode(words) == instrs
    assert encode(decode(words)) == words


def random_valid_words(rng, n):
    """Random word streams: random bits, reserved bits 0, valid type/func/nonzero fields."""
    out = []
    for _ in range(n):
        cls = rng.choice([Fence, Matrix, Dma])
        ws = [rng.getrandbits(32) & ~RESERVED[cls][k] for k in range(NWORDS[cls])]
        ws[0] = (ws[0] & 0x1FFF_FFFF) | (TYPE[cls] << 29)
        if cls is Matrix:
            ws[0] = (ws[0] & ~(0x1F << 11)) | (rng.randrange(5) << 11)
        if cls is Dma:
            ws[0] = (ws[0] & ~(0xF << 12)) | (rng.randrange(2) << 12)
            if (ws[0] >> 3) & 0x1FF == 0:
                ws[0] |= 1 << 3
            if ws[2] & 0x3FF == 0:
                ws[2] |= 1
        out.extend(ws)
    return out


def test_decode_encode_identity_on_random_streams():
    rng = random.Random(99)
    words = random_valid_words(rng, 3000)
    assert encode(decode(words)) == words


def test_int_func_codes_and_flags_normalised():
    m = Matrix(2, rev_input=1)
    assert m.func is MxFunc.ATTENTION_VALUE and m.rev_input is True
    d = Dma(1)
    assert d.func is DmaFunc.STORE
    assert Matrix(MxFunc.ATTENTION_SCORE, spad_addr=8).spad_addr == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.spad_addr = 3


# --------------------------------------------------------------------------
# Range errors
# --------------------------------------------------------------------------
RANGE_CASES = [(cls, name) for cls in (Matrix, Dma) for name in DOC[cls] if name in RANGES]


@pytest.mark.parametrize("cls,name", RANGE_CASES,
                         ids=[f"{c.__name__}.{n}" for c, n in RANGE_CASES])
def test_out_of_range_fields_rejected_at_both_ends(cls, name):
    lo, hi = RANGES[name]
    cls(**{name: lo})
    cls(**{name: hi})
    for bad in (lo - 1, hi + 1, hi + 1000, lo - 2**40):
        with pytest.raises(ValueError) as e:
            cls(**{name: bad})
        msg = str(e.value)
        assert name in msg and f"{lo}..{hi}" in msg and str(bad) in msg, msg


@pytest.mark.parametrize("cls", [Fence, Matrix, Dma])
def test_bad_flag_and_type_values_rejected(cls):
    flag = next(f.name for f in dataclasses.fields(cls) if f.name not in RANGES and f.name != "func")
    for bad in (2, -1, "yes", 0.5, None):
        with pytest.raises(ValueError, match=flag):
            cls(**{flag: bad})
    if cls is not Fence:
        for bad in (1.5, "3", True, None):
            with pytest.raises(ValueError, match="sem_id"):
                cls(sem_id=bad)


def test_zero_size_and_repeat_rejected():
    with pytest.raises(ValueError, match=r"size.*1\.\.1023.*got 0.*0 bytes"):
        Dma(size=0)
    with pytest.raises(ValueError, match=r"repeat.*1\.\.511.*got 0"):
        Dma(repeat=0)


def test_unknown_function_codes_rejected_at_construction():
    for code in (11, 31, -1, 100):
        with pytest.raises(ValueError, match=f"unknown function code {code}"):
            Matrix(code)
    for code in (2, 15):
        with pytest.raises(ValueError, match=f"unknown function code {code}"):
            Dma(code)
    with pytest.raises(ValueError, match="func"):
        Matrix("ATTENTION_SCORE")


# --------------------------------------------------------------------------
# Decode errors
# --------------------------------------------------------------------------
def test_unknown_type_rejected_with_word_index():
    for t in range(3, 8):
        words = [0x0400_0000, t << 29]
        with pytest.raises(ValueError, match=rf"word 1 .*unknown instruction type {t}"):
            decode(words)


def test_unknown_function_rejected_in_decode():
    for code in range(11, 32):
        with pytest.raises(ValueError, match=rf"word 1 .*unknown matrix function code {code}"):
            decode([0, 0x2000_0000 | code << 11, 0, 0])
    for code in range(2, 16):
        with pytest.raises(ValueError, match=rf"word 0 .*unknown dma function code {code}"):
            decode([0x4000_0008 | code << 12, 0, 1, 0])


TRUNC = HAND[-6:-3] + HAND[-2:]


@pytest.mark.parametrize("ins,words", TRUNC, ids=[f"trunc{i}" for i in range(len(TRUNC))])
def test_truncated_streams_rejected(ins, words):
    n = len(words)
    prefix = [0x1000_0000, 0x0800_0000]          # two fences
    for k in range(1, n):
        with pytest.raises(ValueError, match=rf"word 2: truncated .* needs {n} words, only {k} left"):
            decode(prefix + words[:k])
    assert decode(prefix + words) == [Fence(mx=True), Fence(dma=True), ins]
    assert decode([]) == []


def test_reserved_bits_rejected_every_bit():
    for cls, masks in RESERVED.items():
        base = encode([cls()])
        for k, mask in enumerate(masks):
            for bit in range(32):
                if not mask >> bit & 1:
                    continue
                ws = list(base)
                ws[k] |= 1 << bit
                with pytest.raises(ValueError, match=rf"word {k + 1} .*reserved bits"):
                    decode([0] + ws)


def test_decode_rejects_zero_size_and_repeat_and_bad_words():
    with pytest.raises(ValueError, match=r"word 0: invalid dma.*size"):
        decode([0x4000_0008, 0, 0, 0])
    with pytest.raises(ValueError, match=r"word 0: invalid dma.*repeat"):
        decode([0x4000_0000, 0, 1, 0])
    with pytest.raises(ValueError, match="word 1"):
        decode([0, 1 << 32])
    with pytest.raises(ValueError, match="word 0"):
        decode([-1])


# --------------------------------------------------------------------------
# Bytes and disassembly
# --------------------------------------------------------------------------
def test_bytes_round_trip_little_endian():
    words = [w for _, ws in HAND for w in ws]
    b = isa.to_bytes(words)
    assert len(b) == 4 * len(words)
    assert b[:4] == bytes([0, 0, 0, 0]) and b[4:8] == bytes([0, 0, 0, 0x04])  # fence stop
    assert isa.from_bytes(b) == words
    assert isa.from_bytes(bytearray(b)) == words
    for n in (1, 2, 3, 5, 7):
        with pytest.raises(ValueError, match=f"{n} bytes is not a multiple of 4"):
            isa.from_bytes(b[:n])
    with pytest.raises(ValueError):
        isa.to_bytes([1 << 32])
    assert isa.to_bytes([]) == b"" and isa.from_bytes(b"") == []


def test_disassemble():
    words = encode([HAND[5][0], HAND[11][0], Fence(stop=True), Matrix()])
    lines = isa.disassemble(words).splitlines()
    assert lines == [
        "0000: MATRIX ATTENTION_SCORE sem_id=3 acquire_valid acquire_value=1 spad_addr=5 "
        "spad_stride=-1 rev_input rev_output delay_output zero",
        "0003: DMA STORE repeat=4 sram_addr=1 is_accum mem_addr=0x80000000 mem_stride=-64 size=32",
        "0007: FENCE stop",
        "0008: MATRIX LOAD_STATIONARY",
    ]
    with pytest.raises(ValueError, match="truncated"):
        isa.disassemble(words[:-1])


def test_encode_rejects_non_instructions():
    with pytest.raises(TypeError):
        encode([0x1234])
