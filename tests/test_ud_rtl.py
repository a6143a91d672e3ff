"""The UD RTL's generated Verilog (docs/ud.md, issue 15 stage 2), without a
simulator: the UD controller is -Wall clean with no waiver and its
comparators for the UD bits and commands are named by what they drive; the
UD units appear only on UD configs (the reference Verilog has no trace of
them).  Behaviour: tb/units/test_ud_units.py and tb/attention/test_ud_attention.py."""
from __future__ import annotations

import re
import subprocess

import pytest

from fsa import config as fconfig
from fsa import plan as fplan
from rtl import fsa_bcmp, fsa_cmp, fsa_mxctrl, fsa_pe


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA4X8Fp16UdConfig", "FSA8X4Fp16UdConfig",
                                  "FSA4X4Fp32UdConfig"])
def test_ud_mxctrl_is_wall_clean_without_waivers(name, tmp_path):
    from fsa.simrun import setup_tool_env

    setup_tool_env()
    path = fsa_mxctrl.convert(tmp_path, fconfig.get(name))
    r = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", fsa_mxctrl.MODULE,
                        str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr[-4000:]


def test_ud_comparators_are_named_by_what_they_drive(tmp_path):
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    text = fsa_mxctrl.convert(tmp_path, cfg).read_text()
    decl = set(re.findall(r"^(?:reg|wire)\s+(?:\[[^\]]*\]\s+)?(\w+);", text, flags=re.M))
    plans = fsa_mxctrl.plans_for(cfg)
    assert [p.func for p in plans] == list(fplan.ALL_FUNCS)
    expected = set()
    for kind in ("parallel", "down", "up"):
        for b in fplan.UD_PE_BITS:
            if any(fplan.compact(p).get((b, kind)) for p in plans):
                expected |= {f"slot{i}_{kind}_{b}_hit" for i in (0, 1)}
    expected |= {f"slot{i}_cmp_latch_hit" for i in (0, 1)}
    for name in fplan.BCMP_CMDS:
        if name != "RESET":
            expected |= {f"slot{i}_ud_bcmp_{name.lower()}_hit" for i in (0, 1)}
    assert {"slot0_down_use_q_hit", "slot0_down_load_q_hit",
            "slot0_parallel_load_reg_di_hit"} <= expected
    assert expected <= decl, sorted(expected - decl)
    assert re.search(r"^input \[3:0\] in_func;", text, flags=re.M)       # codes 0..10
    assert re.search(r"^output \[47:0\] ctrl;", text, flags=re.M)        # 4 rows x 12 bits


def test_ud_units_only_on_ud_configs(tmp_path):
    ref, ud = tmp_path / "ref", tmp_path / "ud"
    fsa_pe.convert(ref)
    fsa_pe.convert(ud, dataflow_name="ud")
    fsa_cmp.convert(ref)
    fsa_cmp.convert(ud, dataflow_name="ud")
    pe_ref, pe_ud = (d / "fsa_pe.v" for d in (ref, ud))
    assert "qreg" not in pe_ref.read_text() and "input [8:0] ctrl_in;" in pe_ref.read_text()
    assert "qreg" in pe_ud.read_text() and "input [11:0] ctrl_in;" in pe_ud.read_text()
    assert "cmp_cmd_latch" not in (ref / "fsa_cmp.v").read_text()
    assert "cmp_cmd_latch = (cmd_in == 7)" in (ud / "fsa_cmp.v").read_text()
    assert fsa_pe.ctrl_width(fconfig.get("FSA4X4Fp16Config")) == 9
    assert fsa_pe.ctrl_width(fconfig.get("FSA4X4Fp16UdConfig")) == 12
    assert fsa_pe.pe_bits("ud") == fplan.PE_BITS + fplan.UD_PE_BITS
    # the BCMP lane codes follow fsa.hw.control.BCMP_CMDS, numbered from 1 per lane
    assert fsa_bcmp.LANE_CODES == {"max": {"RESET": 1, "UPDATE": 2, "MAX_DIFF": 3},
                                   "up": {"PROP_MAX": 1, "POP": 2},
                                   "od": {"BYPASS": 1, "SEND_DIFF": 2}}
