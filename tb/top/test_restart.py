"""Issue 13 on the device (4x4 fp16, over AXI): restart from DONE is a fresh
program (the kernel runs back to back bit-exact, the instruction index and
the counters restart), the abort register (mid-run under AXI pauses, then a
bit-exact run), and deadlock / no-stop detection with the same outcome as
the golden model (fsa/hw/errors.py)."""
from __future__ import annotations

import pytest

from fsa import config as fconfig
from fsa.golden.machine import Deadlock, Machine, MachineError
from fsa.hw.errors import DEADLOCK_CYCLES, IDLE_CYCLES
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc, encode
from fsa.simdev import run_on_device
from tb.common.programs import kernel_case
from tb.common.tier import SEED

pytestmark = pytest.mark.sim
CFG = fconfig.get("FSA4X4Fp16Config")
STOP = Fence(mx=True, dma=True, stop=True)


def golden_outcome(prog):
    """(error name, index, wait) of the golden model, "NONE" when it stops."""
    try:
        Machine(CFG).run(prog)
    except Deadlock as d:
        return "DEADLOCK", d.index, {"sem_id": d.sem_id, "want": d.want, "have": d.have}
    except MachineError as e:
        return e.code, e.index, None
    return "NONE", None, None


def test_kernel_back_to_back_without_reset_is_bit_exact():
    """The kernel ends with semaphores 4 and 6 at 2: before issue 13 the
    second run waited forever. Three runs, each bit-exact, same counters."""
    prog, image, regions, want = kernel_case()
    words = prog.words()
    res = run_on_device(CFG, [], image, regions, programs=[words] * 3, max_cycles=50000)
    assert len(res["runs"]) == 3
    for k, run in enumerate(res["runs"]):
        assert (run["state"], run["error"]) == ("done", "NONE"), (k, run)
        assert run["dumps"] == want, f"run {k} differs from the golden model"
        c = run["counters"]
        assert c["enq"] == c["deq"] == c["words"] == len(words), (k, c)
        assert c == res["runs"][0]["counters"], k


def test_index_and_counters_restart_after_done():
    """Words pushed while DONE are counted in the new run (enq read 0 while
    deq and words read 54); after DONE, a program with an illegal word at
    index 1 reports index 1 (it was 41 + ...: the index accumulated); a start
    in ERROR is ignored, an abort leaves ERROR and the next program runs."""
    first = encode([Fence(mx=True)] * 40 + [STOP])
    second = encode([Fence(dma=True)] * 53 + [STOP])          # pushed while DONE
    third = encode([Fence(mx=True)]) + [0xE0000000]
    res = run_on_device(CFG, [], [(CFG.mem_base, bytes(64))], [],
                        programs=[first, second, third, encode([STOP])], max_cycles=5000)
    r1, r2, r3, r4 = res["runs"]
    assert r1["state"] == "done" and r1["counters"]["fence"] == 41, r1
    assert r2["state"] == "done", r2
    c = r2["counters"]
    assert c["enq"] == c["deq"] == c["words"] == 54 and c["fence"] == 54, c
    assert (r3["state"], r3["error"], r3["error_index"]) == ("error", "ILLEGAL_TYPE", 1), r3
    assert r3["start_in_error"] == "error", r3          # a start in ERROR is ignored
    assert (r4["state"], r4["error"], r4["error_index"]) == ("done", "NONE", 0), r4
    assert r4["counters"]["words"] == 1 and r4["counters"]["enq"] == 1, r4


def test_deadlock_is_detected_like_the_golden_model():
    prog = [Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG.mem_base, size=8),
            Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True, acquire_value=2),
            Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG.mem_base, size=8, sem_id=7,
                acquire_valid=True, acquire_value=1), STOP]
    res = run_on_device(CFG, encode(prog), [(CFG.mem_base, bytes(64))], [], max_cycles=5000)
    run = res["runs"][-1]
    code, index, wait = golden_outcome(prog)
    assert (code, index) == ("DEADLOCK", 1)
    assert (run["state"], run["error"], run["error_index"], run["wait"]) == \
        ("error", code, index, wait), run
    # the DMA load (a few dozen cycles) then at most DEADLOCK_CYCLES + a few
    assert run["waited"] <= 64 + DEADLOCK_CYCLES, run


def test_held_semaphore_deadlock_matches_the_golden_model():
    """An acquire without a release keeps the semaphore held: the next
    acquire of it fails although the value matches (have == want)."""
    ld = dict(repeat=1, sram_addr=0, mem_addr=CFG.mem_base, size=8, sem_id=2,
              acquire_valid=True, acquire_value=0)
    prog = [Dma(DmaFunc.LOAD, **ld), Dma(DmaFunc.LOAD, **ld), STOP]
    res = run_on_device(CFG, encode(prog), [(CFG.mem_base, bytes(64))], [], max_cycles=5000)
    run = res["runs"][-1]
    code, index, wait = golden_outcome(prog)
    assert (code, index, wait) == ("DEADLOCK", 1, {"sem_id": 2, "want": 0, "have": 0})
    assert (run["state"], run["error"], run["error_index"], run["wait"]) == \
        ("error", code, index, wait), run


def test_both_engines_blocked_with_the_queue_empty_is_a_deadlock_at_once():
    """Both pending registers hold an instruction whose acquire fails and
    the queue is empty: no later instruction could ever reach an engine to
    release them, so the device reports DEADLOCK after DEADLOCK_CYCLES (not
    after IDLE_CYCLES, as when one engine is free).  Word streams with an
    illegal word behind such a pair: the decoder is free, so it sees the word
    (ILLEGAL_TYPE); behind a third instruction it never does (DEADLOCK).  The
    golden model says the same each time."""
    pair = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=3, acquire_valid=True, acquire_value=1),
            Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG.mem_base, size=8, sem_id=4,
                acquire_valid=True, acquire_value=2)]
    dead = ("DEADLOCK", 0, {"sem_id": 3, "want": 1, "have": 0})
    cases = [(encode(pair), dead),
             (encode(pair) + [0xE0000000] + encode([STOP]), ("ILLEGAL_TYPE", 2, None)),
             (encode(pair + [Matrix(MxFunc.LOAD_STATIONARY)]) + [0xE0000000] + encode([STOP]),
              dead)]
    res = run_on_device(CFG, [], [(CFG.mem_base, bytes(64))], [],
                        programs=[w for w, _ in cases], max_cycles=3 * IDLE_CYCLES)
    for (words, want), run in zip(cases, res["runs"]):
        code, index, wait = golden_outcome(words)
        assert (code, index, wait) == want, words
        assert (run["state"], run["error"], run["error_index"], run["wait"]) == \
            ("error", code, index, wait or {"sem_id": 0, "want": 0, "have": 0}), run
        assert run["waited"] <= 16 + DEADLOCK_CYCLES, run


@pytest.mark.parametrize("pauses", [0.0, 0.3], ids=["no-pauses", "random-pauses"])
def test_no_stop_empty_and_dry_deadlock_match_the_golden_model(pauses):
    """Programs that run dry (no stop fence, the empty program, a blocked
    instruction with the queue empty) end after IDLE_CYCLES idle cycles with
    the golden model's code and index; the device is aborted between them."""
    progs = [[], [Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG.mem_base, size=8)],
             [Fence(dma=True)],
             [Matrix(MxFunc.LOAD_STATIONARY, sem_id=3, acquire_valid=True, acquire_value=1)],
             [STOP]]
    res = run_on_device(CFG, [], [(CFG.mem_base, bytes(64))], [],
                        programs=[encode(p) for p in progs], max_cycles=3 * IDLE_CYCLES,
                        pauses=pauses, seed=SEED)
    for p, run in zip(progs, res["runs"]):
        code, index, wait = golden_outcome(p)
        if code == "NONE":
            assert (run["state"], run["error"]) == ("done", "NONE"), run
            continue
        assert (run["state"], run["error"], run["error_index"]) == ("error", code, index), (p, run)
        if wait is not None:
            assert run["wait"] == wait, run
        # (waited counts from the start write's response: a cycle or two after the start)
        assert IDLE_CYCLES - 4 <= run["waited"] <= IDLE_CYCLES + 200, run
    assert [r["error"] for r in res["runs"]] == ["NO_STOP", "NO_STOP", "NO_STOP", "DEADLOCK",
                                                 "NONE"]


@pytest.mark.parametrize("at", [40, 150])
def test_abort_midway_under_pauses_then_bit_exact_run(at):
    """Abort the kernel while DMA bursts are in flight under random AXI
    pauses: the device drains them, empties its queue and is IDLE with the
    error register clear; the same kernel then runs bit-exact (a burst left
    dangling would feed stale beats into it)."""
    prog, image, regions, want = kernel_case(4, 12)
    words = encode(list(prog.instructions))
    res = run_on_device(CFG, words, image, regions, max_cycles=50000, pauses=0.3, seed=SEED,
                        abort_midway=at)
    assert res["midway"]["state"] == "active", res["midway"]
    assert res["midway"]["counters"]["dma_active"] > 0, res["midway"]
    after = res["after_abort"]
    assert (after["state"], after["error"], after["error_index"]) == ("idle", "NONE", 0), after
    assert after["q_free"] == CFG.inst_queue_size, after
    run = res["runs"][-1]
    assert (run["state"], run["error"]) == ("done", "NONE"), run
    assert run["dumps"] == want
    c = run["counters"]
    assert c["enq"] == c["deq"] == c["words"] == len(words), c


def test_abort_after_a_dma_error_clears_it():
    """A DMA error is sticky in the DMA engine: after an abort the next
    program's DMA instructions run (they would complete at once without
    traffic otherwise) and the result is bit-exact."""
    bad = [Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG.mem_base - 0x1000, size=8),
           STOP]
    prog, image, regions, want = kernel_case()
    res = run_on_device(CFG, [], image, regions,
                        programs=[encode(bad), encode(list(prog.instructions))],
                        max_cycles=50000)
    r1, r2 = res["runs"]
    assert (r1["state"], r1["error"]) == ("error", "MEM_RANGE"), r1
    assert (r2["state"], r2["error"]) == ("done", "NONE"), r2
    assert r2["dumps"] == want
