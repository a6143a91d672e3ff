"""`fsa run` with batches and heads (golden model, in process): [..., S, d]
.npy files, --batch/--heads for generated inputs, --scale, --gqa; the same
bits as fsa.scaled_dot_product_attention, one program for every head."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import fsa
from fsa import cli
from fsa.kernels import attention_flops
from fsa.report import fa3_inputs

CFG = "FSA4X4Fp16Config"


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def files(tmp_path, **arrays):
    out = []
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
        out += [f"--{name}", tmp_path / f"{name}.npy"]
    return out


@pytest.mark.parametrize("qs,kvs,causal,gqa", [((2, 3, 6, 4), (2, 3, 9, 4), True, False),
                                               ((2, 4, 8, 4), (2, 2, 8, 4), False, True),
                                               ((3, 5, 4), (3, 8, 4), False, False)])
def test_npy_files_with_leading_dims(tmp_path, capsys, qs, kvs, causal, gqa):
    rng = np.random.default_rng(len(qs) + sum(qs))
    q, k, v = fa3_inputs(rng, qs), fa3_inputs(rng, kvs), fa3_inputs(rng, kvs)
    argv = ["run", "--config", CFG, "--sim", "golden", "--out", tmp_path / "o.npy",
            "--json", tmp_path / "r.json", *files(tmp_path, q=q, k=k, v=v)]
    argv += (["--causal"] if causal else []) + (["--gqa"] if gqa else [])
    code, out, err = run(argv, capsys)
    assert code == 0, (out, err)
    rep = json.loads((tmp_path / "r.json").read_text())
    heads = int(np.prod(qs[:-2]))
    assert rep["heads"] == heads and rep["shape"] == list(qs) and rep["vs_torch"]["within_bounds"]
    assert rep["flops"] == heads * attention_flops(qs[-2], kvs[-2], 4, causal)
    assert rep["utilisation"] == pytest.approx(rep["flops"] / (rep["cycles"] * 32))
    assert f"{heads} heads" in out
    o = np.load(tmp_path / "o.npy")
    want = fsa.scaled_dot_product_attention(*(torch.from_numpy(x) for x in (q, k, v)),
                                            is_causal=causal, enable_gqa=gqa, config=CFG)
    assert o.shape == qs and np.array_equal(o, want.numpy())


def test_generated_batches_and_heads(tmp_path, capsys):
    code, out, _ = run(["run", "--config", CFG, "--sim", "golden", "--batch", 2, "--heads", 3,
                        "--seq-q", 8, "--seq-kv", 12, "--json", tmp_path / "r.json"], capsys)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and rep["shape"] == [2, 3, 8, 4] and rep["heads"] == 6
    assert rep["counters"]["fence"] == 1                      # one program
    assert "heads=6 (2 x 3)" in out
    code, _, _ = run(["run", "--config", CFG, "--sim", "golden", "--heads", 2,
                      "--json", tmp_path / "h.json"], capsys)
    assert code == 0 and json.loads((tmp_path / "h.json").read_text())["shape"] == [2, 64, 4]


def test_scale_option(tmp_path, capsys):
    code, _, _ = run(["run", "--config", CFG, "--sim", "golden", "--seq-q", 8, "--seq-kv", 10,
                      "--scale", 0.2, "--json", tmp_path / "r.json", "--out", tmp_path / "o.npy"],
                     capsys)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and rep["scale"] == 0.2 and rep["vs_torch"]["within_bounds"]
    # the same generated inputs (seed 0) through the API with that scale
    rng = np.random.default_rng(0)
    q, k, v = (torch.from_numpy(fa3_inputs(rng, (n, 4))) for n in (8, 10, 10))
    want = fsa.scaled_dot_product_attention(q, k, v, scale=0.2, config=CFG)
    assert np.array_equal(np.load(tmp_path / "o.npy"), want.numpy())
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--config", CFG, "--sim", "golden", "--scale", "-2"])
    assert e.value.code == 2 and "argument --scale" in capsys.readouterr().err


def test_refusals(tmp_path, capsys):
    q = np.zeros((2, 8, 4))
    code, _, err = run(["run", "--config", CFG, "--sim", "golden", "--batch", 2,
                        *files(tmp_path, q=q, k=q, v=q)], capsys)
    assert code == 2 and "--batch: only for generated inputs" in err
    wide = np.zeros((2, 8, 5))
    code, _, err = run(["run", "--config", CFG, "--sim", "golden",
                        *files(tmp_path, q=wide, k=wide, v=wide)], capsys)
    assert code == 2 and "--q" in err and "d <= 4" in err
    code, _, err = run(["run", "--config", CFG, "--sim", "golden",
                        *files(tmp_path, q=np.zeros((3, 8, 4)), k=q, v=q)], capsys)
    assert code == 2 and "broadcast" in err
    code, _, err = run(["run", "--config", CFG, "--sim", "golden",
                        *files(tmp_path, q=np.zeros((0, 8, 4)), k=q, v=q)], capsys)
    assert code == 2 and "empty" in err


def test_one_head_run_is_the_single_head_program(tmp_path, capsys):
    """`fsa run` with [S, d] inputs of block multiples (make run's case) runs
    the single-head kernel of earlier versions: the same instructions, the
    same bits, cycles and FLOPs as building it directly."""
    from fsa import config, kernels
    from fsa.cycle import model as cm
    from fsa.engines import GoldenEngine

    cfg = config.get(CFG)
    code, out, _ = run(["run", "--config", CFG, "--sim", "golden", "--seq-q", 8, "--seq-kv", 12,
                        "--out", tmp_path / "o.npy", "--json", tmp_path / "r.json"], capsys)
    rep = json.loads((tmp_path / "r.json").read_text())
    rng = np.random.default_rng(0)
    q, k, v = (fa3_inputs(rng, (n, 4)) for n in (8, 12, 12))
    prog = kernels.attention(cfg, 8, 12)
    res = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    assert code == 0 and np.array_equal(np.load(tmp_path / "o.npy"), res.o)
    # (fsa run's cycles: the program-fetch model, the device's default mode)
    from fsa.simdev import program_address
    fetch = cm.FetchTiming(program_address(cfg, len(prog.words())))
    assert rep["cycles"] == cm.simulate(cfg, prog.instructions, fetch=fetch).cycles
    assert rep["flops"] == attention_flops(8, 12, 4) and rep["d"] == 4
    assert f"{len(prog.words())} instruction words" in out and "heads" not in out
