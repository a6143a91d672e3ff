"""Bench of the banked SRAM ``rtl/fsa_sram.py`` (scratchpad and accumulator
memory), driven by ``tb/sram/tb_sram.py`` on ``$SIM`` (verilator or icarus).

Per geometry: a directed run of the docstring's timing diagram, then a few
thousand cycles of random traffic on both ports against a Python model
(every array read, every narrow read, ``n_ready`` on every cycle, the
handshake accounting, a full read-back at the end).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from fsa import simrun
from tb.common.sources import unit_deps

ROOT = Path(__file__).resolve().parents[2]

#: (rows, row_bits, lane_bits, banks)
GEOMETRIES = [
    (48, 64, 64, 1),
    (9, 128, 64, 1),
    (64, 256, 64, 4),
    (40, 512, 128, 2),
]
#: random cycles per geometry (``FULL=1``: ten times more)
CYCLES = 40000 if os.environ.get("FULL", "0") not in ("", "0") else 4000


def sram_verilog(rows: int, row_bits: int, lane_bits: int, banks: int) -> Path:
    """Converted Verilog of one geometry (cached by a hash of the inputs)."""
    from rtl import fsa_sram

    name = fsa_sram.module_name(rows, row_bits, lane_bits, banks)
    return simrun.cached_convert(name, lambda d: fsa_sram.convert(d, rows, row_bits, lane_bits, banks),
                                 f"{rows}|{row_bits}|{lane_bits}|{banks}",
                                 unit_deps("rtl.fsa_sram"))


def _id(g) -> str:
    return "r{}_w{}_l{}_b{}".format(*g)


@pytest.mark.sim
@pytest.mark.parametrize("geom", GEOMETRIES, ids=[_id(g) for g in GEOMETRIES])
def test_sram_traffic(geom):
    rows, row_bits, lane_bits, banks = geom
    src = sram_verilog(*geom)
    params = dict(rows=rows, row_bits=row_bits, lane_bits=lane_bits, banks=banks, cycles=CYCLES)
    t0 = time.monotonic()
    simrun.run(src.stem, [src], "tb.sram.tb_sram", extra_env={"FSA_SRAM_PARAMS": json.dumps(params)},
               timeout_s=300)
    print(f"{src.stem} on {simrun.get_sim()}: {CYCLES} cycles in {time.monotonic() - t0:.1f} s")


def test_sram_geometry_validated():
    from rtl import fsa_sram
    from rtl.convert import sig

    assert fsa_sram.module_name(48, 64, 64, 1) == "fsa_sram_48x64_l64_b1"
    assert fsa_sram.module_name(40, 512, 128, 2) == "fsa_sram_40x512_l128_b2"
    g = fsa_sram.geometry(40, 512, 128, 2)
    assert (g["lanes"], g["depth"], g["addr_bits"], g["lane_sel_bits"], g["bank_bits"],
            g["local_bits"]) == (4, 20, 6, 2, 1, 5)
    with pytest.raises(ValueError, match="lane_bits must divide row_bits = 128"):
        fsa_sram.module_name(9, 128, 48, 1)
    with pytest.raises(ValueError, match="lane_bits must divide"):
        fsa_sram.module_name(9, 64, 128, 1)
    with pytest.raises(ValueError, match="banks must be a power of two >= 1, got 3"):
        fsa_sram.module_name(48, 64, 64, 3)
    with pytest.raises(ValueError, match="banks must be a power of two"):
        fsa_sram.module_name(48, 64, 64, 0)
    with pytest.raises(ValueError, match=r"rows must be >= 2 \* banks = 8"):
        fsa_sram.module_name(7, 64, 64, 4)
    with pytest.raises(ValueError, match="rows must be an int"):
        fsa_sram.module_name(48.0, 64, 64, 1)
    p = fsa_sram.ports(48, 64, 64, 1)
    p["n_wdata"] = sig(32)
    with pytest.raises(ValueError, match="port n_wdata must be 64 bits wide, got 32"):
        fsa_sram.fsa_sram(**p, rows=48, row_bits=64, lane_bits=64, banks=1)


@pytest.mark.parametrize("geom", GEOMETRIES + [(1024, 1024, 64, 4), (12, 192, 64, 2)],
                         ids=[_id(g) for g in GEOMETRIES] + ["big", "lanes3"])
def test_sram_lint(geom, tmp_path):
    """Verilator -Wall clean (with LINT_WAIVERS, none today), compiles in
    Icarus when installed (conversion time is measured by bench/convert.py)."""
    from rtl import fsa_sram

    simrun.setup_tool_env()
    path = fsa_sram.convert(tmp_path, *geom)
    r = subprocess.run(["verilator", "--lint-only", "-Wall", *fsa_sram.LINT_WAIVERS, str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr[-3000:]
    if shutil.which("iverilog"):
        r = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "a.vvp"), str(path)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
