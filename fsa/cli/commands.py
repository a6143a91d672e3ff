"""The ``fsa`` command line: the parser, the small commands and :func:`main`.

    fsa configs                       list the configuration presets
    fsa verilog CONFIG [--out DIR]    generate Verilog (same as make verilog)
    fsa run --config CFG --sim SIM    FlashAttention on the RTL or the golden
                                      model, scored against torch and the model
    fsa compile --program inst.bin --elf mem.elf
                                      the attention kernel as files for fsa exec
    fsa exec --config CFG --program inst.bin [--program b.bin ...] --load mem.elf --dump f:ADDR:SIZE
                                      run raw instruction streams, one after another
    fsa plan show CONFIG FUNCTION     chart of a matrix function's schedule
    fsa predict --config CFG --seq-q N --seq-kv M
                                      cycles and utilisation from the cycle model
    fsa sweep --configs A,B --lengths N,M --out table.csv
                                      design-space sweep (cycle model, on Dask)

No command writes a file it was not given, nor replaces one without
``--force``; outputs are checked before the work (:class:`fsa.cli.common.Outputs`).
"""
from __future__ import annotations

import argparse
import os
import sys

from fsa.cli.common import (FORCE_HELP, PUSH_HELP, Outputs, csv_list, nonnegative_int,
                            path_arg, positive_float, positive_int, warn)
from fsa.cli.compile import cmd_compile
from fsa.cli.exec import cmd_exec
from fsa.cli.run import cmd_run
from fsa.cli.sweep import cmd_sweep
from fsa.simrun import SimulationError


def _cmd_configs(args: argparse.Namespace) -> int:
    from fsa import config

    print(f"{'name':<28} {'R':>4} {'C':>4} {'E':>5} {'A':>5} {'P':>3} {'ports':>5} "
          f"{'AXI':>4} {'burst':>5} {'ld+st':>5}")
    for name in config.names():
        c = config.get(name)
        print(f"{name:<28} {c.sa_rows:>4} {c.sa_cols:>4} {c.e_type:>5} {c.a_type:>5} "
              f"{c.exp2_pieces:>3} {c.mem_ports:>5} {c.axi_data_bits:>4} "
              f"{c.dma_burst_beats or 'row':>5} {'yes' if c.dma_rw_overlap else '-':>5}")
    return 0


def _cmd_verilog(args: argparse.Namespace) -> int:
    from fsa.hw.verilog import generate

    Outputs().folder(args.out, "--out")      # (the generator checks what the folder holds)
    generate(args.config, args.out, force=args.force)
    return 0


def _cmd_plan_show(args: argparse.Namespace) -> int:
    from fsa import config
    from fsa.plan import ALL_FUNCS, FUNCS, UD_FUNCS, chart

    cfg = config.get(args.config)
    func = args.function.strip().upper()
    if not func:
        raise ValueError("plan show: give a matrix function name (e.g. ATTENTION_SCORE)")
    if cfg.dataflow == "ud":
        FUNCS = ALL_FUNCS
    elif func in UD_FUNCS:
        raise ValueError(f"{func} is a UD function; {cfg.name} has dataflow {cfg.dataflow!r} "
                         f"(use a ...UdConfig preset)")
    if func not in FUNCS:
        matches = [f for f in FUNCS if func in f]
        if len(matches) > 1:
            raise ValueError(f"matrix function {args.function!r} is ambiguous: it matches "
                             f"{', '.join(matches)}")
        if not matches:
            raise ValueError(f"unknown matrix function {args.function!r}; use one of {', '.join(FUNCS)}")
        func = matches[0]
    from fsa.hw import timing
    from fsa.plan import PE_BITS, UD_PE_BITS

    bits = [b.strip() for b in args.bits.split(",") if b.strip()] if args.bits else None
    if bits is not None:
        known = PE_BITS + (UD_PE_BITS if cfg.dataflow == "ud" else ())
        bad = [b for b in bits if b not in known]
        if bad or not bits:
            raise ValueError(f"--bits {args.bits!r}: unknown PE bit(s) {', '.join(bad) or '(none given)'}"
                             f"; {cfg.name}'s are {', '.join(known)}")
    plan = timing.plan(cfg, func)      # the plan the matrix controller is generated from
    print(chart(plan, bits))
    return 0


def _dma_words(cfg) -> str:
    ports = f" x {cfg.mem_ports} ports" if cfg.mem_ports > 1 else ""
    bursts = (f", bursts of up to {cfg.dma_burst_beats} beats" if cfg.dma_burst_beats
              else ", a burst per row")
    both = ", loads and stores at once" if cfg.dma_rw_overlap else ""
    return f"{cfg.axi_data_bits}-bit AXI{ports}{bursts}{both}, calibrated on the RTL"


def _cmd_predict(args: argparse.Namespace) -> int:
    from fsa import config
    from fsa.cycle.predict import predict

    cfg = config.with_axi_bits(args.config, args.axi_bits) if args.axi_bits is not None else config.get(args.config)
    p = predict(cfg, args.seq_q, args.seq_kv, args.causal, args.free_dma, kernel=args.kernel,
                program=args.program)
    from fsa.cycle.predict import attention_steps, block_counts
    from fsa.report import attention_dma_bytes, bus_figures
    nq, nk = block_counts(cfg, *p["padded"], args.causal)
    steps = attention_steps(nq, nk, args.causal)
    p.update(bus_figures(cfg, attention_dma_bytes(cfg, nq, steps), p["cycles"], steps))
    pad = (f" (padded to {p['padded'][0]} x {p['padded'][1]})"
           if tuple(p["padded"]) != (args.seq_q, args.seq_kv) else "")
    print(f"{cfg.name}: seq_q={args.seq_q} seq_kv={args.seq_kv}{pad} d={cfg.sa_rows}"
          f"{' causal' if args.causal else ''}, DMA: "
          f"{'free (matrix schedule alone)' if args.free_dma else _dma_words(cfg)}")
    print(f"  cycles            {p['cycles']}   ({p['how']})")
    print(f"  FLOPs             {p['flops']}   (useful: 4d per (query, key) pair the mask keeps)")
    print(f"  utilisation       {p['utilisation']:.4f}   (FLOPs / (cycles x 2RC))")
    ud = p["kernel"] == "ud"
    print(f"  per key block     {p['per_key_block']:g} cycles (reference schedule "
          f"{p['reference_period']}"
          + (f"; UD bound 2R+P+3 = {2 * cfg.sa_rows + cfg.exp2_pieces + 3}" if ud else "") + ")")
    print(f"  kernel            {p['kernel']}")
    print(f"  program           {p['program']}")
    ceiling = p["bus_occupancy_ceiling"]
    print(f"  DMA               {p['dma_bytes']} bytes, bus occupancy {p['bus_occupancy']:.3f} "
          f"(bytes / (cycles x {p['bus_bytes_per_cycle']} bytes per cycle of the ports))")
    print(f"  array bound       {p['array_bound_cycles']} cycles (2R per key block: K and V "
          f"enter the array R rows each from the left); bus occupancy there {ceiling:.3f}"
          + (" (the array, not the bus, is the limit)" if ceiling < 1 else
             " (the bus, not the array, is the limit)"))
    if args.json:
        import json
        from fsa.cli.common import json_safe
        print(json.dumps(json_safe(p), indent=2))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (the usage is in ``--help``)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``fsa`` command line's parser."""
    ap = _Parser(prog="fsa", description="FSA: FlashAttention in one systolic array")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("configs", help="list configuration presets")
    p.set_defaults(func=_cmd_configs)

    p = sub.add_parser("verilog", help="generate Verilog for a config into gen/<config>/")
    p.add_argument("config")
    p.add_argument("--out", type=path_arg, help="output folder (default gen/<config> of the checkout; "
                                 "installed: of the cache folder, $FSA_CACHE)")
    p.add_argument("--force", action="store_true", help="regenerate even if up to date")
    p.set_defaults(func=_cmd_verilog)

    p = sub.add_parser("run", help="FlashAttention on the RTL (or the golden model), scored "
                       "against torch and bit for bit against the golden model")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--seq-q", type=positive_int,
                   help="generated inputs: query length (default 64)")
    p.add_argument("--seq-kv", type=positive_int,
                   help="generated inputs: key/value length (default 64)")
    p.add_argument("--batch", type=positive_int,
                   help="generated inputs: a leading batch dimension of this size")
    p.add_argument("--heads", type=positive_int,
                   help="generated inputs: a heads dimension of this size")
    p.add_argument("--q", type=path_arg, help="Q as a .npy file [..., seq_q, d] (d <= R, "
                   "leading dims: batches and heads)")
    p.add_argument("--k", type=path_arg, help="K as a .npy file [..., seq_kv, d]")
    p.add_argument("--v", type=path_arg, help="V as a .npy file [..., seq_kv, d_v]")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--scale", type=positive_float,
                   help="softmax scale (default 1/sqrt(d), as torch)")
    p.add_argument("--gqa", action="store_true",
                   help="grouped-query attention (torch's enable_gqa): K/V heads (dim -3) "
                        "may divide Q's")
    p.add_argument("--seed", type=nonnegative_int,
                   help="generated inputs: the random seed (default 0)")
    p.add_argument("--out", type=path_arg, help="save the output O [..., seq_q, d_v] in .npy "
                   "format to this file (the name as given)")
    p.add_argument("--json", type=path_arg, help="write the report as JSON to this file")
    p.add_argument("--waves", type=path_arg, help="copy an FST waveform of the run to this file")
    p.add_argument("--force", action="store_true",
                   help="replace output files that exist already, and run even when the "
                        "golden model's estimated memory or time is too large")
    p.add_argument("--max-cycles", type=positive_int,
                   help="cycle limit of the simulation (default 20000000; not with --sim golden)")
    p.add_argument("--keep", action="store_true",
                   help="keep the simulator's run folder (log, results) after a successful run")
    p.add_argument("--push", action="store_true", help=PUSH_HELP)
    p.add_argument("--memory", choices=["axi", "fast"], default=None,
                   help="the memory the device's AXI ports talk to: cocotbext-axi's AxiRam "
                        "(axi) or a memory inside the simulation (fast: Verilator only, same "
                        "bits and cycles); default fast on Verilator for arrays of 16x16 "
                        "and larger, axi otherwise")
    p.add_argument("--kernel", choices=["reference", "ud"],
                   help="attention kernel (default: ud on a UD config, else reference)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bars with an ETA on stderr for stages longer than a few "
                        "seconds (default: when stderr is a terminal)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compile", help="write the attention kernel as a program (inst.bin) "
                       "and a memory image (mem.elf, inputs included) to the files --program "
                       "and --elf name, for fsa exec or other simulators; seq_q a multiple "
                       "of C and seq_kv of R (no padding: the key mask needs a register the "
                       "files do not carry)")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--seq-q", type=positive_int,
                   help="generated inputs: query length (default 64)")
    p.add_argument("--seq-kv", type=positive_int,
                   help="generated inputs: key/value length (default 64)")
    p.add_argument("--q", type=path_arg, help="Q as a .npy file [seq_q, R]")
    p.add_argument("--k", type=path_arg, help="K as a .npy file [seq_kv, R]")
    p.add_argument("--v", type=path_arg, help="V as a .npy file [seq_kv, R]")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seed", type=nonnegative_int,
                   help="generated inputs: the random seed (default 0)")
    p.add_argument("--program", type=path_arg, required=True,
                   help="write the instruction words here (little-endian 32-bit, e.g. inst.bin)")
    p.add_argument("--elf", type=path_arg, required=True,
                   help="write the memory image here (ELF64 PT_LOAD segments, e.g. mem.elf)")
    p.add_argument("--kernel", choices=["reference", "ud"],
                   help="attention kernel (default: ud on a UD config, else reference)")
    p.add_argument("--force", action="store_true",
                   help="replace output files that exist already, and build even when the "
                        "estimated memory or time is too large")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("exec", help="run a raw instruction stream (inst.bin + memory image)")
    p.add_argument("--config", required=True)
    p.add_argument("--program", type=path_arg, required=True, action="append",
                   help="little-endian 32-bit instruction words; repeat it to run several "
                        "programs one after another on one device (no reset in between)")
    p.add_argument("--load", type=path_arg, action="append", help="mem.elf (PT_LOAD segments) or data.bin@0xADDR")
    p.add_argument("--dump", type=path_arg, action="append",
                   help="FILE:ADDRESS:SIZE written after the last program (also when a "
                        "program failed: the memory as it was left)")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--json", type=path_arg, help="write the report as JSON to this file")
    p.add_argument("--max-cycles", type=positive_int,
                   help="cycle limit of the simulation (default 20000000; not with --sim golden)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--keep", action="store_true",
                   help="keep the simulator's run folder (log, results) after a successful run")
    p.add_argument("--push", action="store_true", help=PUSH_HELP)
    p.set_defaults(func=cmd_exec)

    p = sub.add_parser("plan", help="execution plans")
    psub = p.add_subparsers(dest="plan_cmd", required=True)
    q = psub.add_parser("show", help="print the per-cycle control chart of a matrix function")
    q.add_argument("config", help="preset name, e.g. FSA4X4Fp16Config")
    q.add_argument("function", help="LOAD_STATIONARY, ATTENTION_SCORE, ATTENTION_VALUE, "
                   "ATTENTION_LSE_NORM_SCALE, ATTENTION_LSE_NORM (or a unique part: score); "
                   "on a UD config also LOAD_Q, KSTEP, STEP, PVSTEP, NORM_SCALE, NORM")
    q.add_argument("--bits", help="comma-separated PE bits to show (default all)")
    q.set_defaults(func=_cmd_plan_show)

    p = sub.add_parser("predict", help="cycles and utilisation of attention from the cycle "
                       "model (fsa/cycle/model.py; equal to the RTL's exec counter on every "
                       "regression run), for any config and length")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--seq-q", type=positive_int, default=64)
    p.add_argument("--seq-kv", type=positive_int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--axi-bits", type=positive_int, help="AXI data width instead of the preset's")
    p.add_argument("--free-dma", action="store_true",
                   help="DMA costs nothing: the matrix schedule alone")
    p.add_argument("--kernel", choices=["reference", "ud"],
                   help="attention kernel (default: ud on a UD config, else reference)")
    p.add_argument("--program", choices=["fetch", "push", "queue"],
                   help="how the program reaches the queue: fetch from memory (default, as fsa run), "
                        "push over AXI4-Lite (fsa run --push), or queue (no cost; default with --free-dma)")
    p.add_argument("--json", action="store_true",
                   help="also print the figures as JSON (cycles, DMA bytes, bus occupancy, "
                        "the array bound)")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("sweep", help="design-space sweep on Dask: configs x lengths x P x AXI "
                       "width through the cycle model (optionally accuracy through the golden "
                       "model and PE area from Yosys); one table and plots")
    p.add_argument("--configs", required=True, type=csv_list(str),
                   help="comma-separated presets, e.g. FSA4X4Fp16Config,FSA16X16Fp16Config")
    p.add_argument("--lengths", required=True, type=csv_list(positive_int),
                   help="comma-separated sequence lengths (seq_q = seq_kv)")
    p.add_argument("--pieces", type=csv_list(positive_int), default=[None],
                   help="comma-separated exp2 pieces P (default: each preset's)")
    p.add_argument("--axi-bits", type=csv_list(positive_int), default=[None],
                   help="comma-separated AXI data widths (default: each preset's)")
    p.add_argument("--causal", choices=["no", "yes", "both"], default="no")
    p.add_argument("--accuracy", type=nonnegative_int, default=0, metavar="N",
                   help="also the golden model's error against torch, at min(length, N)")
    p.add_argument("--area", action="store_true", help="also the PE's Yosys cell count")
    p.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    p.add_argument("--workers", type=positive_int, help="local cluster workers (default: cores)")
    p.add_argument("--serial", action="store_true", help="no Dask: evaluate in this process")
    p.add_argument("--out", type=path_arg, required=True,
                   help="write the table here as CSV (a .csv name) and beside it as Markdown "
                        "(the same name with .md)")
    p.add_argument("--plots", type=path_arg, help="folder for plots (needs matplotlib; "
                   "sweep_utilisation.png, sweep_accuracy.png)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=cmd_sweep)

    return ap


def _rerun_line(argv: "list[str] | None") -> str:
    """The command line that ran (to repeat it)."""
    import shlex

    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    return "fsa " + " ".join(shlex.quote(a) for a in args)


def main(argv: "list[str] | None" = None) -> int:
    """Run the ``fsa`` command line (`argv`: default ``sys.argv[1:]``); the
    exit code: 0 success, 1 a failed run or a result outside the bounds, 2
    bad input or an output that could not be written (one line on stderr)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader went away (`fsa plan show ... | head`): stop quietly, as
        # other command-line tools do (and keep Python's exit-time flush from
        # failing again on the closed pipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (ValueError, NotImplementedError, OSError, EOFError) as e:
        # (OSError: a file the user named that cannot be read; outputs are
        # checked before the work and written by common.Outputs)
        msg = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.strerror and \
            e.filename else str(e) or type(e).__name__
        warn(msg)
        return 2
    except SimulationError as e:
        # the reason and the log; the log tail stays in the log; the command
        # to repeat it (not the test suite's variables)
        head = [line for line in str(e).split("\n--- log tail ---")[0].splitlines()
                if not line.startswith("re-run:")]
        warn("\n".join(head + [f"re-run: {_rerun_line(argv)}"]))
        return 1
