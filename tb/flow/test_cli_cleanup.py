"""`fsa run` / `fsa exec` on a simulator leave no temporary folders behind
(the case file under $TMPDIR, the simulator's run folder) unless --keep."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsa import isa
from fsa.simrun import get_sim

pytestmark = pytest.mark.sim


def fsa(tmp_path, *args):
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "fsa.cli", *map(str, args)], capture_output=True,
                       text=True, timeout=1800, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.mark.parametrize("keep", [False, True])
def test_exec_removes_its_folders_unless_keep(tmp_path, keep):
    prog = tmp_path / "p.bin"
    prog.write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    fsa(tmp_path, "exec", "--config", "FSA4X4Fp16Config", "--program", prog, "--sim", get_sim(),
        "--json", tmp_path / "r.json", *(["--keep"] if keep else []))
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["state"] == "done"
    assert list((tmp_path / "tmp").glob("fsa-case-*")) == []
    assert rep["run_dir_kept"] is keep and Path(rep["run_dir"]).exists() is keep


def test_run_removes_its_folders(tmp_path):
    fsa(tmp_path, "run", "--config", "FSA4X4Fp16Config", "--sim", get_sim(), "--seq-q", 4,
        "--seq-kv", 4, "--json", tmp_path / "r.json")
    rep = json.loads((tmp_path / "r.json").read_text())
    assert list((tmp_path / "tmp").glob("fsa-case-*")) == []
    assert rep["run_dir_kept"] is False and not Path(rep["run_dir"]).exists()
