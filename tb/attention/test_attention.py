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
build fewer each; tb/attention/test_ud_attention.py builds the twins anyway) and on
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
from fsa import kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.report import bound_scale, error_stats, fa3_inputs, torch_reference, within_bounds
from fsa.simdev import run_on_device
from fsa.simrun import get_sim

from tb.attention.inputs import edge_inputs
from tb.common import coverage_report as cov
from tb.common.device import check_device
from tb.common.tier import FULL, SEED

pytestmark = pytest.mark.sim


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
#: reference build (tb/attention/test_ud_attention.py::test_reference_kernel_on_ud_hardware
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
