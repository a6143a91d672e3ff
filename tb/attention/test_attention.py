"""The regression: full attention through ``fsa_top`` over AXI (cocotbext-axi),
bit-equal to the golden model and within the accuracy bounds against
torch.nn.functional.scaled_dot_product_attention, with consistent counters,
and on every run without AXI pauses (programs longer than the instruction
queue included) the counters equal to the cycle model's
(``check_cycles``; the coverage summary names the runs it did not check).

Default tier: a handful of configs and shapes (``make SIM=verilator``), one
16x16 run (64 x 64) among them. ``FULL=1`` adds a causal 16x16 run, 32x32
arrays and longer sequences. The reference configs of :data:`ON_UD_TWIN` run
their (reference) programs on their UD twin's build in the default tier (one
build fewer each; tb/test_ud_attention.py builds the twins anyway) and on
their own build with ``FULL=1``. On Verilator the toplevel is ``fsa_memtop``
(fsa/fastmem.py) with its ``fast`` input at 0: ``fsa_top``'s memory ports
answered by cocotbext-axi, as on Icarus. ``SEED=n``
changes the inputs (default 1; printed on failure). On Icarus the default
tier is a subset (``ICARUS_FULL=1`` runs the same cases as Verilator).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import cyclemodel as cm
from fsa import kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.report import bit_diff, bound_scale, error_stats, fa3_inputs, torch_reference, within_bounds
from fsa.simdev import run_on_device
from fsa.simrun import get_sim

import coverage_report as cov

pytestmark = pytest.mark.sim
SEED = int(os.environ.get("SEED", "1"))
FULL = os.environ.get("FULL", "0") not in ("", "0")


def case(name, sq, skv, causal=False, pauses=0.0, icarus=False, full=False):
    marks = [pytest.mark.full] if full else []
    return pytest.param(name, sq, skv, causal, pauses, icarus, full,
                        id=f"{name}-{sq}x{skv}{'-causal' if causal else ''}"
                           f"{'-pauses' if pauses else ''}", marks=marks)


CASES = [
    case("FSA4X4Fp16Config", 4, 4, icarus=True),                  # one block
    case("FSA4X4Fp16Config", 8, 12),                              # several blocks, seq_q != seq_kv
    case("FSA4X4Fp16Config", 12, 12, causal=True, icarus=True),
    case("FSA4X4Fp16Config", 8, 8, pauses=0.3, icarus=True),      # random AXI pauses
    case("FSA4X4Fp16Config", 16, 32),                             # 601 words: longer than the queue
    case("FSA8X8Fp16Config", 16, 24),
    case("FSA8X8Fp16Config", 16, 16, causal=True),
    case("FSA4X4Bf16Config", 8, 8, causal=True),
    case("FSA4X4Fp32Config", 8, 8),
    case("FSA8X4Fp16Config", 8, 16),                              # non-square (R=8, C=4)
    case("FSA4X4Fp16TwoPortConfig", 8, 8, pauses=0.3),            # two AXI memory ports
    case("FSA4X8Fp16Config", 16, 8),                              # non-square (R=4, C=8)
    case("FSA4X4Fp16OnlyConfig", 8, 12),                          # fp16 accumulation
    case("FSA16X8Fp16Config", 16, 32, full=True),
    case("FSA8X16Fp16Config", 32, 16, full=True),
    case("FSA8X8Fp16TwoPortConfig", 16, 24, full=True),
    case("FSA8X8Fp32Config", 16, 16, full=True),
    case("FSA8X8Bf16OnlyConfig", 16, 16, causal=True, full=True),
    case("FSA16X16Fp16Config", 64, 64),                          # 16x16 in the default tier (issue 16)
    case("FSA16X16Fp16Config", 64, 64, causal=True, full=True),
    case("FSA32X32Fp16Config", 64, 96, full=True),
    case("FSA4X4Fp16Config", 64, 128, full=True),
    case("FSA8X8Bf16Config", 64, 64, causal=True, full=True),
]


#: reference configs whose default-tier runs use the build of their UD twin
#: (``...UdConfig``: the same config with ``dataflow="ud"``).  The reference
#: instructions run there unchanged: the same bits and counters as on the
#: reference build (tb/test_ud_attention.py::test_reference_kernel_on_ud_hardware
#: checks that on 4x4 fp16 in every tier; ``FULL=1`` runs these on their own)
ON_UD_TWIN = ("FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig",
              "FSA8X4Fp16Config", "FSA4X8Fp16Config")


def device_config(cfg):
    """The config whose hardware runs `cfg`'s programs in this tier: `cfg`,
    or its UD twin for :data:`ON_UD_TWIN` outside ``FULL=1``."""
    if FULL or cfg.name not in ON_UD_TWIN:
        return cfg
    twin = fconfig.get(cfg.name.replace("Config", "UdConfig"))
    assert twin.replace(name=cfg.name, dataflow=cfg.dataflow) == cfg, twin.name
    return twin


def _skip_if_not_in_tier(full, icarus):
    if full and not FULL:
        pytest.skip("long sweep: FULL=1")
    if get_sim() == "icarus" and not icarus and not FULL and os.environ.get("ICARUS_FULL") != "1":
        pytest.skip("Icarus default tier is a subset (ICARUS_FULL=1 for all)")


def run_attention(cfg, q, k, v, causal, pauses=0.0, hw=None):
    """Run on the RTL and on the golden model; return both and the device run.
    `hw`: the config whose hardware runs `cfg`'s program (default `cfg`)."""
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=causal)
    inputs = {"Q": q, "K": k, "V": v}
    gold = GoldenEngine(cfg).run(prog, inputs)
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    regions = prog.output_regions()
    res = run_on_device(hw or cfg, prog.words(), image, regions, max_cycles=4_000_000,
                        pauses=pauses, seed=SEED)
    return prog, gold, res


def check_cycles(cfg, prog, run, what: str, pauses: float) -> bool:
    """The cycle model (fsa/cyclemodel.py: calibrated DMA timing, and the
    harness's push rate for the words beyond the queue's depth) predicts the
    device's exec, bubble, mx_active and dma_active counters exactly when the
    memory answers without pauses. Runs with random AXI pauses are not
    checked (the model has no pauses): returns False for them, and the
    coverage summary lists them."""
    if pauses:
        return False
    m = cm.simulate(cfg, prog.instructions, cm.DEFAULT_DMA, host=cm.HARNESS_HOST)
    assert m.cycles == run["counters"]["exec"], (
        f"{what}: cycle model {m.cycles} cycles, RTL exec {run['counters']['exec']}")
    for k in ("bubble", "mx_active", "dma_active"):
        assert m.counters[k] == run["counters"][k], (what, k, m.counters, run["counters"])
    return True


def check_device(cfg, prog, gold, res, what: str, pauses: float = 0.0):
    run = res["runs"][-1]
    assert run["state"] == "done", f"{what}: device state {run['state']}, error {run['error']} " \
                                   f"at instruction {run['error_index']} (SEED={SEED})"
    rtl = np.frombuffer(res["dumps"][0], gold.outputs["Ot"].dtype).reshape(gold.outputs["Ot"].shape)
    d = bit_diff(rtl, gold.outputs["Ot"])
    assert d["differ"] == 0, (f"{what}: {d['differ']} of {rtl.size} output values differ from the "
                              f"golden model (SEED={SEED}); first (index, rtl, model): {d['first']}; "
                              f"run folder {res['run_dir']}")
    c = run["counters"]
    counts = prog.counts()
    assert c["mx"] == counts.get("matrix", 0) and c["dma"] == counts.get("dma", 0), (c, counts)
    assert c["fence"] == counts.get("fence", 0), (c, counts)
    assert c["words"] == c["enq"] == c["deq"] == len(prog.words()), c
    assert c["exec"] > 0 and 0 < c["mx_active"] <= c["exec"] and c["dma_active"] <= c["exec"], c
    return rtl, check_cycles(cfg, prog, run, what, pauses)


@pytest.mark.parametrize("name,sq,skv,causal,pauses,icarus,full", CASES)
def test_attention(name, sq, skv, causal, pauses, icarus, full):
    _skip_if_not_in_tier(full, icarus)
    cfg = fconfig.get(name)
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(fa3_inputs(rng, (n, cfg.sa_rows)), cfg.e_type) for n in (sq, skv, skv))
    hw = device_config(cfg)
    prog, gold, res = run_attention(cfg, q, k, v, causal, pauses, hw)
    on = "" if hw is cfg else f" on {hw.name}"
    _, checked = check_device(hw, prog, gold, res, f"{name} {sq}x{skv}{on}", pauses)
    ref = torch_reference(*(nx.to_float64(x, cfg.e_type) for x in (q, k, v)), causal)
    stats = error_stats(gold.o, ref)
    s = bound_scale(nx.to_float64(v, cfg.e_type))
    assert within_bounds(stats, s, cfg.e_type), f"{name}: vs torch {stats}, s={s} (SEED={SEED})"
    cov.record(prog, res["runs"][-1], pauses=pauses, config=hw, cycles_checked=checked,
               what=f"{name} {sq}x{skv}{' causal' if causal else ''}{on}")


# ---------------------------------------------------------------- edge values
def edge_inputs(kind: str, cfg, sq: int, skv: int):
    R = cfg.sa_rows
    rng = np.random.default_rng(SEED)
    q, k, v = (rng.standard_normal((n, R)) for n in (sq, skv, skv))
    if kind == "outliers":
        q[0, 0], k[3, 1], v[5, 2] = 60.0, -80.0, 1000.0
    elif kind == "equal_scores":
        k[:] = k[0]                                  # every key equal: uniform softmax
    elif kind == "all_negative":
        q = np.abs(q) + 0.5
        k = -np.abs(k) - 0.5
    elif kind == "dominant":
        k[5] = q[0] * 12                              # one key dominates query 0's row
    elif kind == "tiny":
        q, k, v = q * 1e-5, k * 1e-5, v * 1e-6       # subnormal range of fp16
    elif kind == "nan_inf":
        q[1, 0] = np.nan
        k[2, 3] = np.inf
        v[7, 1] = -np.inf
    return tuple(nx.from_float64(x, cfg.e_type) for x in (q, k, v))


@pytest.mark.parametrize("kind", ["outliers", "equal_scores", "all_negative", "dominant", "tiny",
                                  "nan_inf"])
def test_edge_values(kind):
    """Edge inputs: the RTL must equal the golden model bit for bit; finite
    cases must also be within the torch bounds; with inf/NaN inputs the NaN
    pattern of the output follows torch's (README: 'Special values')."""
    if get_sim() == "icarus" and kind not in ("nan_inf", "tiny") and not FULL:
        pytest.skip("Icarus default tier is a subset")
    cfg = fconfig.get("FSA4X4Fp16Config")
    q, k, v = edge_inputs(kind, cfg, 8, 12)
    prog, gold, res = run_attention(cfg, q, k, v, False)
    _, checked = check_device(cfg, prog, gold, res, f"edge {kind}")
    ref = torch_reference(*(nx.to_float64(x, cfg.e_type) for x in (q, k, v)), False)
    if kind == "nan_inf":
        assert np.array_equal(np.isnan(gold.o), np.isnan(ref)), (np.isnan(gold.o), np.isnan(ref))
    else:
        stats = error_stats(gold.o, ref)
        s = bound_scale(nx.to_float64(v, cfg.e_type))
        assert within_bounds(stats, s, cfg.e_type), f"edge {kind}: vs torch {stats}, s={s}"
    cov.record(prog, res["runs"][-1], config=cfg, edge=kind, cycles_checked=checked,
               what=f"edge {kind}")
