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
