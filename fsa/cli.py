"""The ``fsa`` command line.

    fsa configs                       list the configuration presets
    fsa verilog CONFIG [--out DIR]    generate Verilog (same as make verilog)
    fsa run --config CFG --sim SIM    generate CFG and check its numeric units
                                      on the simulator against the bit-exact
                                      model, with a printed summary
    fsa plan show CONFIG FUNCTION     chart of a matrix function's schedule
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
    from rtl.generate import generate

    generate(args.config, args.out, force=args.force)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from fsa import config
    from fsa.unitcheck import check_units

    cfg = config.get(args.config)
    t0 = time.perf_counter()
    rows = check_units(cfg, sim=args.sim, vectors=args.vectors, seed=args.seed)
    bad = sum(r["mismatches"] for r in rows)
    print()
    print(f"{'unit':<30} {'role':<44} {'vectors':>8} {'mismatches':>10} {'sim s':>6}")
    for r in rows:
        print(f"{r['module']:<30} {r['role']:<44} {r['vectors']:>8} {r['mismatches']:>10} "
              f"{r['seconds']:>6.1f}")
    total = sum(r["vectors"] for r in rows)
    verdict = "PASS: raw bits equal to the model" if bad == 0 else f"FAIL: {bad} mismatching results"
    print(f"\n{cfg.name} on {args.sim}: {total} vectors, {verdict} "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0 if bad == 0 else 1


def _cmd_plan_show(args: argparse.Namespace) -> int:
    from fsa import config
    from fsa.plan import FUNCS, chart, make_plan

    cfg = config.get(args.config)
    func = args.function.upper()
    if func not in FUNCS:
        matches = [f for f in FUNCS if func in f]
        if len(matches) != 1:
            raise ValueError(f"unknown matrix function {args.function!r}; use one of {', '.join(FUNCS)}")
        func = matches[0]
    from rtl.fp.fsa_div import latency as div_latency

    plan = make_plan(func, cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces,
                     div_latency=div_latency(cfg.a_type, cfg.div_bits_per_cycle))
    print(chart(plan, args.bits.split(",") if args.bits else None))
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

    p = sub.add_parser("run", help="run a config on the simulator (numeric units for now)")
    p.add_argument("--config", default="FSA4X4Fp16Config")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus"])
    p.add_argument("--vectors", type=int, default=4000, help="random vectors per unit")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("plan", help="execution plans")
    psub = p.add_subparsers(dest="plan_cmd", required=True)
    q = psub.add_parser("show", help="print the per-cycle control chart of a matrix function")
    q.add_argument("config", help="preset name, e.g. FSA4X4Fp16Config")
    q.add_argument("function", help="LOAD_STATIONARY, ATTENTION_SCORE, ATTENTION_VALUE, "
                   "ATTENTION_LSE_NORM_SCALE, ATTENTION_LSE_NORM (or a unique part: score)")
    q.add_argument("--bits", help="comma-separated PE bits to show (default all)")
    q.set_defaults(func=_cmd_plan_show)

    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
