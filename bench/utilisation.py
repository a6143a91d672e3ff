"""Utilisation of the array on the RTL, and the cycle model beside it.

Run as ``python bench/utilisation.py [--quick] [--sim verilator|icarus]``
from the repository root. Prints five tables and writes
``bench/results/utilisation.json``:

1. DMA calibration: DMA-only programs on the RTL (4x4) and the cycle model
   (fsa/cycle/model.py) with the two fitted constants.
2. Attention on the RTL (``SimEngine``) for 4x4, 8x8 and 16x16 fp16 at
   several sequence lengths (seq_q = seq_kv = N, d = R), causal and not:
   total cycles (the device's ``exec`` counter), utilisation = useful FLOPs
   / (cycles x 2RC) (common.attention_util: 4 d per (query, key) pair the
   causal mask keeps), and the cycle model's prediction with its difference.
   The configs are the presets with a 4096-word instruction queue (name
   suffix ``Q4K``; see common.deep_queue): with the presets' 256 words the
   testbench's AXI4-Lite pushes limit longer programs (table 4). The
   presets have one AXI beat per scratchpad row (128-bit AXI at 8x8, 256 at
   16x16, two scratchpad banks; ``fsa.config.memory_system``); 8x8 and 16x16
   are also run on the narrow-bus presets (``...Axi64Config``: 64-bit AXI,
   one bank), whose DMA moves a K or V tile of R rows x 2R bytes in R^2/4
   beats, slower than the matrix schedule from 8x8 on.
3. Steady state per key block, measured on the RTL as
   (cycles(seq_kv = 2aR) - cycles(seq_kv = aR)) / a with seq_q = C, beside
   the model, the model with a free DMA (the matrix schedule alone), the
   reference schedule's period C + 2R + P + 4 + max(2R-1, R+C+1) (steady-state
   utilisation 2R/(4R+C+P+5) when R = C) and the paper's ~5N+10 cycles per
   N x N tile.
4. The preset 4x4 (256-word queue) on a program longer than its queue.
5. Model predictions for 32x32 ... 128x128 at N = 2K ... 16K from the
   model's steady state (per key block and per query block, fitted on four
   short programs), for a free DMA, the presets' memory (512-bit AXI, two
   banks) and the narrow-bus presets (64-bit AXI, one bank).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import common  # noqa: F401  (sets sys.path)
from common import attention_util, deep_queue, table, write_json

from fsa.cycle import calibrate as cyclecal
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict
from fsa import config as fconfig
from fsa import kernels
from fsa.engines import SimEngine
from fsa.report import fa3_inputs

P_DEFAULT = 8


def make_cfg(name: str, axi: "int | None" = None):
    """The preset with a 4096-word queue and optionally another AXI width."""
    return deep_queue(fconfig.with_axi_bits(name, axi) if axi else fconfig.get(name))


def run_rtl(cfg, seq_q: int, seq_kv: int, causal: bool, sim: str, rng) -> dict:
    R = cfg.sa_rows
    q, k, v = fa3_inputs(rng, (seq_q, R)), fa3_inputs(rng, (seq_kv, R)), fa3_inputs(rng, (seq_kv, R))
    prog = kernels.attention(cfg, seq_q, seq_kv, causal=causal)
    t = time.perf_counter()
    # pushed by the host (the words in the deep queue before the start, as the
    # model assumes; table 4: the harness's push rate, cm.HARNESS_HOST), not
    # fetched: SimEngine's default, program fetch, adds its own start-up
    res = SimEngine(cfg, sim=sim, max_cycles=20_000_000, push=True).run(
        prog, {"Q": q, "K": k, "V": v})
    wall = time.perf_counter() - t
    return {"prog": prog, "cycles": res.cycles, "counters": res.counters, "wall_s": wall,
            "words": len(prog.words()), "key_blocks": prog.meta["key_blocks"]}


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="4x4 only (one simulator build), no preset-queue table")
    ap.add_argument("--sim", default="verilator", choices=("verilator", "icarus"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    t_all = time.perf_counter()

    # ---------------------------------------------------------------- 1. calibration
    cal_cfg = deep_queue(fconfig.get("FSA4X4Fp16Config"))
    dma, cal_rows, slopes = cyclecal.calibrate_dma(cal_cfg, sim=args.sim)
    print(f"1. DMA calibration on {cal_cfg.name} ({args.sim}, cocotbext-axi AxiRam): "
          f"load_base={dma.load_base} store_base={dma.store_base} "
          f"(fitted cycles per beat: LOAD {slopes['LOAD']:.3f}, STORE {slopes['STORE']:.3f})")
    print(table(["program", "beats", "RTL exec", "model", "diff"],
                [[r["program"], r["beats"], r["rtl"], r["model"], r["model"] - r["rtl"]]
                 for r in cal_rows]))

    # ---------------------------------------------------------------- 2. attention runs
    if args.quick:
        # one simulator build (the 4x4 of the calibration): under 3 minutes cold
        sizes = [("FSA4X4Fp16Config", None, [8, 16, 32])]
    else:
        sizes = [("FSA4X4Fp16Config", None, [8, 16, 32, 48]),
                 ("FSA8X8Fp16Config", None, [16, 32, 64, 96]),
                 ("FSA16X16Fp16Config", None, [32, 64, 128, 192]),
                 # the narrow bus: the DMA, not the schedule, sets the pace
                 ("FSA8X8Fp16Axi64Config", None, [16, 64]),
                 ("FSA16X16Fp16Axi64Config", None, [32, 128])]
    runs = []
    for name, axi, ns in sizes:
        cfg = make_cfg(name, axi)
        R, C = cfg.sa_rows, cfg.sa_cols
        for n in ns:
            for causal in (False, True):
                r = run_rtl(cfg, n, n, causal, args.sim, rng)
                m = cm.simulate(cfg, r["prog"].instructions, dma)
                fl, util = attention_util(R, C, n, causal, r["cycles"])
                runs.append({"config": cfg.name, "R": R, "C": C, "N": n, "causal": causal,
                             "key_blocks": r["key_blocks"], "words": r["words"],
                             "rtl_cycles": r["cycles"], "model_cycles": m.cycles,
                             "diff": m.cycles - r["cycles"], "flops": fl,
                             "utilisation": util,
                             "rtl_counters": r["counters"], "model_counters": m.counters,
                             "wall_s": r["wall_s"]})
                print(f"   {cfg.name} N={n} causal={causal}: {r['cycles']} cycles "
                      f"(model {m.cycles}) in {r['wall_s']:.1f} s", flush=True)
    print(f"\n2. Attention on the RTL ({args.sim}), seq_q = seq_kv = N, d = R, fp16; "
          "utilisation = useful FLOPs / (cycles x 2RC)")
    print(table(["config", "N", "causal", "key blocks", "words", "RTL cycles", "model",
                 "model-RTL", "utilisation", "RTL bubble", "model bubble"],
                [[r["config"], r["N"], "yes" if r["causal"] else "no", r["key_blocks"], r["words"],
                  r["rtl_cycles"], r["model_cycles"], r["diff"], r["utilisation"],
                  r["rtl_counters"]["bubble"], r["model_counters"]["bubble"]] for r in runs],
                ["", "", "", "", "", "", "", "+d", ".3f", "", ""]))

    # ---------------------------------------------------------------- 3. steady state
    a = 4 if args.quick else 8
    steady = []
    for name, axi, _ in sizes:
        cfg = make_cfg(name, axi)
        R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
        r1 = run_rtl(cfg, C, a * R, False, args.sim, rng)
        r2 = run_rtl(cfg, C, 2 * a * R, False, args.sim, rng)
        m1 = cm.simulate(cfg, r1["prog"].instructions, dma).cycles
        m2 = cm.simulate(cfg, r2["prog"].instructions, dma).cycles
        ideal = cpredict.steady_state(cfg, cm.IDEAL_DMA)["per_key_block"]
        per_kb = (r2["cycles"] - r1["cycles"]) / a
        ref = cpredict.reference_period(R, C, P)
        steady.append({"config": cfg.name, "R": R, "C": C, "P": P, "a": a,
                       "rtl_cycles": [r1["cycles"], r2["cycles"]], "model_cycles": [m1, m2],
                       "rtl_per_kb": per_kb, "model_per_kb": (m2 - m1) / a,
                       "model_ideal_dma_per_kb": ideal, "reference_period": ref,
                       "paper_5n_plus_10": 5 * R + 10,
                       "rtl_util": 2 * R / per_kb, "model_ideal_util": 2 * R / ideal,
                       "reference_util": 2 * R / ref,
                       "reference_formula": 2 * R / (4 * R + C + P + 5)})
    print(f"\n3. Steady state per key block (seq_q = C, seq_kv = {a}R vs {2 * a}R), cycles; "
          "util = 2R / period")
    print(table(["config", "RTL", "model", "model, free DMA", "reference C+2R+P+4+max(..)",
                 "paper 5N+10", "RTL util", "free-DMA util", "2R/(4R+C+P+5)"],
                [[s["config"], s["rtl_per_kb"], s["model_per_kb"], s["model_ideal_dma_per_kb"],
                  s["reference_period"], s["paper_5n_plus_10"], s["rtl_util"],
                  s["model_ideal_util"], s["reference_formula"]] for s in steady],
                ["", ".1f", ".1f", ".1f", "", "", ".3f", ".3f", ".3f"]))

    # ---------------------------------------------------------------- 4. queue effect
    pre = fconfig.get("FSA4X4Fp16Config")
    qe = []
    for n in (() if args.quick else (16, 32)):     # (the preset is another build)
        r = run_rtl(pre, n, n, False, args.sim, rng)
        m = cm.simulate(pre, r["prog"].instructions, dma).cycles
        qe.append({"config": pre.name, "queue_words": pre.inst_queue_size, "N": n,
                   "words": r["words"], "rtl_cycles": r["cycles"], "model_cycles": m,
                   "rtl_cycles_per_word": r["cycles"] / r["words"]})
    print(f"\n4. Preset queue ({pre.inst_queue_size} words): the rest of a longer program is "
          "pushed during the run (fsa/harness/device.py); the model assumes every word is queued")
    print(table(["config", "N", "words", "RTL cycles", "model (no push limit)", "RTL cycles/word"],
                [[q["config"], q["N"], q["words"], q["rtl_cycles"], q["model_cycles"],
                  q["rtl_cycles_per_word"]] for q in qe], ["", "", "", "", "", ".2f"]))

    # ---------------------------------------------------------------- 5. predictions
    pred_cfgs = ["FSA32X32Fp16Config", "FSA64X64Fp16Config", "FSA128X128Fp16Config"]
    ns = [2048, 4096, 8192, 16384]
    dmas = {"free DMA": cm.IDEAL_DMA, "preset memory": dma, "64-bit AXI": dma}
    preds, fits = [], []
    for name in pred_cfgs:
        base = fconfig.get(name)
        for label, dt in dmas.items():
            cfg = (fconfig.get(name.replace("Config", "Axi64Config")) if label == "64-bit AXI"
                   else base)
            t = time.perf_counter()
            ss = cpredict.steady_state(cfg, dt)
            fits.append({"config": cfg.name, "R": cfg.sa_rows, "C": cfg.sa_cols, "dma": label, **ss,
                         "seconds": time.perf_counter() - t})
            for n in ns:
                for causal in (False, True):
                    cyc = cpredict.predict_cycles(cfg, n, n, causal, ss)
                    _, util = attention_util(cfg.sa_rows, cfg.sa_cols, n, causal, cyc)
                    preds.append({"config": base.name, "R": cfg.sa_rows, "C": cfg.sa_cols,
                                  "dma": label, "N": n, "causal": causal, "cycles": cyc,
                                  "utilisation": util})
    # check the extrapolation against a direct model run
    chk_cfg = fconfig.get("FSA32X32Fp16Config")
    chk_n = 256 if args.quick else 512
    ss = next(f for f in fits if f["config"] == chk_cfg.name and f["dma"] == "preset memory")
    direct = cm.simulate(chk_cfg, kernels.attention(chk_cfg, chk_n, chk_n, check=False).instructions,
                         dma).cycles
    extrap = cpredict.predict_cycles(chk_cfg, chk_n, chk_n, False, ss)
    print("\n5. Model predictions (seq_q = seq_kv = N, d = R, fp16, P = 8): cycles per key block "
          "and utilisation")
    print(table(["config", "DMA", "per key block", "per query block", "ref. period"],
                [[f["config"], f["dma"], f["per_key_block"], f["per_query_block"],
                  cpredict.reference_period(f["R"], f["C"], P_DEFAULT)] for f in fits], ["", "", ".0f", ".0f", ""]))
    hdr = ["config", "DMA"] + [f"N={n}" for n in ns] + [f"N={n} causal" for n in (ns[0], ns[-1])]
    rows = []
    for name in pred_cfgs:
        for label in dmas:
            sel = {(p["N"], p["causal"]): p for p in preds if p["config"] == name and p["dma"] == label}
            rows.append([name, label] + [sel[(n, False)]["utilisation"] for n in ns]
                        + [sel[(n, True)]["utilisation"] for n in (ns[0], ns[-1])])
    print(table(hdr, rows, ["", ""] + [".3f"] * (len(hdr) - 2)))
    print(f"   extrapolation check, {chk_cfg.name} N={chk_n} preset memory: direct model "
          f"{direct} cycles, steady-state formula {extrap:.0f}")

    out = write_json("utilisation", {
        "quick": args.quick, "sim": args.sim,
        "dma_timing": {"load_base": dma.load_base, "store_base": dma.store_base,
                       "load_first": dma.load_first, "store_first": dma.store_first,
                       "store_single_group": dma.store_single_group},
        "calibration": cal_rows, "calibration_slopes": slopes,
        "runs": runs, "steady": steady, "queue_effect": qe,
        "prediction_fits": fits, "predictions": preds,
        "extrapolation_check": {"config": chk_cfg.name, "N": chk_n, "direct": direct,
                                "formula": extrap},
        "seconds": time.perf_counter() - t_all})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t_all:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
