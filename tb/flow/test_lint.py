"""Verilator lint with the generated per-module waiver file: a waiver covers
only the module that declared it, and the array units (fsa_pe, fsa_cmp,
fsa_acc, the delayers, fsa_array) are ``-Wall`` clean with none of their own."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa import lint
from fsa.simrun import setup_tool_env
from fsa.hw.waivers import WAIVER_FILE, waiver_text
from rtl import generate

#: the array units and their (fixed) module names
ARRAY_UNITS = ["fsa_pe", "fsa_cmp", "fsa_acc", "fsa_idelay", "fsa_odelay", "fsa_array"]
#: every element/accumulate pairing, at 4x4
CONFIGS = ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig",
           "FSA4X4Bf16OnlyConfig"]

#: a module whose only -Wall warning is one WIDTHTRUNC (every bit of `a` is used)
_TRUNC = """module {name} (input [7:0] a, output [3:0] y, output [3:0] z);
assign y = a;
assign z = a[7:4];
endmodule
"""


def _verilator_lint(files, top: str) -> subprocess.CompletedProcess:
    setup_tool_env()
    return subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", top,
                           *map(str, files)], capture_output=True, text=True)


def test_a_waiver_covers_only_its_own_module(tmp_path):
    """Two modules with the same truncation; the file waives it for one."""
    for name in ("probe_a", "probe_b"):
        (tmp_path / f"{name}.v").write_text(_TRUNC.format(name=name))
    vlt = tmp_path / WAIVER_FILE
    vlt.write_text(waiver_text({"probe_a": {"-Wno-WIDTHTRUNC": "the probe truncates on purpose"}}))
    a = _verilator_lint([vlt, tmp_path / "probe_a.v"], "probe_a")
    b = _verilator_lint([vlt, tmp_path / "probe_b.v"], "probe_b")
    bare = _verilator_lint([tmp_path / "probe_a.v"], "probe_a")
    assert a.returncode == 0 and "%Warning" not in a.stderr, a.stderr
    assert b.returncode != 0 and "%Warning-WIDTHTRUNC" in b.stderr, b.stderr
    assert bare.returncode != 0 and "%Warning-WIDTHTRUNC" in bare.stderr, bare.stderr


@pytest.mark.parametrize("config", CONFIGS)
def test_array_units_are_wall_clean_without_waivers(config, tmp_path):
    cfg = fconfig.get(config)
    units = {u.module: u for u in generate.units_for(cfg)}
    assert set(ARRAY_UNITS) <= set(units)
    assert [m for m in ARRAY_UNITS if units[m].lint_waivers] == []
    out = generate.generate(cfg, tmp_path / "gen", quiet=True)
    setup_tool_env()
    for mod in ARRAY_UNITS:
        ok, msgs = lint.lint_module(out, mod)
        # the submodules' own (declared) waivers are in the file; the array
        # units' Verilog must raise nothing
        mine = [ln for ln in msgs.splitlines()
                if ln.startswith("%Warning") and any(f"/{m}.v:" in ln for m in ARRAY_UNITS)]
        assert mine == [], "\n".join(mine)
        assert ok, f"{mod}: {msgs[-3000:]}"


def test_lint_reports_a_warning_the_file_does_not_waive(tmp_path):
    """fsa.lint.lint_module fails a module whose warning nobody waived."""
    (tmp_path / "probe_b.v").write_text(_TRUNC.format(name="probe_b"))
    (tmp_path / "filelist.f").write_text("probe_b.v\n")
    (tmp_path / WAIVER_FILE).write_text(waiver_text({"probe_a": {"WIDTHTRUNC": "not this one"}}))
    setup_tool_env()
    ok, msgs = lint.lint_module(Path(tmp_path), "probe_b")
    assert not ok and "WIDTHTRUNC" in msgs
    (tmp_path / WAIVER_FILE).write_text(waiver_text({"probe_b": {"WIDTHTRUNC": "this one"}}))
    ok, msgs = lint.lint_module(Path(tmp_path), "probe_b")
    assert ok, msgs


def test_lint_of_named_modules_only(capsys):
    """``python -m fsa.lint CONFIG MODULE ...`` lints exactly the named
    modules; an unknown module name is refused with the config's list."""
    assert lint.lint("FSA4X4Fp16Config", ["fsa_cmp", "fsa_pe"]) == 0
    out = capsys.readouterr().out
    linted = [ln.split()[1] for ln in out.splitlines() if ln.startswith("[lint] fsa_")]
    assert linted == ["fsa_pe", "fsa_cmp"]          # in manifest order
    assert "2/2 (of " in out
    with pytest.raises(SystemExit, match="no module fsa_nope.*fsa_pe"):
        lint.lint("FSA4X4Fp16Config", ["fsa_pe", "fsa_nope"])
