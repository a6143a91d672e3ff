"""The gated FMA of the PE and the ACC (``fsa_fma_<M>_<A>_p<P>_en``, rtl/fp/fsa_fma.py): with
``en = 1`` bit-exact with ``fsa.numerics`` like the ungated unit
(tb/fma/test_fma.py's vectors), all four outputs 0 with ``en = 0``; and its
Verilog is Verilator -Wall clean without waivers (no latch: every variable of
a gated block is assigned on both paths)."""
from __future__ import annotations

import os
import subprocess
import time

import numpy as np
import pytest

from fsa import simrun
from tb.common.sources import unit_deps
from tb.fma.test_fma import make_vectors

#: the PE's format pairs of the reference presets (fp16 / bf16 / fp32 configs; fp32 x fp32 is the ACC's too)
CASES = [("fp16", "fp32", 8), ("bf16", "fp32", 8), ("fp32", "fp32", 8)]


def gated_verilog(mul: str, add: str, pieces: int):
    from rtl.fp import fsa_fma

    name = fsa_fma.module_name(mul, add, pieces, gated=True)
    return simrun.cached_convert(name, lambda d: fsa_fma.convert(d, mul, add, pieces, gated=True),
                                 f"{mul}|{add}|{pieces}|gated", unit_deps("rtl.fp.fsa_fma"),
                                 waivers=fsa_fma.LINT_WAIVERS)


def test_gated_module_names():
    from rtl.fp import fsa_fma

    assert fsa_fma.module_name("fp16", "fp32", 8, gated=True) == "fsa_fma_fp16_fp32_p8_en"
    assert fsa_fma.module_name("fp16", "fp32", 8) == "fsa_fma_fp16_fp32_p8"


@pytest.mark.sim
@pytest.mark.parametrize("mul,add,pieces", CASES, ids=[f"{m}_{a}_p{p}" for m, a, p in CASES])
def test_gated_fma_vectors(mul, add, pieces, tmp_path):
    """Every vector of tb/fma/test_fma.py, each with a random enable: the
    model's bits where it is 1, zeros where it is 0."""
    seed = int(os.environ.get("SEED", "1"))
    npz = tmp_path / "vectors.npz"
    vec = make_vectors(mul, add, pieces, seed, npz)
    en = np.random.default_rng(seed + 77).integers(0, 2, len(vec["a"])).astype(np.int64)
    assert 0.4 < en.mean() < 0.6
    for k in ("out_a", "out_e", "piece", "match"):
        vec[k] = np.where(en == 1, vec[k], 0).astype(np.int64)
    np.savez(npz, **vec, en=en)
    src = gated_verilog(mul, add, pieces)
    t0 = time.monotonic()
    simrun.run(src.stem, [src], "tb.fma.tb_fma", extra_env={"FSA_FMA_VECTORS": str(npz)}, timeout_s=600)
    print(f"{src.stem}: {len(en)} vectors in {time.monotonic() - t0:.1f} s")


@pytest.mark.parametrize("mul,add,pieces", [("fp16", "fp32", 8), ("bf16", "bf16", 4)])
def test_gated_fma_lint(mul, add, pieces, tmp_path):
    from rtl.fp import fsa_fma

    simrun.setup_tool_env()
    path = fsa_fma.convert(tmp_path, mul, add, pieces, gated=True)
    text = path.read_text()
    assert "input en;" in text and text.count("if (en) begin") == 5   # fma_comb, lzc x 2, 2 roundings
    r = subprocess.run(["verilator", "--lint-only", "-Wall", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
