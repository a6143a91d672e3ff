"""The multi-port memory shapes of the large presets (``fsa.config.memory_system``:
scratchpad rows of ``b > 1`` AXI beats get ``min(2b, 8)`` AXI ports, twice
as many scratchpad banks (at most 16) and one accumulator bank per port,
each bank with its own narrow port) on small arrays, where a simulator build is cheap: the same ``b`` is
reached with a narrower AXI bus (8x8 fp16 rows on a 64-bit bus are 2 beats,
as 64x64 fp16 rows on the presets' 512-bit bus).

* ``test_shape_matches_the_presets``: each small shape is the one the
  presets with the same ``b`` get (no simulator);
* ``test_dma_shape``: the DMA unit bench (``tb/tb_dma.py``) on each shape;
* ``test_attention_shape``: attention through ``fsa_top`` bit-equal to the
  golden model and the device counters equal to the cycle model's
  (``tb/test_attention.py``'s ``check_device``): the UD kernel on the b = 2
  and b = 8 UD shapes and the reference kernel on the b = 2 UD build (one
  build each); ``FULL=1`` adds b = 4 and the reference-dataflow builds.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.report import fa3_inputs
from fsa.simdev import run_on_device

import coverage_report as cov
from tb import simrun
from test_attention import FULL, SEED, check_device
from test_dma import dma_verilog


def shape(base: str, axi_bits: int, ud: bool = False, **kw) -> fconfig.FSAConfig:
    """`base` on an `axi_bits` bus with memory_system's shape for rows of
    ``b = row bits / axi_bits`` beats (``min(2b, 8)`` ports, twice as many
    scratchpad banks (at most 16), one accumulator bank per port)."""
    cfg = fconfig.get(base)
    b = cfg.spad_row_bytes * 8 // axi_bits
    ports = min(fconfig.MAX_PRESET_PORTS, 2 * b)
    name = f"{base[:-len('Config')]}Axi{axi_bits}B{b}{'Ud' if ud else ''}Config"
    return cfg.replace(name=name, axi_data_bits=axi_bits, mem_ports=ports,
                       spad_banks=min(16, 2 * ports), acc_banks=ports,
                       dataflow="ud" if ud else "reference", **kw)


#: b -> the small config with that shape (8x8: two beats on 64 bits, four
#: beats of fp32 rows on 64 bits, eight on 32 bits; acc_rows 16 for 8
#: accumulator banks of two rows each)
SHAPES = {2: shape("FSA8X8Fp16Config", 64), 4: shape("FSA8X8Fp32Config", 64, acc_rows=16),
          8: shape("FSA8X8Fp32Config", 32, acc_rows=16)}


def test_shape_matches_the_presets():
    """Each small shape is what memory_system gives the presets whose rows
    have the same number of beats (and every b the presets use is here)."""
    seen = set()
    for name in fconfig.names():
        cfg = fconfig.get(name)
        b = cfg.spad_row_bytes * 8 // cfg.axi_data_bits
        if cfg.mem_ports == 1 or "TwoPort" in name:
            continue
        seen.add(b)
        small = SHAPES[b]
        assert small.spad_row_bytes * 8 // small.axi_data_bits == b
        assert (cfg.mem_ports, cfg.spad_banks, cfg.acc_banks) == (
            small.mem_ports, small.spad_banks, small.acc_banks), name
    assert seen == set(SHAPES)


@pytest.mark.sim
@pytest.mark.parametrize("b", sorted(SHAPES))
def test_dma_shape(b):
    cfg = SHAPES[b]
    params = dict(config=cfg.to_dict(), random_instrs=1000 if FULL else 100)
    simrun.run("fsa_dma", dma_verilog(cfg), "tb_dma",
               extra_env={"FSA_DMA_PARAMS": json.dumps(params)}, timeout_s=600)


@pytest.mark.sim
@pytest.mark.parametrize("b,ud,kernel", [
    (2, True, "ud"), (8, True, "ud"),
    # the reference kernel on the b = 2 UD build (the reference functions are
    # unchanged there: tb/test_ud_attention.py checks that such a run equals
    # the reference hardware's, bits and counters); FULL=1 builds the
    # reference-dataflow shapes too
    (2, True, "reference"),
    pytest.param(4, True, "ud", marks=pytest.mark.full),
    pytest.param(2, False, "reference", marks=pytest.mark.full),
    pytest.param(4, False, "reference", marks=pytest.mark.full),
    pytest.param(8, False, "reference", marks=pytest.mark.full)])
def test_attention_shape(b, ud, kernel):
    if (b == 4 or not ud) and not FULL:
        pytest.skip("long sweep: FULL=1")
    base = SHAPES[b]
    cfg = base.replace(name=base.name.replace("Config", "UdConfig"), dataflow="ud") if ud else base
    sq, skv = 16, 24
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(fa3_inputs(rng, (n, cfg.sa_rows)), cfg.e_type) for n in (sq, skv, skv))
    prog = kernels.attention(cfg, sq, skv, kernel=kernel)
    assert prog.meta.get("kernel", "reference") == kernel, prog.meta
    gold = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    res = run_on_device(cfg, prog.words(), image, prog.output_regions(), max_cycles=2_000_000,
                        seed=SEED)
    _, checked = check_device(cfg, prog, gold, res, f"{cfg.name} {sq}x{skv}")
    assert checked
    cov.record(prog, res["runs"][-1], config=cfg, cycles_checked=checked,
               what=f"{cfg.name} {sq}x{skv} ({kernel} kernel)")
