"""Matrix-engine bench (no AXI): real instruction streams, raw bits equal to
the golden model, cycle counts equal to the plans, error codes, watchdog."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa import simrun
from fsa.isa import Fence, Matrix, MxFunc, encode
from rtl.generate import generate, verilog_files

pytestmark = pytest.mark.sim


def core_config(name: str, blocks: int):
    base = fconfig.get(name)
    R, C = base.sa_rows, base.sa_cols
    # room for Q and every K / V^T block (the bench preloads; no DMA here)
    return base.replace(name=f"{name}Core{blocks}", spad_rows=C + 2 * R * blocks, acc_rows=0)


def attention_words(cfg, blocks: int):
    R, C = cfg.sa_rows, cfg.sa_cols
    prog = []
    for j in range(blocks):
        k, v = C + 2 * R * j, C + 2 * R * j + R
        prog.append(Matrix(MxFunc.LOAD_STATIONARY, spad_addr=C - 1, spad_stride=-1))
        prog.append(Matrix(MxFunc.ATTENTION_SCORE, spad_addr=k, spad_stride=1, rev_input=True,
                           rev_output=True, delay_output=True, acc_addr=0, zero=(j == 0)))
        prog.append(Matrix(MxFunc.ATTENTION_VALUE, spad_addr=v, spad_stride=1, rev_input=True,
                           delay_output=True, acc_addr=1, acc_stride=1, zero=(j == 0)))
    prog.append(Matrix(MxFunc.ATTENTION_LSE_NORM_SCALE, acc_addr=0))
    prog.append(Matrix(MxFunc.ATTENTION_LSE_NORM, acc_addr=1, acc_stride=1))
    prog.append(Fence(mx=True, dma=True, stop=True))
    return encode(prog)


def spad_image(cfg, blocks: int, seed: int):
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((C + 2 * R * blocks, R))
    x += (rng.random(x.shape) < 0.001) * rng.standard_normal(x.shape) * 10
    return nx.from_float64(x, cfg.e_type)


def run_core(tmp_path, cfg, words, spad, expect="done", limit=20000, **extra):
    out = generate(cfg, quiet=True)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"config": cfg.to_dict(), "words": [int(w) for w in words],
                                "spad": spad.tolist(), "expect": expect, "limit": limit, **extra}))
    return simrun.run("fsa_core", verilog_files(out), "tb.core.tb_core", extra_env={"FSA_CASE": str(case)},
                      timeout_s=900)


@pytest.mark.parametrize("name", [
    "FSA4X4Fp16Config",
    # FULL=1: one more build; the 8x8 matrix engine runs in the default tier through
    # the device (tb/attention/test_attention.py: cycles equal to the cycle model)
    pytest.param("FSA8X8Fp16Config", marks=pytest.mark.full)])
def test_one_query_block_four_key_blocks(request, tmp_path, name):
    if request.node.get_closest_marker("full") and os.environ.get("FULL", "0") in ("", "0"):
        pytest.skip("long sweep: FULL=1")
    cfg = core_config(name, 4)
    seed = int(simrun.os.environ.get("SEED", "1"))
    tdir = run_core(tmp_path, cfg, attention_words(cfg, 4), spad_image(cfg, 4, seed))
    res = json.loads((tdir / "core_result.json").read_text())
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    ref = C + 2 * R + P + 4 + max(2 * R - 1, R + C + 1)
    assert res["periods"] and max(res["periods"]) <= ref, (res["periods"], ref)


#: the small programs run on the 4x4 four-block core of
#: test_one_query_block_four_key_blocks (one build for all the 4x4 core tests)
SMALL_BLOCKS = 4
SMALL = core_config("FSA4X4Fp16Config", SMALL_BLOCKS)


def _small(tmp_path, words, expect, **extra):
    cfg = SMALL
    return run_core(tmp_path, cfg, words, spad_image(cfg, SMALL_BLOCKS, 0), expect=expect,
                    limit=3000, **extra)


def test_illegal_type(tmp_path):
    words = encode([Matrix(MxFunc.LOAD_STATIONARY, spad_addr=3, spad_stride=-1)]) + [0xA0000000]
    _small(tmp_path, words, "ILLEGAL_TYPE", err_index=1)


def test_illegal_function(tmp_path):
    w = encode([Matrix(MxFunc.ATTENTION_SCORE)])
    w[0] = (w[0] & ~(0x1F << 11)) | (7 << 11)            # matrix function 7 does not exist
    _small(tmp_path, encode([Fence(mx=True)]) + w, "ILLEGAL_FUNC", err_index=1)


def test_out_of_range_address(tmp_path):
    cfg = SMALL
    words = encode([Matrix(MxFunc.ATTENTION_SCORE, spad_addr=cfg.spad_rows - 2, spad_stride=1,
                           rev_input=True, rev_output=True, delay_output=True)])
    _small(tmp_path, words, "SRAM_RANGE", err_index=0)


def test_semaphore_that_never_comes_is_reported(tmp_path):
    """A semaphore nothing releases: the device stops by itself with DEADLOCK
    (it used to wait forever in ACTIVE), the instruction's index and the
    semaphore in the wait register, within 64 cycles of the start."""
    words = encode([Matrix(MxFunc.LOAD_STATIONARY,
                           spad_addr=3, spad_stride=-1, sem_id=6, acquire_valid=True,
                           acquire_value=2), Fence(stop=True)])
    _small(tmp_path, words, "DEADLOCK", err_index=0, wait={"sem_id": 6, "want": 2, "have": 0},
           max_cycles=64)


# The SRAM range check at its edges (SMALL: S = 36 scratchpad rows, A = 5
# accumulator rows): the first and the last row of every walk, both
# directions, the extreme strides; an in-range walk that ends on row 0 or on
# the last row must run.
_M = MxFunc
S, A = SMALL.spad_rows, SMALL.acc_rows
assert A == 5 and S > 15, (S, A)             # the accumulator cases below are written for A = 5
RANGE_CASES = [
    ("load-ends-on-row-0", Matrix(_M.LOAD_STATIONARY, spad_addr=3, spad_stride=-1), "done"),
    ("load-below-0", Matrix(_M.LOAD_STATIONARY, spad_addr=2, spad_stride=-1), "SRAM_RANGE"),
    ("load-stride-15", Matrix(_M.LOAD_STATIONARY, spad_addr=0, spad_stride=15), "SRAM_RANGE"),
    ("load-stride-minus-16", Matrix(_M.LOAD_STATIONARY, spad_addr=S - 1, spad_stride=-16),
     "SRAM_RANGE"),
    ("load-ends-on-last-row", Matrix(_M.LOAD_STATIONARY, spad_addr=S - 10, spad_stride=3), "done"),
    ("score-first-row-outside", Matrix(_M.ATTENTION_SCORE, spad_addr=S, spad_stride=-1),
     "SRAM_RANGE"),
    ("score-acc-outside", Matrix(_M.ATTENTION_SCORE, spad_addr=4, spad_stride=1, acc_addr=5),
     "SRAM_RANGE"),
    ("value-acc-last-outside", Matrix(_M.ATTENTION_VALUE, spad_addr=4, spad_stride=1, acc_addr=2,
                                      acc_stride=1), "SRAM_RANGE"),
    ("value-acc-ends-on-last-row", Matrix(_M.ATTENTION_VALUE, spad_addr=4, spad_stride=1,
                                          rev_input=True, delay_output=True, acc_addr=1,
                                          acc_stride=1), "done"),
    ("lse-norm-acc-below-0", Matrix(_M.ATTENTION_LSE_NORM, acc_addr=4, acc_stride=-2),
     "SRAM_RANGE"),
    ("lse-norm-scale-acc-outside", Matrix(_M.ATTENTION_LSE_NORM_SCALE, acc_addr=5), "SRAM_RANGE"),
]


@pytest.mark.parametrize("ins,expect", [c[1:] for c in RANGE_CASES], ids=[c[0] for c in RANGE_CASES])
def test_sram_range_check_edges(tmp_path, ins, expect):
    words = encode([ins, Fence(mx=True, dma=True, stop=True)])
    extra = {} if expect == "done" else {"err_index": 0}
    _small(tmp_path, words, expect, **extra)
