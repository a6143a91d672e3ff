"""Program fetch against host pushes: cycles of the attention kernel when the
host pushes the words over AXI4-Lite (the harness's rate,
``fsa.cycle.model.HARNESS_HOST``), when the device fetches them itself
(rtl/fsa_fetch.py, ``fsa.cycle.fetch``), and with a queue that never runs dry
(the matrix schedule's bound), from the cycle model and, with ``--rtl``,
measured on the RTL (Verilator).

    python bench/fetch.py                       # 4x4 fp16, seq 64: 4,577 words
    python bench/fetch.py --rtl                 # also run the RTL in both modes
    python bench/fetch.py --config FSA8X8Fp16Config --seq 128
"""
from __future__ import annotations

import argparse

import numpy as np

from fsa import config, kernels
from fsa.cycle import model as cm
from fsa.cycle.fetch import FetchTiming
from fsa.simdev import program_address


def measure(cfg, seq: int, rtl: bool) -> list[tuple[str, int, "int | None"]]:
    """(mode, model cycles, RTL cycles or None) for push, fetch, full queue."""
    prog = kernels.attention(cfg, seq, seq)
    words = prog.words()
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal((seq, cfg.sa_rows)) for n in ("Q", "K", "V")}
    image = prog.memory_image(inputs)
    regions = prog.output_regions()
    addr = program_address(cfg, len(words), [(a, len(b)) for a, b in image] + list(regions))
    model = {
        "push": cm.simulate(cfg, prog.instructions, host=cm.HARNESS_HOST).cycles
        if len(words) > cfg.inst_queue_size else cm.simulate(cfg, prog.instructions).cycles,
        "fetch": cm.simulate(cfg, prog.instructions, fetch=FetchTiming(addr)).cycles,
        "full queue": cm.simulate(cfg, prog.instructions).cycles,
    }
    measured: dict[str, int] = {}
    if rtl:
        from fsa.simdev import run_on_device
        for mode in ("push", "fetch"):
            res = run_on_device(cfg, words, image, regions, max_cycles=10 * model["push"],
                                fetch=mode == "fetch")
            run = res["runs"][-1]
            if run["state"] != "done":
                raise RuntimeError(f"{mode}: the device ended in {run['state']} ({run['error']})")
            measured[mode] = run["counters"]["exec"]
    return [(m, c, measured.get(m)) for m, c in model.items()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="FSA4X4Fp16Config")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--rtl", action="store_true", help="also measure on the RTL (Verilator)")
    args = ap.parse_args(argv)
    cfg = config.get(args.config)
    n = len(kernels.attention(cfg, args.seq, args.seq).words())
    print(f"{cfg.name}: attention seq {args.seq} x {args.seq}, {n} instruction words "
          f"(queue {cfg.inst_queue_size})")
    print(f"  {'mode':<12}{'model':>10}{'RTL':>10}")
    for mode, m, r in measure(cfg, args.seq, args.rtl):
        print(f"  {mode:<12}{m:>10}{'-' if r is None else r:>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
