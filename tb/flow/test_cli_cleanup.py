"""`fsa run` / `fsa exec` on a simulator leave no temporary folders behind
(the case file under $TMPDIR, the simulator's run folder) unless --keep."""
from __future__ import annotations

import json
import os
import shutil
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


def test_failed_run_names_what_it_keeps(tmp_path):
    """A run that does not finish (a cycle limit of 10) keeps its files to
    look at and names each one; the hint repeats the command, not the test
    suite's variables."""
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    argv = ["run", "--config", "FSA4X4Fp16Config", "--sim", get_sim(), "--seq-q", "4",
            "--seq-kv", "4", "--max-cycles", "10"]
    r = subprocess.run([sys.executable, "-m", "fsa.cli", *argv], capture_output=True, text=True,
                       timeout=1800, env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "SEED=" not in r.stderr
    for case in (tmp_path / "tmp").glob("fsa-case-*"):
        assert str(case / "case.json") in r.stderr, r.stderr
    assert "run folder" in r.stderr or "log: " in r.stderr, r.stderr
    if "log: " in r.stderr:
        assert f"re-run: fsa {' '.join(argv)}" in r.stderr, r.stderr


@pytest.mark.parametrize("keep", [False, True])
def test_api_removes_its_run_folder_unless_keep(keep):
    import numpy as np
    import torch

    import fsa
    from fsa.paths import sims_dir

    name = os.environ["PYTEST_CURRENT_TEST"].split(" ")[0].rsplit("::", 1)[-1]
    q = torch.from_numpy(np.random.default_rng(0).standard_normal((4, 4)))
    out = fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", engine=get_sim(),
                                           keep=keep)
    assert out.shape == (4, 4)
    safe = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    runs = list((sims_dir() / get_sim()).glob(f"*/runs/{safe}-{os.getpid()}"))
    assert len(runs) == int(keep), runs
    for d in runs:
        shutil.rmtree(d)
