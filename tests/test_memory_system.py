"""The presets' memory systems (issue 14 items 2 and 3): one AXI beat per
scratchpad row up to 512 bits and two row-interleaved scratchpad banks
(:func:`fsa.config.memory_system`), the narrow-bus ``...Axi64Config``
variants, the documented demand formula (:func:`fsa.cyclemodel.dma_demand`) and
the ``dma_outstanding`` field (issue 14 item 1), all without a simulator.
The RTL side (the device's cycles equal to the model's on these presets) is
in tb/test_attention.py."""
from __future__ import annotations

import pytest

from fsa import config as fconfig
from fsa import cyclemodel as cm
from fsa import isa, kernels


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA8X8Fp16Config", "FSA16X16Fp16Config",
                                  "FSA32X32Fp16Config", "FSA64X64Fp16Config", "FSA8X8Fp32Config",
                                  "FSA16X8Fp16Config", "FSA8X16Fp16Config", "FSA8X4Fp16Config"])
def test_preset_memory_keeps_up_with_the_schedule(name):
    """The key-block period is the free-DMA one (the matrix schedule alone)
    up to 64x64 fp16, and up to 512-bit rows the K/V stream needs less than
    the whole narrow port even at twice today's demand (UD)."""
    cfg = fconfig.get(name)
    free = cm.steady_state(cfg, cm.IDEAL_DMA)["per_key_block"]
    assert cm.steady_state(cfg)["per_key_block"] == free
    need = cm.dma_demand(cfg)
    if cfg.sa_rows * cfg.e_fmt.width <= 512:
        assert need["beats"] == 2 * cfg.sa_rows and need["ud_occupancy"] < 1
    narrow = cfg.replace(axi_data_bits=64, spad_banks=1, name="N")
    slow = cm.steady_state(narrow)["per_key_block"]
    assert slow >= free
    # where the narrow bus needs over half the narrow port (all but 4x4 and
    # 8x16, whose LOADs in flight hide the latency) it is slower: the test
    # can tell them apart
    if cm.dma_demand(narrow)["occupancy"] > 0.5:
        assert slow > free


def test_demand_formula_counts_the_kernels_beats():
    """dma_demand's beats = the K and V loads of one key block in the kernel."""
    for name in ("FSA8X8Fp16Axi64Config", "FSA16X16Fp16Config", "FSA64X64Fp16Config"):
        cfg = fconfig.get(name)
        beat = cfg.axi_data_bits // 8
        one, two = (kernels.attention(cfg, cfg.sa_cols, k * cfg.sa_rows, check=False)
                    for k in (1, 2))

        def beats(p):
            return sum(x.repeat * -(-x.size // beat) for x in p.instructions
                       if isinstance(x, isa.Dma) and x.func == isa.DmaFunc.LOAD)
        d = cm.dma_demand(cfg)
        assert beats(two) - beats(one) == d["beats"]
        assert d["bytes"] == 2 * cfg.sa_rows ** 2 * cfg.e_fmt.bytes
        assert d["period"] == cm.reference_period(cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces)


def test_memory_system_rule():
    """One beat per scratchpad row, capped at 512 bits, dividing the
    accumulator row; two banks once the bus is wider than 64 bits."""
    assert fconfig.memory_system(4, 4, "fp16", "fp32") == {"axi_data_bits": 64, "spad_banks": 1}
    assert fconfig.memory_system(16, 16, "fp16", "fp32") == {"axi_data_bits": 256, "spad_banks": 2}
    assert fconfig.memory_system(128, 128, "fp32", "fp32") == {
        "axi_data_bits": 512, "spad_banks": 4, "acc_banks": 4, "mem_ports": 4}
    assert fconfig.memory_system(8, 4, "fp16", "fp32")["axi_data_bits"] == 128
    for name in fconfig.names():
        cfg = fconfig.get(name)
        if name.endswith("Axi64Config"):
            assert (cfg.axi_data_bits, cfg.spad_banks) == (64, 1), name
            assert fconfig.get(name.replace("Axi64", "")).sa_rows == cfg.sa_rows
        else:
            want = fconfig.memory_system(cfg.sa_rows, cfg.sa_cols, cfg.e_type, cfg.a_type)
            assert (cfg.axi_data_bits, cfg.spad_banks) == (want["axi_data_bits"],
                                                           want["spad_banks"]), name
            assert cfg.axi_data_bits == min(512, cfg.spad_row_bytes * 8), name
        # the reference's mem_align is the AXI beat in bytes
        assert cfg.reference_dict()["mem_align"] == cfg.axi_data_bits // 8


@pytest.mark.parametrize("value", [0, 3, 32, "8", 8.0])
def test_dma_outstanding_is_validated(value):
    with pytest.raises(ValueError, match="dma_outstanding must be 2, 4, 8 or 16"):
        fconfig.get("FSA4X4Fp16Config").replace(dma_outstanding=value)


def test_dma_outstanding_round_trips_and_reaches_the_rtl(tmp_path):
    """The field travels in FSAConfig.fsa.json and sets the DMA port's
    descriptor FIFO depth in the generated Verilog."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    assert cfg.dma_outstanding == 8
    four = cfg.replace(dma_outstanding=4, name="Depth4")
    four.to_json(tmp_path / "FSAConfig.json")
    assert fconfig.FSAConfig.from_json(tmp_path / "FSAConfig.json") == four
    from rtl import fsa_dma_port
    texts = {}
    for c in (cfg, four):
        out = tmp_path / c.name
        out.mkdir()
        texts[c.name] = fsa_dma_port.convert(out, c).read_text()
    # the descriptor FIFO (rtl.prim.fifo) and the in-flight count shrink with the depth
    assert texts["Depth4"] != texts[cfg.name]
    assert fsa_dma_port.convert(tmp_path, four, depth=8).read_text() == texts[cfg.name]


def test_wide_rows_get_a_port_per_bank():
    """From 2048-bit scratchpad rows the presets have 4 AXI ports into 4
    banks of each SRAM, each bank with its own narrow port; narrower rows
    keep one port."""
    from fsa.dmarules import bank_ports
    for name in ("FSA64X64Fp32Config", "FSA128X128Fp16Config", "FSA128X128Fp32Config"):
        cfg = fconfig.get(name)
        assert (cfg.mem_ports, cfg.spad_banks, cfg.acc_banks) == (4, 4, 4), name
        assert bank_ports(cfg.mem_ports, cfg.spad_banks) and bank_ports(cfg.mem_ports,
                                                                         cfg.acc_banks)
    for name in ("FSA64X64Fp16Config", "FSA32X32Fp32Config", "FSA16X16Fp16Config"):
        cfg = fconfig.get(name)
        assert cfg.mem_ports == 1 and not bank_ports(cfg.mem_ports, cfg.spad_banks), name


def test_bank_ports_keep_up_at_64x64_fp32():
    """64x64 fp32 (4 beats a row, 1.5 narrow ports' worth of K/V beats per
    key block): with a narrow port per bank the period is the schedule's;
    with the one shared narrow port it is not."""
    cfg = fconfig.get("FSA64X64Fp32Config")
    free = cm.steady_state(cfg, cm.IDEAL_DMA)["per_key_block"]
    assert cm.steady_state(cfg)["per_key_block"] == free
    one = cfg.replace(mem_ports=1, spad_banks=2, acc_banks=1, name="One")
    assert cm.steady_state(one)["per_key_block"] > 1.5 * free
