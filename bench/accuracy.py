"""Accuracy of the attention output against torch SDPA.

Run as ``python bench/accuracy.py [--quick]`` from the repository root.

Runs the FlashAttention kernel on the golden model (``GoldenEngine``, which
the RTL regression checks bit for bit) for fp16 and bf16 elements (fp32
accumulation), exp2 pieces P = 4, 8, 16 (``cfg.replace(exp2_pieces=P)``)
and several array sizes / sequence lengths, and compares the output O with
``torch.nn.functional.scaled_dot_product_attention`` in float64 on the same
(already rounded) inputs. Errors: MAE, max abs, mean relative error
(relative to max(|ref|, 1e-6)); averaged (MAE, mean rel) or maximised
(max abs) over seeds. Inputs: the FlashAttention-3 test distribution
(``fsa.report.fa3_inputs``: N(0,1) plus rare N(0,10^2) outliers) and plain
N(0,1).

Prints two tables and writes ``bench/results/accuracy.json`` (with
histograms of log10 |error| for docs/ plots).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import common  # noqa: F401
from common import table, write_json

from fsa import config as fconfig
from fsa import kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.report import error_stats, fa3_inputs, torch_reference

REFERENCE = {"mae": 9.5e-5, "max_abs": 3.1e-4, "note": "reference FSA, tiny runs (4x4 seq 4; "
             "16x16 seq 16), flush-to-zero arithmetic"}
HIST_BINS = np.linspace(-12, 0, 49)


def round_to(x: np.ndarray, fmt: str) -> np.ndarray:
    """x rounded to the element format (what the device sees)."""
    return nx.to_float64(nx.from_float64(x, fmt), fmt)


def one(cfg, n: int, causal: bool, seed: int, dist: str) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    gen = fa3_inputs if dist == "fa3" else (lambda r, s: r.standard_normal(s))
    q, k, v = (round_to(gen(rng, (n, cfg.sa_rows)), cfg.e_type) for _ in range(3))
    res = GoldenEngine(cfg).run(kernels.attention(cfg, n, n, causal=causal), {"Q": q, "K": k, "V": v})
    ref = torch_reference(q, k, v, causal)
    return error_stats(res.o, ref), np.abs(res.o - ref).ravel()


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and sizes")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    seeds = range(3) if args.quick else range(5)
    cases = [("4X4", 4, False), ("16X16", 16, False), ("8X8", 64, False), ("16X16", 128, True)]
    if not args.quick:
        cases += [("16X16", 256, False)]
    rows, hists = [], {}
    for e in ("Fp16", "Bf16"):
        for arr, n, causal in cases:
            base = fconfig.get(f"FSA{arr}{e}Config")
            for P in (4, 8, 16):
                cfg = base if P == base.exp2_pieces else \
                    base.replace(exp2_pieces=P, name=f"{base.name}P{P}")
                for dist in ("fa3", "randn"):
                    st, errs = [], []
                    for s in seeds:
                        a, b = one(cfg, n, causal, s, dist)
                        st.append(a)
                        errs.append(b)
                    row = {"config": base.name, "e_type": base.e_type, "P": P, "N": n,
                           "causal": causal, "inputs": dist, "seeds": len(seeds),
                           "mae": float(np.mean([x["mae"] for x in st])),
                           "max_abs": float(np.max([x["max_abs"] for x in st])),
                           "mean_rel": float(np.mean([x["mean_rel"] for x in st])),
                           "non_finite": int(sum(x["non_finite"] for x in st))}
                    rows.append(row)
                    allerr = np.concatenate(errs)
                    h, _ = np.histogram(np.log10(np.maximum(allerr, 1e-12)), HIST_BINS)
                    hists[f"{base.name}|N={n}|causal={causal}|P={P}|{dist}"] = h.tolist()
    print(f"Attention output vs torch SDPA (float64), golden model = RTL bit for bit; "
          f"mean / max over {len(seeds)} seeds")
    for dist in ("fa3", "randn"):
        print(f"\n  inputs: {'FlashAttention-3 distribution' if dist == 'fa3' else 'N(0, 1)'}")
        print(table(["config", "N", "causal", "P", "MAE", "max abs", "mean rel"],
                    [[r["config"], r["N"], "yes" if r["causal"] else "no", r["P"], r["mae"],
                      r["max_abs"], r["mean_rel"]] for r in rows if r["inputs"] == dist],
                    ["", "", "", "", ".2e", ".2e", ".2e"]))
    print(f"\n  reference FSA (P = 8): MAE ~{REFERENCE['mae']:.1e}, max abs ~{REFERENCE['max_abs']:.1e} "
          f"({REFERENCE['note']})")
    out = write_json("accuracy", {"quick": args.quick, "rows": rows, "reference": REFERENCE,
                                  "hist_bins_log10": HIST_BINS.tolist(), "histograms": hists,
                                  "seconds": time.perf_counter() - t0})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
