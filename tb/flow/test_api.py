"""fsa.scaled_dot_product_attention on the RTL: the same raw bits as the
golden model for multi-head calls (several (batch, head) pairs in ONE
program and one simulator start; padded sequences, grouped-query kv heads,
D < R, the key-limit mask and a run-time scale),
the programs longer than the instruction queue (the host pushes the rest
during the run), and the result within the accuracy bounds of torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fsa
from fsa import config
from fsa.cycle import model as cm
from fsa import numerics as nx
from fsa.report import bound_scale, bounds_verdict, error_stats, fa3_inputs
from fsa.simrun import get_sim

pytestmark = pytest.mark.sim
CFG = "FSA4X4Fp16Config"

CASES = [  # (query shape, key/value shape, causal, enable_gqa, scale)
    ((2, 2, 6, 4), (2, 1, 7, 4), True, True, None),   # causal, S_q < S_kv, both padded; GQA
    ((3, 5, 3), (3, 7, 3), False, False, 0.3),        # D < R, padded keys (key mask), scale
]


@pytest.mark.parametrize("qs,kvs,causal,gqa,scale", CASES)
def test_rtl_equals_golden_for_many_heads(qs, kvs, causal, gqa, scale):
    cfg = config.get(CFG)
    rng = np.random.default_rng(sum(qs) + sum(kvs))
    q, k, v = (torch.from_numpy(fa3_inputs(rng, s)).float() for s in (qs, kvs, kvs))
    kw = dict(is_causal=causal, enable_gqa=gqa, scale=scale, config=CFG, return_stats=True)
    gold, gst = fsa.scaled_dot_product_attention(q, k, v, engine="golden", **kw)
    rtl, rst = fsa.scaled_dot_product_attention(q, k, v, engine=get_sim(), **kw)
    # raw bits: the whole output tensor in memory, and the caller's values
    assert np.array_equal(rst.result.outputs["Ot"], gst.result.outputs["Ot"])
    assert torch.equal(rtl.view(torch.int32), gold.view(torch.int32))
    # one program, one start: the device ran every head and stopped once
    assert rst.cycles_from == "device exec counter" and rst.counters["fence"] == 1
    assert rst.heads == int(np.prod(qs[:-2])) and rst.settings == gst.settings
    assert ("key_limit" in rst.settings) == (not causal)      # written to the device
    # golden's cycles are the cycle model's with program fetch, as the device
    # runs it: equal to the device's exec counter (programs longer than the queue)
    n = len(rst.program.words())
    model = cm.simulate(cfg, rst.program.instructions, **cm.program_feed(cfg, "fetch", n)).cycles
    assert gst.cycles == model == rst.cycles and rst.words > cfg.inst_queue_size
    assert 0 < rst.utilisation < rst.kernel_utilisation <= 1 or \
        rst.utilisation == rst.kernel_utilisation
    # within the bounds of torch on the same rounded inputs
    qn, kn, vn = (torch.from_numpy(nx.to_float64(nx.from_float64(x.double().numpy(), "fp16"),
                                                 "fp16")) for x in (q, k, v))
    ref = F.scaled_dot_product_attention(qn, kn, vn, is_causal=causal, enable_gqa=gqa,
                                         scale=scale).numpy()
    stats = error_stats(rtl.double().numpy(), ref)
    ok, why = bounds_verdict(stats, bound_scale(vn.numpy()), "fp16")
    assert ok, (why, stats)


def test_readme_snippet_runs(capsys):
    """The README's `fsa.scaled_dot_product_attention` snippet, verbatim
    (golden model and Verilator)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Use it like torch", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("torch.Size([2, 4, 24, 8]) torch.float32")
    err = float(re.search(r"tensor\(([0-9.e-]+)\)", lines[0]).group(1))
    assert err < 5e-3        # within the fp16 max-abs bound 5e-3 s (s = 1.02 for this seed)
    cycles, util, heads = lines[1].split()
    assert int(cycles) > 0 and 0 < float(util) < 1 and heads == "8"
