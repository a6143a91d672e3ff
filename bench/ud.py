"""The UD dataflow (docs/ud.md) in the cycle model, beside the reference schedule.

Run as ``python bench/ud.py [--quick] [--rtl] [--rtl16] [--area] [--keep]`` from
the repository root (``--keep``: tables 3 and 4 not rerun are taken from the
last results JSON, each with its own run time, e.g. after a memory-system
change that moves only the model's tables). Prints two tables (three with ``--rtl``, four with ``--area``) and writes
``bench/results/ud.json`` (``bench/results/quick/`` with ``--quick``).
Tables 1 and 2 are the cycle model (fsa/cycle/model.py) running the plans of
fsa/plan.py and fsa/plan_ud.py; table 3 is measured on the RTL (Verilator).

1. Steady state per key block with a free DMA (the matrix schedule alone),
   fitted by :func:`fsa.cycle.predict.steady_state` on short programs: the
   reference kernel, the UD kernel and the UD bound ``T = 2R + P + 3``; the
   per-query-block cost of each; the steady-state utilisation ``2R / cycles
   per key block`` (``4 R^2 C`` useful FLOPs per key block over ``2RC`` a cycle).
2. Predicted utilisation of attention ``N x N`` (``N = 4096``, ``8192`` from
   128x128 on; causal and not) for the reference and the UD kernel, with a
   free DMA (every word in the queue) and with the preset's memory system
   and program fetch (as ``fsa predict``).
3. ``--rtl``: the UD RTL (issue 15 stage 2) beside the reference RTL, the
   presets' memory system (4x4: 64-bit AXI, one bank; 8x8: 128-bit, two
   banks; ``--rtl16`` adds 16x16, 256-bit): cycles per key block measured
   as ``(cycles(seq_kv = 2aR) - cycles(seq_kv = aR)) / a`` with seq_q = C
   (``SimEngine``: the device fetches the program over memory port 0, which
   it shares with the DMA), the cycle model's steady state for the same
   memory system and program fetch, the bound T = 2R + P + 3, and a whole
   N x N run (N = 64; 256 at 16x16, the issue's target >= 55 %): the RTL's
   cycles, the model's (``fsa predict``: run on the program itself) and the
   utilisation.
4. ``--area``: Yosys generic synthesis (:mod:`fsa.area`, needs the ``bench``
   extra): a plain weight-stationary PE (bench/ws_pe.py: the same FMA with
   exp2 tied to 0, MAC and weight load only), the PE (with its FMA) of a
   reference and of a UD config, one
   column of the UD bottom comparator row (``fsa_bcmp`` with its comparator
   and converter) beside one column of the top CMP, and what the UD units add
   to an R x C array (``R C`` PE deltas + ``C`` BCMP columns) relative to its
   PEs and top CMP row.
"""
from __future__ import annotations

import argparse
import json

import common  # noqa: F401  (sets sys.path)
from common import attention_util, results_dir, table, write_json

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict
from fsa.cycle.predict import predict

SQUARE = (4, 8, 16, 32, 64, 128)
RECT = ((4, 8), (8, 4), (16, 8), (8, 16))


def ud_name(r: int, c: int) -> str:
    return f"FSA{r}X{c}Fp16UdConfig"


def steady(quick: bool) -> list[dict]:
    rows = []
    sizes = [(n, n) for n in (SQUARE[:4] if quick else SQUARE)] + ([] if quick else list(RECT))
    for r, c in sizes:
        cfg = fconfig.get(ud_name(r, c))
        P = cfg.exp2_pieces
        ref = cpredict.steady_state(cfg, cm.IDEAL_DMA, kernel="reference")
        ud = cpredict.steady_state(cfg, cm.IDEAL_DMA)
        T = 2 * r + P + 3
        rows.append({"config": cfg.name, "R": r, "C": c, "ref_per_kb": ref["per_key_block"],
                     "ud_per_kb": ud["per_key_block"], "bound_T": T,
                     "ref_per_qb": ref["per_query_block"], "ud_per_qb": ud["per_query_block"],
                     # 4 R^2 C useful FLOPs per key block over per_kb x 2RC
                     "ref_util": 2 * r / ref["per_key_block"], "ud_util": 2 * r / ud["per_key_block"]})
    return rows


def predictions(quick: bool) -> list[dict]:
    rows = []
    sizes = (4, 16) if quick else SQUARE
    for n in sizes:
        cfg = fconfig.get(ud_name(n, n))
        N = 8192 if n >= 128 else 4096
        mem = f"preset: {cfg.axi_data_bits}-bit AXI x {cfg.mem_ports}"
        # (label, DMA timing, how the program reaches the queue: as fsa predict)
        dmas = [("free", cm.IDEAL_DMA, "queue"), (mem, cm.DEFAULT_DMA, "fetch")]
        for dname, dma, feed in dmas:
            for kern in ("reference", "ud"):
                ss = cpredict.steady_state(cfg, dma, kernel=kern, program=feed)
                for causal in (False, True):
                    cyc = cpredict.predict_cycles(cfg, N, N, causal, ss)
                    _, util = attention_util(n, n, N, causal, cyc)
                    rows.append({"config": cfg.name, "N": N, "dma": dname, "kernel": kern,
                                 "causal": causal, "per_kb": ss["per_key_block"],
                                 "cycles": round(cyc), "util": util})
    return rows


def _rtl_cycles(cfg, seq_q: int, seq_kv: int, kernel: str) -> int:
    import numpy as np

    from fsa import kernels
    from fsa.engines import SimEngine
    from fsa.report import fa3_inputs

    rng = np.random.default_rng(1)
    R = cfg.sa_rows
    q, k, v = (fa3_inputs(rng, (n, R)) for n in (seq_q, seq_kv, seq_kv))
    prog = kernels.attention(cfg, seq_q, seq_kv, kernel=kernel)
    res = SimEngine(cfg, sim="verilator", max_cycles=20_000_000).run(prog, {"Q": q, "K": k, "V": v})
    return int(res.cycles)


def rtl(sizes) -> list[dict]:
    """Table 3: the UD and the reference RTL (module docstring)."""
    rows = []
    for n in sizes:
        cfg = fconfig.get(ud_name(n, n))
        N = 256 if n >= 16 else 64
        a = 2
        for kern in ("reference", "ud"):
            c1 = _rtl_cycles(cfg, n, a * n, kern)
            c2 = _rtl_cycles(cfg, n, 2 * a * n, kern)
            ss = cpredict.steady_state(cfg, cm.DEFAULT_DMA, kernel=kern, program="fetch")
            cyc = _rtl_cycles(cfg, N, N, kern)
            model = predict(cfg, N, N, kernel=kern, program="fetch")
            _, util = attention_util(n, n, N, False, cyc)
            rows.append({"config": cfg.name, "kernel": kern, "rtl_per_kb": (c2 - c1) / a,
                         "model_per_kb": ss["per_key_block"], "bound_T": 2 * n + cfg.exp2_pieces + 3,
                         "N": N, "cycles": cyc, "model_cycles": model["cycles"],
                         "model_direct": model["direct"], "util": util})
    return rows


def area(fmt: str = "Fp16") -> list[dict]:
    """Table 4 (module docstring): cell counts of Yosys' generic library."""
    import tempfile
    from pathlib import Path

    from fsa.area import pe_cells, synth
    from fsa.hw.verilog import generate

    ref, ud = f"FSA4X4{fmt}Config", f"FSA4X4{fmt}UdConfig"
    pe_ref, pe_ud = pe_cells(ref)["cells"], pe_cells(ud)["cells"]

    def unit(cfg: str, top: str, prefixes: tuple) -> int:
        gen = generate(cfg, quiet=True)
        files = [f for f in gen.glob("*.v") if f.name.startswith(prefixes)]
        with tempfile.TemporaryDirectory(prefix="fsa-area-") as tmp:
            return synth(files, top, Path(tmp) / top)["cells"]

    bcmp = unit(ud, "fsa_bcmp", ("fsa_bcmp", "fsa_fcmp", "fsa_cvt"))
    cmp_ = unit(ref, "fsa_cmp", ("fsa_cmp", "fsa_fcmp", "fsa_cvt", "fsa_fma"))
    import ws_pe

    c = fconfig.get(ref)
    with tempfile.TemporaryDirectory(prefix="fsa-area-") as tmp:
        files = ws_pe.convert(Path(tmp) / "src", c.e_type, c.a_type, c.exp2_pieces)
        ws = synth(files, "ws_pe", Path(tmp) / "ws_pe")["cells"]
    rows = [{"unit": f"plain weight-stationary PE {fmt.lower()} (bench/ws_pe.py)", "cells": ws,
             "vs": None},
            {"unit": f"PE {fmt.lower()} (reference)", "cells": pe_ref, "vs": pe_ref / ws - 1,
             "against": "plain PE"},
            {"unit": f"PE {fmt.lower()} (UD: + qreg, use_q/load_q/load_reg_di)", "cells": pe_ud,
             "vs": pe_ud / pe_ref - 1, "against": "reference PE"},
            {"unit": f"PE {fmt.lower()} (UD)", "cells": pe_ud, "vs": pe_ud / ws - 1,
             "against": "plain PE"},
            {"unit": "top CMP, one column (reference)", "cells": cmp_, "vs": None},
            {"unit": "BCMP, one column (UD)", "cells": bcmp, "vs": bcmp / cmp_ - 1,
             "against": "top CMP column"}]
    for n in SQUARE:
        base = n * n * pe_ref + n * cmp_
        add = n * n * (pe_ud - pe_ref) + n * bcmp
        rows.append({"unit": f"{n}x{n} array: UD units added over PEs + top CMP row",
                     "cells": add, "vs": add / base, "against": "PEs + top CMP row"})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rtl", action="store_true", help="table 3: the RTL (4x4, 8x8)")
    ap.add_argument("--rtl16", action="store_true", help="table 3 with 16x16 too (long build)")
    ap.add_argument("--area", action="store_true", help="table 4: Yosys cells of the UD units")
    ap.add_argument("--keep", action="store_true",
                    help="keep tables 3 and 4 of the last results JSON where not rerun")
    args = ap.parse_args()
    old = {}
    if args.keep:
        path = results_dir(args.quick) / "ud.json"
        if not path.exists():
            ap.error(f"--keep: no earlier results in {path}")
        old = json.loads(path.read_text())
    st = steady(args.quick)
    print("1. Steady state per key block, free DMA (cycle model; UD bound T = 2R + P + 3)\n")
    print(table(["config", "ref/kb", "UD/kb", "T", "ref/qb", "UD/qb", "ref util", "UD util"],
                [[r["config"], r["ref_per_kb"], r["ud_per_kb"], r["bound_T"], r["ref_per_qb"],
                  r["ud_per_qb"], r["ref_util"], r["ud_util"]] for r in st],
                ["", "g", "g", "", "g", "g", ".3f", ".3f"]))
    pr = predictions(args.quick)
    print("\n2. Predicted utilisation of attention N x N (cycle model, steady-state extrapolation)\n")
    print(table(["config", "N", "DMA", "kernel", "causal", "cycles/kb", "cycles", "util"],
                [[r["config"], r["N"], r["dma"], r["kernel"], "yes" if r["causal"] else "no",
                  r["per_kb"], r["cycles"], r["util"]] for r in pr],
                ["", "", "", "", "", "g", "", ".3f"]))
    rt = []
    if args.rtl or args.rtl16:
        rt = rtl((4, 8, 16) if args.rtl16 else (4, 8))
        print("\n3. The RTL (Verilator, the presets' memory system, program fetched by the "
              "device; kernel 'reference' runs on the UD hardware)\n")
        print(table(["config", "kernel", "RTL/kb", "model/kb", "T", "N", "RTL cycles",
                     "model cycles", "util"],
                    [[r["config"], r["kernel"], r["rtl_per_kb"], r["model_per_kb"], r["bound_T"],
                      r["N"], r["cycles"], r["model_cycles"], r["util"]] for r in rt],
                    ["", "", "g", "g", "", "", "", "", ".3f"]))
    ar = []
    if args.area:
        ar = area()
        print("\n4. Area (Yosys generic cells)\n")
        print(table(["unit", "cells", "vs", "against"],
                    [[r["unit"], r["cells"], "" if r["vs"] is None else f"{100 * r['vs']:+.2f} %",
                      r.get("against", "")] for r in ar], ["", "", "", ""]))
    kept = {}
    for key, rows, flag in (("rtl", rt, args.rtl or args.rtl16), ("area", ar, args.area)):
        if not flag and old.get(key):
            kept[key] = old.get(f"{key}_when", old["when"])
            rows[:] = old[key]
            print(f"\n(table {key}: kept from the run of {kept[key]})")
    out = write_json("ud", {"quick": args.quick, "steady_state": st, "predictions": pr,
                            "rtl": rt, "area": ar,
                            **{f"{k}_when": v for k, v in kept.items()}})
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
