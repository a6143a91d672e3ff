"""The ``fsa`` command line.

    fsa configs                       list the configuration presets
    fsa verilog CONFIG [--out DIR]    generate Verilog (same as make verilog)
    fsa run --config CFG --sim SIM    FlashAttention on the RTL or the golden
                                      model, scored against torch and the model
    fsa exec --config CFG --program inst.bin [--program b.bin ...] --load mem.elf --dump f:ADDR:SIZE
                                      run raw instruction streams, one after another
    fsa plan show CONFIG FUNCTION     chart of a matrix function's schedule
    fsa predict --config CFG --seq-q N --seq-kv M
                                      cycles and utilisation from the cycle model
"""
from __future__ import annotations

import argparse
import sys


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

    generate(args.config, args.out, force=args.force)
    return 0


def _say(msg: str) -> None:
    print(f"[fsa] {msg}", flush=True)


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the argument on error)."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


#: approximate cost of a golden-model run per key-block step, measured on this
#: project's 2-core machines (CPU time). Memory: the program's Python objects
#: (2.2-2.7 KB a step while it is built and checked); the vectorised model
#: (fsa/golden/fast.py) needs only O((seq_q + seq_kv) d), the `data` term. Time:
#: building and checking the program, encoding it and the cycle model (1.5 ms a
#: step at 8x8, 3.3 ms at 16x16) dominate; the vectorised model adds 0.03 ms
#: (8x8) to 0.09 ms (16x16) a step (bench/golden_speed.py; the instruction-level
#: machine it replaced for attention took about 10 ms).
GOLDEN_BYTES_PER_STEP = 3_000
GOLDEN_SECONDS_PER_STEP = 0.004
GOLDEN_MAX_SECONDS = 3600


def _positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    import math
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return v


def _nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {v}")
    return v


def _key_block_steps(cfg, seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query block, key block) steps of the attention kernel."""
    n_qb, n_kb = -(-seq_q // cfg.sa_cols), -(-seq_kv // cfg.sa_rows)
    if not causal:
        return n_qb * n_kb
    full = max(0, n_qb - n_kb)                       # query blocks that see every key block
    tri = min(n_qb, n_kb)
    return tri * (tri + 1) // 2 + full * n_kb


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_writable(path: "str | None", option: str) -> None:
    """ValueError naming `option` unless a file can be written at `path` (in
    an existing folder; nothing when `path` is not given)."""
    from fsa.paths import check_output

    if path:
        check_output(path, f"{option} {path}")


def golden_estimate(cfg, seq_q: int, seq_kv: int, causal: bool, heads: int = 1) -> dict:
    """Rough memory (bytes) and time (seconds) of a golden-model attention run
    (`heads` heads of seq_q x seq_kv)."""
    steps = heads * _key_block_steps(cfg, seq_q, seq_kv, causal)
    scale = max(1.0, cfg.sa_rows * cfg.sa_cols / 256)
    data = 8 * 6 * heads * (seq_q + 2 * seq_kv) * cfg.sa_rows   # inputs, images, outputs, torch
    return {"steps": steps, "bytes": steps * GOLDEN_BYTES_PER_STEP + data,
            "seconds": steps * GOLDEN_SECONDS_PER_STEP * scale}


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _fmt_seconds(t: float) -> str:
    if t < 120:
        return f"{t:.0f} s"
    if t < 7200:
        return f"{t / 60:.0f} min"
    if t < 2 * 86400:
        return f"{t / 3600:.1f} h"
    return f"{t / 86400:.0f} days"


def _check_golden_fits(cfg, seq_q: int, seq_kv: int, causal: bool, force: bool,
                       heads: int = 1, what: str = "the golden model") -> None:
    """Refuse (ValueError with the figures) a golden run that would not fit in
    memory or would take more than an hour, unless `force`.  (Building and
    checking the program alone costs about as much: `what` says which.)"""
    est = golden_estimate(cfg, seq_q, seq_kv, causal, heads)
    avail = _available_memory()
    figures = (f"{est['steps']:,} key-block steps, about {_fmt_bytes(est['bytes'])} of memory and "
               f"{_fmt_seconds(est['seconds'])} for {what}"
               + (f"; this machine has {_fmt_bytes(avail)} available" if avail else ""))
    too_big = avail is not None and est["bytes"] > 0.8 * avail
    too_long = est["seconds"] > GOLDEN_MAX_SECONDS
    if (too_big or too_long) and not force:
        many = f"{heads} heads of " if heads > 1 else ""
        raise ValueError(f"attention {many}{seq_q} x {seq_kv} on {cfg.name}: {figures}. "
                         f"{'It would not fit in memory. ' if too_big else ''}"
                         f"{'It would take more than an hour. ' if too_long else ''}"
                         "Use shorter sequences, or --force to run anyway")
    if est["seconds"] > 30:
        _say(f"estimate: {figures}")


def read_real_npy(name: str, path: str):
    """The array in the .npy file `path` given as ``--<name>``; ValueError
    naming the argument for an unreadable file, an object, complex or
    non-numeric values."""
    import numpy as np

    try:
        a = np.load(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"--{name} {path}: cannot read a .npy file ({e})") from None
    if not isinstance(a, np.ndarray):
        raise ValueError(f"--{name} {path}: holds {type(a).__name__}, not one array")
    if a.dtype.kind == "c":
        raise ValueError(f"--{name} {path}: complex values (dtype {a.dtype}) are not "
                         "supported: attention inputs are real numbers")
    if a.dtype.kind not in "iuf":
        raise ValueError(f"--{name} {path}: dtype {a.dtype} is not a real number type "
                         "(use float16/32/64 or integers)")
    return a


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
            a = read_real_npy(name, path)
            if a.ndim != 2 or a.shape[1] != R:
                raise ValueError(f"--{name} {path}: shape {a.shape}; {cfg.name} needs "
                                 f"(sequence, {R}) (head dimension = array rows)")
            if a.shape[0] == 0:
                raise ValueError(f"--{name} {path}: the sequence is empty (shape {a.shape})")
            arrs.append(np.asarray(a, np.float64))
        q, k, v = arrs
        if k.shape != v.shape:
            raise ValueError(f"--k and --v must have the same shape, got {k.shape} and {v.shape}")
        return q, k, v
    rng = np.random.default_rng(args.seed)
    return (fa3_inputs(rng, (args.seq_q, R)), fa3_inputs(rng, (args.seq_kv, R)),
            fa3_inputs(rng, (args.seq_kv, R)))


def _cmd_run(args: argparse.Namespace) -> int:
    from fsa.cli_run import cmd_run     # (its own module: the longest command)

    return cmd_run(args)


def _json_safe(x):
    """The report with non-finite floats as null (strict JSON has no NaN/Infinity)."""
    import math
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


PUSH_HELP = ("push the instruction words over the control port (the reference's way) "
             "instead of program fetch (the default: the program is placed at the top of the "
             "memory window and the device reads it)")


def _cmd_exec(args: argparse.Namespace) -> int:
    from fsa.cli_exec import cmd_exec   # (its own module)

    return cmd_exec(args)


def _cmd_compile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fsa import config, isa, kernels, numerics
    from fsa.elf import write_elf

    cfg = config.get(args.config)
    for opt in ("program", "elf"):
        check_writable(getattr(args, opt), f"--{opt}")
    q, k, v = _load_inputs(args, cfg)
    R, C = cfg.sa_rows, cfg.sa_cols
    if q.shape[0] % C or k.shape[0] % R:
        raise ValueError(f"fsa compile writes whole blocks only: seq_q must be a multiple of C = "
                         f"{C} and seq_kv of R = {R} on {cfg.name} (got {q.shape[0]} and "
                         f"{k.shape[0]}); fsa run pads other lengths (their key mask needs the "
                         f"key_limit register, which inst.bin and mem.elf do not carry)")
    kernels.check_attention_shape(cfg, q.shape[0], k.shape[0], args.causal)
    _check_golden_fits(cfg, q.shape[0], k.shape[0], args.causal, args.force,
                       what="building and checking the program")
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=args.causal, kernel=args.kernel)
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
    return 0


def _csv_list(item):
    """argparse type: a comma-separated list of `item`."""
    def parse(text: str) -> list:
        parts = [t.strip() for t in text.split(",") if t.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        return [item(t) for t in parts]
    return parse


def _check_sweep_outputs(out: str, plots: "str | None") -> None:
    """ValueError before the sweep runs unless its table (CSV at `out`, the
    Markdown table beside it as ``.md``; folders are created) and the plots
    folder can be written."""
    from pathlib import Path

    from fsa.paths import check_output

    if Path(out).suffix == ".md":
        raise ValueError(f"--out {out}: the Markdown table is written beside the CSV as "
                         f"{Path(out).name}; give the CSV a .csv name")
    check_output(out, f"--out {out}", create=True)
    if plots:
        check_output(plots, f"--plots {plots}", folder=True, create=True)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from fsa import config, sweep

    for name in args.configs:
        config.get(name)                            # unknown presets: exit 2 before any work
    _check_sweep_outputs(args.out, args.plots)
    if args.plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plots needs matplotlib (pip install -e '.[bench]')") from None
    causal = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    pts = sweep.points(args.configs, args.lengths, args.pieces, args.axi_bits, causal)
    _say(f"sweep: {len(pts)} points" + (" (serial)" if args.serial else " on Dask"))
    try:
        rows = sweep.run(pts, accuracy_len=args.accuracy, area=args.area, scheduler=args.scheduler,
                         workers=args.workers, serial=args.serial, progress=_say)
    except (RuntimeError, OSError) as e:      # (OSError: a Dask scheduler out of reach)
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path in sweep.write_table(rows, args.out):
        _say(f"wrote {path}")
    if args.plots:
        for path in sweep.write_plots(rows, args.plots):
            _say(f"wrote {path}")
    bad = [r for r in rows if r["error"]]
    if bad:
        _say(f"{len(bad)} of {len(rows)} points are invalid configurations or shapes "
             "(their `error` column says why)")
    return 0


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(prog="fsa", description="FSA: FlashAttention in one systolic array")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("configs", help="list configuration presets")
    p.set_defaults(func=_cmd_configs)

    p = sub.add_parser("verilog", help="generate Verilog for a config into gen/<config>/")
    p.add_argument("config")
    p.add_argument("--out", help="output folder (default gen/<config> of the checkout; "
                                 "installed: of the cache folder, $FSA_CACHE)")
    p.add_argument("--force", action="store_true", help="regenerate even if up to date")
    p.set_defaults(func=_cmd_verilog)

    p = sub.add_parser("run", help="FlashAttention on the RTL (or the golden model), scored "
                       "against torch and bit for bit against the golden model")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--seq-q", type=_positive_int,
                   help="generated inputs: query length (default 64)")
    p.add_argument("--seq-kv", type=_positive_int,
                   help="generated inputs: key/value length (default 64)")
    p.add_argument("--batch", type=_positive_int,
                   help="generated inputs: a leading batch dimension of this size")
    p.add_argument("--heads", type=_positive_int,
                   help="generated inputs: a heads dimension of this size")
    p.add_argument("--q", help="Q as a .npy file [..., seq_q, d] (d <= R, leading dims: "
                   "batches and heads)")
    p.add_argument("--k", help="K as a .npy file [..., seq_kv, d]")
    p.add_argument("--v", help="V as a .npy file [..., seq_kv, d_v]")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--scale", type=_positive_float,
                   help="softmax scale (default 1/sqrt(d), as torch)")
    p.add_argument("--gqa", action="store_true",
                   help="grouped-query attention (torch's enable_gqa): K/V heads (dim -3) "
                        "may divide Q's")
    p.add_argument("--seed", type=_nonnegative_int, default=0)
    p.add_argument("--out", help="save the output O [..., seq_q, d_v] as .npy")
    p.add_argument("--json", help="write the report as JSON")
    p.add_argument("--waves", help="dump an FST waveform of the run to this file")
    p.add_argument("--force", action="store_true",
                   help="run even when the golden model's estimated memory or time is too large")
    p.add_argument("--max-cycles", type=_positive_int,
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
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("compile", help="write the attention kernel as inst.bin + mem.elf "
                       "(inputs included), for fsa exec or other simulators; seq_q a multiple "
                       "of C and seq_kv of R (no padding: the key mask needs a register the "
                       "files do not carry)")
    p.add_argument("--config", default="FSA8X8Fp16Config")
    p.add_argument("--seq-q", type=_positive_int, default=64)
    p.add_argument("--seq-kv", type=_positive_int, default=64)
    p.add_argument("--q")
    p.add_argument("--k")
    p.add_argument("--v")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seed", type=_nonnegative_int, default=0)
    p.add_argument("--program", default="inst.bin")
    p.add_argument("--elf", default="mem.elf")
    p.add_argument("--kernel", choices=["reference", "ud"],
                   help="attention kernel (default: ud on a UD config, else reference)")
    p.add_argument("--force", action="store_true",
                   help="build even when the estimated memory or time is too large")
    p.set_defaults(func=_cmd_compile)

    p = sub.add_parser("exec", help="run a raw instruction stream (inst.bin + memory image)")
    p.add_argument("--config", required=True)
    p.add_argument("--program", required=True, action="append",
                   help="little-endian 32-bit instruction words; repeat it to run several "
                        "programs one after another on one device (no reset in between)")
    p.add_argument("--load", action="append", help="mem.elf (PT_LOAD segments) or data.bin@0xADDR")
    p.add_argument("--dump", action="append",
                   help="FILE:ADDRESS:SIZE written after the last program (also when a "
                        "program failed: the memory as it was left)")
    p.add_argument("--sim", default="verilator", choices=["verilator", "icarus", "golden"])
    p.add_argument("--json", help="write the report as JSON")
    p.add_argument("--max-cycles", type=_positive_int, default=20_000_000)
    p.add_argument("--keep", action="store_true",
                   help="keep the simulator's run folder (log, results) after a successful run")
    p.add_argument("--push", action="store_true", help=PUSH_HELP)
    p.set_defaults(func=_cmd_exec)

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
    p.add_argument("--seq-q", type=_positive_int, default=64)
    p.add_argument("--seq-kv", type=_positive_int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--axi-bits", type=_positive_int, help="AXI data width instead of the preset's")
    p.add_argument("--free-dma", action="store_true",
                   help="DMA costs nothing: the matrix schedule alone")
    p.add_argument("--kernel", choices=["reference", "ud"],
                   help="attention kernel (default: ud on a UD config, else reference)")
    p.add_argument("--program", choices=["fetch", "push", "queue"],
                   help="how the program reaches the queue: fetch from memory (default, as fsa run), "
                        "push over AXI4-Lite (fsa run --push), or queue (no cost; default with --free-dma)")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("sweep", help="design-space sweep on Dask: configs x lengths x P x AXI "
                       "width through the cycle model (optionally accuracy through the golden "
                       "model and PE area from Yosys); one table and plots")
    p.add_argument("--configs", required=True, type=_csv_list(str),
                   help="comma-separated presets, e.g. FSA4X4Fp16Config,FSA16X16Fp16Config")
    p.add_argument("--lengths", required=True, type=_csv_list(_positive_int),
                   help="comma-separated sequence lengths (seq_q = seq_kv)")
    p.add_argument("--pieces", type=_csv_list(_positive_int), default=[None],
                   help="comma-separated exp2 pieces P (default: each preset's)")
    p.add_argument("--axi-bits", type=_csv_list(_positive_int), default=[None],
                   help="comma-separated AXI data widths (default: each preset's)")
    p.add_argument("--causal", choices=["no", "yes", "both"], default="no")
    p.add_argument("--accuracy", type=_nonnegative_int, default=0, metavar="N",
                   help="also the golden model's error against torch, at min(length, N)")
    p.add_argument("--area", action="store_true", help="also the PE's Yosys cell count")
    p.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    p.add_argument("--workers", type=_positive_int, help="local cluster workers (default: cores)")
    p.add_argument("--serial", action="store_true", help="no Dask: evaluate in this process")
    p.add_argument("--out", default="sweep.csv", help="table (CSV; Markdown beside it)")
    p.add_argument("--plots", help="folder for plots (needs matplotlib)")
    p.set_defaults(func=_cmd_sweep)

    args = ap.parse_args(argv)
    from fsa.simrun import SimulationError
    try:
        return args.func(args)
    except (ValueError, NotImplementedError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SimulationError as e:
        # the reason, the log and how to re-run; the log tail stays in the log
        head = str(e).split("\n--- log tail ---")[0]
        print(f"error: {head}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (`fsa plan show ... | head`): stop quietly, as
        # other command-line tools do (and keep Python's exit-time flush from
        # failing again on the closed pipe)
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
