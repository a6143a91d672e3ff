"""Program fetch on the device (4x4 fp16 over AXI, rtl/fsa_fetch.py): the
device reads its program from memory; results bit-equal to the golden model,
every counter equal to the cycle model (fsa/cycle/fetch.py) for a program
longer than the queue and a short one; errors (no stop, a read error
response, a misaligned address) reported like the golden model's
Machine.fetch; abort in the middle of a fetch; programs back to back.
The push path stays covered by tb/top/test_top.py, tb/attention/test_attention.py and
tb/top/test_restart.py (run_on_device pushes unless told to fetch)."""
from __future__ import annotations

import pytest

from tb.common import coverage_report as cov
from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa.cycle.fetch import FetchTiming
from fsa.golden.machine import Machine, MachineError
from fsa.isa import Fence, encode
from fsa.simdev import device_build, program_address, run_on_device
from tb.common.programs import kernel_case
from tb.common.tier import SEED

pytestmark = pytest.mark.sim
CFG = fconfig.get("FSA4X4Fp16Config")
STOP = Fence(mx=True, dma=True, stop=True)
MODEL = ("exec", "bubble", "mx_active", "dma_active", "mx", "dma")


# the kernel, its memory image, output regions and golden outputs (the restart tests' helper)
attention_case = kernel_case


def golden_fetch(words, addr):
    """(error code, index) of Machine.fetch on `words` placed at `addr`."""
    m = Machine(CFG)
    m.mem.write(CFG.mem_base, bytes(64))
    if CFG.mem_base <= addr and addr + 4 * len(words) <= CFG.mem_base + CFG.mem_size:
        m.mem.write(addr, b"".join(w.to_bytes(4, "little") for w in words))
    try:
        m.fetch(addr, len(words))
    except MachineError as e:
        return e.code, e.index
    return "NONE", None


@pytest.mark.parametrize("seq", [64, 8], ids=["long-4577-words", "short"])
def test_fetched_attention_is_bit_exact_and_equals_the_cycle_model(seq):
    """seq 64: the reference compiler's 4x4 program (4,577 words, 18 times
    the queue); seq 8: shorter than the queue."""
    prog, image, regions, want = attention_case(seq, seq)
    words = prog.words()
    assert (len(words) > CFG.inst_queue_size) == (seq == 64)
    res = run_on_device(CFG, words, image, regions, max_cycles=200_000, fetch=True)
    run = res["runs"][-1]
    assert (run["state"], run["error"]) == ("done", "NONE"), run
    assert run["dumps"] == want, "fetched program differs from the golden model"
    c = run["counters"]
    assert c["words"] == c["deq"] == len(words) and run["fetched"] == len(words), (c, run)
    assert run["q_free"] == CFG.inst_queue_size, run          # emptied at the end
    fetch = FetchTiming(program_address(CFG, len(words), [(a, len(b)) for a, b in image]
                                        + list(regions)))
    m = cm.simulate(CFG, prog.instructions, fetch=fetch)
    assert {k: c[k] for k in MODEL} == dict(m.counters, exec=m.cycles), (c, m)
    cov.record(prog, run, config=CFG, cycles_checked=True,
               what=f"{CFG.name} {seq}x{seq} program fetch")
    if seq == 64:
        # the target of issue 14: far below the host's push rate, close to a full queue
        pushed = cm.simulate(CFG, prog.instructions, host=cm.HARNESS_HOST)
        full = cm.simulate(CFG, prog.instructions)
        assert full.cycles <= c["exec"] < 0.6 * pushed.cycles, (c["exec"], pushed.cycles)


def test_program_past_its_words_ends_in_no_stop_at_once():
    """Without a stop fence the program ends in NO_STOP as soon as it runs dry
    (not after IDLE_CYCLES), with the golden model's index."""
    words = encode([Fence(mx=True)] * 300)               # longer than the queue
    addr = program_address(CFG, len(words))
    res = run_on_device(CFG, words, [(CFG.mem_base, bytes(64))], [], max_cycles=5000,
                        fetch=True)
    run = res["runs"][-1]
    assert golden_fetch(words, addr) == ("NO_STOP", 300)
    assert (run["state"], run["error"], run["error_index"]) == ("error", "NO_STOP", 300), run
    cov.record(None, run, config=CFG, what="program fetch past its words")
    # 300 fences take two cycles each; then a few cycles, not 4096
    assert run["waited"] < 2 * 300 + 64, run


def test_fetch_read_error_and_misaligned_address():
    words = encode([Fence(mx=True)] * 40 + [STOP])
    addr = program_address(CFG, len(words))
    # SLVERR on the beat holding words 34 and 35 (the second burst)
    res = run_on_device(CFG, words, [(CFG.mem_base, bytes(64))], [], max_cycles=5000,
                        fetch=True, inject={"read": [addr + 4 * 34, addr + 4 * 36]})
    run = res["runs"][-1]
    assert (run["state"], run["error"]) == ("error", "FETCH_RD_ERR"), run
    # reported while the decoder works on words before the bad beat, which
    # never reaches the queue
    assert 0 < run["error_index"] <= run["fetched"] <= 34, run
    cov.record(None, run, config=CFG, what="program fetch read error")
    assert run["q_free"] == CFG.inst_queue_size, run
    # an address that is not a multiple of the 8-byte beat: FETCH_RANGE at once
    res = run_on_device(CFG, words, [(CFG.mem_base, bytes(64))], [], max_cycles=5000,
                        fetch=addr + 4)
    run = res["runs"][-1]
    assert golden_fetch(words, addr + 4) == ("FETCH_RANGE", 0)
    assert (run["state"], run["error"], run["error_index"]) == ("error", "FETCH_RANGE", 0), run
    assert run["counters"]["words"] == 0 and run["waited"] < 8, run
    cov.record(None, run, config=CFG, what="program fetch misaligned")


def test_abort_midway_through_a_fetch_then_fetched_programs_back_to_back():
    """Abort while fetch bursts and DMA bursts are in flight (random AXI
    pauses): the device drains both and is IDLE with an empty queue; then the
    kernel is fetched twice in a row (restart from DONE), bit-exact, with the
    same counters (the first run's prefetched words were dropped)."""
    prog, image, regions, want = attention_case(4, 12)
    words = prog.words()
    res = run_on_device(CFG, [], image, regions, programs=[words, words], max_cycles=50000,
                        pauses=0.3, seed=SEED, abort_midway=60, fetch=True)
    assert res["midway"]["state"] == "active", res["midway"]
    after = res["after_abort"]
    assert (after["state"], after["error"]) == ("idle", "NONE"), after
    assert after["q_free"] == CFG.inst_queue_size, after
    r1, r2 = res["runs"]
    for run in (r1, r2):
        assert (run["state"], run["error"]) == ("done", "NONE"), run
        assert run["dumps"] == want
        assert run["fetched"] == run["counters"]["words"] == len(words), run
    assert r1["counters"]["mx"] == r2["counters"]["mx"] and \
        r1["counters"]["dma"] == r2["counters"]["dma"]


def test_fetch_registers_and_pushes_in_fetch_mode():
    """tb/fetch/tb_fetch.py: the fetch registers read back (fetch_hi keeps its 7
    bits); a push while a fetch-mode program runs answers SLVERR and does
    not reach the queue (the program ends DONE with exactly its own words);
    a pushed program and a fetched one then run on the same device."""
    import json

    from fsa import simrun
    from fsa.hw.verilog import generate

    out = generate(CFG, quiet=True)
    addr = program_address(CFG, 301)
    top, srcs, public = device_build(out)         # the device tests' shared build
    tdir = simrun.run(top, srcs, "tb.fetch.tb_fetch", name="fetch_registers", public=public,
                      extra_env={"FSA_CFG": json.dumps(CFG.to_dict()),
                                 "FSA_FETCH_ADDR": str(addr)})
    r = json.loads((tdir / "result.json").read_text())
    assert (r["fetch_lo"], r["fetch_hi"], r["fetch_words"]) == (0x89ABCDEF, 0x7F, 12345), r
    assert r["fetch_lo_resp"] == r["fetch_hi_resp"] == r["fetch_words_resp"] == 0, r
    assert r["push_resp"] == 2 and r["state_after_push"] == "active", r      # SLVERR
    f = r["fetch_run"]
    assert (f["state"], f["error"]) == ("done", "NONE"), f
    assert f["fetched"] == f["counters"]["words"] == f["counters"]["enq"] == 301, f
    assert f["q_free"] == CFG.inst_queue_size, f
    p = r["push_run"]
    assert (p["state"], p["counters"]["words"], p["fetched"]) == ("done", 6, 0), p
    assert (r["refetch_run"]["state"], r["refetch_run"]["fetched"]) == ("done", 301), r


#: one config per AXI width (so every fetch-burst length: 16, 8, 4 and 2
#: beats) and a multi-port one (the arbiter holds LOADs for a whole burst)
FETCH_LINT = ["FSA4X4Fp16Config", "FSA4X4Fp32Config", "FSA16X16Fp16Config",
              "FSA32X32Fp16Config", "FSA8X8Fp16TwoPortConfig"]


@pytest.mark.parametrize("name", FETCH_LINT)
def test_fetch_units_lint_on_every_bus_width(name, tmp_path):
    """fsa_fetch and fsa_rdarb are Verilator -Wall clean for each fetch-burst
    length (a 2-beat burst's counter is narrower than LOAD_TAIL: that once
    failed the 512-bit builds)."""
    import subprocess

    from fsa import simrun
    from fsa.hw.fetch import burst_beats
    from rtl import fsa_fetch, fsa_rdarb

    cfg = fconfig.get(name)
    simrun.setup_tool_env()
    for mod in (fsa_fetch, fsa_rdarb):
        path = mod.convert(tmp_path, cfg)
        r = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", mod.MODULE,
                            str(path)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "%Warning" not in r.stderr, (name, burst_beats(cfg),
                                                                   r.stderr[-3000:])
