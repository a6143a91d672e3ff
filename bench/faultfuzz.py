"""Differential fault fuzzing at scale (issue 38): random programs, legal
and faulty (``tb/faults/fuzz.py``), on the golden model and on the device,
4x4 reference and UD, ``--batch`` programs per simulator run (the fast
memory path on Verilator).  Prints, per config and in all, the programs
run, how they ended (error codes), the disagreements (state, error code,
instruction index, wait register or memory) and the wall time; the first
disagreements are minimised and printed.

Run as ``python bench/faultfuzz.py [--programs N] [--quick]`` from the
repository root (default 2,500 programs per config: 5,000 in all).  Writes
``bench/results/faultfuzz.json`` (``bench/results/quick/`` with ``--quick``).
Exit status 1 when there are disagreements.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time

import common  # noqa: F401  (sets sys.path)
from common import table, write_json

from fsa import config as fconfig
from tb.faults import fuzz

CONFIGS = ("FSA4X4Fp16Config", "FSA4X4Fp16UdConfig")


def run_config(name: str, programs: int, batch: int, seed: int) -> dict:
    cfg = fconfig.get(name)
    t0 = time.perf_counter()
    ends: collections.Counter = collections.Counter()
    diffs, gen_s, sim_s, shown = [], 0.0, 0.0, []
    for b in range(0, programs, batch):
        s = seed + b
        t = time.perf_counter()
        progs, golden = fuzz.generate(cfg, s, min(batch, programs - b))
        gen_s += time.perf_counter() - t
        t = time.perf_counter()
        rtl = fuzz.device_runs(cfg, s, progs)
        sim_s += time.perf_counter() - t
        ends.update(o.error for o in golden)
        for k, why in fuzz.differences(golden, rtl, fuzz.initial_memory(cfg, s)):
            diffs.append({"seed": s, "program": k, "what": why})
            if len(shown) < 2:
                small, small_why = fuzz.minimise(cfg, s, progs[k])
                shown.append(f"{name} seed {s} program {k}: {why}\nminimised ({small_why}):\n"
                             f"{fuzz.describe(small)}")
        print(f"[faultfuzz] {name}: {min(b + batch, programs)} / {programs} programs, "
              f"{len(diffs)} disagreements, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"config": name, "programs": programs, "disagreements": len(diffs),
            "differences": diffs[:50], "minimised": shown, "ends": dict(ends.most_common()),
            "wall_s": time.perf_counter() - t0, "generate_golden_s": gen_s, "device_s": sim_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=2500, help="programs per config")
    ap.add_argument("--batch", type=int, default=500, help="programs per simulator run")
    ap.add_argument("--seed", type=int, default=38_000)
    ap.add_argument("--quick", action="store_true", help="200 programs per config")
    a = ap.parse_args(argv)
    if a.programs < 1 or a.batch < 1:
        ap.error("--programs and --batch must be at least 1")
    programs = 200 if a.quick else a.programs
    t0 = time.perf_counter()
    res = [run_config(n, programs, a.batch, a.seed) for n in CONFIGS]
    wall = time.perf_counter() - t0
    rows = [[r["config"], r["programs"], r["disagreements"], f"{r['wall_s']:.0f}",
             ", ".join(f"{k} {v}" for k, v in r["ends"].items())] for r in res]
    total = sum(r["programs"] for r in res)
    bad = sum(r["disagreements"] for r in res)
    rows.append(["all", total, bad, f"{wall:.0f}", ""])
    print(table(["config", "programs", "disagreements", "wall s", "outcomes"], rows))
    for r in res:
        for text in r["minimised"]:
            print(text)
    write_json("faultfuzz", {"quick": a.quick, "configs": res, "programs": total,
                             "disagreements": bad, "wall_s": wall})
    print(f"[faultfuzz] {total} programs, {bad} disagreements, {wall:.0f} s wall")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
