"""rtl/generate.py: the input hash covers every project module the generator
imports (so the "up to date" shortcut cannot go stale), and the module-name
prefix lets two configurations share one design."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fsa import config as fconfig
from rtl import generate as gen

ROOT = gen.ROOT
CFG = "FSA4X4Fp16Config"


def _copy_repo(dst: Path) -> Path:
    """The Python sources of fsa/ and rtl/ (all the generator can import)."""
    for pkg in ("fsa", "rtl"):
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # `python -m` puts the cwd first on sys.path: the copy's fsa/ and rtl/ are imported
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_hashed_sources_include_plan_errors_and_numerics():
    names = {str(f.relative_to(ROOT)) for f in gen.source_files()}
    for must in ("fsa/plan.py", "fsa/hw/errors.py", "fsa/hw/isa.py", "fsa/hw/timing.py",
                 "fsa/hw/regs.py", "fsa/config.py", "fsa/formats.py",
                 "rtl/fsa_mxctrl.py", "rtl/convert.py", "rtl/generate.py"):
        assert must in names
    assert any(n.startswith("fsa/numerics") for n in names)
    for tool in ("fsa/lint.py", "fsa/simrun.py"):     # tools, not imported by the generator
        assert tool not in names


def test_the_closure_of_one_unit():
    """What converting the DMA alone reads (a bench's conversion cache must
    key on all of it, not only on rtl/fsa_dma.py and rtl/fsa_sram.py)."""
    names = {str(f.relative_to(ROOT)) for f in gen.source_files(start="rtl.fsa_dma")}
    assert {"rtl/fsa_dma.py", "rtl/fsa_dma_port.py", "rtl/prim/fifo.py", "rtl/convert.py", "fsa/config.py",
            "fsa/formats.py"} <= names
    assert "rtl/generate.py" not in names and "fsa/plan.py" not in names
    assert set(gen.source_files(start="rtl.fsa_dma")) <= set(gen.source_files())


def test_hashed_sources_cover_everything_a_conversion_imports(tmp_path):
    """Generate in a fresh process and list the project modules it loaded:
    every one of them must be hashed."""
    code = ("import sys, json\n"
            "from rtl.generate import generate, ROOT\n"
            f"generate({CFG!r}, {str(tmp_path / 'out')!r}, force=True, quiet=True)\n"
            "files = sorted({str(m.__file__) for m in list(sys.modules.values())\n"
            "                if getattr(m, '__file__', None)\n"
            "                and m.__file__.startswith(str(ROOT) + '/')\n"
            "                and '/.venv/' not in m.__file__})\n"
            "print(json.dumps(files))\n")
    r = _run(["-c", code], ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    loaded = {Path(f) for f in json.loads(r.stdout.strip().splitlines()[-1])}
    assert ROOT / "fsa" / "plan.py" in loaded and ROOT / "fsa" / "hw" / "errors.py" in loaded
    missing = loaded - set(gen.source_files())
    assert not missing, f"imported by the conversion but not hashed: {sorted(map(str, missing))}"


def test_the_same_design_converts_to_the_same_verilog_in_every_process(tmp_path):
    """Two generator processes with different string hashing write the same
    Verilog, byte for byte (the simulator builds are keyed by that text).
    MyHDL's own order of an ``always_seq`` block's reset assignments follows
    the hashing (the queue's FIFO pointers); rtl.convert sorts them."""
    outs = []
    for seed in ("1", "2", "3"):
        out = tmp_path / f"seed{seed}"
        r = subprocess.run([sys.executable, "-m", "rtl.generate", CFG, "--out", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append({f.name: f.read_bytes() for f in sorted(out.glob("*.v"))})
    assert len(outs[0]) > 20 and "fsa_queue.v" in outs[0]
    for other in outs[1:]:
        assert other.keys() == outs[0].keys()
        assert [n for n in other if other[n] != outs[0][n]] == []


def test_editing_any_hashed_module_changes_the_input_hash(tmp_path):
    root = _copy_repo(tmp_path)
    cfg = fconfig.get(CFG)
    files = gen.source_files(root)
    assert [f.relative_to(root) for f in files] == [f.relative_to(ROOT) for f in gen.source_files()]
    base = gen.input_hash(cfg, root=root)
    assert gen.input_hash(cfg, root=root) == base            # deterministic
    for f in files:
        text = f.read_text()
        f.write_text(text + "\n# an edit\n")
        assert gen.input_hash(cfg, root=root) != base, \
            f"editing {f.relative_to(root)} went unnoticed"
        f.write_text(text)
    assert gen.input_hash(cfg, root=root) == base
    # a file nobody imports does not count
    (root / "rtl" / "unused_helper.py").write_text("X = 1\n")
    assert gen.input_hash(cfg, root=root) == base


def test_a_new_package_is_hashed_once_something_imports_it(tmp_path):
    """A new module or package (here fsa/newhw/) is covered without listing it anywhere."""
    root = _copy_repo(tmp_path)
    cfg = fconfig.get(CFG)
    hw = root / "fsa" / "newhw"
    hw.mkdir()
    (hw / "__init__.py").write_text("")
    (hw / "timing.py").write_text("from .isa_table import FIELDS\nRECIPROCAL = 16\n")
    (hw / "isa_table.py").write_text("FIELDS = ()\n")
    assert hw / "timing.py" not in gen.source_files(root)
    plan = root / "fsa" / "plan.py"
    plan.write_text(plan.read_text()
                    + "\n\ndef _timing():\n    from fsa.newhw import timing\n    return timing\n")
    files = gen.source_files(root)
    for f in ("__init__.py", "timing.py", "isa_table.py"):
        assert hw / f in files
    before = gen.input_hash(cfg, root=root)
    (hw / "isa_table.py").write_text("FIELDS = (1,)\n")
    assert gen.input_hash(cfg, root=root) != before


def test_generate_says_up_to_date_only_when_nothing_changed(tmp_path):
    """The command behind ``make verilog``, run in a copy of the repository."""
    root = _copy_repo(tmp_path / "repo")
    out = tmp_path / "out"
    cmd = ["-m", "rtl.generate", CFG, "--out", str(out)]
    first = _run(cmd, root)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "wrote" in first.stdout and "up to date" not in first.stdout
    again = _run(cmd, root)
    assert "up to date" in again.stdout and "wrote" not in again.stdout
    # (one edited source here: that every module the conversion imports is
    # hashed, and that an edit of any changes the hash, are checked in-process
    # by test_hashed_sources_cover_everything_a_conversion_imports and
    # test_editing_any_hashed_module_changes_the_input_hash)
    f = root / "fsa" / "hw" / "timing.py"
    f.write_text(f.read_text() + "\n# an edit\n")
    r = _run(cmd, root)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "wrote" in r.stdout and "up to date" not in r.stdout, f"{f}: {r.stdout}"
    assert "up to date" in _run(cmd, root).stdout


def test_prefix_is_part_of_the_cache_key():
    cfg = fconfig.get(CFG)
    assert gen.input_hash(cfg, "fsa4_") != gen.input_hash(cfg)
    assert gen.input_hash(cfg, "fsa4_") != gen.input_hash(cfg, "other_")
    assert gen.default_outdir(CFG, "fsa4_") != gen.default_outdir(CFG)


@pytest.mark.parametrize("bad", ["4x4_", "fsa-4", "a b", "fsa$"])
def test_bad_prefixes_are_refused(bad, tmp_path):
    with pytest.raises(ValueError, match="prefix"):
        gen.generate(CFG, tmp_path / "out", prefix=bad, quiet=True)


def _lint_together(outdirs: list[Path], tops: list[str],
                   tmp_path: Path) -> subprocess.CompletedProcess:
    """verilator --lint-only of several generated folders at once, under a
    wrapper that instantiates each device (ports left open), with the
    generator's lint waivers."""
    from fsa.simrun import setup_tool_env

    setup_tool_env()
    wrapper = tmp_path / "soc_top.v"
    # (the wrapper leaves the ports open: only its own PINMISSING notes are waived)
    inst = "".join(f"  {t} u_{i} ();\n" for i, t in enumerate(tops))
    wrapper.write_text("`timescale 1ns/1ps\n/* verilator lint_off PINMISSING */\n"
                       f"module soc_top;\n{inst}endmodule\n/* verilator lint_on PINMISSING */\n")
    files, waivers = [], set()
    for d in outdirs:
        files += [str(f) for f in gen.verilog_files(d)]
        waivers.update(json.loads((d / "manifest.json").read_text())["lint_waivers"])
    return subprocess.run(["verilator", "--lint-only", *sorted(waivers), "--top-module", "soc_top",
                           *files, str(wrapper)], capture_output=True, text=True, timeout=600)


def test_two_prefixed_configs_lint_together_without_duplicate_modules(tmp_path):
    a = gen.generate("FSA4X4Fp16Config", tmp_path / "a", prefix="fsa4h_", quiet=True)
    b = gen.generate("FSA4X4Bf16Config", tmp_path / "b", prefix="fsa4b_", quiet=True)
    man = json.loads((a / "manifest.json").read_text())
    assert man["prefix"] == "fsa4h_" and all(m.startswith("fsa4h_fsa_") for m in man["modules"])
    assert all(f.name.startswith("fsa4h_") for f in gen.verilog_files(a))
    r = _lint_together([a, b], ["fsa4h_fsa_top", "fsa4b_fsa_top"], tmp_path)
    assert r.returncode == 0 and "MODDUP" not in r.stderr, r.stderr[-3000:]
    # the same two configs without prefixes clash (the check above can fail):
    # their folders under gen/ (generated once for the whole regression)
    from fsa.hw import verilog
    pa = verilog.generate("FSA4X4Fp16Config", quiet=True)
    pb = verilog.generate("FSA4X4Bf16Config", quiet=True)
    r = _lint_together([pa, pb], ["fsa_top"], tmp_path)
    assert r.returncode != 0 and "MODDUP" in r.stderr


def test_prefixed_verilog_differs_only_in_module_names(tmp_path):
    from fsa.hw import verilog
    plain = verilog.generate(CFG, quiet=True)       # gen/<CFG>, shared with the other tests
    pre = gen.generate(CFG, tmp_path / "pre", prefix="x9_", quiet=True)
    names = json.loads((plain / "manifest.json").read_text())["modules"]
    import re
    pattern = re.compile(r"\bx9_(" + "|".join(map(re.escape, names)) + r")\b")
    for f in gen.verilog_files(plain):
        text = (pre / ("x9_" + f.name)).read_text()
        assert "x9_" in text
        assert pattern.sub(r"\1", text) == f.read_text(), f.name


def test_generation_never_replaces_a_folder_it_did_not_write(tmp_path, capsys):
    """--out on a folder of other files, on a file, under a file or where no
    file can be created: refused before any conversion, nothing deleted; a
    user's <out>.tmp folder beside the output is left alone."""
    from fsa.hw.verilog import check_gen_outdir
    from rtl import generate as gen

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "important.txt").write_text("keep")
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, words in ((precious, "holds other files"), (afile, "is a file"),
                       (afile / "sub", "is not a writable folder")):
        with pytest.raises(ValueError, match=words):
            check_gen_outdir(out)
        assert gen.main(["FSA4X4Fp16Config", "--out", str(out)]) == 2
        assert "error: output folder" in capsys.readouterr().err
    assert (precious / "important.txt").read_text() == "keep" and afile.read_text() == "x"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_gen_outdir(empty) == empty.resolve()
    assert check_gen_outdir(tmp_path / "new" / "deeper") == (tmp_path / "new" / "deeper").resolve()
    # a generated folder (its manifest) may be replaced; a user's work.tmp is never touched
    work_tmp = tmp_path / "work.tmp"
    work_tmp.mkdir()
    (work_tmp / "data.txt").write_text("keep")
    assert gen.main(["FSA4X4Fp16Config", "--out", str(tmp_path / "work")]) == 0
    assert (tmp_path / "work" / "manifest.json").is_file()
    assert check_gen_outdir(tmp_path / "work") == (tmp_path / "work").resolve()
    assert (work_tmp / "data.txt").read_text() == "keep"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".work.")]   # no work folder left
