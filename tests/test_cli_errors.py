"""Bad input across the command line: every command answers with one line on
stderr and exit 2, no traceback, and no file it was not told to write nor
one that existed is touched; a write that fails after the work keeps the
result and says where (issue: never overwrite, never lose).  Golden model
only: no HDL simulator."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fsa import cli, isa
from fsa import config as fconfig

CFG = "FSA4X4Fp16Config"
SMALL = ["--config", CFG, "--seq-q", "8", "--seq-kv", "8"]
GOLD = ["run", "--sim", "golden", *SMALL]
SENTINEL = b"do not overwrite me\n"


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """A scratch folder as the current one, with inputs and a file to protect."""
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "q.npy", np.random.default_rng(0).standard_normal((8, 4)))
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "keep.bin").write_bytes(SENTINEL)
    (tmp_path / "p.bin").write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    cfg = json.loads(fconfig.get(CFG).to_json())
    cfg["fsa"]["exp2_piece"] = 4
    (tmp_path / "typo.json").write_text(json.dumps(cfg))
    (tmp_path / "adir").mkdir()
    return tmp_path


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


EXEC = ["exec", "--config", CFG, "--program", "p.bin", "--sim", "golden"]
COMPILE = ["compile", *SMALL]
SWEEP = ["sweep", "--configs", CFG, "--lengths", "16", "--serial"]

#: (argv, words the one-line message holds)
BAD = [
    (["run", "--sim", "golden", "--config", CFG, "--q", "empty.npy", "--k", "q.npy", "--v", "q.npy"],
     "--q empty.npy: cannot read a .npy file"),
    (["run", "--sim", "golden", "--config", CFG, "--q", "nosuch.npy", "--k", "q.npy",
      "--v", "q.npy"], "--q nosuch.npy: cannot read"),
    ([*GOLD, "--json", "/dev/full"], "is not a regular file"),
    ([*GOLD, "--json", "/proc/x.json"], "/proc is not a writable folder"),
    ([*GOLD, "--out", "/proc/o.npy"], "/proc is not a writable folder"),
    ([*GOLD, "--json", "keep.bin"], "exists; give another name, or --force"),
    ([*GOLD, "--out", "keep.bin"], "exists; give another name, or --force"),
    ([*GOLD, "--out", "adir"], "is a folder"),
    ([*GOLD, "--out", "o.npy", "--json", "o.npy"], "name the same file"),
    ([*GOLD, "--json", ""], "an empty file name"),
    ([*GOLD, "--out", " "], "an empty file name"),
    (["run", "--sim", "golden", "--config", "typo.json"], "did you mean 'exp2_pieces'"),
    (["run", "--sim", "golden", "--config", "FSA4x4Fp16Config"], "did you mean"),
    ([*GOLD, "--max-cycles", "10"], "--max-cycles: only with --sim verilator"),
    ([*EXEC, "--json", "/proc/x.json"], "/proc is not a writable folder"),
    ([*EXEC, "--dump", "/proc/out.bin:0x80000180:256"], "/proc is not a writable folder"),
    ([*EXEC, "--dump", "keep.bin:0x80000180:256"], "exists; give another name, or --force"),
    ([*EXEC, "--dump", "/dev/full:0x80000180:256"], "is not a regular file"),
    ([*EXEC, "--max-cycles", "10"], "--max-cycles: only with --sim verilator"),
    ([*EXEC, "--keep"], "--keep: only with --sim verilator"),
    (["exec", "--config", CFG, "--program", "nosuch.bin", "--sim", "golden"], "nosuch.bin"),
    (["exec", "--config", CFG, "--program", "adir", "--sim", "golden"], "adir"),
    ([*EXEC, "--load", "nosuch.elf"], "nosuch.elf"),
    ([*EXEC, "--load", "empty.npy"], "empty.npy"),
    ([*COMPILE, "--program", "/proc/inst.bin", "--elf", "m.elf"], "/proc is not a writable"),
    ([*COMPILE, "--program", "keep.bin", "--elf", "m.elf"], "exists; give another name"),
    ([*COMPILE, "--program", "i.bin", "--elf", "i.bin"], "name the same file"),
    ([*COMPILE, "--elf", "m.elf"], "the following arguments are required: --program"),
    (COMPILE, "required"),
    ([*SWEEP, "--out", "/proc/x.csv"], "/proc is not a writable folder"),
    (SWEEP, "the following arguments are required: --out"),
    ([*SWEEP, "--out", "keep.bin"], "exists; give another name"),
    ([*SWEEP, "--out", "s.csv", "--workers", "2"], "--workers: not with --serial"),
    ([*SWEEP, "--out", "s.csv", "--scheduler", "tcp://x:1"], "--scheduler: not with --serial"),
    (["sweep", "--configs", CFG, "--lengths", "16", "--out", "s.csv", "--scheduler", "tcp://x:1",
      "--workers", "2"], "--workers: not with --scheduler"),
    (["run", "--sim", "golden", "--config", CFG, "--q", "q.npy", "--k", "q.npy", "--v", "q.npy",
      "--seed", "3"], "--seed: only for generated inputs"),
    (["compile", "--config", CFG, "--q", "q.npy", "--k", "q.npy", "--v", "q.npy",
      "--seq-q", "8", "--program", "i.bin", "--elf", "m.elf"], "--seq-q: only for generated"),
    (["predict", "--config", "typo.json"], "did you mean 'exp2_pieces'"),
    (["plan", "show", "typo.json", "SCORE"], "did you mean 'exp2_pieces'"),
    (["verilog", CFG, "--out", ""], "an empty file name"),
    (["verilog", CFG, "--out", "/proc/fsa-gen"], "/proc is not a writable folder"),
    (["verilog", CFG, "--out", "keep.bin"], "is a file; give a folder"),
    (["nosuchcommand"], "invalid choice"),
]


@pytest.mark.parametrize("argv, words", BAD, ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_input_one_line_exit_2_nothing_written(ws, capsys, argv, words):
    before = snapshot(ws)
    try:
        code = cli.main(argv)
    except SystemExit as e:                 # argparse's own refusals
        code = e.code
    out = capsys.readouterr()
    assert code == 2, (out.out, out.err)
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], out.err
    assert "Traceback" not in out.err + out.out
    assert snapshot(ws) == before                # nothing written, nothing replaced
    assert not any(Path(p).exists() for p in ("sweep.csv", "inst.bin", "mem.elf"))


def test_force_replaces_and_names_are_the_files_written(ws, capsys):
    assert cli.main([*GOLD, "--out", "o_noext", "--json", "r"]) == 0
    out = capsys.readouterr().out
    assert "saved to o_noext" in out and "report written to r" in out
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith(("o_", "r"))) == \
        ["o_noext", "r"]
    assert np.load(ws / "o_noext").shape == (8, 4) and json.loads((ws / "r").read_text())
    mask = os.umask(0)
    os.umask(mask)
    assert (ws / "o_noext").stat().st_mode & 0o777 == 0o666 & ~mask       # as open() makes it
    (ws / "keep.bin").chmod(0o640)
    assert cli.main([*GOLD, "--out", "keep.bin", "--force"]) == 0
    assert np.load(ws / "keep.bin").shape == (8, 4)
    assert (ws / "keep.bin").stat().st_mode & 0o777 == 0o640              # its mode kept
    assert not [p for p in ws.iterdir() if p.name.startswith(".")]      # no temporary left


def test_compile_and_sweep_write_only_where_told(ws, capsys):
    assert cli.main([*COMPILE, "--program", "a/i.bin", "--elf", "m.elf"]) == 2   # no folder a/
    assert cli.main([*COMPILE, "--program", "i.bin", "--elf", "m.elf"]) == 0
    assert "--dump out.bin:" in capsys.readouterr().out
    first = (ws / "i.bin").read_bytes()
    assert cli.main([*COMPILE, "--program", "i.bin", "--elf", "m.elf", "--seed", "3"]) == 2
    assert (ws / "i.bin").read_bytes() == first
    assert cli.main([*COMPILE, "--program", "i.bin", "--elf", "m.elf", "--force"]) == 0
    assert cli.main([*SWEEP, "--out", "t/s.csv"]) == 0
    assert sorted(p.name for p in (ws / "t").iterdir()) == ["s.csv", "s.md"]
    capsys.readouterr()
    (ws / "u.md").write_bytes(SENTINEL)               # the Markdown beside the CSV is an output
    assert cli.main([*SWEEP, "--out", "u.csv"]) == 2
    assert "u.md: exists" in capsys.readouterr().err and not (ws / "u.csv").exists()


@pytest.mark.parametrize("argv, opt, what", [
    ([*GOLD, "--json", "r.json"], "--json", "report"),
    ([*GOLD, "--out", "o.npy"], "--out", "output O"),
    ([*EXEC, "--json", "r.json"], "--json", "report"),
    ([*EXEC, "--dump", "d.bin:0x80000000:64"], "--dump", "memory"),
    ([*COMPILE, "--program", "i.bin", "--elf", "m.elf"], "--program", "program"),
    ([*SWEEP, "--out", "s.csv"], "--out", "table"),
])
def test_a_write_failing_after_the_work_keeps_the_result(ws, capsys, monkeypatch, tmp_path_factory,
                                                         argv, opt, what):
    """The disk fills up between the check and the write: one line naming the
    option, the reason and where the result went instead; exit 2."""
    import errno

    from fsa.cli import common

    kept = tmp_path_factory.mktemp("kept")
    monkeypatch.setattr(common.tempfile, "tempdir", str(kept))
    real = common.os.replace

    def full(src, dst):
        if Path(dst).resolve().parent == ws.resolve():
            raise OSError(errno.ENOSPC, "No space left on device")
        real(src, dst)
    monkeypatch.setattr(common.os, "replace", full)
    before = snapshot(ws)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    line = next(x for x in err.splitlines() if x.startswith(f"error: {opt} "))
    assert "No space left on device" in line and f"the {what}" in line and str(kept) in line
    saved = Path(line.rsplit(" saved in ", 1)[1])
    assert saved.parent == kept and saved.stat().st_size > 0
    assert snapshot(ws) == before                # no half file, no temporary left behind
    if opt == "--json":
        assert json.loads(saved.read_text())["config"] == CFG


@pytest.mark.parametrize("argv, words", [
    (["run", "--sim", "golden", "--config", CFG, "--q", "empty.npy", "--k", "q.npy",
      "--v", "q.npy"], "cannot read a .npy file"),
    ([*GOLD, "--json", "/dev/full"], "is not a regular file"),
    ([*EXEC, "--dump", "/proc/out.bin:0x80000180:256"], "not a writable folder"),
    (["run", "--json", ""], "an empty file name"),
])
def test_subprocess_one_line_no_traceback(ws, argv, words):
    r = subprocess.run([sys.executable, "-m", "fsa.cli", *argv], capture_output=True, text=True,
                       cwd=ws, timeout=300, env=dict(os.environ, PYTHONPATH=str(
                           Path(__file__).resolve().parent.parent)))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
