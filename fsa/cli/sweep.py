"""``fsa sweep``: design-space sweeps (:mod:`fsa.sweep`) from the command line."""
from __future__ import annotations

import argparse

from fsa.cli.common import Outputs, say, warn

__all__ = ["cmd_sweep"]


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the sweep; write its table (CSV at --out, Markdown beside it) and plots."""
    from fsa import config, sweep

    for name in args.configs:
        config.get(name)                            # unknown presets: exit 2 before any work
    ignored = [opt for opt, v, why in (
        ("--scheduler", args.scheduler, args.serial), ("--workers", args.workers, args.serial),
        ("--workers", args.workers, args.scheduler)) if v is not None and why]
    if ignored:
        raise ValueError(f"{ignored[0]}: not with --{'serial' if args.serial else 'scheduler'} "
                         "(--serial evaluates in this process; --workers sizes the local "
                         "cluster, not one at --scheduler)")
    outs = Outputs(args.force)
    csv_path = outs.file(args.out, "--out", create=True)
    if csv_path.suffix.lower() != ".csv":
        raise ValueError(f"--out {args.out}: give the table a .csv name (the Markdown table is "
                         f"written beside it, as .md)")
    md_path = outs.file(str(sweep.markdown_path(csv_path)), "--out (its Markdown table)",
                        create=True)
    plots = outs.folder(args.plots, "--plots")
    if plots is not None:
        for name in sweep.PLOT_NAMES:
            outs.file(str(plots / name), "--plots", create=True)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plots needs matplotlib (pip install -e '.[bench]')") from None
    causal = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    pts = sweep.points(args.configs, args.lengths, args.pieces, args.axi_bits, causal)
    say(f"sweep: {len(pts)} points" + (" (serial)" if args.serial else " on Dask"))
    try:
        rows = sweep.run(pts, accuracy_len=args.accuracy, area=args.area, scheduler=args.scheduler,
                         workers=args.workers, serial=args.serial, progress=say)
    except (RuntimeError, OSError) as e:      # (OSError: a Dask scheduler out of reach)
        warn(str(e))
        return 2
    for path, text in ((csv_path, sweep.csv_text(rows)), (md_path, sweep.markdown_text(rows))):
        if outs.write(path, "--out", text, "table"):
            say(f"wrote {path}")
    if plots is not None:
        try:
            for path in sweep.write_plots(rows, plots):
                say(f"wrote {path}")
        except OSError as e:
            outs.failed.append(str(plots))
            warn(f"--plots {plots}: cannot write the plots ({e.strerror or e}); the table has "
                 "every figure they show")
    bad = [r for r in rows if r["error"]]
    if bad:
        say(f"{len(bad)} of {len(rows)} points are invalid configurations or shapes "
            "(their `error` column says why)")
    return outs.code(0)
