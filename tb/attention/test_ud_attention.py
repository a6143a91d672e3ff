"""The UD dataflow's regression (docs/ud.md, issue 15 stage 2): the UD kernel
(``fsa/kernels/ud.py``) through ``fsa_top`` of a UD configuration over AXI,
bit-equal to the golden model (raw bits) and within the torch bounds, with
the device counters equal to the cycle model's (``fsa/cycle/model.py``) on
every run without AXI pauses (several heads in one program too); and the
reference kernel on UD hardware: the
same bits and the same counters as on the reference configuration (the
reference functions are unchanged there).

The same harness as ``tb/attention/test_attention.py`` (``fsa.simdev.run_on_device``);
``SEED=n`` changes the inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.report import bound_scale, error_stats, fa3_inputs, torch_reference, within_bounds
from fsa.simdev import run_on_device

from tb.common import coverage_report as cov
from tb.attention.inputs import edge_inputs
from tb.common.device import check_device
from tb.common.tier import FULL, SEED

pytestmark = pytest.mark.sim


def _inputs(cfg, sq, skv):
    rng = np.random.default_rng(SEED)
    return tuple(nx.from_float64(fa3_inputs(rng, (n, cfg.sa_rows)), cfg.e_type)
                 for n in (sq, skv, skv))


def _run(cfg, q, k, v, causal, pauses=0.0, kernel=None):
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=causal, kernel=kernel)
    gold = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    res = run_on_device(cfg, prog.words(), image, prog.output_regions(), max_cycles=4_000_000,
                        pauses=pauses, seed=SEED)
    return prog, gold, res


def case(name, sq, skv, causal=False, pauses=0.0, full=False):
    return pytest.param(name, sq, skv, causal, pauses,
                        id=f"{name}-{sq}x{skv}{'-causal' if causal else ''}"
                           f"{'-pauses' if pauses else ''}",
                        marks=[pytest.mark.full] if full else [])


CASES = [
    case("FSA4X4Fp16UdConfig", 4, 4),                       # one block: KSTEP, PVSTEP only
    case("FSA4X4Fp16UdConfig", 8, 12),                      # STEPs, two query blocks
    case("FSA4X4Fp16UdConfig", 12, 12, causal=True),
    case("FSA4X4Fp16UdConfig", 8, 8, pauses=0.3),           # random AXI pauses (bits only)
    case("FSA4X4Fp16UdConfig", 16, 32),                     # longer than the queue
    case("FSA8X8Fp16UdConfig", 16, 24),
    case("FSA8X8Fp16UdConfig", 16, 16, causal=True),
    case("FSA4X4Bf16UdConfig", 8, 8, causal=True),
    case("FSA4X4Fp32UdConfig", 8, 8),
    case("FSA4X4Fp16OnlyUdConfig", 8, 12),                  # fp16 accumulation
    case("FSA4X8Fp16UdConfig", 16, 8),                      # non-square (R=4, C=8)
    case("FSA8X4Fp16UdConfig", 8, 16),                      # non-square (R=8, C=4)
    case("FSA16X16Fp16UdConfig", 256, 256, full=True),      # the target size
]


@pytest.mark.parametrize("name,sq,skv,causal,pauses", CASES)
def test_ud_attention(name, sq, skv, causal, pauses):
    if name.startswith("FSA16X16") and not FULL:
        pytest.skip("long sweep: FULL=1")
    cfg = fconfig.get(name)
    assert cfg.dataflow == "ud"
    q, k, v = _inputs(cfg, sq, skv)
    prog, gold, res = _run(cfg, q, k, v, causal, pauses)
    assert prog.meta.get("kernel") == "ud", prog.meta
    _, checked = check_device(cfg, prog, gold, res, f"{name} {sq}x{skv}", pauses)
    assert checked == (not pauses)
    ref = torch_reference(*(nx.to_float64(x, cfg.e_type) for x in (q, k, v)), causal)
    stats = error_stats(gold.o, ref)
    s = bound_scale(nx.to_float64(v, cfg.e_type))
    assert within_bounds(stats, s, cfg.e_type), f"{name}: vs torch {stats}, s={s} (SEED={SEED})"
    cov.record(prog, res["runs"][-1], pauses=pauses, config=cfg, cycles_checked=checked,
               what=f"UD {name} {sq}x{skv}{' causal' if causal else ''}")


@pytest.mark.parametrize("kind", ["outliers", "nan_inf"])
def test_ud_edge_values(kind):
    """Outliers and inf/NaN inputs through the UD RTL: bit-equal to the golden
    model, cycles equal to the cycle model."""
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    q, k, v = edge_inputs(kind, cfg, 8, 12)
    prog, gold, res = _run(cfg, q, k, v, False)
    _, checked = check_device(cfg, prog, gold, res, f"UD edge {kind}")
    assert checked
    cov.record(prog, res["runs"][-1], config=cfg, edge=kind, cycles_checked=checked,
               what=f"UD edge {kind}")


@pytest.mark.parametrize("name,ref_name,causal", [
    ("FSA4X4Fp16UdConfig", "FSA4X4Fp16Config", False),
    ("FSA4X4Fp16UdConfig", "FSA4X4Fp16Config", True),
])
def test_reference_kernel_on_ud_hardware(name, ref_name, causal):
    """``--kernel reference`` on UD hardware: the reference functions are
    unchanged there, so the bits and every counter equal the reference
    configuration's run of the same program."""
    cfg, ref_cfg = fconfig.get(name), fconfig.get(ref_name)
    q, k, v = _inputs(cfg, 8, 12 if not causal else 8)
    prog, gold, res = _run(cfg, q, k, v, causal, kernel="reference")
    assert prog.meta.get("kernel") != "ud"
    rtl, checked = check_device(cfg, prog, gold, res, f"reference kernel on {name}")
    assert checked
    rprog, rgold, rres = _run(ref_cfg, q, k, v, causal)
    assert rprog.words() == prog.words()
    rrtl, _ = check_device(ref_cfg, rprog, rgold, rres, f"reference kernel on {ref_name}")
    assert rtl.tobytes() == rrtl.tobytes()
    assert res["runs"][-1]["counters"] == rres["runs"][-1]["counters"]



def test_ud_many_heads_on_the_device():
    """Four query heads sharing two kv heads (grouped-query), causal, in one UD
    program on 4x4 UD hardware: raw bits equal to the instruction-level golden
    model and to the reference kernel's multi-head output, counters equal to
    the cycle model."""
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    heads, kv_heads, sq, skv = 4, 2, 8, 8
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(fa3_inputs(rng, (n, cfg.sa_rows)), cfg.e_type)
               for n in (heads * sq, kv_heads * skv, kv_heads * skv))
    prog = kernels.attention(cfg, sq, skv, causal=True, heads=heads, kv_heads=kv_heads)
    assert prog.meta["kernel"] == "ud" and prog.meta["kv_map"] == (0, 0, 1, 1)
    gold = GoldenEngine(cfg, machine=True).run(prog, {"Q": q, "K": k, "V": v})
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    res = run_on_device(cfg, prog.words(), image, prog.output_regions(), max_cycles=4_000_000,
                        seed=SEED)
    rtl, checked = check_device(cfg, prog, gold, res, "UD 4 heads / 2 kv heads")
    assert checked
    ref_cfg = fconfig.get("FSA4X4Fp16Config")
    ref = GoldenEngine(ref_cfg).run(
        kernels.attention(ref_cfg, sq, skv, causal=True, heads=heads, kv_heads=kv_heads),
        {"Q": q, "K": k, "V": v})
    assert rtl.tobytes() == ref.outputs["Ot"].tobytes()
    cov.record(prog, res["runs"][-1], config=cfg, cycles_checked=checked,
               what="UD FSA4X4Fp16UdConfig 4 heads / 2 kv heads causal")


def _golden_error(cfg, words):
    from fsa import isa
    from fsa.golden.machine import Machine, MachineError

    try:
        Machine(cfg).run(isa.decode(words))
    except MachineError as e:
        return e.code, e.index
    return None, None


def test_ud_decode_and_range_errors():
    """The decoder and the range check of UD hardware, against the golden
    model's errors: function codes above 8 are illegal, the UD functions'
    scratchpad and accumulator walks are range-checked (STEP: 2R + R + 1
    rows), and the UD codes are illegal on reference hardware."""
    from fsa.isa import Fence, Matrix, MxFunc, encode

    ud, ref = fconfig.get("FSA4X4Fp16UdConfig"), fconfig.get("FSA4X4Fp16Config")
    R = ud.sa_rows
    flags = dict(rev_input=True, delay_output=True)
    ok = Matrix(MxFunc.LOAD_Q, spad_addr=0, spad_stride=1, **flags)
    stop = Fence(mx=True, dma=True, stop=True)
    cases = [
        (ud, encode([ok]) + [(1 << 29) | (11 << 11), 0, 0] + encode([stop]), "ILLEGAL_FUNC", 1),
        (ud, encode([ok, Matrix(MxFunc.KSTEP, spad_addr=ud.spad_rows - R + 1, spad_stride=1,
                                **flags), stop]), "SRAM_RANGE", 1),
        (ud, encode([ok, Matrix(MxFunc.STEP, spad_addr=ud.spad_rows - 2 * R + 1, spad_stride=1,
                                acc_addr=0, acc_stride=1, **flags), stop]), "SRAM_RANGE", 1),
        (ud, encode([ok, Matrix(MxFunc.KSTEP, spad_addr=0, spad_stride=1, **flags),
                     Matrix(MxFunc.PVSTEP, spad_addr=0, spad_stride=1,
                            acc_addr=ud.acc_rows - R, acc_stride=1, **flags), stop]),
         "SRAM_RANGE", 2),
        (ref, encode([Fence(mx=True), ok, stop]), "ILLEGAL_FUNC", 1),
    ]
    for n, (cfg, words, code, index) in enumerate(cases):
        if n:         # (the golden model's decoder refuses code 11 outright)
            assert _golden_error(cfg, words) == (code, index), (cfg.name, code)
        res = run_on_device(cfg, words, [], [], max_cycles=100_000)
        run = res["runs"][-1]
        assert (run["state"], run["error"], run["error_index"]) == ("error", code, index), \
            (cfg.name, code, run)
