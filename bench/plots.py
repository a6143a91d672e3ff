"""Plots for docs/performance.md from the benchmark results.

Run as ``python bench/plots.py`` after bench/utilisation.py and
bench/accuracy.py (reads ``bench/results/utilisation.json`` and
``accuracy.json``). Needs matplotlib (``pip install -e .[bench]``). Writes:

* ``docs/utilisation.png``: left, utilisation vs sequence length N for the
  RTL configs (points: RTL runs; lines: the cycle model's steady-state fit
  with the calibrated DMA; dotted: the reference formula 2R/(4R+C+P+5));
  right, utilisation vs array size at N = 4096 from the model (free DMA,
  the presets' memory systems and the narrow-bus ``...Axi64Config`` presets),
  the RTL steady-state points and the formula.
* ``docs/accuracy_hist.png``: histograms of |O - O_torch| (log10) for fp16
  and bf16 at P = 4, 8, 16.
* ``docs/ud_utilisation.png`` (from ``bench/results/ud.json``, bench/ud.py):
  left, utilisation vs array size (square fp16 UD presets) of the reference
  and the UD kernel: the cycle model's steady state with a free DMA, its
  prediction for N x N attention with the preset's memory system and
  program fetch (N = 4096; 8192 from 128x128 on), the RTL's whole runs and
  the UD bound 2R/(2R+P+3); right, cycles per key block: model, RTL and
  the bounds 2R+P+3 and 4R+C+P+5.
"""
from __future__ import annotations

import json

import common
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict
from fsa import config as fconfig

DOCS = common.ROOT / "docs"


def _cfg_for(name: str):
    """Rebuild a bench config from its name (preset + Q4K / AxiNNN suffixes)."""
    base = name.replace("Q4K", "")
    axi = None
    if base in fconfig.PRESETS:             # e.g. FSA8X8Fp16Axi64Config
        return common.deep_queue(fconfig.get(base))
    if "Axi" in base:
        base, axi = base.split("Axi")
        axi = int(axi)
    return common.deep_queue(fconfig.with_axi_bits(base, axi) if axi else fconfig.get(base))


def run_util(r: dict) -> float:
    """An RTL run's utilisation from its cycles (the one FLOPs definition)."""
    return common.attention_util(r["R"], r["C"], r["N"], r["causal"], r["rtl_cycles"])[1]


def utilisation_plot(u: dict, plt, out) -> None:
    dma = cm.DmaTiming(**u["dma_timing"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    names = []
    for r in u["runs"]:
        if r["config"] not in names:
            names.append(r["config"])
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(names):
        col = colours[i % len(colours)]
        cfg = _cfg_for(name)
        R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
        ss = cpredict.steady_state(cfg, dma)
        ns = [C * 2 ** k for k in range(1, 12) if C * 2 ** k <= 8192]
        util = [common.attention_util(R, C, n, False, cpredict.predict_cycles(cfg, n, n, False, ss))[1]
                for n in ns]
        label = name.replace("Fp16Config", "").replace("Q4K", "")
        ax1.plot(ns, util, "-", color=col, lw=1.2, label=f"{label} model")
        pts = [r for r in u["runs"] if r["config"] == name and not r["causal"]]
        ax1.plot([r["N"] for r in pts], [run_util(r) for r in pts], "o", color=col,
                 label=f"{label} RTL")
        pts = [r for r in u["runs"] if r["config"] == name and r["causal"]]
        if pts:
            ax1.plot([r["N"] for r in pts], [run_util(r) for r in pts], "x", color=col)
        if "Axi" not in name:
            ax1.axhline(2 * R / (4 * R + C + P + 5), ls=":", color=col, lw=1)
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("sequence length N (seq_q = seq_kv, d = R)")
    ax1.set_ylabel("utilisation = useful FLOPs / (cycles x 2RC)")
    ax1.set_title("RTL (o non-causal, x causal), model (lines), 2R/(4R+C+P+5) (dotted)",
                  fontsize=9)
    ax1.legend(fontsize=7, ncol=2)
    ax1.grid(alpha=0.3)
    # right: vs array size
    fits = u["prediction_fits"]
    sizes = [4, 8, 16, 32, 64, 128]
    model = {"free DMA": [], "preset memory": [], "64-bit AXI": []}
    for n in sizes:
        base = fconfig.get(f"FSA{n}X{n}Fp16Config")
        for label in model:
            f = next((f for f in fits if f["R"] == n and f["dma"] == label), None)
            if f is None:
                cfg = base
                if label == "64-bit AXI":       # the narrow-bus preset (4x4: the preset itself)
                    cfg = fconfig.PRESETS.get(f"FSA{n}X{n}Fp16Axi64Config", base)
                f = cpredict.steady_state(cfg, cm.IDEAL_DMA if label == "free DMA" else dma)
            cyc = cpredict.predict_cycles(base, 4096, 4096, False, f)
            model[label].append(common.attention_util(n, n, 4096, False, cyc)[1])
    for label, ys in model.items():
        ax2.plot(sizes, ys, "-o" if label == "free DMA" else "--.", label=f"model, {label}")
    ax2.plot(sizes, [2 * n / (5 * n + 13) for n in sizes], ":", color="k",
             label="2R/(4R+C+P+5), P=8")
    st = u["steady"]
    ax2.plot([s["R"] for s in st], [s["rtl_util"] for s in st], "s", color="tab:red",
             label="RTL steady state (per key block)")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(sizes, [f"{n}x{n}" for n in sizes])
    ax2.set_xlabel("array R x C (d = R)")
    ax2.set_ylabel("utilisation")
    ax2.set_title("N = 4096, non-causal (model: steady-state fit)", fontsize=9)
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def accuracy_plot(a: dict, plt, out) -> None:
    import numpy as np

    bins = np.array(a["hist_bins_log10"])
    mid = (bins[:-1] + bins[1:]) / 2
    hists = a["histograms"]
    # the largest non-causal case present
    keys = [k for k in hists if "|causal=False|" in k and k.endswith("|fa3")]
    best_n = max(int(k.split("|")[1][2:]) for k in keys)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, e in zip(axes, ("Fp16", "Bf16")):
        for P in (4, 8, 16):
            k = next((k for k in keys if f"{e}Config|" in k and f"|N={best_n}|" in k and
                      f"|P={P}|" in k), None)
            if k is None:
                continue
            h = np.array(hists[k], float)
            ax.step(mid, h / h.sum(), where="mid", label=f"P = {P}")
        ref = a["reference"]
        ax.axvline(np.log10(ref["mae"]), color="k", ls=":", lw=1, label="reference MAE")
        ax.axvline(np.log10(ref["max_abs"]), color="k", ls="--", lw=1, label="reference max")
        cfg = next(k for k in keys if f"{e}Config|" in k and f"|N={best_n}|" in k).split("|")[0]
        ax.set_title(f"{cfg}, N = {best_n}, FA3 inputs: |O - SDPA| (fp32 O)", fontsize=9)
        ax.set_xlabel("log10 absolute error")
        ax.set_xlim(-8, -1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("fraction of outputs")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def ud_plot(d: dict, plt, out) -> None:
    """docs/ud_utilisation.png (module docstring)."""
    sq = [r for r in d["steady_state"] if r["R"] == r["C"]]
    R = [r["R"] for r in sq]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    ax1.plot(R, [100 * r["ref_util"] for r in sq], "o-", color="tab:blue",
             label="reference kernel, steady state (free DMA)")
    ax1.plot(R, [100 * r["ud_util"] for r in sq], "o-", color="tab:red",
             label="UD kernel, steady state (free DMA)")
    ax1.plot(R, [100 * 2 * r["R"] / r["bound_T"] for r in sq], ":", color="black",
             label="UD bound 2R / (2R+P+3)")
    for kern, color in (("reference", "tab:blue"), ("ud", "tab:red")):
        pts = sorted((fconfig.get(r["config"]).sa_rows, 100 * r["util"])
                     for r in d["predictions"]
                     if r["kernel"] == kern and not r["causal"] and r["dma"] != "free")
        if pts:
            ax1.plot(*zip(*pts), "s--", color=color, alpha=0.6, mfc="none",
                     label=f"{kern}: preset memory + fetch, N = 4096/8192 (model)")
        rtl = sorted((fconfig.get(r["config"]).sa_rows, 100 * r["util"])
                     for r in d.get("rtl", []) if r["kernel"] == kern)
        if rtl:
            ax1.plot(*zip(*rtl), "*", color=color, ms=12,
                     label=f"{kern}: RTL, whole run (N = 64; 256 at 16x16)")
    ax1.set_xscale("log", base=2)
    ax1.set_xticks(R, [f"{n}x{n}" for n in R])
    ax1.set_ylim(0, 100)
    ax1.set_ylabel("utilisation %")
    ax1.set_title("Utilisation: reference vs UD dataflow (fp16)")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=7, loc="lower right")
    ax2.plot(R, [r["ref_per_kb"] for r in sq], "o-", color="tab:blue", label="reference (model)")
    ax2.plot(R, [r["ud_per_kb"] for r in sq], "o-", color="tab:red", label="UD (model)")
    # the reference schedule's period 4R+C+P+5 (P = T - 2R - 3 from the UD bound T)
    ax2.plot(R, [2 * r["R"] + r["C"] + r["bound_T"] + 2 for r in sq], ":",
             color="tab:blue", label="4R+C+P+5")
    ax2.plot(R, [r["bound_T"] for r in sq], ":", color="black", label="2R+P+3")
    for kern, color in (("reference", "tab:blue"), ("ud", "tab:red")):
        rtl = sorted((fconfig.get(r["config"]).sa_rows, r["rtl_per_kb"])
                     for r in d.get("rtl", []) if r["kernel"] == kern)
        if rtl:
            ax2.plot(*zip(*rtl), "*", color=color, ms=12, label=f"{kern}: RTL")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xticks(R, [f"{n}x{n}" for n in R])
    ax2.set_ylabel("cycles per key block")
    ax2.set_title("Cycles per key block (R x R array, P = 8)")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: "list[str] | None" = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="plot the quick results (bench/results/quick/) into that folder")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = common.results_dir(args.quick)
    outdir = res if args.quick else DOCS
    done = []
    if (res / "utilisation.json").exists():
        utilisation_plot(json.loads((res / "utilisation.json").read_text()), plt,
                         outdir / "utilisation.png")
        done.append(str((outdir / "utilisation.png").relative_to(common.ROOT)))
    if (res / "accuracy.json").exists():
        accuracy_plot(json.loads((res / "accuracy.json").read_text()), plt,
                      outdir / "accuracy_hist.png")
        done.append(str((outdir / "accuracy_hist.png").relative_to(common.ROOT)))
    if (res / "ud.json").exists():
        ud_plot(json.loads((res / "ud.json").read_text()), plt, outdir / "ud_utilisation.png")
        done.append(str((outdir / "ud_utilisation.png").relative_to(common.ROOT)))
    print("wrote " + (", ".join(done) if done else "nothing (run the benchmarks first)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
