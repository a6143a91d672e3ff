"""The fast memory path (fsa/fastmem.py, rtl/fsa_memwrap.py) against
cocotbext-axi's AxiRam: the same program on the same build (``fsa_memtop``,
its run-time ``fast`` input chosen by the harness) ends with the same raw
output bits, the same counters (exec cycles, bubbles, busy cycles, words)
and the same golden-model bits on both paths; 4x4 and 8x8, one and two
memory ports, program fetch and pushed programs (longer than the queue).

Verilator only (the wrapper's memory is an associative array); on Icarus the
tests skip with that reason and the fast path is refused."""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import kernels
from fsa.engines import GoldenEngine
from fsa.simdev import run_on_device
from fsa.simrun import get_sim

pytestmark = pytest.mark.sim

#: (config, seq_q, seq_kv, causal, program fetch (else pushed))
CASES = [("FSA4X4Fp16Config", 8, 12, False, True), ("FSA4X4Fp16Config", 16, 32, False, False),
         ("FSA8X8Fp16Config", 16, 24, True, True), ("FSA4X4Fp16TwoPortConfig", 8, 8, True, True)]


def _case(name, sq, skv, causal, seed=5):
    cfg = fconfig.get(name)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, cfg.sa_rows)) for n in (sq, skv, skv))
    prog = kernels.attention(cfg, sq, skv, causal=causal)
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    gold = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    return cfg, prog, image, gold


@pytest.mark.parametrize("name,sq,skv,causal,fetch", CASES,
                         ids=[f"{c[0]}-{c[1]}x{c[2]}{'-causal' if c[3] else ''}"
                              f"{'-fetch' if c[4] else '-push'}" for c in CASES])
def test_fast_memory_equals_axiram(name, sq, skv, causal, fetch):
    if get_sim() != "verilator":
        pytest.skip("the fast memory path is Verilator only")
    cfg, prog, image, gold = _case(name, sq, skv, causal)
    regions = prog.output_regions()
    runs = {m: run_on_device(cfg, prog.words(), image, regions, max_cycles=400_000, fetch=fetch,
                             mem_model=m) for m in ("axi", "fast")}
    axi, fast = runs["axi"], runs["fast"]
    assert axi["runs"][-1]["state"] == fast["runs"][-1]["state"] == "done", \
        (axi["runs"][-1], fast["runs"][-1])
    assert fast["runs"][-1]["counters"] == axi["runs"][-1]["counters"], \
        (fast["runs"][-1]["counters"], axi["runs"][-1]["counters"])
    assert fast["runs"][-1]["waited"] == axi["runs"][-1]["waited"]
    assert fast["dumps"] == axi["dumps"]                           # raw bytes
    ot = gold.outputs["Ot"]
    rtl = np.frombuffer(fast["dumps"][0], ot.dtype).reshape(ot.shape)
    assert rtl.tobytes() == np.ascontiguousarray(ot).tobytes()
    if not fetch:
        assert len(prog.words()) > cfg.inst_queue_size       # pushes while it runs


def test_fast_memory_refuses_what_it_cannot_do():
    cfg, prog, image, _ = _case("FSA4X4Fp16Config", 4, 4, False)
    regions = prog.output_regions()
    with pytest.raises(ValueError, match="pauses"):
        run_on_device(cfg, prog.words(), image, regions, sim="verilator", pauses=0.2,
                      mem_model="fast")
    with pytest.raises(ValueError, match="mem_model"):
        run_on_device(cfg, prog.words(), image, regions, mem_model="sram")
