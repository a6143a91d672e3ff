"""Lint waivers: declared per module, generated into one Verilator
configuration file (``waivers.vlt``), used by ``make lint`` and by the
Verilator simulator builds, never as global ``-Wno-...`` flags."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsa import lint, simrun
from fsa.hw import waivers
from rtl import generate

_LINT_OFF = re.compile(r'^lint_off -rule (\w+) -file "\*/(\w+)\.v"$')


def _parse(text: str) -> "list[tuple[str, str, str]]":
    """(module, rule, reason) of every waiver in a waiver file; the reason is
    the comment line just before the ``lint_off``."""
    lines = text.splitlines()
    assert lines[0] == "`verilator_config"
    out = []
    for i, line in enumerate(lines):
        if line.startswith("lint_off"):
            m = _LINT_OFF.match(line)
            assert m, line
            rule, mod = m.groups()
            head = f"// {mod}: {rule}: "
            assert lines[i - 1].startswith(head), (lines[i - 1], line)
            out.append((mod, rule, lines[i - 1][len(head):]))
        else:
            assert line.startswith("//") or line == lines[0], f"unexpected line {line!r}"
    return out


def test_waiver_text_holds_exactly_the_declared_waivers():
    text = waivers.waiver_text({
        "unit_b": {"-Wno-WIDTHEXPAND": "narrow operand\n  zero-extended", "WIDTHTRUNC": "fits"},
        "unit_a": {"UNUSEDSIGNAL": "spare bit"},
        "unit_clean": {},
    })
    assert _parse(text) == [("unit_a", "UNUSEDSIGNAL", "spare bit"),
                            ("unit_b", "WIDTHEXPAND", "narrow operand zero-extended"),
                            ("unit_b", "WIDTHTRUNC", "fits")]
    assert "unit_clean" not in text
    assert "-Wno" not in text


@pytest.mark.parametrize("key,rule", [("-Wno-WIDTHTRUNC", "WIDTHTRUNC"), ("UNOPTFLAT", "UNOPTFLAT")])
def test_both_key_forms_name_the_rule(key, rule):
    assert waivers.waiver_rule(key) == rule


@pytest.mark.parametrize("bad", [{"m": {"WIDTH TRUNC": "x"}}, {"m": {"-Wall": "x"}},
                                 {"m": {"WIDTHTRUNC": "  "}}, {"*/m": {"WIDTHTRUNC": "x"}}])
def test_malformed_waivers_are_refused(bad):
    with pytest.raises(ValueError):
        waivers.waiver_text(bad)


def test_generated_waiver_file_matches_the_units(tmp_path, monkeypatch):
    """gen/<config>/waivers.vlt holds one waiver per (module, declared rule),
    with the unit's reason, and nothing for units that declare none; the
    manifest lists the file. (No unit declares a waiver today: two units are
    given one here, so the check compares something.)"""
    from fsa import config as fconfig
    from rtl import fsa_cmp, fsa_pe

    monkeypatch.setattr(fsa_pe, "LINT_WAIVERS", {"WIDTHEXPAND": "test: a declared reason"},
                        raising=False)
    monkeypatch.setattr(fsa_cmp, "LINT_WAIVERS", {"-Wno-UNUSEDSIGNAL": "test: another one",
                                                  "WIDTHTRUNC": "test: a third"}, raising=False)
    cfg = fconfig.get("FSA4X4Fp16Config")
    out = generate.generate(cfg, tmp_path / "gen", quiet=True)
    units = generate.units_for(cfg)
    want = sorted((u.module, waivers.waiver_rule(k), " ".join(r.split()))
                  for u in units for k, r in u.lint_waivers)
    got = _parse(generate.waiver_file(out).read_text())
    assert got == want
    assert want, "some unit of the preset declares a waiver (the check above compares something)"
    declared = {u.module for u in units if u.lint_waivers}
    for u in units:
        if u.module not in declared:
            assert f"*/{u.module}.v" not in generate.waiver_file(out).read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert waivers.WAIVER_FILE in manifest["files"]
    assert manifest["lint_waivers"] == {
        m: {waivers.waiver_rule(k): r for k, r in w.items()}
        for m, w in generate.lint_waivers(units).items()}


def test_a_unit_without_waivers_gets_none(monkeypatch, tmp_path):
    """A unit's waivers reach the file only through its own LINT_WAIVERS."""
    from fsa import config as fconfig
    from rtl import fsa_pe

    monkeypatch.setattr(fsa_pe, "LINT_WAIVERS", {"UNUSEDSIGNAL": "probe reason"}, raising=False)
    units = generate.units_for(fconfig.get("FSA4X4Fp16Config"))
    text = waivers.waiver_text(generate.lint_waivers(units))
    mine = [w for w in _parse(text) if w[0] == "fsa_pe"]
    assert mine == [("fsa_pe", "UNUSEDSIGNAL", "probe reason")]
    monkeypatch.delattr(fsa_pe, "LINT_WAIVERS")
    units = generate.units_for(fconfig.get("FSA4X4Fp16Config"))
    assert [w for w in _parse(waivers.waiver_text(generate.lint_waivers(units)))
            if w[0] == "fsa_pe"] == []


@pytest.mark.parametrize("waves", [False, True])
def test_simulator_builds_have_no_global_waiver(waves):
    args = simrun.build_args("verilator", waves)
    assert args, "the Verilator build has flags (the check below looks at them)"
    assert not [a for a in args if a.startswith("-Wno")], args
    assert "-Wno-fatal" not in args


def test_lint_command_uses_the_waiver_file_and_no_global_waiver(tmp_path):
    (tmp_path / "filelist.f").write_text("a.v\nb.v\n")
    cmd = lint.lint_command(tmp_path, "b")
    assert cmd[:3] == ["verilator", "--lint-only", "-Wall"]
    assert str(tmp_path / waivers.WAIVER_FILE) in cmd
    assert not [a for a in cmd if a.startswith("-Wno")], cmd
    assert cmd[-2:] == [str(tmp_path / "a.v"), str(tmp_path / "b.v")]


class _RecordingRunner:
    """Stands in for cocotb's runner: records what build() would compile."""

    skip_exec = False

    def __init__(self):
        self.calls = []

    def build(self, **kw):
        self.calls.append(kw)


def test_simulator_build_reads_the_waiver_file_beside_the_sources(tmp_path, monkeypatch):
    """Verilator builds get the sources' waivers.vlt first (it applies to the
    files read after it); Icarus builds do not; the file's content is part of
    the build's cache key."""
    monkeypatch.setattr(simrun, "SIMS", tmp_path / "sims")
    monkeypatch.setattr(simrun, "_tool_version", lambda sim: sim)
    src = tmp_path / "gen" / "top.v"
    src.parent.mkdir()
    src.write_text("module top; endmodule\n")
    vlt = src.parent / waivers.WAIVER_FILE
    vlt.write_text(waivers.waiver_text({"top": {"WIDTHTRUNC": "reason one"}}))
    r = _RecordingRunner()
    b1 = simrun.build("verilator", "top", [src], runner=r)
    assert r.calls[-1]["sources"] == [vlt.resolve(), src.resolve()]
    assert not [a for a in r.calls[-1]["build_args"] if str(a).startswith("-Wno")]
    vlt.write_text(waivers.waiver_text({"top": {"WIDTHTRUNC": "reason two"}}))
    b2 = simrun.build("verilator", "top", [src], runner=r)
    assert b1 != b2
    r_ic = _RecordingRunner()
    simrun.build("icarus", "top", [src], runner=r_ic)
    assert r_ic.calls[-1]["sources"] == [src.resolve()]


def test_cached_convert_writes_the_units_waivers(tmp_path, monkeypatch):
    monkeypatch.setattr(simrun, "SIMS", tmp_path / "sims")

    def conv(d):
        p = Path(d) / "fsa_probe_x.v"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("module fsa_probe_x; endmodule\n")
        return p

    with_w = simrun.cached_convert("fsa_probe_x", conv, "k", [], waivers={"-Wno-WIDTHEXPAND": "why"})
    assert _parse((with_w.parent / waivers.WAIVER_FILE).read_text()) == [
        ("fsa_probe_x", "WIDTHEXPAND", "why")]
    without = simrun.cached_convert("fsa_probe_x", conv, "k", [])
    assert without.parent != with_w.parent
    assert not (without.parent / waivers.WAIVER_FILE).exists()


def test_a_stale_waiver_file_is_regenerated(tmp_path):
    """The folder is "up to date" only if its waiver file is what the units
    declare now (its text also depends on fsa/hw/waivers.py)."""
    out = generate.generate("FSA4X4Fp16Config", tmp_path / "gen", quiet=True)
    vlt = generate.waiver_file(out)
    good = vlt.read_text()
    vlt.write_text(good.replace("lint_off", "// lint_off"))
    generate.generate("FSA4X4Fp16Config", tmp_path / "gen", quiet=True)
    assert vlt.read_text() == good
    vlt.unlink()
    generate.generate("FSA4X4Fp16Config", tmp_path / "gen", quiet=True)
    assert vlt.read_text() == good
