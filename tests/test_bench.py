"""The benchmark helpers and report writer (bench/): tables, where results go,
and that docs/performance.md renders from the committed results."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
common = importlib.import_module("common")


def test_table_aligns_and_formats():
    t = common.table(["a", "value"], [["x", 1.23456], ["long name", None]], ["", ".2f"])
    lines = t.splitlines()
    assert len(lines) == 4 and len({len(x) for x in lines}) == 1       # all the same width
    assert lines[2].endswith("1.23") and lines[3].endswith("-")


def test_md_table():
    t = common.md_table(["config", "cycles"], [["A", 10], ["B", 200]])
    assert t.splitlines()[:2] == ["| config | cycles |", "|:---|---:|"]
    assert "| B | 200 |" in t


def test_quick_results_never_overwrite_full_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    full = common.write_json("x", {"quick": False, "v": 1})
    quick = common.write_json("x", {"quick": True, "v": 2})
    assert full == tmp_path / "x.json" and quick == tmp_path / "quick" / "x.json"
    assert json.loads(full.read_text())["v"] == 1 and json.loads(quick.read_text())["v"] == 2
    assert "when" in json.loads(full.read_text())


def test_deep_queue_names_the_change():
    from fsa import config
    c = common.deep_queue(config.get("FSA4X4Fp16Config"))
    assert c.inst_queue_size == 4096 and c.name == "FSA4X4Fp16ConfigQ4K"
    assert common.deep_queue(c) is c


def test_performance_doc_renders_from_committed_results(tmp_path, monkeypatch):
    """Every section renders from bench/results/*.json, and the model column
    equals the RTL on every RTL point recorded there."""
    mkdoc = importlib.import_module("mkdoc")
    monkeypatch.setattr(mkdoc, "DOC", tmp_path / "performance.md")
    assert mkdoc.main([]) == 0
    text = (tmp_path / "performance.md").read_text()
    for head in ("## 1. Utilisation", "## 2. Accuracy", "## 3.", "## 4. Area",
                 "## 6. UD dataflow", "### 6c. The RTL", "### 6d. Area"):
        assert head in text, head
    u = json.loads((ROOT / "bench" / "results" / "utilisation.json").read_text())
    assert u["runs"] and all(r["model_cycles"] == r["rtl_cycles"] for r in u["runs"])
    assert all(s["model_cycles"] == s["rtl_cycles"] for s in u["steady"])
    ud = json.loads((ROOT / "bench" / "results" / "ud.json").read_text())
    assert ud["rtl"] and all(r["model_cycles"] == r["cycles"] for r in ud["rtl"])
    for r in ud["rtl"]:             # each RTL row is in the rendered table
        assert f"| {r['config']} | {r['kernel']} |" in text and f"| {r['cycles']} |" in text


def test_utilisation_flops():
    """The benches derive utilisation from cycles with the one FLOPs
    definition (fsa.kernels.attention_flops: useful FLOPs, 4 d per (query,
    key) pair the causal mask keeps), as fsa run and fsa predict do."""
    fl, u = common.attention_util(4, 4, 12, False, 1000)
    assert fl == 4 * 12 * 12 * 4 and u == fl / (1000 * 2 * 16)
    fl, u = common.attention_util(4, 4, 12, True, 1000)
    assert fl == 4 * (12 * 13 // 2) * 4 and u == fl / (1000 * 2 * 16)    # not 6 whole 4x4 blocks
    fl, u = common.attention_util(8, 4, 16, True, 500)                   # R x C = 8 x 4, d = 8
    assert fl == 4 * (16 * 17 // 2) * 8 and u == fl / (500 * 2 * 32)


def test_committed_results_use_the_one_flops_definition():
    """bench/results/utilisation.json's derived figures agree with the
    definition (so the JSON, the report and fsa run / predict agree)."""
    u = json.loads((ROOT / "bench" / "results" / "utilisation.json").read_text())
    for r in u["runs"]:
        assert (r["flops"], r["utilisation"]) == common.attention_util(
            r["R"], r["C"], r["N"], r["causal"], r["rtl_cycles"]), r
    for p in u["predictions"]:
        assert p["utilisation"] == common.attention_util(
            p["R"], p.get("C", p["R"]), p["N"], p["causal"], p["cycles"])[1], p
