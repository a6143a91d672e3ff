"""``fsa run``: attention on the RTL (or the golden model), scored against
torch and, bit for bit, against the golden model.

Inputs are generated (FlashAttention-3-style, ``--seq-q/--seq-kv/--seed``;
``--batch`` / ``--heads`` add leading dimensions) or the user's ``.npy``
files ``[..., S, d]`` (any leading dimensions: batches and heads; ``d <=
R``; ``--gqa`` lets K/V have fewer heads, as torch's ``enable_gqa``). The
call goes through :func:`fsa.api.prepare`, the same path as
``fsa.scaled_dot_product_attention``: every leading index is one head of ONE
program (one simulator start), sequences and ``d`` are padded, the scale is
``--scale`` (default ``1/sqrt(d)``). The figures (errors against torch in
float64 on the same rounded inputs, the bit comparison, cycles, useful FLOPs
and utilisation of the caller's shape) are those ``fsa run`` always printed;
with one head of a shape that needs no padding, the output is that of
earlier versions line for line.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from fsa.cli.common import (Outputs, check_golden_fits, json_safe, read_user_qkv, save_with, say,
                            warn)

__all__ = ["cmd_run"]


def _load_run_inputs(args, cfg):
    """Q, K, V as float64 arrays ``[..., S, D]`` for ``fsa run``: the user's
    .npy files, or generated ``[batch, heads, S, R]`` (the dims given by
    --batch / --heads; without them ``[S, R]``, the inputs of earlier versions)."""
    import numpy as np

    from fsa.report import fa3_inputs

    R = cfg.sa_rows

    def check_shape(name, path, a):
        if a.ndim < 2 or a.shape[-1] > R or a.shape[-1] == 0:
            raise ValueError(f"--{name} {path}: shape {a.shape}; {cfg.name} needs "
                             f"(sequence, {R}) or (..., sequence, d) with 1 <= d <= {R} "
                             "(head dimension at most the array rows)")
        if a.size == 0:
            raise ValueError(f"--{name} {path}: the array is empty (shape {a.shape})")

    user = read_user_qkv(args, check_shape)
    if user is not None:
        return user
    lead = tuple(n for n in (args.batch, args.heads) if n is not None)
    rng = np.random.default_rng(args.seed or 0)
    sq, skv = args.seq_q or 64, args.seq_kv or 64
    return (fa3_inputs(rng, lead + (sq, R)), fa3_inputs(rng, lead + (skv, R)),
            fa3_inputs(rng, lead + (skv, R)))


def _torch_sdpa(q, k, v, causal: bool, scale, gqa: bool):
    """torch's scaled_dot_product_attention in float64 on [..., S, D] arrays."""
    import torch

    from fsa.report import torch_reference

    if q.ndim == 2 and k.ndim == 2 and scale is None:
        return torch_reference(q, k, v, causal)
    qt, kt, vt = (torch.from_numpy(x) for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(
        qt, kt, vt, is_causal=causal, scale=scale, enable_gqa=gqa).numpy()


def cmd_run(args: argparse.Namespace) -> int:
    """``fsa run`` (see the module docstring)."""
    import json

    import numpy as np

    from fsa import api, config, numerics
    from fsa.engines import DeviceError, GoldenEngine, SimEngine
    from fsa.report import bit_diff, bound_scale, bounds_verdict, error_stats

    cfg = config.get(args.config)
    if args.sim == "golden":
        given = [opt for opt, v in (("--max-cycles", args.max_cycles), ("--memory", args.memory),
                                    ("--waves", args.waves), ("--keep", args.keep or None))
                 if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: only with --sim verilator or icarus (the "
                             f"golden model has no simulation to limit, place or record)")
    if args.max_cycles is None:
        args.max_cycles = 20_000_000
    outs = Outputs(args.force)
    named = {}
    for opt in ("out", "json", "waves"):
        p = outs.file(getattr(args, opt), f"--{opt}")
        if p is not None and named.setdefault(str(p.resolve()), opt) != opt:
            raise ValueError(f"--{named[str(p.resolve())]} and --{opt} name the same file "
                             f"{getattr(args, opt)}")
    t0 = time.perf_counter()
    q, k, v = _load_run_inputs(args, cfg)

    def fits(st) -> None:          # before the program is built (that takes time too)
        check_golden_fits(cfg, st.padded[0], st.padded[1], args.causal, args.force, st.heads)

    from fsa.progress import Progress, enabled
    bars = Progress(enabled(getattr(args, "progress", None)))
    with bars.active():             # the dispatch check's bar
        job = api.prepare(q, k, v, args.causal, args.scale, args.gqa, config=cfg,
                          before_build=fits, kernel=args.kernel)
    st = job.stats
    for note in st.notes:
        say(f"warning: {note}")
    if job.program is None:
        raise ValueError(f"nothing to compute: the inputs {list(q.shape)}, {list(k.shape)}, "
                         f"{list(v.shape)} give an empty output")
    sq, skv, d, dv = st.shape
    sq_p, skv_p, _ = st.padded
    prog, inputs = job.program, job.inputs
    conv = {n: st.inputs[long] for n, long in (("Q", "query"), ("K", "key"), ("V", "value"))}
    for n in "QKV":
        if conv[n]["overflow"]:
            say(f"warning: {conv[n]['overflow']} finite values of {n} overflow {cfg.e_type} "
                 f"and became +-inf")
        if conv[n]["non_finite"]:
            say(f"note: {conv[n]['non_finite']} values of {n} are +-inf or NaN")
    heads = "" if q.ndim == 2 else f" heads={st.heads}" + (
        f" ({' x '.join(map(str, q.shape[:-2]))})" if q.ndim > 3 else "")
    if st.kv_heads != st.heads:
        heads += f" kv_heads={st.kv_heads}"
    pad = "" if (sq_p, skv_p, d, dv) == (sq, skv, cfg.sa_rows, cfg.sa_rows) else \
        f" (padded to {sq_p} x {skv_p}, d {cfg.sa_rows})"
    say(f"{cfg.name}: attention seq_q={sq} seq_kv={skv} d={d}{heads}{pad}"
         f"{' causal' if args.causal else ''}; {st.words} instruction words")
    say("running the golden model")
    gbar = bars.stage("golden model", 0, " key-block steps")
    try:
        gold = GoldenEngine(cfg, progress=None if bars.show else say,
                            ticks=gbar.update).run(prog, inputs)
    finally:
        gbar.close()
    report = {"config": cfg.name, "seq_q": sq, "seq_kv": skv, "d": d, "causal": bool(args.causal),
              "engine": args.sim, "inputs": conv, "shape": list(q.shape), "heads": st.heads,
              "kv_heads": st.kv_heads, "scale": st.scale, "padded": list(st.padded)}
    res = gold
    if args.sim == "golden":
        # the golden model is untimed: the cycles are the cycle model's
        import dataclasses

        from fsa.cycle import model as cm

        # program fetch (the default) from the top of the memory window as
        # SimEngine places it, or with --push the cocotb harness's AXI4-Lite
        # pushes (fsa predict --program fetch / push)
        feed = "push" if args.push else "fetch"
        res = dataclasses.replace(gold, cycles=cm.simulate(
            cfg, prog.instructions, **cm.program_feed(cfg, feed, st.words)).cycles)
        report["cycles_from"] = f"cycle model (fsa/cycle/model.py, program {feed})"
        say(f"cycle model: {res.cycles} cycles")
    else:
        report["cycles_from"] = "device exec counter"
        from fsa.fastmem import default_memory
        memory = args.memory or default_memory(cfg, args.sim)
        if memory == "fast":
            say("memory inside the simulation (--memory fast; --memory axi for cocotbext-axi)")
        report["memory"] = memory
        clock = bars.stage(args.sim).clock()

        def tell(msg: str) -> None:
            if bars.show:
                clock.desc = f"{args.sim}: {msg}"
            else:
                say(msg)
        eng = SimEngine(cfg, sim=args.sim, progress=tell, waves=bool(args.waves),
                        max_cycles=args.max_cycles, push=args.push, memory=memory)
        try:
            res = eng.run(prog, inputs)
        except DeviceError as e:
            clock.close()
            warn(str(e))                # (names the run folder, kept)
            return 1
        clock.close()
        run_dir = eng.last_run["run_dir"]
        say(f"simulated {res.cycles} cycles" + (f"; run folder {run_dir}" if args.keep else ""))
        if args.waves:
            import glob
            found = sorted(glob.glob(f"{eng.last_run['run_dir']}/*.fst") +
                           glob.glob(f"{eng.last_run['run_dir']}/*.vcd"))   # (VCD: other setups)
            if found and outs.write(args.waves, "--waves", Path(found[0]).read_bytes(),
                                    "waveform"):
                say(f"waveform written to {args.waves}")
            elif not found:
                warn(f"--waves {args.waves}: the simulator wrote no waveform (run folder "
                     f"{run_dir} kept)")
                args.keep = True
        diff = bit_diff(res.outputs["Ot"], gold.outputs["Ot"])
        report["rtl_vs_golden"] = diff
        report["run_dir"] = run_dir
    job.finish(res, args.sim)
    out = job.output(res)
    say("comparing with torch.nn.functional.scaled_dot_product_attention")
    qe, ke, ve = (numerics.to_float64(numerics.from_float64(x, cfg.e_type), cfg.e_type)
                  for x in (q, k, v))
    ref = _torch_sdpa(qe, ke, ve, args.causal, args.scale, args.gqa)
    stats = error_stats(out, ref)
    s = bound_scale(ve)
    within, why = bounds_verdict(stats, s, cfg.e_type)
    report["vs_torch"] = dict(stats, bound_scale=s, within_bounds=within, verdict=why)
    report["counters"] = res.counters
    report["flops"] = st.flops
    report["cycles"] = res.cycles
    report["utilisation"] = st.utilisation
    report["kernel_utilisation"] = st.kernel_utilisation
    report["cycles_per_key_block"] = res.cycles_per_key_block
    for name in ("dma_bytes", "bus_bytes_per_cycle", "bus_occupancy", "array_bound_cycles",
                 "bus_occupancy_ceiling"):
        report[name] = getattr(st, name)
    report["kernel"] = prog.meta.get("kernel", "reference")
    report["seconds"] = round(time.perf_counter() - t0, 2)

    print()
    many = f", {st.heads} heads" if st.heads > 1 else ""
    print(f"FSA {cfg.name} ({cfg.sa_rows}x{cfg.sa_cols}, {cfg.e_type} x {cfg.e_type} + {cfg.a_type}) "
          f"on {args.sim}: attention {sq} x {skv}, d = {d}{many}"
          f"{', causal' if args.causal else ''}")
    if "kernel_why" in prog.meta:
        print(f"  kernel: {report['kernel']} ({prog.meta['kernel_why']})")
    print(f"  vs torch SDPA:  MAE {stats['mae']:.3e}  RMSE {stats['rmse']:.3e}  max abs "
          f"{stats['max_abs']:.3e}  mean rel {stats['mean_rel']:.3e}  max rel {stats['max_rel']:.3e}"
          f"  ({why if within else 'OUTSIDE the bounds: ' + why}, s = {s:.2f})")
    if stats["non_finite"] or stats["non_finite_mismatch"]:
        print(f"  non-finite outputs: {stats['non_finite']} ({stats['non_finite_agree']} the same "
              f"special value as torch); {stats['non_finite_mismatch']} positions disagree in "
              f"finiteness; statistics over the {stats['compared']} finite pairs")
    if "rtl_vs_golden" in report:
        d_ = report["rtl_vs_golden"]
        verdict = "bit-exact" if d_["differ"] == 0 else f"{d_['differ']} values differ"
        print(f"  RTL vs golden model: {verdict} ({res.outputs['Ot'].size} values)")
        for f in d_["first"]:
            print(f"    {f}")
    if res.cycles:
        print(f"  cycles {res.cycles}{' (cycle model)' if args.sim == 'golden' else ''}, "
              f"utilisation {100 * st.utilisation:.1f}%, "
              f"{res.cycles_per_key_block:.1f} cycles per key block")
        if pad:
            print(f"    (useful work of the caller's shape; the padded kernel's: "
                  f"{100 * st.kernel_utilisation:.1f}%)")
        print(f"  DMA {st.dma_bytes} bytes, bus occupancy {st.bus_occupancy:.3f} (of "
              f"{st.bus_bytes_per_cycle} bytes per cycle); array bound {st.array_bound_cycles} "
              f"cycles (2R per key block), occupancy there {st.bus_occupancy_ceiling:.3f}")
    if res.counters:
        print("  counters: " + ", ".join(f"{k} {v}" for k, v in res.counters.items()))
    if args.out and outs.write(args.out, "--out", save_with(lambda f: np.save(f, out)),
                               f"output O {list(out.shape)} (.npy)"):
        say(f"output O {list(out.shape)} saved to {args.out}")
    ok = report["vs_torch"]["within_bounds"] and report.get("rtl_vs_golden", {}).get("differ", 0) == 0
    if args.sim != "golden":
        report["run_dir_kept"] = bool(args.keep or not ok)
        if not report["run_dir_kept"]:
            import shutil
            shutil.rmtree(run_dir, ignore_errors=True)
        elif not args.keep:
            say(f"run folder kept for inspection: {run_dir}")
    if args.json and outs.write(args.json, "--json", json.dumps(json_safe(report), indent=2),
                                "report"):
        say(f"report written to {args.json}")
    return outs.code(0 if ok else 1)
