"""The kernel language (fsa.kernel_lang): tiles, allocation, instructions,
semaphores, encoding limits, @kernel and Program helpers. Every error must
say what to change."""
from __future__ import annotations

import os

import numpy as np
import pytest

from fsa import config
from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.golden.machine import Machine
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc, decode
from fsa.kernel_lang import (AccTile, Input, KernelBuilder, KernelError, MemTile, Program, Semaphore,
                        SpadTile, check_dispatch, kernel)

CFG = config.get("FSA4X4Fp16Config")          # R = C = 4, spad 28 rows, acc 5 rows


def kb(cfg=CFG):
    return KernelBuilder(cfg, "t")


# ------------------------------------------------------------------ tiles
def test_mem_layout_alignment_and_padding():
    k = kb()
    a = k.alloc_mem((3, 2), "fp16", "A")          # 4-byte rows padded to the 8-byte beat
    b = k.alloc_mem((2, 4), "fp32", "B")
    assert a.addr == CFG.mem_base and a.row_stride == 8
    assert b.addr == CFG.mem_base + 24 and b.row_stride == 16
    assert b.addr % CFG.mem_align == 0 and isinstance(b, MemTile)
    assert k.alloc_mem((1, 4), "E").fmt == "fp16" and k.alloc_mem((1, 4), "A").fmt == "fp32"
    assert k.alloc_mem((1, 4), np.float32).fmt == "fp32"


def test_mem_tile_split_index_reverse():
    k = kb()
    t = k.alloc_mem((8, 12), "fp16", "T")
    rows = t.split(4, axis=0)
    assert [r.addr for r in rows] == [t.addr, t.addr + 4 * 24]
    assert rows[1].shape == (4, 12) and rows[1].row_stride == 24
    cols = t.split(4, axis=1)
    assert [c.addr for c in cols] == [t.addr, t.addr + 8, t.addr + 16]
    assert cols[2].shape == (8, 4) and cols[2].row_stride == 24
    assert t.split(4, dim=-1)[1] == cols[1]                  # reference-style dim=
    sub = t[2:6, 4:8]
    assert sub.addr == t.addr + 2 * 24 + 8 and sub.shape == (4, 4)
    assert t[3].shape == (1, 12) and t[3].addr == t.addr + 72
    assert t[::2].row_stride == 48 and t[::2].rows == 4
    r = sub.reverse()
    assert r.addr == sub.addr + 3 * 24 and r.row_stride == -24 and r.reverse().addr == sub.addr
    assert r.label.endswith("reverse()")


def test_sram_tile_split_index_reverse():
    k = kb()
    s = k.alloc_spad(8, "S")
    assert isinstance(s, SpadTile) and s.shape == (8, 4) and s.fmt == "fp16"
    a, b = s.split(4)
    assert (a.first, b.first, b.rows) == (0, 4, 4)
    r = b.reverse()
    assert (r.first, r.stride, r.row_list) == (7, -1, [7, 6, 5, 4])
    assert r[1:3].row_list == [6, 5] and s[::3].row_list == [0, 3, 6]
    assert s[::-1].row_list == list(range(7, -1, -1))
    acc = k.alloc_accumulator((2, 4))
    assert isinstance(acc, AccTile) and acc.fmt == "fp32" and acc.first == 0


@pytest.mark.parametrize("fn,msg", [
    (lambda k: k.alloc_mem((6, 4), "fp16", "T").split(4), r"6 rows are not a multiple of the block size 4"),
    (lambda k: k.alloc_mem((4, 6), "fp16", "T").split(4, axis=1), "6 columns are not a multiple"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T").split(0), "block size must be >= 1"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T")[:, ::2], "column step must be 1"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T").reverse(axis=1), "only rows can be reversed"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T")[9], "index 9 is out of range for 4"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T")[2:2], "selects nothing"),
    (lambda k: k.alloc_mem((4, 4), "fp16", "T").split(2, axis=2), "axis must be 0"),
    (lambda k: k.alloc_spad(4)[:, 1:2], "always spans whole rows"),
    (lambda k: k.alloc_spad(4).split(2, axis=1), "split by rows only"),
])
def test_tile_errors(fn, msg):
    with pytest.raises(KernelError, match=msg):
        fn(kb())


# ------------------------------------------------------------------ allocation errors
def test_alloc_errors_say_what_is_left():
    k = kb()
    k.alloc_spad(24, "big")
    with pytest.raises(KernelError, match=r"8 rows do not fit the scratchpad: 4 of 28 rows are left "
                                          r"\(allocated: big 0..23\).*more spad_rows"):
        k.alloc_spad(8)
    k.alloc_accumulator(10)
    with pytest.raises(KernelError, match=r"1 rows do not fit the accumulator: 0 of 10 rows.*acc_rows"):
        k.alloc_accumulator(1)
    with pytest.raises(KernelError, match=r"a scratchpad row holds R = 4 elements; shape \(4, 8\) "
                                          r"must be \(rows, 4\)"):
        kb().alloc_spad((4, 8))
    with pytest.raises(KernelError, match=r"an accumulator row holds C = 4"):
        kb().alloc_accumulator((1, 8))
    with pytest.raises(KernelError, match="rows must be >= 1"):
        kb().alloc_spad(0)


def test_alloc_mem_errors():
    k = kb()
    k.alloc_mem((4, 4), "fp16", "Q")
    with pytest.raises(KernelError, match="a tensor called 'Q' already exists"):
        k.alloc_mem((4, 4), "fp16", "Q")
    with pytest.raises(KernelError, match=r"unknown format 'fp8'; use one of"):
        k.alloc_mem((4, 4), "fp8", "X")
    with pytest.raises(KernelError, match=r"do not fit the memory window.*larger mem_size"):
        k.alloc_mem((1 << 20, 1024), "fp32", "Huge")
    with pytest.raises(KernelError, match="name must be an identifier"):
        k.alloc_mem((4, 4), "fp16", "a b")
    with pytest.raises(KernelError, match="role must be"):
        k.alloc_mem((4, 4), "fp16", "R", role="temp")
    with pytest.raises(KernelError, match="shape must be positive"):
        k.alloc_mem((0, 4), "fp16", "Z")


# ------------------------------------------------------------------ instruction errors
def test_load_tile_format_and_shape_errors():
    k = kb()
    q32 = k.alloc_mem((4, 4), "fp32", "Q32")
    s = k.alloc_spad(4)
    with pytest.raises(KernelError, match=r"memory tile Q32 is fp32 but the scratchpad holds fp16 "
                                          r"\(the config's element format\); allocate it with fmt='fp16'"):
        k.load_tile(s, q32)
    K = k.alloc_mem((8, 8), "fp16", "K")
    with pytest.raises(KernelError, match=r"shape mismatch: memory tile K\[:, 0:4\] has 8 rows but scratchpad "
                                          r"tile .* has 4"):
        k.load_tile(s, K[:, 0:4])
    with pytest.raises(KernelError, match=r"rows have 8 elements but a scratchpad row holds 4; use a "
                                          r"memory tile of shape \(4, 4\)"):
        k.load_tile(s, K[0:4])
    with pytest.raises(KernelError, match="the arguments look swapped"):
        k.load_tile(K[0:4, 0:4], s)
    acc = k.alloc_accumulator(4)
    with pytest.raises(KernelError, match="store_tile.*look swapped"):
        k.store_tile(acc, q32)
    with pytest.raises(KernelError, match="src must be an accumulator tile"):
        k.store_tile(K[0:4, 0:4], s)
    with pytest.raises(KernelError, match="is fp16 but the accumulator holds fp32"):
        k.store_tile(K[0:4, 0:4], acc)


def test_matrix_shape_errors():
    k = kb(config.get("FSA8X4Fp16Config"))        # R = 8, C = 4
    q8 = k.alloc_spad(8)
    kt = k.alloc_spad(4)
    l, o = k.alloc_accumulator(1), k.alloc_accumulator(8)
    with pytest.raises(KernelError, match=r"the Q tile .* must be C = 4 rows of 8 elements, got 8 rows"):
        k.mx_load_stationary(q8)
    with pytest.raises(KernelError, match=r"the K tile .* must be R = 8 rows of 8 elements, got 4"):
        k.mx_attn_score(kt, l)
    with pytest.raises(KernelError, match=r"the l tile .* must be one = 1 row of 4 elements, got 8"):
        k.mx_attn_score(q8, o)
    with pytest.raises(KernelError, match=r"causal masking needs a square array \(R == C\)"):
        k.mx_attn_score(q8, l, causal=True)
    with pytest.raises(KernelError, match=r"the O\^T tile must be an accumulator tile"):
        k.mx_attn_value(q8, q8)
    with pytest.raises(KernelError, match="the V\\^T tile .* must be R = 8 rows"):
        k.mx_attn_value(kt, o)
    with pytest.raises(KernelError, match="the l tile .* must be one = 1 row"):
        k.mx_reciprocal(o)
    with pytest.raises(KernelError, match="the O\\^T tile .* must be R = 8 rows"):
        k.mx_attn_lse_norm(l)


def test_encoding_limits_name_instruction_and_field():
    # spad stride outside -16..15 (matrix and DMA)
    k = kb(CFG.replace(name="Spad64", spad_rows=64))
    s = k.alloc_spad(64)
    with pytest.raises(KernelError, match=r"mx_attn_score.*spad_stride = 16 .* does not fit the ISA's "
                                          r"5-bit signed field \(-16..15\)"):
        k.mx_attn_score(s[::16], k.alloc_accumulator(1))
    m = k.alloc_mem((4, 4), "fp16", "M")
    with pytest.raises(KernelError, match=r"load_tile.*sram_stride = -17"):
        k.load_tile(s[::-17][:4], m)
    assert k.load_tile(s[::-16][:4], m).sram_stride == -16          # the limit itself is fine
    # DMA size > 1023 bytes: a 256-element fp32 row
    big = FSAConfig("Big", 256, 4, "fp32", "fp32")
    k = kb(big)
    with pytest.raises(KernelError, match=r"load_tile.*DMA size = 1024 bytes per row exceeds the "
                                          r"ISA's 10-bit size field \(1..1023\)"):
        k.load_tile(k.alloc_spad(1), k.alloc_mem((1, 256), "fp32", "W"))
    # memory stride beyond 21 bits
    k = kb()
    wide = k.alloc_mem((4, 600_000), "fp16", "Wide")
    with pytest.raises(KernelError, match=r"load_tile.*mem_stride = 1200000 bytes .* 21-bit signed "
                                          r"field \(-1048576..1048575\)"):
        k.load_tile(k.alloc_spad(4), wide[:, 0:4])
    # DMA repeat > 511 rows
    k = kb(CFG.replace(name="Spad600", spad_rows=600))
    with pytest.raises(KernelError, match=r"512 rows exceed the DMA repeat field \(1..511\)"):
        k.load_tile(k.alloc_spad(512), k.alloc_mem((512, 4), "fp16", "Long"))
    # a row narrower than the AXI beat: the config itself is refused (the DMA
    # moves whole beats into one SRAM row), so no kernel can be built for it
    with pytest.raises(ValueError, match=r"axi_data_bits = 64 must divide the scratchpad row"):
        FSAConfig("Tiny", 2, 2, "fp16", "fp32")


def test_fence_errors():
    k = kb()
    with pytest.raises(KernelError, match="waits for nothing; set mx=True, dma=True or stop=True"):
        k.fence()
    k.fence(stop=True)
    with pytest.raises(KernelError, match="would never run; move the stop fence to the end"):
        k.fence(mx=True)
    with pytest.raises(KernelError, match="would never run"):
        k.mx_reciprocal(k.alloc_accumulator(1))


# ------------------------------------------------------------------ semaphores
def test_semaphore_values_cycle_modulo_n():
    k = kb()
    m = k.alloc_mem((4, 4), "fp16", "M")
    s = k.alloc_spad(4)
    sem = k.semaphore(3, 3)
    got = []
    for _ in range(4):
        d = k.load_tile(s, m, sem)
        x = k.mx_load_stationary(s, sem)
        got += [(d.acquire_value, d.release_value), (x.acquire_value, x.release_value)]
    assert got == [(0, 1), (1, 2), (2, 0), (0, 1), (1, 2), (2, 0), (0, 1), (1, 2)]
    assert all(i.sem_id == 3 for i in k.instructions)


def test_semaphore_acquire_only_then_release_only():
    k = kb()
    m = k.alloc_mem((4, 4), "fp16", "M")
    s = k.alloc_spad(4)
    sem = Semaphore(0, 2)
    k.load_tile(s, m, sem)
    a = k.mx_load_stationary(s, sem, acquire=True, release=False)
    mid = k.mx_load_stationary(s, sem, acquire=False, release=False)
    b = k.mx_load_stationary(s, sem, acquire=False, release=True)
    assert (a.acquire_valid, a.acquire_value, a.release_valid) == (True, 1, False)
    assert not mid.acquire_valid and not mid.release_valid
    assert (b.acquire_valid, b.release_valid, b.release_value) == (False, True, 0)
    c = k.load_tile(s, m, sem, acquire=0, release=1)                     # explicit values
    assert (c.acquire_value, c.release_value) == (0, 1)
    prog = k.build()
    assert prog.semaphores == {0: 1}


def test_semaphore_misuse_errors():
    with pytest.raises(KernelError, match=r"Semaphore id must be an integer in 0..31, got 32"):
        Semaphore(32)
    with pytest.raises(KernelError, match=r"Semaphore n must be an integer in 1..8 \(semaphore values "
                                          r"are 3 bits\), got 9"):
        Semaphore(1, 9)
    k = kb()
    m = k.alloc_mem((4, 4), "fp16", "M")
    s = k.alloc_spad(4)
    a = k.semaphore(1)
    with pytest.raises(KernelError, match="semaphore id 1 is already used by another Semaphore"):
        k.load_tile(s, m, Semaphore(1))
    k.mx_load_stationary(s, a, release=False)
    with pytest.raises(KernelError, match=r"semaphore 1 is still held by instruction 0 \(acquired "
                                          r"without release\).*release it first"):
        k.load_tile(s, m, a)
    b = k.semaphore(2)
    with pytest.raises(KernelError, match="releases semaphore 2, which no earlier instruction holds"):
        k.load_tile(s, m, b, acquire=False)
    with pytest.raises(KernelError, match=r"acquire value 5 is outside 0..1 of semaphore 2"):
        k.load_tile(s, m, b, acquire=5)
    with pytest.raises(KernelError, match="acquire/release need a semaphore: pass sem="):
        k.load_tile(s, m, acquire=True)
    with pytest.raises(KernelError, match="sem must be a Semaphore"):
        k.load_tile(s, m, 3)
    with pytest.raises(KernelError, match=r"semaphore 1 acquired by instruction 0 is never released"):
        k.build()
    other = kb()
    with pytest.raises(KernelError, match="belongs to another kernel build; create semaphores inside"):
        other.load_tile(other.alloc_spad(4), other.alloc_mem((4, 4), "fp16", "M"), a)


def test_check_dispatch_reports_deadlock_and_race():
    k = kb()
    m = k.alloc_mem((4, 4), "fp16", "M")
    s = k.alloc_spad(4)
    sem = k.semaphore(5)
    # the matrix waits for the load that is emitted after a second matrix instruction
    k.emit(Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True, acquire_value=1,
                  release_valid=True, release_value=0))
    k.emit(Matrix(MxFunc.LOAD_STATIONARY))
    k.load_tile(s, m, sem)
    with pytest.raises(KernelError, match=r"t: deadlock under the one-pending-instruction-per-engine "
                                          r"rule \(calibrated DMA\): matrix instruction 0 waits for "
                                          r"semaphore 5 == 1"):
        k.build()
    race = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=4, acquire_valid=True, release_valid=True,
                   release_value=1),
            Dma(repeat=1, size=8, mem_addr=CFG.mem_base, sem_id=4, acquire_valid=True,
                release_valid=True, release_value=1),
            Fence(stop=True)]
    # the golden model queues both at once and both may take value 0; the
    # device decodes the matrix instruction first, which leaves the DMA waiting
    with pytest.raises(KernelError, match=r"semaphore race at cycle \d+: matrix instruction 0 and "
                                          r"DMA instruction 1 .*golden model's unbounded queues"):
        check_dispatch(CFG, race, modes=["golden"])
    with pytest.raises(KernelError, match=r"deadlock under the one-pending.*DMA instruction 1 waits "
                                          r"for semaphore 4 == 0 \(it is 1\)"):
        check_dispatch(CFG, race)
    assert check_dispatch(CFG, race[1:] + [Fence(stop=True)]) > 0


def test_release_without_acquire_racing_an_acquire_is_refused():
    """An instruction that releases a semaphore it never acquired, still
    running or pending on the other engine, while another one can acquire
    the value it will overwrite: which comes first depends on timing (the
    device lets the acquire pass first here; in `same` the golden model,
    one instruction of an engine after the other, finishes the release first
    and deadlocks; in `cross` a busy matrix engine would let the DMA's
    release pass first).  check_dispatch refuses both; the fixed program runs."""
    from fsa.golden.machine import Deadlock, Machine

    ld = dict(spad_addr=0, spad_stride=1)
    same = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=0, release_valid=True, release_value=1, **ld),
            Matrix(MxFunc.LOAD_STATIONARY, sem_id=0, acquire_valid=True, acquire_value=0, **ld),
            Fence(stop=True)]
    cross = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=0, acquire_valid=True, acquire_value=0, **ld),
             Dma(repeat=1, size=8, mem_addr=CFG.mem_base, sem_id=0, release_valid=True,
                 release_value=1),
             Fence(stop=True)]
    with pytest.raises(Deadlock):
        Machine(CFG).run(same)
    for prog, a, b in ((same, 0, 1), (cross, 1, 0)):
        with pytest.raises(KernelError, match=rf"semaphore race at cycle \d+: \w+ instruction {b} "
                                              rf"can acquire semaphore 0 = 0 while instruction {a} "
                                              rf"\((running|pending), without an acquire of it\) "
                                              rf"will release it \(to 1\)"):
            check_dispatch(CFG, prog)
    # the second waits for the value the first releases: no race, and golden agrees
    fixed = [same[0], Matrix(MxFunc.LOAD_STATIONARY, sem_id=0, acquire_valid=True,
                             acquire_value=1, **ld), Fence(stop=True)]
    assert check_dispatch(CFG, fixed) > 0
    Machine(CFG).run(fixed)


def test_check_dispatch_accepts_only_what_golden_runs():
    """Random little semaphore programs: whatever check_dispatch accepts, the
    golden model runs without a deadlock."""
    import random

    from fsa.golden.machine import Machine, MachineError

    rng = random.Random(int(os.environ.get("SEED", "1")))
    accepted = 0
    for _ in range(300):
        prog = []
        for _ in range(rng.randint(1, 6)):
            sem = dict(sem_id=rng.randint(0, 1), acquire_valid=rng.random() < .6,
                       acquire_value=rng.randint(0, 2), release_valid=rng.random() < .6,
                       release_value=rng.randint(0, 2))
            if rng.random() < .5:
                prog.append(Matrix(MxFunc.LOAD_STATIONARY, spad_addr=0, spad_stride=1, **sem))
            else:
                prog.append(Dma(repeat=4, sram_addr=4, sram_stride=1, mem_addr=CFG.mem_base,
                                mem_stride=8, size=8, **sem))
        prog.append(Fence(stop=True))
        try:
            check_dispatch(CFG, prog)
        except KernelError:
            continue
        accepted += 1
        try:
            Machine(CFG).run(prog)
        except MachineError as e:
            raise AssertionError(f"check_dispatch accepted a program golden fails on ({e}): "
                                 f"{prog}") from None
    assert accepted >= 30


def test_check_dispatch_deadlock_depends_on_the_dispatch_mode():
    """The deadlock above is the one-pending rule's: the golden model's
    unbounded queues let the DMA load pass the stuck matrix instruction."""
    ins = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True, acquire_value=1,
                  release_valid=True, release_value=0),
           Matrix(MxFunc.LOAD_STATIONARY),
           Dma(repeat=1, size=8, mem_addr=CFG.mem_base, sem_id=5, acquire_valid=True,
               acquire_value=0, release_valid=True, release_value=1),
           Fence(stop=True)]
    assert check_dispatch(CFG, ins, modes=["golden"]) == 0       # (cycles: hardware mode only)
    with pytest.raises(KernelError, match=r"deadlock under the one-pending-instruction-per-engine "
                                          r"rule \(calibrated DMA\): matrix instruction 0 waits for "
                                          r"semaphore 5 == 1 \(it is 0\); the decoder is stuck at "
                                          r"instruction 1"):
        check_dispatch(CFG, ins, modes=["hardware"])


def test_the_dma_timing_changes_what_the_device_dispatch_does():
    """Value 1 of semaphore 3 is awaited by a matrix and a DMA instruction:
    on the device a quick DMA hands it to the matrix first and the second DMA
    then waits forever; a slow one lets both wait for it at once (a race)."""
    from fsa.cycle import model as cm
    from fsa.cycle import dispatch as cdispatch

    def dma(acq, rel):
        return Dma(repeat=1, size=8, mem_addr=CFG.mem_base, sem_id=3, acquire_valid=True,
                   acquire_value=acq, release_valid=True, release_value=rel)

    def prog(last_acquire):
        return [dma(0, 1),
                Matrix(MxFunc.LOAD_STATIONARY, sem_id=3, acquire_valid=True, acquire_value=1,
                       release_valid=True, release_value=2),
                dma(last_acquire, (last_acquire + 1) % 3), Fence(stop=True)]

    t = cdispatch.check_timings(CFG)
    for name in ("calibrated DMA", "free DMA"):
        with pytest.raises(cm.DispatchError, match=r"deadlock at cycle \d+: DMA instruction 2 waits "
                                                   r"for semaphore 3 == 1 \(it is 2\)"):
            cm.simulate(CFG, prog(1), t[name], races=True)
    with pytest.raises(cm.DispatchError, match=r"semaphore race at cycle \d+: matrix instruction 1 "
                                               r"and DMA instruction 2"):
        cm.simulate(CFG, prog(1), t["slow DMA"], races=True)
    with pytest.raises(KernelError, match="deadlock under the one-pending"):
        check_dispatch(CFG, prog(1))
    assert check_dispatch(CFG, prog(2)) == cm.simulate(CFG, prog(2)).cycles > 0   # one waiter each


def test_check_dispatch_runs_every_mode_and_timing(monkeypatch):
    """Both dispatch modes, each under the calibrated, a free and a slow DMA
    (slower than the longest matrix function), all through the cycle model;
    the result is the model's prediction for the device."""
    from fsa.cycle import model as cm
    from fsa.cycle import dispatch as cdispatch
    timings = cdispatch.check_timings(CFG)
    assert set(timings) == {"calibrated DMA", "free DMA", "slow DMA"}
    assert timings["calibrated DMA"] == cm.DEFAULT_DMA and timings["free DMA"] == cm.IDEAL_DMA
    longest = max(p.retire for p in cm._plans(CFG))
    assert timings["slow DMA"].load_base > longest and timings["slow DMA"].store_base > longest
    seen = []
    real = cm.simulate

    def spy(cfg, instructions, dma=cm.DEFAULT_DMA, **kw):
        seen.append((kw["dispatch"], dma, kw["races"]))
        return real(cfg, instructions, dma, **kw)

    monkeypatch.setattr(cm, "simulate", spy)
    prog = copy_scaled.build(CFG, Input((4, 4), "fp32"), check=False)
    cycles = prog.check_dispatch()
    assert sorted(seen, key=repr) == sorted([(m, t, True) for m in ("hardware", "golden")
                                            for t in timings.values()], key=repr)
    assert cycles == real(CFG, prog.instructions).cycles > 0


# ------------------------------------------------------------------ programs
@kernel
def copy_scaled(k, X, *, rows=4):
    """Load X into the accumulator, normalise by 1/l with l = row 0, store."""
    acc = k.alloc_accumulator(rows + 1)
    out = k.alloc_mem((rows, k.C), "A", "Y")
    sem = k.semaphore(0, 4)     # 4 values: two matrix uses follow each other
    k.load_tile(acc[1:], X, sem)
    k.mx_reciprocal(acc[0], sem)                   # l = 0 -> scale = inf, but we only check plumbing
    k.mx_attn_lse_norm(acc[1:], sem)
    k.store_tile(out, acc[1:], sem)
    return out


def test_kernel_decorator_builds_reusable_programs():
    p1 = copy_scaled.build(CFG, Input((4, 4), "fp32"))
    p2 = copy_scaled(CFG, ((4, 4), "fp32"))
    assert isinstance(p1, Program) and p1.words() == p2.words()
    assert p1.inputs == ["X"] and p1.outputs == ["Y"]
    assert isinstance(p1.instructions[-1], Fence) and p1.instructions[-1].stop
    assert decode(p1.words()) == list(p1.instructions)
    c = p1.counts()
    assert (c["matrix"], c["dma"], c["fence"], c["DMA_LOAD"], c["DMA_STORE"]) == (2, 2, 1, 1, 1)
    assert c["words"] == 2 * 3 + 2 * 4 + 1
    assert p1.tensors["X"].addr == CFG.mem_base and p1.tensors["Y"].fmt == "fp32"
    assert "copy_scaled" in repr(p1) and "scaled" in repr(copy_scaled)
    with pytest.raises(KernelError, match=r"takes 1 tiles \(X\), got 2 inputs"):
        copy_scaled.build(CFG, Input((4, 4)), Input((4, 4)))
    with pytest.raises(KernelError, match=r"takes 1 tiles \(X\), got 0 inputs; pass one Input"):
        copy_scaled.build(CFG)
    with pytest.raises(KernelError, match="is fp16 but the accumulator holds fp32"):
        copy_scaled.build(CFG, Input((4, 4)))          # default fmt is the element format


def test_memory_image_and_readback_round_trip():
    prog = copy_scaled.build(CFG, Input((4, 4), "fp32"))
    x = np.arange(16, dtype=np.float64).reshape(4, 4) / 8
    image = prog.memory_image({"X": x})
    assert image[0][0] == prog.tensors["X"].addr and len(image[0][1]) == 64
    got = prog.read_tensor("X", image)
    assert np.array_equal(got, nx.from_float64(x, "fp32"))
    m = Machine(CFG)
    prog.write_inputs(m.mem, {"X": x})
    m.run(list(prog.instructions))
    out = prog.read_outputs(m.mem)
    assert set(out) == {"Y"} and out["Y"].dtype == np.uint32 and out["Y"].shape == (4, 4)


def test_views_transpose_inputs_and_outputs():
    k = kb()
    vt = k.alloc_mem((4, 8), "fp16", "Vt", role="input")
    k.view("V", vt)
    prog = k.build(check=False)
    v = np.arange(32, dtype=np.float64).reshape(8, 4)
    assert prog.shape_of("V") == (8, 4) and prog.shape_of("Vt") == (4, 8)
    img = prog.memory_image({"V": v})
    assert np.array_equal(prog.read_tensor("Vt", img), nx.from_float64(v.T, "fp16"))
    assert np.array_equal(prog.read_tensor("V", img), nx.from_float64(v, "fp16"))
    with pytest.raises(KernelError, match="needs the whole tensor"):
        k2 = kb()
        t = k2.alloc_mem((4, 8), "fp16", "T")
        k2.view("U", t[:, 0:4])
    with pytest.raises(KernelError, match="integers outside the 16-bit patterns"):
        prog.memory_image({"V": np.full((8, 4), 70000)})
    with pytest.raises(KernelError, match="must be a float array"):
        prog.memory_image({"V": np.full((8, 4), "x")})


def test_raw_instruction_emit_and_stop_fence_appended():
    k = kb()
    k.emit(Dma(DmaFunc.LOAD, repeat=1, size=8, mem_addr=CFG.mem_base))
    with pytest.raises(KernelError, match="not an instruction"):
        k.emit("nop")
    prog = k.build()
    assert prog.instructions[-1] == Fence(mx=True, dma=True, stop=True)
    assert isinstance(prog.instructions[0], Dma)


def test_ambiguous_semaphore_values_are_a_race():
    # with n = 2 the store (DMA) and the reciprocal (matrix) both wait for
    # value 1: with queues deeper than one slot, the store could run first
    @kernel
    def two_values(k, X):
        acc = k.alloc_accumulator(5)
        out = k.alloc_mem((4, 4), "A", "Y")
        sem = k.semaphore(0, 2)
        k.load_tile(acc[1:], X, sem)
        k.mx_reciprocal(acc[0], sem)
        k.mx_attn_lse_norm(acc[1:], sem)
        k.store_tile(out, acc[1:], sem)
        return out

    with pytest.raises(KernelError, match=r"semaphore race at cycle \d+: matrix instruction 1 and "
                                          r"DMA instruction 3 .* give the semaphore more values"):
        two_values.build(CFG, Input((4, 4), "fp32"))
    prog = two_values.build(CFG, Input((4, 4), "fp32"), check=False)
    check_dispatch(CFG, prog.instructions, modes=["hardware"])     # one pending slot: fine
    with pytest.raises(KernelError, match="semaphore race"):
        check_dispatch(CFG, prog.instructions, modes=["golden"])


def test_cycle_model_refuses_functions_the_config_lacks_and_says_no_stop():
    """A UD function on reference hardware is refused with the decoder's
    reason (not an IndexError); a program without a stop fence is reported as
    such, not as a deadlock with nothing waiting."""
    from fsa.cycle import model as cm
    from fsa.cycle import dispatch as cdispatch

    prog = [Matrix(MxFunc.LOAD_Q), Fence(stop=True)]
    with pytest.raises(ValueError, match=r"instruction 0: matrix function LOAD_Q \(code 5\) needs "
                                         r"UD hardware.*ILLEGAL_FUNC"):
        cm.simulate(CFG, prog)
    with pytest.raises(KernelError, match="LOAD_Q"):
        check_dispatch(CFG, prog)
    k = kb()
    k.emit(Matrix(MxFunc.LOAD_Q))
    with pytest.raises(KernelError, match="needs UD hardware"):
        k.build()
    for prog in ([], [Matrix(MxFunc.LOAD_STATIONARY)]):
        with pytest.raises(cm.DispatchError, match="no stop at cycle .* ends without a stop fence"):
            cm.simulate(CFG, prog)
        with pytest.raises(KernelError, match="without a stop fence"):
            check_dispatch(CFG, prog)


def test_kernel_mistakes_raise_kernel_errors_and_leave_state_alone():
    """Tiles of another build or config, bad indices, a refused instruction's
    semaphore, a raw stop fence, default names, inconsistent head arguments:
    each a KernelError naming the mistake (found by an adversarial review)."""
    from fsa.kernel_lang import Input
    from fsa.kernels import attention
    from fsa.kernels.reference import flash_attention

    a, b = kb(), kb()
    wa = a.alloc_mem((4, 4), "fp32", "W", role="input")
    b.alloc_mem((4, 4), "fp32", "X", role="input")
    acc = b.alloc_accumulator(4)
    with pytest.raises(KernelError, match="not a view of a tensor this kernel allocated"):
        b.load_tile(acc, wa)
    big = KernelBuilder(FSAConfig("Big", 4, 4, acc_rows=32), "big")
    big.alloc_accumulator(20)
    far = big.alloc_accumulator(4)
    with pytest.raises(KernelError, match="did not allocate"):
        b.load_tile(far, b.alloc_mem((4, 4), "fp32", "Z", role="input"))
    ya = a.alloc_mem((8, 4), "fp32", "Y")
    b.alloc_mem((4, 4), "fp32", "Y")
    with pytest.raises(KernelError, match="not this kernel's whole tensor 'Y'"):
        b.output(ya)
    for bad in ((1, 2, 3), (1,), slice(None, None, 0), slice(0.5, 2)):
        with pytest.raises(KernelError):
            wa[bad]
        with pytest.raises(KernelError):
            acc[bad]
    with pytest.raises(KernelError, match="cfg must be a preset name"):
        KernelBuilder(4)
    # a refused load leaves the semaphore as it was: the corrected program builds
    k = kb()
    x = k.alloc_mem((4, 4), "fp32", "X", role="input")
    half = k.alloc_mem((4, 4), "fp16", "H", role="input")
    y = k.alloc_mem((4, 4), "fp32", "Y")
    acc, s = k.alloc_accumulator(4), k.semaphore(0, 4)
    with pytest.raises(KernelError, match="fp16 but the accumulator holds fp32"):
        k.load_tile(acc, half, s)
    assert (s.value, s.holder, len(k.instructions)) == (0, None, 0)
    k.load_tile(acc, x, s)
    k.store_tile(y, acc, s)
    k.build(y)
    # a raw stop fence ends the program as fence(stop=True) does
    k = kb()
    k.emit(Fence(stop=True))
    with pytest.raises(KernelError, match="follows fence\\(stop=True\\)"):
        k.emit(Matrix(MxFunc.LOAD_STATIONARY))
    # default names skip the ones taken
    k = kb()
    k.alloc_mem((4, 4), "fp16", "t1")
    assert [k.alloc_mem((4, 4), "fp16").tensor for _ in range(2)] == ["t2", "t3"]
    # the attention kernel's head arguments against its tiles
    e = "fp16"
    for q_rows, kw, words in ((8, dict(seq_q=0), "seq_q = 0"), (12, dict(seq_q=8), "seq_q = 8"),
                              (8, dict(seq_q=4, kv_map=(5, 0)), "kv_map"),
                              (8, dict(seq_q=4, kv_map=(0,)), "kv_map")):
        with pytest.raises(KernelError, match=words):
            flash_attention.build(CFG, Input((q_rows, 4), e), Input((8, 4), e),
                                  Input((4, 8), e), check=False, **kw)
    with pytest.raises(KernelError, match="Vt"):
        flash_attention.build(CFG, Input((8, 4), e), Input((8, 4), e), Input((4, 16), e))
    assert attention(CFG, np.int64(8), np.int64(8)).meta["seq_q"] == 8
    with pytest.raises(ValueError, match="kv_map must be a sequence"):
        attention(CFG, 8, 8, heads=2, kv_heads=1, kv_map=5)
