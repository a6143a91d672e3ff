"""The ``fsa`` command line.

    fsa configs                       list the configuration presets
    fsa verilog CONFIG [--out DIR]    generate Verilog (same as make verilog)
    fsa run --config CFG --sim SIM    FlashAttention on the RTL or the golden
                                      model, scored against torch and the model
    fsa exec --config CFG --program inst.bin --load mem.elf --dump f:ADDR:SIZE
                                      run a raw instruction stream
    fsa plan show CONFIG FUNCTION     chart of a matrix function's schedule
    fsa predict --config CFG --seq-q N --seq-kv M
                                      cycles and utilisation from the cycle model
"""
from __future__ import annotations

import argparse
import sys
import time


def _cmd_configs(args: argparse.Namespace) -> int:
    from fsa import config

    print(f"{'name':<28} {'R':>4} {'C':>4} {'E':>5} {'A':>5} {'P':>3} {'ports':>5}")
    for name in config.names():
        c = config.get(name)
        print(f"{name:<28} {c.sa_rows:>4} {c.sa_cols:>4} {c.e_type:>5} {c.a_type:>5} "
              f"{c.exp2_pieces:>3} {c.mem_ports:>5}")
    return 0


def _cmd_verilog(args: argparse.Namespace) -> int:
    from fsa.hw.verilog import generate

    generate(args.config, args.out, force=args.force)
    return 0


def _say(msg: str) -> None:
    print(f"[fsa] {msg}", flush=True)


def _load_inputs(args, cfg):
    """Q, K, V as float64 arrays (user .npy files or generated)."""
    import numpy as np

    from fsa.report import fa3_inputs

    R = cfg.sa_rows
    if args.q or args.k or args.v:
        if not (args.q and args.k and args.v):
            raise ValueError("give all three of --q, --k and --v (or none, to generate inputs)")
        arrs = []
        for name, path in (("q", args.q), ("k", args.k), ("v", args.v)):
            try:
                a = np.load(path)
            except (OSError, ValueError) as e:
                raise ValueError(f"--{name} {path}: cannot read a .npy file ({e})") from None
            if a.ndim != 2 or a.shape[1] != R:
                raise ValueError(f"--{name} {path}: shape {a.shape}; {cfg.name} needs "
                                 f"(sequence, {R}) (head dimension = array rows)")
            arrs.append(np.asarray(a, np.float64))
        q, k, v = arrs
        if k.shape != v.shape:
            raise ValueError(f"--k and --v must have the same shape, got {k.shape} and {v.shape}")
        return q, k, v
    rng = np.random.default_rng(args.seed)
    return (fa3_inputs(rng, (args.seq_q, R)), fa3_inputs(rng, (args.seq_kv, R)),
            fa3_inputs(rng, (args.seq_kv, R)))


def _cmd_run(args: argparse.Namespace) -> int:
    import json

    import numpy as np

    from fsa import config, kernels, numerics
    from fsa.engines import DeviceError, GoldenEngine, SimEngine
    from fsa.report import bit_diff, bound_scale, error_stats, torch_reference, within_bounds

    cfg = config.get(args.config)
    t0 = time.perf_counter()
    q, k, v = _load_inputs(args, cfg)
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=args.causal)
    inputs = {"Q": numerics.from_float64(q, cfg.e_type), "K": numerics.from_float64(k, cfg.e_type),
              "V": numerics.from_float64(v, cfg.e_type)}
    _say(f"{cfg.name}: attention seq_q={q.shape[0]} seq_kv={k.shape[0]} d={cfg.sa_rows}"
         f"{' causal' if args.causal else ''}; {len(prog.words())} instruction words")
    _say("running the golden model")
    gold = GoldenEngine(cfg).run(prog, inputs)
    report = {"config": cfg.name, "seq_q": int(q.shape[0]), "seq_kv": int(k.shape[0]),
              "d": cfg.sa_rows, "causal": bool(args.causal), "engine": args.sim}
    res = gold
    if args.sim != "golden":
        eng = SimEngine(cfg, sim=args.sim, progress=_say, waves=bool(args.waves),
                        max_cycles=args.max_cycles)
        try:
            res = eng.run(prog, inputs)
        except DeviceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        _say(f"simulated {res.cycles} cycles; run folder {eng.last_run['run_dir']}")
        if args.waves:
            import glob
            import shutil
            found = sorted(glob.glob(f"{eng.last_run['run_dir']}/*.fst") +
                           glob.glob(f"{eng.last_run['run_dir']}/*.vcd"))   # (VCD: other setups)
            if found:
                shutil.copy(found[0], args.waves)
                _say(f"waveform written to {args.waves}")
        diff = bit_diff(res.outputs["Ot"], gold.outputs["Ot"])
        report["rtl_vs_golden"] = diff
    _say("comparing with torch.nn.functional.scaled_dot_product_attention")
    qe, ke, ve = (numerics.to_float64(inputs[n], cfg.e_type) for n in ("Q", "K", "V"))
    ref = torch_reference(qe, ke, ve, args.causal)
    stats = error_stats(res.o, ref)
    s = bound_scale(ve)
    report["vs_torch"] = dict(stats, bound_scale=s, within_bounds=within_bounds(stats, s, cfg.e_type))
    report["counters"] = res.counters
    report["cycles"] = res.cycles
    report["utilisation"] = res.utilisation
    report["cycles_per_key_block"] = res.cycles_per_key_block
    report["seconds"] = round(time.perf_counter() - t0, 2)

    print()
    print(f"FSA {cfg.name} ({cfg.sa_rows}x{cfg.sa_cols}, {cfg.e_type} x {cfg.e_type} + {cfg.a_type}) "
          f"on {args.sim}: attention {q.shape[0]} x {k.shape[0]}, d = {cfg.sa_rows}"
          f"{', causal' if args.causal else ''}")
    print(f"  vs torch SDPA:  MAE {stats['mae']:.3e}  RMSE {stats['rmse']:.3e}  max abs "
          f"{stats['max_abs']:.3e}  mean rel {stats['mean_rel']:.3e}  max rel {stats['max_rel']:.3e}"
          f"  ({'within' if report['vs_torch']['within_bounds'] else 'OUTSIDE'} the bounds, s = {s:.2f})")
    if "rtl_vs_golden" in report:
        d = report["rtl_vs_golden"]
        verdict = "bit-exact" if d["differ"] == 0 else f"{d['differ']} values differ"
        print(f"  RTL vs golden model: {verdict} ({res.outputs['Ot'].size} values)")
        for f in d["first"]:
            print(f"    {f}")
    if res.cycles:
        print(f"  cycles {res.cycles}, utilisation {100 * res.utilisation:.1f}%, "
              f"{res.cycles_per_key_block:.1f} cycles per key block")
    if res.counters:
        print("  counters: " + ", ".join(f"{k} {v}" for k, v in res.counters.items()))
    if args.out:
        np.save(args.out, res.o)
        _say(f"output O [{q.shape[0]}, {cfg.sa_rows}] saved to {args.out}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        _say(f"report written to {args.json}")
    ok = report["vs_torch"]["within_bounds"] and report.get("rtl_vs_golden", {}).get("differ", 0) == 0
    return 0 if ok else 1


def _parse_load(spec: str) -> tuple[str, int | None]:
    if "@" in spec:
        path, addr = spec.rsplit("@", 1)
        return path, int(addr, 0)
    return spec, None


def _cmd_exec(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from fsa import config, isa
    from fsa.elf import load_segments

    cfg = config.get(args.config)
    try:
        raw = Path(args.program).read_bytes()
    except OSError as e:
        raise ValueError(f"--program: {e}") from None
    words = isa.from_bytes(raw)
    prog = isa.decode(words)                    # raises on an illegal instruction
    memory = []
    for spec in args.load or []:
        path, addr = _parse_load(spec)
        if addr is None:
            memory += load_segments(path, cfg)
        else:
            try:
                memory.append((addr, Path(path).read_bytes()))
            except OSError as e:
                raise ValueError(f"--load {spec}: {e}") from None
    for a, b in memory:
        if a < cfg.mem_base or a + len(b) > cfg.mem_base + cfg.mem_size:
            raise ValueError(f"--load: segment 0x{a:x}+{len(b)} is outside the memory window "
                             f"[0x{cfg.mem_base:x}, 0x{cfg.mem_base + cfg.mem_size:x})")
    dumps = []
    for spec in args.dump or []:
        try:
            path, addr, size = spec.rsplit(":", 2)
            dumps.append((path, int(addr, 0), int(size, 0)))
        except ValueError:
            raise ValueError(f"--dump {spec!r}: use FILE:ADDRESS:SIZE, e.g. out.bin:0x80001000:256") from None
    _say(f"{cfg.name}: {len(prog)} instructions ({len(words)} words), "
         f"{sum(len(b) for _, b in memory)} bytes of memory image, on {args.sim}")
    report = {"config": cfg.name, "engine": args.sim, "instructions": len(prog)}
    if args.sim == "golden":
        from fsa.golden.machine import Machine, MachineError
        m = Machine(cfg)
        for a, b in memory:
            m.mem.write(a, b)
        try:
            counters = m.run(prog)
        except MachineError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        report["counters"] = counters
        data = [m.mem.read(a, n) for _, a, n in dumps]
    else:
        from fsa.simdev import run_on_device
        res = run_on_device(cfg, words, memory, [(a, n) for _, a, n in dumps], sim=args.sim,
                            max_cycles=args.max_cycles, progress=_say)
        run = res["runs"][-1]
        report.update(state=run["state"], error=run["error"], error_index=run["error_index"],
                      counters=run["counters"])
        data = res["dumps"]
        if run["state"] != "done":
            print(f"error: device state {run['state']}, error {run['error']} at instruction "
                  f"{run['error_index']}", file=sys.stderr)
            return 1
    for (path, a, n), b in zip(dumps, data):
        Path(path).write_bytes(b)
        _say(f"dumped 0x{a:x}+{n} to {path}")
    print("counters: " + ", ".join(f"{k} {v}" for k, v in report["counters"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fsa import config, isa, kernels, numerics
    from fsa.elf import write_elf

    cfg = config.get(args.config)
    q, k, v = _load_inputs(args, cfg)
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=args.causal)
    enc = {"Q": numerics.from_float64(q, cfg.e_type), "K": numerics.from_float64(k, cfg.e_type),
           "Vt": numerics.from_float64(v.T.copy(), cfg.e_type)}
    Path(args.program).write_bytes(isa.to_bytes(prog.words()))
    write_elf(args.elf, prog.memory_image(enc))
    (addr, size), = prog.output_regions()
    _say(f"wrote {args.program} ({len(prog.words())} words) and {args.elf}; the output O^T "
         f"[{cfg.sa_rows}, {q.shape[0]}] ({cfg.a_type}) is at 0x{addr:x}, {size} bytes:")
    print(f"fsa exec --config {cfg.name} --program {args.program} --load {args.elf} "
          f"--dump out.bin:0x{addr:x}:{size}")
    return 0


def _cmd_plan_show(args: argparse.Namespace) -> int:
    from fsa import config
    from fsa.plan import FUNCS, chart

    cfg = config.get(args.config)
    func = args.function.upper()
    if func not in FUNCS:
        matches = [f for f in FUNCS if func in f]
        if len(matches) != 1:
            raise ValueError(f"unknown matrix function {args.function!r}; use one of {', '.join(FUNCS)}")
        func = matches[0]
    from fsa.hw import timing

    plan = timing.plan(cfg, func)      # the plan the matrix controller is generated from
    print(chart(plan, args.bits.split(",") if args.bits else None))
    return 0


DIRECT_LIMIT = 20_000     # key blocks up to which `fsa predict` runs the model on the program


def _cmd_predict(args: argparse.Namespace) -> int:
    from fsa import config, cyclemodel as cm, kernels

    cfg = config.with_axi_bits(args.config, args.axi_bits) if args.axi_bits else config.get(args.config)
    R, C = cfg.sa_rows, cfg.sa_cols
    dma = cm.IDEAL_DMA if args.free_dma else cm.DEFAULT_DMA
    flops = cm.attention_flops(cfg, args.seq_q, args.seq_kv, args.causal)   # checks the shape
    steps = flops // (4 * C * R * R)
    ss = cm.steady_state(cfg, dma)
    if steps <= DIRECT_LIMIT:
        prog = kernels.attention(cfg, args.seq_q, args.seq_kv, causal=args.causal, check=False)
        n_words = len(prog.words())
        cycles = cm.simulate(cfg, prog.instructions, dma).cycles
        how = f"model run on the {n_words}-word program"
        if n_words > cfg.inst_queue_size:
            how += (f" (longer than the {cfg.inst_queue_size}-word queue: the model assumes the "
                    "host keeps the queue full)")
    else:
        cycles = round(cm.predict_cycles(cfg, args.seq_q, args.seq_kv, args.causal, ss))
        how = (f"steady-state extrapolation ({steps} key-block steps > {DIRECT_LIMIT}: "
               f"{ss['per_key_block']:g} cycles per key block, {ss['per_query_block']:g} per "
               "query block" + ("; causal diagonal blocks costed as full ones" if args.causal
                                else "") + ")")
    print(f"{cfg.name}: seq_q={args.seq_q} seq_kv={args.seq_kv} d={R}"
          f"{' causal' if args.causal else ''}, DMA: "
          f"{'free (matrix schedule alone)' if args.free_dma else f'{cfg.axi_data_bits}-bit AXI, calibrated on the RTL'}")
    print(f"  cycles            {cycles}   ({how})")
    print(f"  matmul FLOPs      {flops}")
    print(f"  utilisation       {flops / (cycles * 2 * R * C):.4f}   (FLOPs / (cycles x 2RC))")
    print(f"  per key block     {ss['per_key_block']:g} cycles (reference schedule "
          f"{cm.reference_period(R, C, cfg.exp2_pieces)})")
    return 0


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(prog="fsa", description="FSA: FlashAttention in one systolic array")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("configs", help="list configuration presets")
    p.set_defaults(func=_cmd_configs)

    p = sub.add_parser("verilog", help="generate Verilog for a config into gen/<config>/")
    p.add_argument("config")
    p.add_argument("--out", help="output folder (default gen/<config>)")
    p.add_argument("--force", action="store_true", help="regenerate even if up to date")
    p.set_defaults(func=_cmd_verilog)

    p = sub.add_parser("run", help="FlashAttention on the RTL (or the golden model), scored "
                       "against torch and bit for bit against the golden model")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--seq-q", type=int, default=64)
    p.add_argument("--seq-kv", type=int, default=64)
    p.add_argument("--q", help="Q as a .npy file [seq_q, d]")
    p.add_argument("--k", help="K as a .npy file [seq_kv, d]")
    p.add_argument("--v", help="V as a .npy file [seq_kv, d]")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="save the output O as .npy")
    p.add_argument("--json", help="write the report as JSON")
    p.add_argument("--waves", help="dump an FST waveform of the run to this file")
    p.add_argument("--max-cycles", type=int, default=20_000_000)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("compile", help="write the attention kernel as inst.bin + mem.elf "
                       "(inputs included), for fsa exec or other simulators")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--seq-q", type=int, default=64)
    p.add_argument("--seq-kv", type=int, default=64)
    p.add_argument("--q")
    p.add_argument("--k")
    p.add_argument("--v")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--program", default="inst.bin")
    p.add_argument("--elf", default="mem.elf")
    p.set_defaults(func=_cmd_compile)

    p = sub.add_parser("exec", help="run a raw instruction stream (inst.bin + memory image)")
    p.add_argument("--config", required=True)
    p.add_argument("--program", required=True, help="little-endian 32-bit instruction words")
    p.add_argument("--load", action="append", help="mem.elf (PT_LOAD segments) or data.bin@0xADDR")
    p.add_argument("--dump", action="append", help="FILE:ADDRESS:SIZE written after the run")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--json", help="write the report as JSON")
    p.add_argument("--max-cycles", type=int, default=20_000_000)
    p.set_defaults(func=_cmd_exec)

    p = sub.add_parser("plan", help="execution plans")
    psub = p.add_subparsers(dest="plan_cmd", required=True)
    q = psub.add_parser("show", help="print the per-cycle control chart of a matrix function")
    q.add_argument("config", help="preset name, e.g. FSA4X4Fp16Config")
    q.add_argument("function", help="LOAD_STATIONARY, ATTENTION_SCORE, ATTENTION_VALUE, "
                   "ATTENTION_LSE_NORM_SCALE, ATTENTION_LSE_NORM (or a unique part: score)")
    q.add_argument("--bits", help="comma-separated PE bits to show (default all)")
    q.set_defaults(func=_cmd_plan_show)

    p = sub.add_parser("predict", help="cycles and utilisation of attention from the cycle "
                       "model (fsa/cyclemodel.py; equal to the RTL's exec counter on every "
                       "regression run), for any config and length")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--seq-q", type=int, default=64)
    p.add_argument("--seq-kv", type=int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--axi-bits", type=int, help="AXI data width instead of the preset's")
    p.add_argument("--free-dma", action="store_true",
                   help="DMA costs nothing: the matrix schedule alone")
    p.set_defaults(func=_cmd_predict)

    args = ap.parse_args(argv)
    from fsa.simrun import SimulationError
    try:
        return args.func(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SimulationError as e:
        # the reason, the log and how to re-run; the log tail stays in the log
        head = str(e).split("\n--- log tail ---")[0]
        print(f"error: {head}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
