"""The fast-memory wrapper's text (rtl/fsa_memwrap.py, fsa/fastmem.py), no
simulator: its ports are fsa_top's plus the backdoor, every memory port of a
multi-port config gets a slave, and the choice of ``fsa run``'s default
memory.  (The equivalence with AxiRam is simulated in tb/top/test_fastmem.py.)"""
from __future__ import annotations

import re

import pytest

from fsa import config as fconfig
from fsa import fastmem
from fsa.hw import fastmem as hwfastmem
from rtl import fsa_memwrap
from rtl.generate import generate


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Fp16TwoPortConfig"])
def test_wrapper_ports_and_slaves(name, tmp_path):
    out = generate(fconfig.get(name), quiet=True)
    top_v = (out / "fsa_top.v").read_text()
    ports = fsa_memwrap.parse_ports(top_v)
    path = fsa_memwrap.write(tmp_path, out / "fsa_top.v")
    text = path.read_text()
    names = fastmem.wrapper_ports(path)
    assert names == [p.name for p in ports] + ["fast", "bd_load", "bd_dump", "bd_lo", "bd_hi"]
    # every port keeps its width and direction
    for p in ports:
        w = f"[{p.width - 1}:0] " if p.width > 1 else ""
        assert f"  {p.direction} wire {w}{p.name}" in text, p
    pres = sorted({p.name[:-len("_arvalid")] for p in ports
                   if p.name.endswith("_arvalid") and p.name.startswith("m_axi")})
    assert len(pres) == fconfig.get(name).mem_ports
    for pre in pres:
        # the device's inputs come from the slave when fast, else from the port
        for sig in ("arready", "rvalid", "rdata", "awready", "wready", "bvalid"):
            assert f"assign d_{pre}_{sig} = fast ? f_{pre}_{sig} : {pre}_{sig};" in text
        assert f"// ---------------- {pre}" in text
    assert len(re.findall(r"^\s*fsa_top dut \(", text, re.M)) == 1
    assert f'$readmemh("{hwfastmem.LOAD_FILE}", mem)' in text
    assert f'$writememh("{hwfastmem.DUMP_FILE}", mem, bd_lo, bd_hi)' in text
    assert (tmp_path / "waivers.vlt").read_text().count("lint_off") == len(fsa_memwrap.LINT_WAIVERS)


def test_parse_ports_rejects_what_is_not_a_device():
    with pytest.raises(ValueError, match="not found"):
        fsa_memwrap.parse_ports("module other(input a); endmodule", "fsa_top")
    with pytest.raises(ValueError, match="no AXI4 memory port"):
        fsa_memwrap.memtop_text(fsa_memwrap.parse_ports(
            "module fsa_top(clk);\ninput clk;\nendmodule\n"))


def test_fsa_run_default_memory():
    assert fastmem.default_memory(fconfig.get("FSA16X16Fp16Config"), "verilator") == "fast"
    assert fastmem.default_memory(fconfig.get("FSA8X8Fp16Config"), "verilator") == "axi"
    assert fastmem.default_memory(fconfig.get("FSA16X16Fp16Config"), "icarus") == "axi"
