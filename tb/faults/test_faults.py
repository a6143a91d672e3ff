"""The fault matrix at device level (issue 13 item 5), with random AXI pauses
on all five channels of the memory port and of the AXI4-Lite control port in
every case: SLVERR and DECERR on reads and writes at the first, a middle and
the last beat of a DMA instruction; the AXI protocol violations the DMA
detects (wrong RID/BID, missing and early RLAST, a stray R beat, a stray B
response; fsa/harness/axi_faults.py); illegal words at seeded random positions;
out-of-range SRAM rows; deadlock (a semaphore never released, a semaphore
held); the empty program and a program without a stop fence (NO_STOP);
reset and abort in the middle of a run; a second program started from DONE;
start pressed repeatedly, while running and in ERROR; pushes while running,
done and in error.

All cases run in ONE simulation (tb/faults/tb_faults.py, 4x4 fp16, the cached
fsa_top build), reset once at the beginning: each case starts from the DONE
state the previous case's clean run left. Each pytest item below checks one
case's record: the reported state, error code, instruction index (and for
DEADLOCK the wait register; DEADLOCK and NO_STOP expectations come from the
golden model), the cycles from the fault to irq (bounded), and that after
the recovery -- the abort register for every fault it applies to, the reset
pin for a reset mid-run and two duplicated error cases, nothing for a case
that ends DONE with an empty queue -- the device is IDLE (or DONE), clean,
no AXI burst owed, and a clean attention run is bit-exact against the
golden model. ``FULL=1`` adds more seeded random positions, reset and abort
points and beat choices, and runs the whole matrix again on the two-port
4x4 config.

``FAULTS_DOC=1`` rewrites the measured table of docs/faults.md from this
run's records (the cycles there are measured, never typed in).
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa import simrun
from fsa.golden.machine import Deadlock, Machine, MachineError
from fsa.hw.errors import DEADLOCK_CYCLES, IDLE_CYCLES
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc, encode
from tb.common.programs import simple_attention_program
from tb.common.tier import FULL, SEED

pytestmark = pytest.mark.sim
CFG = fconfig.get("FSA4X4Fp16Config")
#: FULL=1 also runs the matrix on two memory ports (rows alternate between them)
CONFIGS = [CFG] + ([fconfig.get("FSA4X4Fp16TwoPortConfig")] if FULL else [])
PAUSES = 0.3                     # memory channels
LITE_PAUSES = 0.3                # AXI4-Lite channels
#: cycles from the faulty R/B handshake to irq (the DMA flags the beat, the
#: core enters ERROR), measured: the same for every AXI fault and pause pattern
AXI_DETECT = 2
#: bound on the cycles from the start write to irq for a faulty first instruction
#: (decode and the DMA's up-front checks; measured 4..10)
FIRST_DETECT_LIMIT = 16
#: bound on the cycles from the start write to irq for a deadlock: the DMA
#: LOAD before the blocked instruction (under pauses), then DEADLOCK_CYCLES
DEADLOCK_DETECT_LIMIT = 150 + DEADLOCK_CYCLES
#: a program that runs dry ends IDLE_CYCLES after its last activity: the
#: bound adds the instructions before (a DMA LOAD under pauses)
DRY_DETECT = (IDLE_CYCLES, IDLE_CYCLES + 200)
#: bound on the host's abort (write 0x50, poll state until IDLE; under
#: AXI4-Lite and memory pauses, bursts in flight drained)
ABORT_LIMIT = 400
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- programs
def clean_program(cfg):
    """The clean run after each fault: attention 4 x 8 (fits in the queue)."""
    R = cfg.sa_rows
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(rng.standard_normal((n, R)), cfg.e_type) for n in (4, 8, 8))
    prog, (q_at, k_at, vt_at, ot_at) = simple_attention_program(cfg, 4, 8, False, cfg.mem_base)
    memory = [(q_at, q.tobytes()), (k_at, k.tobytes()), (vt_at, np.ascontiguousarray(v.T).tobytes())]
    dump = (ot_at, R * 4 * cfg.a_fmt.bytes)
    return prog, memory, dump


def matrix_words(cfg_name) -> list[int]:
    """The clean program's words on that config."""
    cfg = next(c for c in CONFIGS if c.name == cfg_name)
    return encode(clean_program(cfg)[0])


def golden_dump(cfg, prog, memory, dump) -> bytes:
    m = Machine(cfg)
    for a, b in memory:
        m.mem.write(a, b)
    m.run(prog)
    return bytes(m.mem.read(*dump))


def golden_outcome(cfg, prog):
    """(error name, index, wait) the golden model reports for `prog`
    ("NONE", None, None when it stops)."""
    try:
        Machine(cfg).run(prog)
    except Deadlock as d:
        return "DEADLOCK", d.index, {"sem_id": d.sem_id, "want": d.want, "have": d.have}
    except MachineError as e:
        return e.code, e.index, None
    return "NONE", None, None


def axi_programs(cfg):
    """A LOAD and a STORE of 4 accumulator rows (2 beats each: 8 beats), the
    DMA instruction at index 1; and the beat addresses of each."""
    base, ac = cfg.mem_base, cfg.acc_row_bytes
    load = [Fence(mx=True), Dma(DmaFunc.LOAD, repeat=4, sram_addr=0, sram_stride=1, is_accum=True,
                                mem_addr=base + 0x100, mem_stride=ac, size=ac),
            Fence(dma=True, stop=True)]
    store = [Fence(mx=True), Dma(DmaFunc.STORE, repeat=4, sram_addr=0, sram_stride=1,
                                 is_accum=True, mem_addr=base + 0x200, mem_stride=ac, size=ac),
             Fence(dma=True, stop=True)]
    beats = 4 * ac // cfg.mem_align
    return {"read": (load, [base + 0x100 + cfg.mem_align * i for i in range(beats)]),
            "write": (store, [base + 0x200 + cfg.mem_align * i for i in range(beats)])}


def fault(direction, addr, resp, cfg):
    return dict(direction=direction, lo=addr, hi=addr + cfg.mem_align, resp=resp, times=1)


def filler(rng, cfg, n):
    """n harmless instructions: fences and one-row LOADs."""
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append(Fence(mx=rng.random() < 0.5, dma=rng.random() < 0.5))
        else:
            out.append(Dma(DmaFunc.LOAD, repeat=1, sram_addr=rng.randrange(cfg.spad_rows),
                           mem_addr=cfg.mem_base + 8 * rng.randrange(64), size=8))
    return out


def illegal(rng, what):
    """The words of one illegal instruction."""
    if what == "type":
        return [(rng.randrange(3, 8) << 29) | rng.getrandbits(29)]
    if what == "mx_func":
        return [(1 << 29) | (rng.randrange(5, 32) << 11), 0, 0]
    return [(2 << 29) | (rng.randrange(2, 16) << 12) | (1 << 3), 0, 0, 0]   # dma_func


def build_cases(cfg):
    """[(case for the bench, expectation for the check)]."""
    rng = random.Random(SEED)
    base = cfg.mem_base
    scratch = [(base, bytes(range(256)) * 4)]
    mem = [[a, b.hex()] for a, b in scratch]
    cases = []

    def add(case, **expect):
        case.setdefault("memory", mem)
        # two random points may coincide (FULL=1): number the repeat so that
        # no case is dropped by its name
        names = {c["name"] for c, _ in cases}
        base, n = case["name"], 2
        while case["name"] in names:
            case["name"] = f"{base}-{n}"
            n += 1
        cases.append((case, expect))

    # AXI error responses: first, a middle and the last beat of the instruction
    for direction, (prog, addrs) in axi_programs(cfg).items():
        code = "AXI_RD_ERR" if direction == "read" else "AXI_WR_ERR"
        picks = {"first": 0, "middle": len(addrs) // 2, "last": len(addrs) - 1}
        if FULL:
            picks |= {f"beat{i}": i for i in range(1, len(addrs) - 1) if i != len(addrs) // 2}
        for resp in ("SLVERR", "DECERR"):
            for where, i in picks.items():
                add({"name": f"{resp}-{direction}-{where}", "kind": "program", "words": encode(prog),
                     "faults": [fault(direction, addrs[i], resp, cfg)]},
                    error=code, index=1, axi=True, what=f"{resp} on the {where} {direction} beat")
    # protocol violations (the acc rows are 2-beat bursts)
    (load, raddrs), (store, waddrs) = axi_programs(cfg).values()
    for resp, direction, addr, code, what in [
            ("RID", "read", raddrs[3], "AXI_RD_ERR", "R beat with RID != 0"),
            ("NO_RLAST", "read", raddrs[5], "AXI_RD_ERR", "last R beat without RLAST"),
            ("EARLY_RLAST", "read", raddrs[2], "AXI_RD_ERR", "RLAST on the first beat of 2"),
            ("STRAY_B", "read", raddrs[0], "AXI_WR_ERR", "B response during a LOAD (no write outstanding)"),
            ("BID", "write", waddrs[1], "AXI_WR_ERR", "B response with BID != 0"),
            ("STRAY_R", "write", waddrs[0], "AXI_RD_ERR", "R beat during a STORE (no read outstanding)")]:
        prog = load if direction == "read" else store
        add({"name": f"{resp}", "kind": "program", "words": encode(prog),
             "faults": [fault(direction, addr, resp, cfg)]}, error=code, index=1, axi=True, what=what)
    # illegal words at random positions
    kinds = ["type", "mx_func", "dma_func"] * (3 if FULL else 1)
    for n, what in enumerate(kinds):
        pre = filler(rng, cfg, rng.randrange(0, 6))
        words = encode(pre) + illegal(rng, what) + encode(filler(rng, cfg, 2) + [Fence(stop=True)])
        add({"name": f"illegal-{what}-at-{len(pre)}", "kind": "program", "words": words},
            error="ILLEGAL_TYPE" if what == "type" else "ILLEGAL_FUNC", index=len(pre),
            what=f"illegal {what.replace('_', ' ')} word at instruction {len(pre)}")
    # the same faults as the first instruction: cycles from start to the error
    for what in ("type", "mx_func", "dma_func"):
        add({"name": f"illegal-{what}-first", "kind": "program",
             "words": illegal(rng, what) + encode([Fence(stop=True)])},
            error="ILLEGAL_TYPE" if what == "type" else "ILLEGAL_FUNC", index=0, from_start=True,
            what=f"illegal {what.replace('_', ' ')} word as the first instruction")
    # out-of-range SRAM rows
    for name, instr, code in [
            ("mx-spad", Matrix(MxFunc.LOAD_STATIONARY, spad_addr=cfg.spad_rows), "SRAM_RANGE"),
            ("mx-acc", Matrix(MxFunc.ATTENTION_VALUE, spad_addr=0, acc_addr=cfg.acc_rows - 1,
                              acc_stride=1), "SRAM_RANGE"),
            ("dma-spad", Dma(DmaFunc.LOAD, repeat=2, sram_addr=cfg.spad_rows - 1, sram_stride=1,
                             mem_addr=base, mem_stride=8, size=8), "DMA_SRAM_RANGE"),
            ("dma-acc", Dma(DmaFunc.STORE, repeat=1, sram_addr=cfg.acc_rows, is_accum=True,
                            mem_addr=base, size=16), "DMA_SRAM_RANGE")]:
        add({"name": f"sram-range-{name}", "kind": "program",
             "words": encode([instr, Fence(mx=True, dma=True, stop=True)])},
            error=code, index=0, from_start=True, what=f"{name.replace('-', ' ')} row out of range")
        k = rng.randrange(1, 5)
        add({"name": f"sram-range-{name}-at-{k}", "kind": "program",
             "words": encode(filler(rng, cfg, k) + [instr, Fence(mx=True, dma=True, stop=True)])},
            error=code, index=k, what=f"{name.replace('-', ' ')} row out of range at {k}")
    # the DMA's own checks (as the first instruction)
    for name, instr, code in [
            ("outside the memory window", Dma(DmaFunc.LOAD, repeat=1, sram_addr=0,
                                              mem_addr=base - 0x1000, size=8), "MEM_RANGE"),
            ("address not a beat multiple", Dma(DmaFunc.LOAD, repeat=1, sram_addr=0,
                                                    mem_addr=base + 4, size=8), "DMA_ALIGN"),
            ("size larger than the SRAM row", Dma(DmaFunc.LOAD, repeat=1, sram_addr=0,
                                                      mem_addr=base, size=cfg.spad_row_bytes + 8),
             "DMA_SIZE")]:
        add({"name": f"dma-{code.lower()}", "kind": "program",
             "words": encode([instr, Fence(dma=True, stop=True)])},
            error=code, index=0, from_start=True, what=f"DMA row {name}")
    # deadlock (the golden model gives the code, index and semaphore) and
    # programs that run dry: the empty program, no stop fence
    ld = dict(repeat=1, sram_addr=0, mem_addr=base, size=8)
    held = dict(ld, sem_id=2, acquire_valid=True, acquire_value=0)
    stop = Fence(mx=True, dma=True, stop=True)
    for name, prog, what in [
            ("deadlock", [Dma(DmaFunc.LOAD, **ld),
                          Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True,
                                 acquire_value=2),
                          Dma(DmaFunc.LOAD, **ld, sem_id=7, acquire_valid=True, acquire_value=1),
                          stop], "deadlock: semaphores never released"),
            ("deadlock-held", [Dma(DmaFunc.LOAD, **held), Dma(DmaFunc.LOAD, **held), stop],
             "deadlock: a semaphore acquired and never released"),
            ("empty-program", [], "the empty program"),
            ("no-stop", [Fence(mx=True), Dma(DmaFunc.LOAD, **ld)],
             "a program without a stop fence")]:
        code, index, wait = golden_outcome(cfg, prog)
        exp = dict(error=code, index=index, from_start=True, what=what,
                   dry=name in ("empty-program", "no-stop"))
        if wait is not None:
            exp["wait"] = wait
        add({"name": name, "kind": "program", "words": encode(prog),
             "max_cycles": 3 * IDLE_CYCLES}, **exp)
    # reset in the middle of a run (the reset pin is the recovery), abort in
    # the middle of a run (early: DMA bursts in flight; and a random point
    # before the clean program's end, which the cycle model predicts)
    from fsa.cycle import model as cm
    end = min(400, cm.simulate(cfg, clean_program(cfg)[0]).cycles - 20)
    for n in range(3 if FULL else 1):
        cyc = rng.randrange(20, end)
        add({"name": f"reset-midway-{cyc}", "kind": "reset_midway", "cycles": cyc,
             "max_cycles": 50000, "recovery": "reset"},
            state="active", what=f"reset {cyc} cycles after start")
    for k, cyc in enumerate([40] + [rng.randrange(20, end) for _ in range(3 if FULL else 1)]):
        burst = k == 0
        add({"name": f"abort-midway-{cyc}" + ("-burst" if burst else ""), "kind": "abort_midway",
             "cycles": cyc, "in_flight": burst, "max_cycles": 50000},
            state="idle", error="NONE", index=0,
            what=f"abort {cyc} cycles after start" + (
                " (at the first cycle from then with an AXI burst in flight)" if burst else ""))
    # the same faults recovered by the reset pin instead of the abort
    (load, raddrs), _ = axi_programs(cfg).values()
    add({"name": "SLVERR-read-first-reset", "kind": "program", "words": encode(load),
         "faults": [fault("read", raddrs[0], "SLVERR", cfg)], "recovery": "reset"},
        error="AXI_RD_ERR", index=1, axi=True, what="SLVERR on the first read beat")
    code, index, wait = golden_outcome(cfg, [Dma(DmaFunc.LOAD, **held),
                                             Dma(DmaFunc.LOAD, **held), stop])
    add({"name": "deadlock-held-reset", "kind": "program", "recovery": "reset",
         "words": encode([Dma(DmaFunc.LOAD, **held), Dma(DmaFunc.LOAD, **held), stop]),
         "max_cycles": 3 * IDLE_CYCLES}, error=code, index=index, wait=wait, from_start=True,
        what="deadlock: a semaphore acquired and never released")
    # a second program on the same device (started from DONE), start pressed
    # repeatedly (back to back, from DONE)
    add({"name": "start-from-done", "kind": "start_done", "max_cycles": 50000,
         "recovery": "none"}, state="done", error="NONE",
        what="a second program started from DONE (pushed while DONE)")
    add({"name": "start-repeated", "kind": "start_repeated", "times": 4, "max_cycles": 50000,
         "recovery": "none"}, state="done", error="NONE",
        what="start written 4 times back to back (from DONE)")
    illegal_prog = encode([Fence(mx=True)]) + [0xE0000000] + encode([Fence(stop=True)])
    add({"name": "start-while-active", "kind": "start_active", "times": 3, "max_cycles": 50000,
         "recovery": "none"},
        state="done", what="start written 3 more times while running")
    add({"name": "start-in-error", "kind": "start_error", "times": 3, "words": illegal_prog},
        state="error", error="ILLEGAL_TYPE", index=1, what="start written 3 times in ERROR")
    add({"name": "push-in-error", "kind": "push_error", "extra": 3, "words": illegal_prog},
        state="error", error="ILLEGAL_TYPE", index=1, refused=3,
        what="pushes in ERROR (queue filled, 3 more)")
    add({"name": "push-when-done", "kind": "push_done", "extra": 3,
         "words": encode([Fence(mx=True), Fence(dma=True, stop=True)])},
        state="done", error="NONE", refused=3, what="pushes in DONE (queue filled, 3 more)")
    add({"name": "push-while-running", "kind": "push_running", "max_cycles": 50000,
         "tail": [0xE0000000, 0xFFFFFFFF, 0, 0x40000000]},
        state="done", error="NONE", what="illegal words pushed behind the stop fence while running")
    assert len({c["name"] for c, _ in cases}) == len(cases), "fault case names must be unique"
    return cases


# ---------------------------------------------------------------- the run
CASES = {cfg.name: build_cases(cfg) for cfg in CONFIGS}
EXPECT = {(n, c["name"]): e for n, cases in CASES.items() for c, e in cases}


def run_matrix(cfg, folder: Path):
    """Run every case of `cfg` in one simulation; ({case name: record}, the
    golden clean output, the whole result)."""
    from fsa.hw.verilog import generate
    from fsa.simdev import device_build
    prog, memory, dump = clean_program(cfg)
    words = encode(prog)
    assert len(words) <= cfg.inst_queue_size
    spec = {"config": cfg.to_dict(), "seed": SEED, "pauses": PAUSES, "lite_pauses": LITE_PAUSES,
            "clean": {"words": words, "memory": [[a, b.hex()] for a, b in memory],
                      "dump": list(dump), "max_cycles": 50000},
            "cases": [c for c, _ in CASES[cfg.name]]}
    path = folder / "case.json"
    path.write_text(json.dumps(spec))
    out = generate(cfg, quiet=True)
    top, srcs, public = device_build(out)         # the device tests' shared build
    tdir = simrun.run(top, srcs, "tb.faults.tb_faults", name=f"fault_matrix_{cfg.name}",
                      extra_env={"FSA_CASE": str(path)}, timeout_s=1800, public=public)
    res = json.loads((tdir / "result.json").read_text())
    recs = {r["name"]: r for r in res["cases"]}
    return recs, golden_dump(cfg, prog, memory, dump), res


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """{config name: run_matrix(...)}, each config simulated once, on first use."""
    done = {}

    def get(name):
        if name not in done:
            cfg = next(c for c in CONFIGS if c.name == name)
            try:
                done[name] = run_matrix(cfg, tmp_path_factory.mktemp("faults"))
            except Exception as e:            # fail every item with it, without rerunning
                done[name] = e
            if os.environ.get("FAULTS_DOC") and name == CFG.name and \
                    not isinstance(done[name], Exception):
                write_doc(done[name][0])
        if isinstance(done[name], Exception):
            raise done[name]
        return done[name]
    return get


def detect_cycles(rec, exp):
    """Cycles from the fault to irq: from the first faulty R/B handshake the
    checkers saw (AXI faults) or from the accepted start write (the rest)."""
    t0s = [v[0] for v in rec["violations"]] if exp.get("axi") else rec["starts"]
    if not rec["irq_rises"] or not t0s:
        return None
    t0 = t0s[0]
    return rec["irq_rises"][0] - t0


@pytest.mark.parametrize("cfg_name,name", list(EXPECT),
                         ids=[n if c == CFG.name else f"{c}:{n}" for c, n in EXPECT])
def test_fault(matrix, cfg_name, name):
    recs, gold, _ = matrix(cfg_name)
    rec, exp = recs[name], EXPECT[cfg_name, name]
    case = next(c for c, _ in CASES[cfg_name] if c["name"] == name)
    cfg = next(c for c in CONFIGS if c.name == cfg_name)
    st = rec["status"]
    # no reset between cases: the case started where the previous clean run ended
    first = CASES[cfg_name][0][0]["name"] == name
    assert rec["state_before"] == ("idle" if first else "done"), (name, rec["state_before"])
    assert st["state"] == exp.get("state", "error"), (name, st)
    if "error" in exp:
        assert st["error"] == exp["error"], (name, st)
    if "index" in exp:
        assert st["error_index"] == exp["index"], (name, st)
    if "wait" in exp:
        assert st["wait"] == exp["wait"], (name, st)
    if exp.get("axi"):
        assert rec["injected"], f"{name}: the fault never fired"
        assert rec["violations"], f"{name}: the checker saw no faulty handshake"
        d = detect_cycles(rec, exp)
        assert d == AXI_DETECT, (name, d, rec["violations"], rec["irq_rises"])
    if exp.get("from_start"):
        d = detect_cycles(rec, exp)
        if exp.get("dry"):
            lo, hi = DRY_DETECT
            assert d is not None and lo <= d <= hi, (name, d, rec["starts"], rec["irq_rises"])
        elif exp.get("error") == "DEADLOCK":
            assert d is not None and DEADLOCK_CYCLES < d <= DEADLOCK_DETECT_LIMIT, (name, d)
        else:
            assert d is not None and 0 < d <= FIRST_DETECT_LIMIT, (name, d, rec["starts"])
    if exp.get("state", "error") == "error":
        assert rec["irq_rises"], f"{name}: irq never rose"
    if exp.get("state") != "active":
        # (abort_midway: read after the abort) the DMA drained every burst it had issued: nothing owed when the host recovers
        assert all(o == [0, 0] for o in rec["outstanding"]), (name, rec["outstanding"])
    if "refused" in exp:
        assert rec["refused"] == exp["refused"], (name, rec)
        assert st["q_free"] == 0, (name, st)
        assert (st["error"], st["error_index"]) == (rec["before"]["error"],
                                                   rec["before"]["error_index"]), (name, rec)
        if exp["state"] == "done":
            assert st["counters"]["words"] == rec["before"]["counters"]["words"], (name, rec)
    if case["kind"] in ("start_active", "start_repeated", "start_done", "push_running"):
        assert bytes.fromhex(rec["dump"]) == gold, f"{name}: its own run differs"
        assert len(rec["irq_rises"]) == 1, (name, rec["irq_rises"])
    if name == "start-while-active":
        assert rec["state_at_starts"] == ["active"] * 3, rec["state_at_starts"]
        assert len(rec["starts"]) == 4, rec["starts"]
    if name == "start-repeated":
        assert len(rec["starts"]) == case["times"], rec["starts"]
        c = st["counters"]
        assert c["enq"] == c["deq"] == c["words"] == len(matrix_words(cfg_name)), c
    if name == "start-from-done":
        # both programs count exactly their own words (the second one, the
        # clean run, was pushed while DONE and started from DONE)
        keys = ("words", "mx", "dma", "fence", "enq", "deq")
        c1, c2 = st["counters"], rec["clean"]["counters"]
        assert {k: c1[k] for k in keys} == {k: c2[k] for k in keys}, (c1, c2)
        assert c2["enq"] == c2["deq"] == c2["words"] == len(matrix_words(cfg_name)), c2
    if case["kind"] == "abort_midway":
        # aborted while running: no irq, part of the program taken (the
        # counters are kept until the next start)
        assert rec["irq_at_abort"] == 0 and rec["irq_rises"] == [], (name, rec)
        assert st["counters"]["deq"] > 0 and st["counters"]["dma_active"] > 0, (name, st)
        if case["in_flight"]:
            # DMA bursts were in flight when the abort was written
            assert any(o != [0, 0] for o in rec["in_flight_at_abort"]), rec
    if name == "start-in-error":
        assert rec["irq"] == 1 and (st["error"], st["error_index"]) == ("ILLEGAL_TYPE", 1), rec
    if name == "push-while-running":
        assert rec["state_at_push"] == "active", rec
        assert st["counters"]["enq"] == len(matrix_words(cfg_name)) + 4, st["counters"]
    # recovery: abort (bounded), the reset pin, or none (DONE, queue empty)
    how = case.get("recovery", "abort")
    after = rec["after_recovery"]
    if how == "none":
        assert (after["state"], after["q_free"]) == ("done", cfg.inst_queue_size), (name, after)
    else:
        assert (after["state"], after["error"], after["error_index"]) == ("idle", "NONE", 0), \
            (name, how, after)
        assert after["q_free"] == cfg.inst_queue_size, (name, how, after)
        assert after["wait"] == {"sem_id": 0, "want": 0, "have": 0}, (name, how, after)
    if how == "abort":
        assert 0 < rec["abort_cycles"] <= ABORT_LIMIT, (name, rec["abort_cycles"])
    assert all(o == [0, 0] for o in rec["outstanding_after"]), (name, rec["outstanding_after"])
    # then a clean run, bit-exact against the golden model
    assert rec["clean"]["state"] == "done", (name, rec["clean"])
    assert bytes.fromhex(rec["clean"]["dump"]) == gold, f"{name}: the clean run after it differs"


def test_abort_is_the_recovery_of_every_error(matrix):
    """No fault needs the reset pin: every case is recovered by the abort
    register, except a reset mid-run, duplicates of abort-recovered cases
    (named ``<case>-reset``) and cases that end DONE with an empty queue."""
    recs, _, _ = matrix(CFG.name)
    names = {c["name"]: c for c, _ in CASES[CFG.name]}
    for case, exp in CASES[CFG.name]:
        how = case.get("recovery", "abort")
        if how == "abort":
            assert "abort_cycles" in recs[case["name"]], case["name"]
        elif how == "reset" and case["kind"] != "reset_midway":
            twin = names.get(case["name"].removesuffix("-reset"))
            assert twin is not None and twin is not case, case["name"]
            assert twin.get("recovery", "abort") == "abort", case["name"]
        elif how == "none":
            assert exp["state"] == "done", case["name"]


@pytest.mark.parametrize("cfg_name", list(CASES))
def test_clean_runs_saw_no_faults(matrix, cfg_name):
    """The checkers flag nothing on the fault-free cases: they are not
    reporting noise, and every AXI case's violation is the injected one."""
    recs, _, res = matrix(cfg_name)
    assert res["identity"]["magic"] == 0x46534131
    for name, rec in recs.items():
        if not EXPECT[cfg_name, name].get("axi"):
            assert rec["violations"] == [], (name, rec["violations"])
        else:
            assert len(rec["injected"]) == 1, (name, rec["injected"])


# ---------------------------------------------------------------- the doc
def write_doc(recs):
    """Rewrite the measured table in docs/faults.md (between its markers)."""
    rows = ["| fault | reported (state, code, index) | cycles to detect | host recovery |",
            "|---|---|---|---|"]
    for (cfg_name, name), exp in EXPECT.items():
        if cfg_name != CFG.name:
            continue
        rec = recs[name]
        case = next(c for c, _ in CASES[cfg_name] if c["name"] == name)
        st = rec["status"]
        rep = f"{st['state'].upper()}"
        if st["state"] == "error":
            d = detect_cycles(rec, exp)
            how = "bad handshake → irq" if exp.get("axi") else "start → irq"
            cyc = f"{d} ({how})"
            rep += f", {st['error']}, {st['error_index']}"
            if st["error"] == "DEADLOCK":
                w = st["wait"]
                rep += f"; wait: semaphore {w['sem_id']}, wants {w['want']}, holds {w['have']}"
        elif case["kind"] == "reset_midway":
            cyc, rep = "– (no error)", rep + " when reset"
        elif case["kind"] == "abort_midway":
            c, (r, b) = st["counters"], np.sum(rec["in_flight_at_abort"], axis=0)
            cyc = "– (no error)"
            rep = (f"ACTIVE when aborted ({c['deq']} of {len(matrix_words(cfg_name))} words "
                   f"taken; {r} R beats, {b} B responses owed), then IDLE, NONE")
        else:
            cyc, rep = "– (no error)", rep + ", NONE"
        if "refused" in exp:
            rep += f"; {rec['refused']} extra pushes refused (SLVERR)"
        rcv = case.get("recovery", "abort")
        if rcv == "abort":
            rcv = f"abort: {rec['abort_cycles']} cycles to IDLE"
        elif rcv == "reset":
            rcv = "reset pin"
        else:
            rcv = "none: the next start (from DONE) is a fresh program"
        rows.append(f"| {exp['what']} | {rep} | {cyc} | {rcv}; the clean run after it is "
                    f"bit-exact |")
    doc = ROOT / "docs" / "faults.md"
    text = doc.read_text()
    a, b = "<!-- table: tb/faults/test_faults.py -->", "<!-- end of table -->"
    head, rest = text.split(a, 1)
    tail = rest.split(b, 1)[1]
    doc.write_text(head + a + "\n" + "\n".join(rows) + "\n" + b + tail)
