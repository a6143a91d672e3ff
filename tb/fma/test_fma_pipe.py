"""Bench of the pipelined FMA (``rtl/fp/fsa_fma_pipe.py``, ``fma_stages`` 1..4)
against ``fsa.numerics``; ``fma_stages = 0`` is the combinational unit of
tb/fma/test_fma.py and tb/fma/test_fma_gated.py (checked here to be the
same module).

The simulated stream: every vector of tb/fma/test_fma.py (normal and exp2
mode, specials, subnormals, ties, overflow), issued one per clock cycle
back to back, with gaps of 1..3 cycles before about 15 % of them and one
gap of 40 cycles; a gap cycle carries random junk inputs, with ``en = 0``
in the gated variant (whose outputs must then be 0 ``stages`` cycles later)
and unchecked in the ungated one.  Every vector's outputs must be the
model's bits ``stages`` cycles after it was issued.  Default tier: two
builds; ``FULL=1``: every stage count for the PE's three format pairs
(gated) and two ungated pairs.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from fsa import simrun
from tb.common.sources import unit_deps
from tb.common.tier import FULL, SEED
from tb.fma.test_fma import make_vectors

#: (mul, add, pieces, stages, gated)
DEFAULT_CASES = [("fp16", "fp32", 8, 3, True), ("bf16", "fp32", 8, 1, False)]
FULL_CASES = ([(m, a, 8, s, True) for m, a in (("fp16", "fp32"), ("bf16", "fp32"), ("fp32", "fp32"))
               for s in (1, 2, 3, 4)]
              + [(m, a, p, s, False) for m, a, p in (("fp16", "fp16", 16), ("bf16", "bf16", 8))
                 for s in (2, 4)])
CASES = FULL_CASES if FULL else DEFAULT_CASES


def pipe_verilog(mul: str, add: str, pieces: int, stages: int, gated: bool) -> Path:
    """Converted Verilog of one variant (cached by a hash of the inputs)."""
    from rtl.fp import fsa_fma_pipe

    name = fsa_fma_pipe.module_name(mul, add, pieces, gated, stages)
    return simrun.cached_convert(
        name, lambda d: fsa_fma_pipe.convert(d, mul, add, pieces, gated, stages),
        f"{mul}|{add}|{pieces}|{stages}|{gated}|{fsa_fma_pipe.CUTS[stages]}",
        unit_deps("rtl.fp.fsa_fma_pipe"))


def make_stream(mul: str, add: str, pieces: int, stages: int, gated: bool, seed: int,
                path: Path) -> dict:
    """The per-cycle stream of the module docstring, written to `path` (.npz)."""
    vec = make_vectors(mul, add, pieces, seed, path)
    rng = np.random.default_rng([seed, 991, stages, int(gated)])
    n = len(vec["a"])
    gap = np.where(rng.random(n) < 0.15, rng.integers(1, 4, n), 0)
    gap[n // 2] = 40
    pos = np.arange(n) + np.cumsum(gap)
    total = int(pos[-1]) + 1
    wm, wa = int(vec["wm"]), int(vec["wa"])
    s = {"a": rng.integers(0, 1 << wm, total), "b": rng.integers(0, 1 << wm, total),
         "c": rng.integers(0, 1 << wa, total), "exp2": rng.integers(0, 2, total)}
    for k in ("out_a", "out_e", "piece", "match"):
        s[k] = np.zeros(total, np.int64)
    for k in ("a", "b", "c", "exp2", "out_a", "out_e", "piece", "match"):
        s[k] = s[k].astype(np.int64)
        s[k][pos] = vec[k]
    is_vec = np.zeros(total, np.int64)
    is_vec[pos] = 1
    if gated:
        s["en"] = is_vec
        s["check"] = np.ones(total, np.int64)
    else:
        s["check"] = is_vec
    s.update(stages=stages, wm=wm, wa=wa)
    np.savez(path, **s)
    return s


def test_stream_shape(tmp_path):
    """Back to back and gaps of every length; the gated stream checks the gaps (zeros)."""
    s = make_stream("fp16", "fp32", 8, 2, True, 1, tmp_path / "s.npz")
    en = s["en"]
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[1], en, [1]])) != 0))
    assert en.sum() >= 20000 and 0.1 < 1 - en.mean() < 0.4
    assert s["check"].all() and not s["out_a"][en == 0].any()
    assert {1, 2, 3, 40} <= set(runs[1::2].tolist())        # the gaps' lengths (en = 0 runs)
    u = make_stream("fp16", "fp32", 8, 2, False, 1, tmp_path / "u.npz")
    assert "en" not in u and u["check"].sum() == en.sum()


@pytest.mark.sim
@pytest.mark.parametrize("mul,add,pieces,stages,gated", CASES,
                         ids=[f"{m}_{a}_p{p}_s{s}{'_en' if g else ''}" for m, a, p, s, g in CASES])
def test_fma_pipe_vectors(mul, add, pieces, stages, gated, tmp_path):
    npz = tmp_path / "stream.npz"
    s = make_stream(mul, add, pieces, stages, gated, SEED, npz)
    src = pipe_verilog(mul, add, pieces, stages, gated)
    t0 = time.monotonic()
    simrun.run(src.stem, [src], "tb.fma.tb_fma_pipe", extra_env={"FSA_FMA_VECTORS": str(npz)},
               timeout_s=600)
    print(f"{src.stem}: {len(s['a'])} cycles in {time.monotonic() - t0:.1f} s")


@pytest.mark.sim
@pytest.mark.skipif(not FULL, reason="FULL=1 only: the cuts no stage count uses")
def test_fma_pipe_other_cuts(tmp_path, monkeypatch):
    """Cuts M (after the product) and D (after the roundings), measured and
    kept as alternatives (docs/pipelining.md), bit-exact too: 4 stages M, B,
    C, D, gated."""
    from rtl.fp import fsa_fma_pipe

    monkeypatch.setitem(fsa_fma_pipe.CUTS, 4, "MBCD")
    src = pipe_verilog("fp16", "fp32", 8, 4, True)
    assert "begin: fma_m" in src.read_text() and "begin: cut_d" in src.read_text()
    npz = tmp_path / "stream.npz"
    make_stream("fp16", "fp32", 8, 4, True, SEED, npz)
    simrun.run(src.stem, [src], "tb.fma.tb_fma_pipe", extra_env={"FSA_FMA_VECTORS": str(npz)},
               timeout_s=600)


def test_pipe_names_and_stages():
    from rtl.fp import fsa_fma, fsa_fma_pipe

    assert fsa_fma_pipe.module_name("fp16", "fp32", 8, True, 2) == "fsa_fma_fp16_fp32_p8_s2_en"
    assert fsa_fma_pipe.module_name("bf16", "bf16", 4, False, 4) == "fsa_fma_bf16_bf16_p4_s4"
    for g in (False, True):
        assert fsa_fma_pipe.module_name("fp16", "fp32", 8, g, 0) == fsa_fma.module_name(
            "fp16", "fp32", 8, g)
    for bad in (5, -1, True, "2", 1.0):
        with pytest.raises(ValueError, match="stages must be an int in 0..4"):
            fsa_fma_pipe.module_name("fp16", "fp32", 8, False, bad)
    with pytest.raises(ValueError, match="not supported"):
        fsa_fma_pipe.module_name("fp32", "fp16", 8, False, 2)


def test_config_fma_stages():
    from fsa import configfile
    from fsa.config import FSAConfig, get

    cfg = get("FSA4X4Fp16Config")
    assert cfg.fma_stages == 0 and configfile.to_dict(cfg)["fsa"]["fma_stages"] == 0
    for bad in (5, -1):
        with pytest.raises(ValueError, match=r"fma_stages must be in 0\.\.4"):
            FSAConfig(name="X", sa_rows=4, sa_cols=4, fma_stages=bad)
    with pytest.raises(ValueError, match="fma_stages must be an integer"):
        FSAConfig(name="X", sa_rows=4, sa_cols=4, fma_stages="2")
    with pytest.raises(ValueError, match="do not take its latency yet"):
        FSAConfig(name="X", sa_rows=4, sa_cols=4, fma_stages=2)
    d = configfile.to_dict(cfg)
    del d["fsa"]["fma_stages"]              # a file written before the field: default 0
    assert configfile.from_dict(FSAConfig, d) == cfg
    assert set(configfile.reference_dict(cfg)) == set(configfile.REFERENCE_KEYS)


def _always_blocks(text: str) -> tuple[list, list]:
    import re

    seq = re.findall(r"always @\(posedge clk\) begin: (\w+)", text)
    return seq, re.findall(r"always @\((?!posedge)[^)]*\) begin: (\w+)", text)


@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_pipe_structure_and_lint(gated, tmp_path):
    """Per stage count: the clocked blocks of its cuts (and no others), a
    clk port, Verilator -Wall clean; stage 0 is fsa_fma's module byte for byte."""
    from rtl.fp import fsa_fma, fsa_fma_pipe

    simrun.setup_tool_env()
    p0 = fsa_fma_pipe.convert(tmp_path / "p", "bf16", "bf16", 4, gated, 0)
    c0 = fsa_fma.convert(tmp_path / "c", "bf16", "bf16", 4, gated)
    assert p0.read_bytes() == c0.read_bytes()
    want = {1: ["fma_back"], 2: ["fma_back", "exponent", "cut_c"],
            3: ["fma_a", "fma_back", "exponent", "cut_c"],
            4: ["fma_s", "fma_a", "fma_back", "exponent", "cut_c"]}
    for stages in range(1, fsa_fma_pipe.MAX_STAGES + 1):
        path = fsa_fma_pipe.convert(tmp_path, "bf16", "bf16", 4, gated, stages)
        text = path.read_text()
        seq, comb = _always_blocks(text)
        assert sorted(seq) == sorted(want[stages]), (stages, seq)
        assert "fma_comb" not in comb and "pack" in comb
        assert "input clk;" in text and ("input en;" in text) == gated
        # the enable travels: one register per cut that still gates something
        assert sum(f"reg k{x}_en;" in text for x in "smabcd") == (
            (len(fsa_fma_pipe.CUTS[stages]) - ("D" in fsa_fma_pipe.CUTS[stages])) if gated else 0)
        r = subprocess.run(["verilator", "--lint-only", "-Wall", str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (stages, r.stderr[-3000:])
