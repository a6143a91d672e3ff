"""MyHDL -> Verilog conversion time and generated Verilog size per array size.

Run as ``python bench/convert.py [--quick] [--sizes 4 8 16 32 64 128] [--merge]``
from the repository root (default sizes 4 ... 128; --quick: 4, 8, 16;
``--merge`` keeps the rows of other sizes from the last results, e.g.
``--sizes 64 --merge`` redoes the 64x64 row only).

Each configuration ``FSA<N>X<N>Fp16Config`` is converted from scratch
(``rtl.generate.generate(cfg, outdir=<temp>, force=True)``) in its own
Python process (so each size starts cold and its peak memory is its own).
Prints the total conversion time, the time of the array module alone
(``fsa_array``: its instances of PE/CMP/ACC and the wiring, the part that
grows with R x C), the other large modules, the Verilog size, the peak
resident memory of the process, and seconds per PE; writes
``bench/results/convert.json``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import common
from common import table, write_json

CHILD = r"""
import json, resource, sys, tempfile, time, pathlib
sys.path.insert(0, {root!r})
from fsa import config
from rtl.generate import generate
cfg = config.get({name!r})
with tempfile.TemporaryDirectory(prefix="fsa-conv-") as d:
    t = time.perf_counter()
    out = generate(cfg, outdir=pathlib.Path(d) / cfg.name, force=True, quiet=True)
    wall = time.perf_counter() - t
    man = json.loads((out / "manifest.json").read_text())
    files = {{f: (out / f).stat().st_size for f in man["files"] if f.endswith(".v")}}
    lines = sum(len((out / f).read_text().splitlines()) for f in files)
print(json.dumps({{"wall_s": wall, "module_s": man["convert_seconds"], "bytes": files,
                  "lines": lines,
                  "cpu_s": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def convert_one(n: int, timeout: float) -> dict:
    name = f"FSA{n}X{n}Fp16Config"
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD.format(root=str(common.ROOT), name=name)],
                       capture_output=True, text=True, timeout=timeout, cwd=common.ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"conversion of {name} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r.update(config=name, R=n, C=n, pes=n * n, process_s=time.perf_counter() - t)
    return r


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 4, 8, 16")
    ap.add_argument("--sizes", type=int, nargs="*", help="array sizes N (N x N), default 4..128")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per conversion")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other sizes' rows of the existing results JSON")
    args = ap.parse_args(argv)
    sizes = args.sizes or ([4, 8, 16] if args.quick else [4, 8, 16, 32, 64, 128])
    rows = []
    for n in sizes:
        r = convert_one(n, args.timeout)
        r["when"] = time.strftime("%Y-%m-%d %H:%M:%S")
        rows.append(r)
        print(f"   {r['config']}: {r['wall_s']:.1f} s", flush=True)
    old = common.RESULTS / "convert.json"
    if args.merge and old.exists():
        keep = [r for r in json.loads(old.read_text())["rows"] if r["R"] not in sizes]
        rows = sorted(keep + rows, key=lambda r: r["R"])
    print("\nMyHDL conversion of FSA<N>X<N>Fp16Config (all modules, cold process)")
    hdr = ["config", "PEs", "total s", "CPU s", "fsa_array s", "fsa_idelay s", "fsa_odelay s",
           "fsa_mxctrl s", "ms per PE", "Verilog KiB", "fsa_array.v KiB", "lines", "peak RSS MiB"]
    print(table(hdr, [[r["config"], r["pes"], r["wall_s"], r.get("cpu_s"), r["module_s"].get("fsa_array"),
                       r["module_s"].get("fsa_idelay"), r["module_s"].get("fsa_odelay"),
                       r["module_s"].get("fsa_mxctrl"), 1000 * r["wall_s"] / r["pes"],
                       sum(r["bytes"].values()) / 1024, r["bytes"].get("fsa_array.v", 0) / 1024,
                       r["lines"], r["peak_rss_mb"]] for r in rows],
                ["", "", ".1f", ".1f", ".1f", ".1f", ".1f", ".1f", ".1f", ".0f", ".0f", "", ".0f"]))
    checks = {}
    r16 = next((r for r in rows if r["R"] == 16), None)
    if r16:
        checks["16x16_under_30s"] = r16["wall_s"] < 30
        print(f"\n  16x16: {r16['wall_s']:.1f} s ({'<' if r16['wall_s'] < 30 else '>='} 30 s)")
    if len(rows) >= 3:
        import numpy as np
        x = np.array([r["pes"] for r in rows], float)
        y = np.array([r["wall_s"] for r in rows], float)
        b, a = np.polyfit(x, y, 1)
        pred = a + b * x
        checks["linear_fit"] = {"seconds_fixed": float(a), "ms_per_pe": float(1000 * b),
                                "residual_pct": [float(100 * (yy - pp) / yy) for yy, pp in zip(y, pred)]}
        print(f"  least-squares line: {a:.1f} s + {1000 * b:.2f} ms x PEs; residuals "
              + ", ".join(f"{r['config'].split('Fp16')[0][3:]} {100 * (yy - pp) / yy:+.0f} %"
                          for r, yy, pp in zip(rows, y, pred)))
    out = write_json("convert", {"quick": args.quick, "rows": rows, "checks": checks})
    print(f"\nwrote {out.relative_to(common.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
