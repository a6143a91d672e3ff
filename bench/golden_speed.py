"""Speed of the golden model: the vectorised attention model
(``fsa.golden.fast``, what ``GoldenEngine`` runs for attention programs)
against the instruction-level machine (``GoldenEngine(machine=True)``).

Run as ``python bench/golden_speed.py [--quick]`` from the repository root.

Prints a table and writes ``bench/results/golden_speed.json``. The rate is
MAC/s: ``2 seq_q seq_kv d`` multiply-adds (``Q K^T`` and ``P V``, no mask)
over the CPU time (``time.process_time``; numpy's element-wise operations
run on one core) of ``GoldenEngine.run`` on a prebuilt program, so input
conversion and output parsing are included and the program build is not.
Each row also checks that the two paths give the same bits where both ran
(the machine runs a shorter sequence: it is hundreds of times slower). The
full run adds a short query sequence against a long key sequence (64 x
16384 at 8x8), where the vectorised model groups key blocks.

``--api`` measures instead the whole call a user makes,
``fsa.scaled_dot_product_attention`` on ``[1, 1, S, D]`` fp16 (build, the
dispatch check, the golden model), wall and CPU time, three ways: **before**
(what every call cost before issue 37: the dispatch check's six cycle-model
runs one after the other, every cycle simulated --
``fsa.cycle.dispatch.PERIODIC = False`` --, no verdict kept, and the golden
model's multiply-adds in float64 -- ``fsa.golden.fast.FLOAT32_MACS = False``),
**cold** (today's code with an empty verdict cache: periods skipped, the
runs in parallel processes for large programs,
:func:`fsa.cycle.dispatch.check_workers`, float32 multiply-adds)
and **warm** (the same shape again: the verdict cache hit,
:mod:`fsa.cycle.checkcache`); the outputs' raw bits must be equal.  Writes
``bench/results/golden_api.json`` with the load average.  ``--api-shape S D
CONFIG`` (repeatable) picks the shapes (default 512 x 8 on 8x8 and 1024 x 64
on 64x64).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from common import table, write_json  # noqa: E402
from fsa import config, kernels  # noqa: E402
from fsa.engines import GoldenEngine  # noqa: E402

#: the project's target for the vectorised model (issue 16)
TARGET_MACS = 20e6


def macs(seq_q: int, seq_kv: int, d: int) -> int:
    """Multiply-adds of one head without a mask: ``Q K^T`` and ``P V``."""
    return 2 * seq_q * seq_kv * d


def measure(name: str, seq: int, machine: bool, seed: int = 0, seq_kv: "int | None" = None) -> dict:
    """One ``GoldenEngine.run`` of attention ``seq x seq_kv`` (default ``seq``)
    on config `name`.

    Returns:
        dict with config, path, seq, macs, seconds (CPU), mac_per_s and the
        output bits (key "ot", for the cross-check; not written to JSON).
    """
    cfg = config.get(name)
    R = cfg.sa_rows
    skv = seq if seq_kv is None else seq_kv
    prog = kernels.attention(cfg, seq, skv, check=False)
    rng = np.random.default_rng(seed)
    inputs = {n: rng.standard_normal((seq if n == "Q" else skv, R)) for n in "QKV"}
    eng = GoldenEngine(cfg, machine=machine)
    t0 = time.process_time()
    res = eng.run(prog, inputs)
    dt = max(time.process_time() - t0, 1e-9)
    n = macs(seq, skv, R)
    return {"config": name, "path": eng.last_path, "seq": seq, "seq_kv": skv, "macs": n,
            "seconds": dt,
            "mac_per_s": n / dt, "ot": res.outputs["Ot"]}


def api_call(seq: int, d: int, name: str, how: str) -> dict:
    """One ``fsa.scaled_dot_product_attention`` call (``how``: "before",
    "cold" or "warm", see the module docstring): wall seconds and the bits."""
    import os
    import tempfile

    import torch

    import fsa
    from fsa.cycle import checkcache
    from fsa.cycle import dispatch
    from fsa.golden import fast
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, seq, d, generator=g, dtype=torch.float16) for _ in range(3))
    env = dict(os.environ)
    try:
        if how != "warm":
            checkcache.clear_memory()
            os.environ["FSA_CACHE"] = tempfile.mkdtemp(prefix="fsa-bench-")
        if how == "before":
            os.environ["FSA_CHECK_WORKERS"] = "1"
            os.environ["FSA_DISPATCH_CACHE"] = "0"
            dispatch.PERIODIC = fast.FLOAT32_MACS = False
        t0, c0 = time.perf_counter(), time.process_time()
        ch0 = sum(os.times()[2:4])
        o = fsa.scaled_dot_product_attention(q, k, v, config=name, force=True)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        cpu += sum(os.times()[2:4]) - ch0          # (the check's forked workers)
    finally:
        os.environ.clear()
        os.environ.update(env)
        dispatch.PERIODIC = fast.FLOAT32_MACS = True
    if how == "before":
        checkcache.clear_memory()
    return {"config": name, "seq": seq, "d": d, "how": how, "seconds": dt, "cpu_seconds": cpu,
            "load_average": os.getloadavg()[0], "bits": o.view(torch.int16).numpy()}


def api_main(shapes: list, t_start: float) -> int:
    from fsa.cycle.dispatch import check_workers
    rows, records, ok = [], [], True
    for seq, d, name in shapes:
        runs = [api_call(seq, d, name, how) for how in ("before", "cold", "warm")]
        same = all(np.array_equal(runs[0]["bits"], r["bits"]) for r in runs)
        ok &= same
        for r in runs:
            r = {k: v for k, v in r.items() if k != "bits"}
            r["bits_equal_to_before"] = same
            records.append(r)
            rows.append((name, f"[1, 1, {seq}, {d}]", r["how"], r["seconds"], r["cpu_seconds"],
                         r["load_average"], "yes" if same else "NO"))
    print(f"fsa.scaled_dot_product_attention, golden engine (wall time; check workers "
          f"{check_workers()})")
    print(table(["config", "shape", "run", "wall s", "CPU s", "load", "bits = before"], rows,
                ["", "", "", ".1f", ".1f", ".1f", ""]))
    out = write_json("golden_api", {"runs": records, "check_workers": check_workers(),
                                    "seconds": time.perf_counter() - t_start})
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0 if ok else 1


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="8x8 and 16x16 only, shorter sequences")
    ap.add_argument("--api", action="store_true",
                    help="the whole API call: before / cold / warm dispatch check")
    ap.add_argument("--api-shape", nargs=3, action="append", metavar=("S", "D", "CONFIG"),
                    help="a shape for --api (repeatable)")
    args = ap.parse_args(argv)
    if args.api:
        shapes = [(int(s), int(d), c) for s, d, c in args.api_shape or
                  [(512, 8, "FSA8X8Fp16Config"), (1024, 64, "FSA64X64Fp16Config")]]
        return api_main(shapes, time.perf_counter())
    t_start = time.perf_counter()
    names = ["FSA8X8Fp16Config", "FSA16X16Fp16Config"]
    if not args.quick:
        names += ["FSA8X8Bf16Config", "FSA8X8Fp32Config", "FSA8X8Fp16OnlyConfig",
                  "FSA8X8Bf16OnlyConfig"]
    rows, records = [], []
    for name in names:
        R = config.get(name).sa_rows
        m_seq = 4 * R if args.quick else 8 * R
        f_seq = 512 if args.quick else 2048
        mach = measure(name, m_seq, machine=True)
        fast_small = measure(name, m_seq, machine=False)
        same = bool(np.array_equal(mach["ot"], fast_small["ot"]))
        fast = measure(name, f_seq, machine=False)
        for r in (mach, fast):
            r = {k: v for k, v in r.items() if k != "ot"}
            r["bit_equal_to_machine"] = same
            records.append(r)
            rows.append((name, r["path"], f"{r['seq']} x {r['seq_kv']}", r["macs"], r["seconds"],
                         r["mac_per_s"] / 1e6, "yes" if same else "NO"))
        if not same:
            print(f"error: {name}: the vectorised model and the machine differ", file=sys.stderr)
    if not args.quick:            # a short query sequence: key blocks are grouped
        r = {k: v for k, v in measure("FSA8X8Fp16Config", 64, False, seq_kv=16384).items()
             if k != "ot"}
        r["bit_equal_to_machine"] = None
        records.append(r)
        rows.append((r["config"], r["path"], f"{r['seq']} x {r['seq_kv']}", r["macs"],
                     r["seconds"], r["mac_per_s"] / 1e6, "-"))
    print(f"Golden model speed (CPU time of GoldenEngine.run; MAC = 2 seq^2 d; "
          f"target >= {TARGET_MACS / 1e6:.0f}M MAC/s at 8x8 and 16x16)")
    print(table(["config", "model", "attention", "MACs", "CPU s", "M MAC/s", "bits = machine"],
                rows, ["", "", "", "", ".3f", ".3g", ""]))
    fast_rates = {r["config"]: r["mac_per_s"] for r in records
                  if r["path"] == "fast" and r["seq"] == r["seq_kv"]}
    mach_rates = {r["config"]: r["mac_per_s"] for r in records if r["path"] == "machine"}
    for name in fast_rates:
        print(f"  {name}: vectorised / machine = {fast_rates[name] / mach_rates[name]:.0f}x")
    out = write_json("golden_speed", {
        "quick": args.quick, "numpy": np.__version__, "target_mac_per_s": TARGET_MACS,
        "runs": records, "seconds": time.perf_counter() - t_start})
    print(f"\nwrote {out.relative_to(ROOT)}")
    ok = all(r["bit_equal_to_machine"] is not False for r in records)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
