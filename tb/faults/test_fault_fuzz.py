"""Differential fault fuzzing (issue 38 item 2, ``tb/faults/fuzz.py``):
random programs, legal and faulty, on the golden model and on the device,
4x4 reference and UD, all programs of a test in one simulator run (the fast
memory path on Verilator, cocotbext-axi's memory on Icarus): state, error
code, instruction index, wait register and the memory each program leaves
are equal, program by program.  A difference fails with the program,
minimised (``fuzz.minimise``), in the message.

Default tier: ``FAULT_PROGRAMS`` (default 250) programs per config;
``FULL=1``: 2,000 per config in the ``full`` test.  ``SEED=n`` changes the
programs.  Found so far: the precedence of a range fault over a semaphore
wait and over a younger DMA's error, decode faults racing an older DMA's
checks, and two engines taking one semaphore in the same cycle
(``fsa/hw/errors.py``, ``rtl/fsa_sem.py``).
"""
from __future__ import annotations

import collections
import os

import pytest

from fsa import config as fconfig
from fsa.simrun import get_sim
from tb.common.tier import FULL, SEED
from tb.faults import fuzz

pytestmark = pytest.mark.sim

N_PROGRAMS = int(os.environ.get("FAULT_PROGRAMS", "250"))
N_FULL = 2000
CONFIGS = ["FSA4X4Fp16Config", "FSA4X4Fp16UdConfig"]


def session(name: str, seed: int, count: int) -> collections.Counter:
    cfg = fconfig.get(name)
    progs, golden = fuzz.generate(cfg, seed, count)
    if get_sim() == "icarus":        # (the slow path: a tenth of the programs)
        progs, golden = progs[:max(20, count // 10)], golden[:max(20, count // 10)]
    rtl = fuzz.device_runs(cfg, seed, progs)
    diffs = fuzz.differences(golden, rtl, fuzz.initial_memory(cfg, seed))
    if diffs:
        k, why = diffs[0]
        small, small_why = fuzz.minimise(cfg, seed, progs[k])
        pytest.fail(f"{cfg.name} seed {seed}: {len(diffs)} of {len(progs)} programs differ; "
                    f"the first, program {k}: {why}\nminimised ({small_why}):\n"
                    f"{fuzz.describe(small)}")
    return collections.Counter(o.error for o in golden)


@pytest.mark.parametrize("name", CONFIGS)
def test_fault_fuzz(name):
    seen = session(name, SEED * 1000 + 38, N_PROGRAMS)
    # the programs reach every core fault and most DMA ones, and finish too
    want = {"NONE", "ILLEGAL_TYPE", "ILLEGAL_FUNC", "SRAM_RANGE", "DMA_ALIGN", "DEADLOCK",
            "NO_STOP", "MEM_RANGE"}
    assert want <= set(seen), (sorted(want - set(seen)), seen)


@pytest.mark.full
@pytest.mark.parametrize("name", CONFIGS)
def test_fault_fuzz_full(name):
    if not FULL:
        pytest.skip("long sweep: FULL=1")
    session(name, SEED * 1000 + 3800, N_FULL)


def test_generator_is_seeded_and_varied():
    """The same seed gives the same programs; the programs are varied."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    a, oa = fuzz.generate(cfg, 5, 40)
    b, ob = fuzz.generate(cfg, 5, 40)
    assert a == b and [o.key() for o in oa] == [o.key() for o in ob]
    c, _ = fuzz.generate(cfg, 6, 40)
    assert a != c
    assert len({o.error for o in oa}) >= 4, [o.error for o in oa]


def test_issue_38_program_reports_the_range_fault():
    """The issue's program: a LOAD_STATIONARY outside the scratchpad that
    waits for a semaphore that never comes, then a stop: SRAM_RANGE at 0 (the
    range is checked while pending, before the semaphore)."""
    from fsa.golden.machine import Machine
    m = Machine(fconfig.get("FSA4X4Fp16Config"))
    out = fuzz.golden_run(m, [0x23900000, 0x186A0060, 0x00000000, 0x1C000000])
    assert (out.state, out.error, out.index, out.wait) == ("error", "SRAM_RANGE", 0, fuzz.NO_WAIT)


def test_differences_counts_each_difference_once():
    """A memory difference is reported by the program that made it, not by
    every program after it; a state difference is reported."""
    z = bytes(8)
    one = bytes([1]) + bytes(7)
    g = [fuzz.Outcome("done", "NONE", 0, dict(fuzz.NO_WAIT), one)] * 3
    d = [fuzz.Outcome("done", "NONE", 0, dict(fuzz.NO_WAIT), z)] * 3
    assert [k for k, _ in fuzz.differences(g, d, z)] == [0]
    d2 = [g[0], fuzz.Outcome("error", "DEADLOCK", 1, dict(fuzz.NO_WAIT), one), g[0]]
    assert [k for k, _ in fuzz.differences(g, d2, z)] == [1]


def _examples(cfg):
    """(name, program words, (state, error, index, wait)) of docs/faults.md's
    precedence examples."""
    from fsa import isa
    from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc
    stop = isa.encode([Fence(mx=True, dma=True, stop=True)])
    base = cfg.mem_base + 0x100
    never = dict(sem_id=3, acquire_valid=True, acquire_value=1)
    far = Matrix(func=MxFunc.LOAD_STATIONARY, wait_prev_acc=True, spad_addr=100, spad_stride=1)
    big = Dma(func=DmaFunc.LOAD, repeat=1, sram_addr=20, mem_addr=base, size=64)
    late = Dma(func=DmaFunc.LOAD, repeat=3, sram_addr=20, sram_stride=1, mem_addr=cfg.mem_base,
               mem_stride=-cfg.spad_row_bytes, size=cfg.spad_row_bytes)
    bad_func = fuzz._set_func(isa.encode([far]), "MATRIX", 31)
    score = Matrix(func=MxFunc.ATTENTION_SCORE, wait_prev_acc=True, rev_input=True,
                   rev_output=True, delay_output=True, spad_addr=0, spad_stride=1, acc_addr=0,
                   sem_id=2, release_valid=True, release_value=1)
    hold_mx = Matrix(func=MxFunc.ATTENTION_LSE_NORM_SCALE, wait_prev_acc=True, acc_addr=1,
                     sem_id=2, acquire_valid=True, acquire_value=1)
    hold_dma = Dma(func=DmaFunc.STORE, repeat=1, sram_addr=20, mem_addr=base, size=8, sem_id=2,
                   acquire_valid=True, acquire_value=1)
    w0 = dict(fuzz.NO_WAIT)
    return [
        ("issue 38", [0x23900000, 0x186A0060, 0x00000000, 0x1C000000], ("error", "SRAM_RANGE", 0, w0)),
        ("range before a younger DMA's size", isa.encode([Matrix(**{**far.__dict__, **never}), big])
         + stop, ("error", "SRAM_RANGE", 0, w0)),
        ("an older DMA's row before the decoder's fault", isa.encode([late]) + bad_func + stop,
         ("error", "MEM_RANGE", 0, w0)),
        ("range before a younger bad function", isa.encode([far]) + bad_func + stop,
         ("error", "SRAM_RANGE", 0, w0)),
        ("one holder of a semaphore both engines take", isa.encode([score, hold_mx, hold_dma])
         + stop, ("error", "DEADLOCK", 2, {"sem_id": 2, "want": 1, "have": 1})),
    ]


def test_precedence_examples_on_the_golden_model():
    from fsa.golden.machine import Machine
    cfg = fconfig.get("FSA4X4Fp16Config")
    for name, words, want in _examples(cfg):
        out = fuzz.golden_run(Machine(cfg), words)
        assert (out.state, out.error, out.index, out.wait) == want, (name, out.key())


def test_precedence_examples_on_the_device():
    cfg = fconfig.get("FSA4X4Fp16Config")
    ex = _examples(cfg)
    rtl = fuzz.device_runs(cfg, 7, [[w] for _, w, _ in ex])
    for (name, _, want), out in zip(ex, rtl):
        assert (out.state, out.error, out.index, out.wait) == want, (name, out.key())


def test_minimise_shrinks_to_the_instruction_that_matters(monkeypatch):
    """With a fake device that gets every program holding an unknown-type
    word wrong (index 0 reported), a long program shrinks to that word (and at
    most one other instruction)."""
    from fsa.golden.machine import Machine
    cfg = fconfig.get("FSA4X4Fp16Config")
    bad = 0xE0000000

    def fake_device(cfg, seed, progs, sim=None):
        outs = []
        m = Machine(cfg)
        m.mem.write(cfg.mem_base, fuzz.initial_memory(cfg, seed))
        for p in progs:
            o = fuzz.golden_run(m, fuzz.flat(p))
            if bad in fuzz.flat(p):
                o.index = o.index + 1
            outs.append(o)
        return outs

    monkeypatch.setattr(fuzz, "device_runs", fake_device)
    progs, outs = fuzz.generate(cfg, 11, 30)
    prog = max((p for p, o in zip(progs, outs) if o.error == "NONE"), key=len)
    prog = prog[:len(prog) // 2] + [[bad]] + prog[len(prog) // 2:]
    assert len(prog) >= 6
    small, why = fuzz.minimise(cfg, 11, prog)
    assert [bad] in small and len(small) <= 2, (small, why)
    assert "ILLEGAL_TYPE" in why


def test_status_checks_its_conditions_in_the_contracts_order():
    """rtl/fsa_status.py's chain of error conditions is in the order of
    fsa.hw.errors.PRECEDENCE (read from its source: the first assignment of
    each code in the running branch)."""
    import inspect

    from fsa.hw import errors
    from rtl import fsa_status
    src = inspect.getsource(fsa_status.fsa_status)
    src = src[src.index("elif state == ACTIVE:"):]
    marks = {"SRAM_RANGE": "err_code.next = E_RANGE", "ILLEGAL_TYPE": "err_code.next = E_TYPE",
             "ILLEGAL_FUNC": "err_code.next = E_FUNC", "DMA": "err_code.next = BASE",
             "FETCH": "err_code.next = E_FRANGE", "DONE": "state.next = DONE",
             "QUIET": "err_code.next = E_DEAD"}
    order = sorted(marks, key=lambda k: src.index(marks[k]))
    assert tuple(order) == errors.PRECEDENCE, order
    assert set(errors.DEFERRED) == {"ILLEGAL_TYPE", "ILLEGAL_FUNC", "SRAM_RANGE"}
