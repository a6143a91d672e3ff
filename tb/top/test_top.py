"""The device over AXI (cocotbext-axi): DMA-only programs, attention end to
end bit-equal to the golden model (with and without random AXI pauses),
error reporting, queue backpressure, reset in the middle of a run."""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa.golden.machine import Machine
from fsa.isa import Dma, DmaFunc, Fence, Matrix, encode
from fsa.simdev import run_on_device
from tb.common.programs import simple_attention_program
from tb.common.tier import SEED

pytestmark = pytest.mark.sim


def model_run(cfg, prog, memory, dumps):
    m = Machine(cfg)
    for a, b in memory:
        m.mem.write(a, b)
    m.run(prog)
    return [m.mem.read(a, n) for a, n in dumps]


def dma_program(cfg):
    base = cfg.mem_base
    sp, ac = cfg.spad_row_bytes, cfg.acc_row_bytes
    prog = [
        Dma(DmaFunc.LOAD, repeat=6, sram_addr=2, sram_stride=3, mem_addr=base + 0x100,
            mem_stride=sp, size=sp),
        Dma(DmaFunc.LOAD, repeat=3, sram_addr=1, sram_stride=1, is_accum=True,
            mem_addr=base + 0x400, mem_stride=-ac, size=ac),       # backwards in memory
        Dma(DmaFunc.LOAD, repeat=2, sram_addr=cfg.spad_rows - 1, sram_stride=-5,
            mem_addr=base + 0x800, mem_stride=4 * sp, size=cfg.mem_align),   # partial rows
        Fence(dma=True),
        Dma(DmaFunc.STORE, repeat=cfg.spad_rows, sram_addr=0, sram_stride=1,
            mem_addr=base + 0x10000, mem_stride=sp, size=sp),
        Dma(DmaFunc.STORE, repeat=cfg.acc_rows, sram_addr=cfg.acc_rows - 1, sram_stride=-1,
            is_accum=True, mem_addr=base + 0x20000, mem_stride=2 * ac, size=ac),
        Fence(dma=True, mx=True, stop=True),
    ]
    rng = np.random.default_rng(SEED)
    memory = [(base, rng.integers(0, 256, 0x1000, dtype=np.uint8).tobytes())]
    dumps = [(base + 0x10000, cfg.spad_rows * sp), (base + 0x20000, 2 * ac * cfg.acc_rows)]
    return prog, memory, dumps


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Fp16TwoPortConfig"])
def test_dma_only_program(name):
    cfg = fconfig.get(name)
    prog, memory, dumps = dma_program(cfg)
    res = run_on_device(cfg, encode(prog), memory, dumps, max_cycles=20000)
    run = res["runs"][-1]
    assert run["state"] == "done", run
    assert res["identity"]["magic"] == 0x46534131
    want = model_run(cfg, prog, memory, dumps)
    for got, exp, (a, _) in zip(res["dumps"], want, dumps):
        assert got == exp, f"memory at 0x{a:x} differs from the model"
    assert run["counters"]["dma"] == 5 and run["counters"]["mx"] == 0
    assert run["counters"]["words"] == len(encode(prog))


def attention_case(cfg, seq_q, seq_kv):
    R = cfg.sa_rows
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(rng.standard_normal((n, R)), cfg.e_type) for n in (seq_q, seq_kv, seq_kv))
    prog, (q_at, k_at, vt_at, ot_at) = simple_attention_program(cfg, seq_q, seq_kv, False, cfg.mem_base)
    memory = [(q_at, q.tobytes()), (k_at, k.tobytes()), (vt_at, np.ascontiguousarray(v.T).tobytes())]
    dumps = [(ot_at, R * seq_q * cfg.a_fmt.bytes)]
    return prog, memory, dumps


@pytest.mark.parametrize("pauses", [0.0, 0.3], ids=["no-pauses", "random-pauses"])
def test_attention_one_query_block(pauses):
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog, memory, dumps = attention_case(cfg, 4, 12)
    res = run_on_device(cfg, encode(prog), memory, dumps, max_cycles=50000, pauses=pauses,
                        seed=SEED)
    run = res["runs"][-1]
    from tb.common import coverage_report as cov
    cov.record(prog, run, pauses=pauses, config=cfg.name)
    assert run["state"] == "done", run
    assert res["dumps"] == model_run(cfg, prog, memory, dumps)
    c = run["counters"]
    assert 0 < c["mx_active"] <= c["exec"] and c["mx"] == sum(isinstance(i, Matrix) for i in prog)


def _err_case(cfg, prog, **kw):
    from tb.common import coverage_report as cov
    res = run_on_device(cfg, encode(prog) if not isinstance(prog[0], int) else prog,
                        [(cfg.mem_base, bytes(4096))], [], max_cycles=5000, **kw)
    run = res["runs"][-1]
    cov.record(None, run, pauses=kw.get("pauses", 0.0), config=cfg.name)
    return run


def test_slverr_on_read():
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Dma(DmaFunc.LOAD, repeat=4, sram_addr=0, sram_stride=1, mem_addr=cfg.mem_base + 0x40,
                mem_stride=8, size=8), Fence(dma=True, stop=True)]
    run = _err_case(cfg, prog, inject={"read": [cfg.mem_base + 0x50, cfg.mem_base + 0x58]})
    assert (run["state"], run["error"], run["error_index"]) == ("error", "AXI_RD_ERR", 0), run


def test_slverr_on_write():
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Fence(mx=True), Dma(DmaFunc.STORE, repeat=2, sram_addr=0, sram_stride=1, is_accum=True,
                                mem_addr=cfg.mem_base + 0x100, mem_stride=16, size=16),
            Fence(dma=True, stop=True)]
    run = _err_case(cfg, prog, inject={"write": [cfg.mem_base + 0x100, cfg.mem_base + 0x200]})
    assert (run["state"], run["error"], run["error_index"]) == ("error", "AXI_WR_ERR", 1), run


def test_out_of_window_address():
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=cfg.mem_base - 0x1000, size=8),
            Fence(dma=True, stop=True)]
    run = _err_case(cfg, prog)
    assert (run["state"], run["error"]) == ("error", "MEM_RANGE"), run


def test_illegal_instruction():
    cfg = fconfig.get("FSA4X4Fp16Config")
    words = encode([Fence(mx=True)]) + [0xE0000000]
    run = _err_case(cfg, words)
    assert (run["state"], run["error"], run["error_index"]) == ("error", "ILLEGAL_TYPE", 1), run


#: the queue-depth tests run on the preset itself (its 256-word queue), on the
#: device tests' shared build; they used a 16-word copy of it (one more build)
QCFG = fconfig.get("FSA4X4Fp16Config")


def test_program_longer_than_the_queue():
    cfg = QCFG
    n = cfg.inst_queue_size * 2 + 8                  # two words a DMA instruction
    prog = [Dma(DmaFunc.LOAD, repeat=1, sram_addr=i % cfg.spad_rows,
                mem_addr=cfg.mem_base + 8 * (i % 64), size=8) for i in range(n)]
    prog += [Dma(DmaFunc.STORE, repeat=cfg.spad_rows, sram_addr=0, sram_stride=1,
                 mem_addr=cfg.mem_base + 0x1000, mem_stride=8, size=8), Fence(dma=True, stop=True)]
    memory = [(cfg.mem_base, bytes(range(256)) * 2)]
    dumps = [(cfg.mem_base + 0x1000, 8 * cfg.spad_rows)]
    words = encode(prog)
    assert len(words) > 4 * cfg.inst_queue_size
    res = run_on_device(cfg, words, memory, dumps, max_cycles=200_000)
    run = res["runs"][-1]
    assert run["state"] == "done" and run["counters"]["enq"] == len(words), run
    assert res["dumps"] == model_run(cfg, prog, memory, dumps)


def test_error_while_the_host_is_still_pushing():
    """An illegal word early in a program longer than the queue: the device
    stops in the error state while the host still has words to push; the run
    reports that error (not a timeout) without waiting out the cycle limit."""
    cfg = QCFG
    words = encode([Fence(mx=True)] * 5) + [0xE0000000] + \
        encode([Fence(mx=True)] * (4 * cfg.inst_queue_size))
    assert len(words) > 4 * cfg.inst_queue_size
    res = run_on_device(cfg, words, [(cfg.mem_base, bytes(64))], [], max_cycles=100_000)
    run = res["runs"][-1]
    assert (run["state"], run["error"], run["error_index"]) == ("error", "ILLEGAL_TYPE", 5), run
    assert run["waited"] < 1000, run


def test_pushes_to_a_full_idle_queue_are_refused():
    """Pushing more words than the queue holds before start: the extra writes
    answer SLVERR at once (nothing would drain the queue) instead of holding
    the host forever; after a reset the device runs normally."""
    cfg = QCFG
    prog = [Fence(mx=True), Fence(dma=True, stop=True)]
    res = run_on_device(cfg, encode(prog), [(cfg.mem_base, bytes(64))], [], max_cycles=1000,
                        overfill=5)
    assert res["overfill"] == {"refused": 5, "state": "idle", "q_free": 0}, res["overfill"]
    assert res["runs"][-1]["state"] == "done", res["runs"][-1]


def test_reset_midway_then_clean_run():
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog, memory, dumps = attention_case(cfg, 4, 8)
    res = run_on_device(cfg, encode(prog), memory, dumps, max_cycles=50000, reset_midway=60)
    assert res["midway"]["state"] == "active"
    run = res["runs"][-1]
    assert run["state"] == "done", run
    assert res["dumps"] == model_run(cfg, prog, memory, dumps)
