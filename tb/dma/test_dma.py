"""Bench of the DMA engine ``rtl/fsa_dma.py``, driven by ``tb/dma/tb_dma.py`` on
``$SIM`` (verilator or icarus).

Per config: directed loads/stores (with and without random AXI pauses and
SRAM stalls), random instructions back to back, the check errors and
injected AXI SLVERR / DECERR responses (fsa/harness/axi_faults.py); SRAM and memory
bytes are compared with ``fsa.golden.machine.Machine.dma``.  Configs: one
64-bit port, two ports, a 128-bit bus, two ports with 2 bursts in flight and
one with 16 (``dma_outstanding``), and two with a narrow SRAM port per bank
(two ports into the scratchpad's two banks; four ports, four banks of each SRAM).  Plus lint (Verilator -Wall; also 3
ports and a 32-bit bus), the Icarus compile of the same configs (skipped,
with the reason, without iverilog), parameter validation, the error-code
table, and a MyHDL simulation of the block itself (for parents that
simulate it through ``rtl.convert.submodule``).  ``FULL=1``: 1000 random instructions per phase.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa import simrun
from tb.common.tier import FULL
from tb.dma.verilog import dma_verilog

ROOT = Path(__file__).resolve().parents[2]


def _configs() -> dict:
    return {
        "FSA4X4Fp16Config": fconfig.get("FSA4X4Fp16Config"),
        "FSA4X4Fp16TwoPortConfig": fconfig.get("FSA4X4Fp16TwoPortConfig"),
        "FSA8X8Fp16Axi128Config": fconfig.get("FSA8X8Fp16Config").replace(
            axi_data_bits=128, name="FSA8X8Fp16Axi128Config"),
        # the shallowest and the deepest burst FIFOs (dma_outstanding)
        "FSA4X4Fp16TwoPortOut2Config": fconfig.get("FSA4X4Fp16TwoPortConfig").replace(
            dma_outstanding=2, name="FSA4X4Fp16TwoPortOut2Config"),
        "FSA4X4Fp16Out16Config": fconfig.get("FSA4X4Fp16Config").replace(
            dma_outstanding=16, name="FSA4X4Fp16Out16Config"),
        # a narrow port per bank (fsa.hw.dmarules.bank_ports): the scratchpad's two
        # banks; and four ports into four banks of both SRAMs
        "FSA8X8Fp16TwoPortConfig": fconfig.get("FSA8X8Fp16TwoPortConfig"),
        "FSA8X8Fp16FourPortBanksConfig": fconfig.get("FSA8X8Fp16TwoPortConfig").replace(
            mem_ports=4, spad_banks=4, acc_banks=4, name="FSA8X8Fp16FourPortBanksConfig"),
    }


CONFIGS = _configs()


@pytest.mark.sim
@pytest.mark.parametrize("name", list(CONFIGS))
def test_dma(name):
    cfg = CONFIGS[name]
    srcs = dma_verilog(cfg)
    params = dict(config=cfg.to_dict(), random_instrs=1000 if FULL else 100)
    t0 = time.monotonic()
    simrun.run("fsa_dma", srcs, "tb.dma.tb_dma", extra_env={"FSA_DMA_PARAMS": json.dumps(params)},
               timeout_s=600)
    print(f"fsa_dma {name} on {simrun.get_sim()}: {time.monotonic() - t0:.1f} s")


def test_dma_ports_and_validation():
    from rtl import fsa_dma

    cfg = fconfig.get("FSA4X4Fp16Config")
    g = fsa_dma.geometry(cfg)
    assert (g["beat_bytes"], g["spad_lanes"], g["acc_lanes"], g["spad_addr_bits"],
            g["acc_addr_bits"], g["spad_lane_bits"], g["acc_lane_bits"]) == (8, 1, 2, 5, 4, 1, 1)
    names = [n for n, _, _ in fsa_dma.port_table(cfg)]
    for n in ("m_axi_awaddr", "m_axi_rready", "m_axi_wstrb", "cmd_mem_stride", "spad_n_lane",
              "acc_n_rdata", "err_code", "done", "busy"):
        assert n in names
    two = fsa_dma.port_table(fconfig.get("FSA4X4Fp16TwoPortConfig"))
    assert {"m_axi0_arvalid", "m_axi1_arvalid"} <= {n for n, _, _ in two}
    assert not any(n.startswith("m_axi_") for n, _, _ in two)
    with pytest.raises(ValueError, match=r"axi_data_bits = 128 must divide the scratchpad row "
                                         r"\(64 bits"):
        fsa_dma.geometry(cfg.replace(axi_data_bits=128))
    with pytest.raises(ValueError, match="cfg must be an FSAConfig"):
        fsa_dma.geometry("FSA4X4Fp16Config")
    p = fsa_dma.ports(cfg)
    with pytest.raises(ValueError, match="max_outstanding must be 2, 4, 8 or 16, got 3"):
        fsa_dma.fsa_dma(**p, cfg=cfg, max_outstanding=3)
    from rtl.convert import sig
    p["cmd"].size = sig(8)
    with pytest.raises(ValueError, match="port cmd_size must be 10 bits wide, got 8"):
        fsa_dma.fsa_dma(**p, cfg=cfg)
    assert len(set(fsa_dma.ERR_NAMES.values())) == 7
    assert fsa_dma.ERR_NAMES[fsa_dma.ERR_MEM_RANGE] == "MEM_RANGE"


def test_dma_error_codes_match_device_table():
    """The DMA's err_code names are the device table's (fsa.errors: DMA code
    c is reported as c + DMA_CODE_BASE) and the golden model's."""
    from fsa import errors
    from rtl import fsa_dma

    codes = [c for c in fsa_dma.ERR_NAMES if c]
    assert len(codes) == len(fsa_dma.ERR_NAMES) - 1 >= 6, fsa_dma.ERR_NAMES    # not vacuous
    for c in codes:
        assert errors.name(c + errors.DMA_CODE_BASE) == fsa_dma.ERR_NAMES[c], c
    assert max(fsa_dma.ERR_NAMES) + errors.DMA_CODE_BASE < (1 << errors.ERR_BITS)


LINT_CONFIGS = list(CONFIGS.values()) + [
    fconfig.get("FSA16X16Fp32Config").replace(mem_ports=3, name="Dma3Ports"),
    # merged bursts (dma_burst_beats): a preset, and 4-byte beats with 256-beat bursts
    fconfig.get("FSA64X64Fp16Config"),
    fconfig.get("FSA8X8Fp32Config").replace(axi_data_bits=32, mem_ports=8, spad_banks=16,
                                            acc_banks=8, acc_rows=16, dma_burst_beats=256,
                                            name="DmaMerge32Bit"),
    fconfig.get("FSA4X4Fp16OnlyConfig").replace(axi_data_bits=32, axi_addr_bits=32,
                                                mem_base=0x1000_0000, name="Dma32Bit"),
    # a LOAD and a STORE at once (dma_rw_overlap) with one-lane accumulator rows
    fconfig.get("FSA8X8Fp32Config").replace(sa_cols=2, axi_data_bits=64, mem_ports=2,
                                            spad_banks=2, acc_banks=2, acc_rows=18,
                                            spad_rows=32, dma_rw_overlap=True,
                                            name="DmaOverlapOneLane"),
    # one port with the per-port DMA (fsa.hw.dmarules.per_port_dma): the overlap
    # and merged bursts, and merged bursts alone
    fconfig.get("FSA4X4Fp16Config").replace(acc_banks=2, dma_rw_overlap=True,
                                            dma_burst_beats=16, name="DmaOnePortOverlap"),
    fconfig.get("FSA8X8Fp32Config").replace(acc_banks=2, dma_burst_beats=4,
                                            name="DmaOnePortMerge"),
]


@pytest.mark.parametrize("cfg", LINT_CONFIGS, ids=[c.name for c in LINT_CONFIGS])
def test_dma_lint(cfg, tmp_path):
    """Both modules Verilator -Wall clean (with LINT_WAIVERS, none today),
    fsa_dma instantiating fsa_dma_port once per AXI port (twice with
    dma_rw_overlap: a read half and a write half)."""
    from rtl import fsa_dma, fsa_dma_port

    simrun.setup_tool_env()
    t0 = time.monotonic()
    port = fsa_dma_port.convert(tmp_path, cfg)
    path = fsa_dma.convert(tmp_path, cfg)
    assert time.monotonic() - t0 < 30
    assert path.name == "fsa_dma.v" and "module fsa_dma (" in path.read_text()
    assert port.name == "fsa_dma_port.v" and "module fsa_dma_port (" in port.read_text()
    text = path.read_text()
    if cfg.dma_rw_overlap:      # a read half and a write half per port
        assert (text.count("fsa_dma_port u_rport"), text.count("fsa_dma_port u_wport"),
                text.count("fsa_dma_port u_port")) == (cfg.mem_ports, cfg.mem_ports, 0)
    else:
        assert text.count("fsa_dma_port u_port") == cfg.mem_ports
    for top, waivers in (("fsa_dma", fsa_dma.LINT_WAIVERS), ("fsa_dma_port", fsa_dma_port.LINT_WAIVERS)):
        r = subprocess.run(["verilator", "--lint-only", "-Wall", *waivers, "--top-module", top,
                            str(port), str(path)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "%Warning" not in r.stderr, (top, r.stderr[-3000:])


@pytest.mark.parametrize("cfg", LINT_CONFIGS, ids=[c.name for c in LINT_CONFIGS])
def test_dma_icarus_compiles(cfg, tmp_path):
    """The converted Verilog compiles in Icarus (skipped, saying so, where
    iverilog is not installed)."""
    from rtl import fsa_dma, fsa_dma_port

    simrun.setup_tool_env()
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog is not installed (scripts/need_iverilog.sh installs it)")
    port = fsa_dma_port.convert(tmp_path, cfg)
    path = fsa_dma.convert(tmp_path, cfg)
    r = subprocess.run(["iverilog", "-g2012", "-s", "fsa_dma", "-o", str(tmp_path / "a.vvp"),
                        str(port), str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Fp16TwoPortConfig"])
def test_dma_myhdl_sim(name):
    """The MyHDL model itself simulates (a parent may simulate it through
    rtl.convert.submodule): a LOAD and a STORE of acc rows through a minimal
    AXI slave and SRAM, bytes checked; then a DMA_SIZE error."""
    import random

    from myhdl import Simulation, StopSimulation, delay, instance

    from rtl import fsa_dma

    cfg = CONFIGS[name]
    p = fsa_dma.ports(cfg)
    dut = fsa_dma.fsa_dma(**p, cfg=cfg)
    clk, rst, cmd, acc = p["clk"], p["rst"], p["cmd"], p["acc"]
    bb = cfg.axi_data_bits // 8
    rb = cfg.acc_row_bytes
    rng = random.Random(5)
    mem = {cfg.mem_base + i: rng.getrandbits(8) for i in range(0x400)}
    sram = {(r, l): 0 for r in range(cfg.acc_rows) for l in range(rb // bb)}
    axis = [getattr(p["m"], pre[2:]) for pre in fsa_dma.axi_prefixes(cfg)]
    log = {"done": 0, "err": 0, "code": 0}

    def word(a):
        return sum(mem.get(a + k, 0) << (8 * k) for k in range(bb))

    def slave(ax):
        @instance
        def run():
            rq, wq, bq, wbeats = [], [], [], []
            ax.arready.next = 1
            ax.awready.next = 1
            ax.wready.next = 1
            while True:
                yield clk.posedge
                if ax.arvalid and ax.arready:
                    rq += [(int(ax.araddr) + k * bb, k == int(ax.arlen)) for k in range(int(ax.arlen) + 1)]
                if ax.rvalid and ax.rready:
                    rq.pop(0)
                if ax.awvalid and ax.awready:
                    wq.append([int(ax.awaddr), int(ax.awlen) + 1])
                if ax.wvalid and ax.wready:
                    wbeats.append(int(ax.wdata))
                if ax.bvalid and ax.bready:
                    bq.pop(0)
                while wq and len(wbeats) >= wq[0][1]:
                    a, n = wq.pop(0)
                    for k in range(n):
                        v = wbeats.pop(0)
                        for j in range(bb):
                            mem[a + k * bb + j] = (v >> (8 * j)) & 0xFF
                    bq.append(1)
                ax.rvalid.next = bool(rq)
                if rq:
                    ax.rdata.next = word(rq[0][0])
                    ax.rlast.next = rq[0][1]
                ax.bvalid.next = bool(bq)
        return run

    @instance
    def sram_model():
        acc.n_ready.next = 1
        while True:
            yield clk.posedge
            acc.n_rvalid.next = 0
            if acc.n_valid:
                key = (int(acc.n_addr), int(acc.n_lane))
                if acc.n_we:
                    sram[key] = int(acc.n_wdata)
                else:
                    acc.n_rvalid.next = 1
                    acc.n_rdata.next = sram[key]

    @instance
    def clock():
        while True:
            clk.next = 0
            yield delay(5)
            clk.next = 1
            yield delay(5)

    def command(func, rows, size, maddr):
        cmd.func.next = func
        cmd.repeat.next = rows
        cmd.sram_addr.next = 0
        cmd.sram_stride.next = 1
        cmd.is_accum.next = 1
        cmd.mem_addr.next = maddr
        cmd.mem_stride.next = rb
        cmd.size.next = size
        cmd.valid.next = 1

    @instance
    def driver():
        rst.next = 1
        for _ in range(3):
            yield clk.posedge
        rst.next = 0
        for func, size, maddr in ((0, rb, cfg.mem_base), (1, rb, cfg.mem_base + 0x200),
                                  (0, rb + bb, cfg.mem_base)):
            yield clk.negedge
            command(func, cfg.acc_rows, size, maddr)
            yield clk.posedge
            while not cmd.ready:
                yield clk.posedge
            yield clk.negedge
            cmd.valid.next = 0
            for _ in range(500):
                yield clk.posedge
                if p["done"]:
                    log["done"] += 1
                    break
            else:
                raise AssertionError(f"no done for command {func}/{size}")
        log["err"], log["code"] = int(p["err"]), int(p["err_code"])
        raise StopSimulation

    sim = Simulation(dut, clock, driver, sram_model, *[slave(ax) for ax in axis])
    sim.run(quiet=True)
    assert log == {"done": 3, "err": 1, "code": fsa_dma.ERR_DMA_SIZE}
    for r in range(cfg.acc_rows):
        for l in range(rb // bb):
            assert sram[(r, l)] == word(cfg.mem_base + r * rb + l * bb), (r, l)
    for i in range(cfg.acc_rows * rb):
        assert mem[cfg.mem_base + 0x200 + i] == mem[cfg.mem_base + i]
