"""Simulation speed: simulated cycles per second of a full attention run on
Verilator and Icarus, and the Verilator build time and peak memory per config.

Run as ``python bench/simspeed.py [--quick]`` from the repository root.
(MyHDL conversion time and Verilog size: ``bench/convert.py``.)

1. Attention (seq_q = seq_kv = N, d = R, fa3 inputs) through ``fsa_top``
   with ``SimEngine``, on Verilator once per memory path (``memory="axi"``:
   cocotbext-axi's AxiRam; ``"fast"``: the memory inside the simulation,
   fsa/fastmem.py; the same build, the same exec cycles, checked): the device's ``exec`` cycles, the simulated cycles of
   the whole cocotb test (reset, loading the program over AXI4-Lite, the run,
   reading the counters and the output back: cocotb's sim_time / 10 ns), the
   test's real time as cocotb reports it, simulated cycles per second, and
   the wall time of the whole ``SimEngine.run`` call (simulator start,
   Python side included; the build is cached beforehand), and cycles per
   CPU second of the simulator process alone: the child CPU time of the run
   minus that of a one-block run, over the difference in simulated cycles
   (simulator start-up and Python imports cancel out). Configs: the
   presets with a 4096-word queue (as in bench/utilisation.py).
   Every run's output is compared raw bit for raw bit with the golden model.
1b. The ceiling: the same Verilated model (same flags) in the bare C++
   harness ``bench/harness/fsa_bare.cpp`` (no cocotb; the AXI4-Lite pushes
   and the AXI4 memory answered in C++), same programs and inputs: cycles
   per CPU second of the whole run (pushes, run, register reads), of idle
   cycles after it, the exec cycles it saw, its output against the golden
   model, the figures before issue 16 item 2 (``BARE_BEFORE``: the PE's FMA
   evaluated every cycle) and the cocotb path's cost relative to it.
2. Verilator build of ``fsa_top`` from scratch into a temporary folder,
   without ccache, in a child process: wall time, and the peak resident
   memory of the largest build process (``RUSAGE_CHILDREN`` ru_maxrss: the
   C++ compiler). cocotb's runner runs ``make -j min(cpus, its limit)``, so
   the compiler CPU time can exceed the wall time.

Writes ``bench/results/simspeed.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import common
from common import deep_queue, table, write_json

from fsa import config as fconfig
from fsa import kernels
from fsa.engines import GoldenEngine, SimEngine
from fsa.report import fa3_inputs
from harness.bare import BareEngine, build_bare, supported

#: cocotb figures before issue 16 (commit da6901e: cocotb's blanket
#: --public-flat-rw, cocotbext-axi INFO logging (two lines per AXI4-Lite push), cycle limits
#: as per-edge ClockCycles), measured on the 2-core development machine with
#: the method of section 1 (CPU cycles/s, differential), same output bits.
#: Printed beside today's figures for reference; not re-measured.
#: (16x16 N=128: 663 -> 3,401 after, 8x8 N=64: 2,650 -> 6,894, 4x4 N=32: 4,896
#: -> 7,210 in the same session, a loaded machine; same exec cycles and bits.)
BEFORE = {"FSA4X4Fp16ConfigQ4K": 4896.0, "FSA8X8Fp16ConfigQ4K": 2650.0,
          "FSA16X16Fp16ConfigQ4K": 663.0}

#: The bare harness before issue 16 item 2 (the PE's FMA evaluated every
#: cycle, no device-model flags; the harness of this commit, which answers the
#: presets' 128/256-bit buses), same method and programs as section 1b:
#: (busy, idle) cycles per CPU second; same exec cycles and bits as after.
#: (8x8 at N = 64, 16x16 at N = 128: shorter runs than section 1b's now.)
#: Measured on the machine of the committed results (2026-12-03 18:3x, AMD
#: EPYC, 2 cores: the tree of commit 7e80b3b with this harness), printed
#: beside today's figures; not re-measured by this script.  (The same tree's
#: cocotb path, 16x16 N = 128 AxiRam: 6,136 CPU cycles/s.  On the machine
#: of the earlier sessions: 8x8 50,577 / 56,577, 16x16 4,265 / 4,374.)
BARE_BEFORE = {"FSA8X8Fp16ConfigQ4K": (90846.0, 108341.0),
               "FSA16X16Fp16ConfigQ4K": (13506.0, 16619.0)}

BUILD_CHILD = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {root!r})
os.environ["OBJCACHE"] = ""            # no ccache: a cold compile
from fsa import config, simrun
from rtl.generate import generate, verilog_files
sys.path.insert(0, {bench!r})
from common import deep_queue
cfg = deep_queue(config.get({name!r}))
out = generate(cfg, quiet=True)
srcs = verilog_files(out)
with tempfile.TemporaryDirectory(prefix="fsa-build-") as d:
    simrun.SIMS = Path(d)
    t = time.perf_counter()
    bdir = simrun.build({sim!r}, "fsa_top", srcs)
    wall = time.perf_counter() - t
    size = sum(f.stat().st_size for f in Path(bdir).rglob("*") if f.is_file())
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"wall_s": wall, "peak_child_rss_mb": ru.ru_maxrss / 1024,
                  "child_cpu_s": ru.ru_utime + ru.ru_stime, "build_dir_mb": size / 2**20,
                  "verilog_kb": sum(s.stat().st_size for s in srcs) / 1024}}))
"""


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _test_times(eng) -> "tuple[float, float]":
    """(simulated cycles, real seconds) of the last cocotb test."""
    xml = Path(eng.last_run["run_dir"]) / "results.xml"
    tc = ET.parse(xml).getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in tc.iter("property")}
    return float(props["sim_time_duration"]) / 10.0, float(tc.get("time"))


def _same_bits(a, b) -> bool:
    return a.outputs.keys() == b.outputs.keys() and all(
        np.array_equal(a.outputs[o], b.outputs[o]) for o in a.outputs)


def _problem(name: str, n: int, rng):
    cfg = deep_queue(fconfig.get(name))
    R = cfg.sa_rows
    q, k, v = (fa3_inputs(rng, (n, R)) for _ in range(3))
    prog = kernels.attention(cfg, n, n)
    inputs = {"Q": q, "K": k, "V": v}
    return cfg, prog, inputs, GoldenEngine(cfg).run(prog, inputs)


def attention_speed(name: str, n: int, sim: str, rng, memory: str = "axi") -> dict:
    cfg, prog, inputs, gold = _problem(name, n, rng)
    R, C = cfg.sa_rows, cfg.sa_cols
    q, k, v = inputs["Q"], inputs["K"], inputs["V"]
    eng = SimEngine(cfg, sim=sim, max_cycles=20_000_000, memory=memory)
    # warm-up on a one-block program: builds (cached) and starts the simulator once;
    # then the same small run again, timed: the start-up cost subtracted below
    small = kernels.attention(cfg, C, R)
    eng.run(small, {"Q": q[:C], "K": k[:R], "V": v[:R]})
    c0 = _child_cpu()
    eng.run(small, {"Q": q[:C], "K": k[:R], "V": v[:R]})
    small_cpu = _child_cpu() - c0
    small_cycles, _ = _test_times(eng)
    c0, t = _child_cpu(), time.perf_counter()
    res = eng.run(prog, inputs)
    wall, cpu = time.perf_counter() - t, _child_cpu() - c0
    sim_cycles, real = _test_times(eng)
    return {"config": cfg.name, "sim": sim, "memory": memory, "N": n, "exec_cycles": res.cycles,
            "sim_cycles": sim_cycles, "test_real_s": real, "cycles_per_s": sim_cycles / real,
            "cpu_s": cpu, "small_cpu_s": small_cpu,
            # (None when the run's CPU time is within the noise of the one-block run's)
            "cycles_per_cpu_s": (sim_cycles - small_cycles) / (cpu - small_cpu)
            if cpu - small_cpu > 0.1 else None,
            "engine_wall_s": wall, "bit_exact": _same_bits(res, gold)}


def bare_speed(name: str, n: int, rng, idle: int) -> dict:
    """The bare C++ harness on the same problem as :func:`attention_speed`
    (same seed, so the same inputs)."""
    cfg, prog, inputs, gold = _problem(name, n, rng)
    why = supported(cfg)
    if why:
        return {"config": cfg.name, "N": n, "skipped": why}
    eng = BareEngine(cfg, idle=idle)
    t = time.perf_counter()
    eng.exe = build_bare(cfg)
    build_s = time.perf_counter() - t
    res = eng.run(prog, inputs)
    r = eng.last_run
    return {"config": cfg.name, "N": n, "exec_cycles": res.cycles, "sim_cycles": r["cycles"],
            "cpu_s": r["cpu_s"], "cycles_per_cpu_s": r["cycles"] / max(r["cpu_s"], 1e-9),
            "idle_cycles": r["idle_cycles"],
            "idle_cycles_per_cpu_s": r["idle_cycles"] / max(r["idle_cpu_s"], 1e-9),
            "build_s": build_s, "bit_exact": _same_bits(res, gold)}


def build_cost(name: str, sim: str, timeout: float) -> dict:
    code = BUILD_CHILD.format(root=str(common.ROOT), bench=str(common.BENCH), name=name, sim=sim)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, cwd=common.ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"build of {name} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    try:
        from cocotb_tools.runner import _get_max_parallel_build_jobs as jobs
        make_jobs = jobs()
    except ImportError:
        make_jobs = None
    r.update(config=deep_queue(fconfig.get(name)).name, sim=sim, make_jobs=make_jobs,
             makeflags=os.environ.get("MAKEFLAGS", ""))
    return r


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4x4 only")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    # (long enough runs: the CPU figure is a difference of two runs' CPU times,
    # and the fast memory path runs 4x4 N = 128 in about 0.2 CPU s, within the
    # noise of the one-block run: N = 512, 0.56M cycles, for both paths)
    runs = [("FSA4X4Fp16Config", 512, "verilator"), ("FSA4X4Fp16Config", 16, "icarus")]
    if not args.quick:
        runs += [("FSA8X8Fp16Config", 512, "verilator"), ("FSA16X16Fp16Config", 512, "verilator"),
                 ("FSA8X8Fp16Config", 32, "icarus")]
    import shutil
    if shutil.which("iverilog") is None:
        print("   (iverilog not found: the Icarus rows are skipped; `make SIM=icarus` installs it)")
        runs = [r for r in runs if r[2] != "icarus"]
    speed = []
    for name, n, sim in runs:
        # Verilator: both memory paths on the same build (fsa_memtop's run-time knob)
        for memory in (("axi", "fast") if sim == "verilator" else ("axi",)):
            r = attention_speed(name, n, sim, np.random.default_rng(2), memory)
            speed.append(r)
            cps = r["cycles_per_cpu_s"]
            print(f"   {r['config']} N={n} {sim} memory={memory}: "
                  f"{'(too short to time)' if cps is None else f'{cps:.0f}'} cycles per CPU s",
                  flush=True)
    print("\n1. Simulation speed, attention through fsa_top (cocotb; memory: axi = cocotbext-axi "
          "AxiRam, fast = inside the simulation, fsa/fastmem.py)")
    print(table(["config", "simulator", "memory", "N", "exec cycles", "simulated cycles",
                 "test real s", "cycles/s (real)", "cycles/CPU s", "before (CPU)",
                 "SimEngine.run wall s", "= golden"],
                [[r["config"], r["sim"], r["memory"], r["N"], r["exec_cycles"], int(r["sim_cycles"]),
                  r["test_real_s"], r["cycles_per_s"], r["cycles_per_cpu_s"],
                  BEFORE.get(r["config"]) if r["sim"] == "verilator" and r["memory"] == "axi"
                  else None, r["engine_wall_s"], r["bit_exact"]] for r in speed],
                ["", "", "", "", "", "", ".2f", ".0f", ".0f", ".0f", ".2f", ""]))
    if not all(r["bit_exact"] for r in speed):
        raise SystemExit("simspeed: a cocotb run's output differs from the golden model")
    axi = {(r["config"], r["N"]): r for r in speed if r["memory"] == "axi"}
    for r in speed:
        if r["memory"] == "fast" and r["exec_cycles"] != axi[(r["config"], r["N"])]["exec_cycles"]:
            raise SystemExit(f"simspeed: {r['config']} N={r['N']}: the fast memory took "
                             f"{r['exec_cycles']} cycles, AxiRam "
                             f"{axi[(r['config'], r['N'])]['exec_cycles']}")

    bare = []
    for name, n, sim in runs:
        if sim != "verilator":
            continue
        r = bare_speed(name, n, np.random.default_rng(2), idle=20_000 if args.quick else 100_000)
        bare.append(r)
        if "skipped" not in r:
            print(f"   bare {r['config']} N={n}: {r['cycles_per_cpu_s']:.0f} cycles per CPU s",
                  flush=True)
    cocotb = {(r["config"], r["N"], r["memory"]): r for r in speed if r["sim"] == "verilator"}

    def slower(r, memory):
        """The bare harness's cycles per CPU s over the cocotb run's (`memory`)."""
        c = cocotb.get((r["config"], r["N"], memory), {}).get("cycles_per_cpu_s")
        return r["cycles_per_cpu_s"] / c if c and "cycles_per_cpu_s" in r else None
    print("\n1b. The ceiling: the same model in the bare C++ harness (bench/harness/fsa_bare.cpp)")
    print(table(["config", "N", "exec cycles", "(cocotb)", "simulated cycles", "cycles/CPU s",
                 "idle cycles/CPU s", "before (busy / idle)", "cocotb slower by",
                 "cocotb (fast) slower by", "build s", "= golden"],
                [[r["config"], r["N"], r.get("exec_cycles"),
                  cocotb.get((r["config"], r["N"], "axi"), {}).get("exec_cycles"),
                  r.get("sim_cycles"), r.get("cycles_per_cpu_s"), r.get("idle_cycles_per_cpu_s"),
                  "%.0f / %.0f" % BARE_BEFORE[r["config"]] if r["config"] in BARE_BEFORE else None,
                  slower(r, "axi"), slower(r, "fast"), r.get("build_s"),
                  r.get("bit_exact", r.get("skipped"))] for r in bare],
                ["", "", "", "", "", ".0f", ".0f", "", ".2f", ".2f", ".0f", ""]))
    if not all(r.get("bit_exact", True) for r in bare):
        raise SystemExit("simspeed: a bare-harness run's output differs from the golden model")

    builds = []
    names = ["FSA4X4Fp16Config"] if args.quick else \
        ["FSA4X4Fp16Config", "FSA8X8Fp16Config", "FSA16X16Fp16Config"]
    for name in names:
        r = build_cost(name, "verilator", timeout=3600)
        builds.append(r)
        print(f"   build {r['config']}: {r['wall_s']:.0f} s", flush=True)
    print(f"\n2. Verilator build of fsa_top from scratch (no ccache, child process, "
          f"make -j{builds[0].get('make_jobs')})")
    print(table(["config", "Verilog KiB", "build s", "compiler CPU s", "peak RSS MiB", "build dir MiB"],
                [[r["config"], r["verilog_kb"], r["wall_s"], r["child_cpu_s"], r["peak_child_rss_mb"],
                  r["build_dir_mb"]] for r in builds], ["", ".0f", ".0f", ".0f", ".0f", ".0f"]))
    out = write_json("simspeed", {"quick": args.quick, "speed": speed, "bare": bare,
                                  "before": BEFORE, "bare_before": BARE_BEFORE, "builds": builds,
                                  "seconds": time.perf_counter() - t0})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
