"""Design-space sweeps (``fsa sweep``): configurations x sequence lengths x
exp2 pieces P x AXI data widths (x causal), run on Dask.

Each point of the sweep is one task (:func:`evaluate`):

* the cycle model's prediction of the attention kernel (:func:`fsa.cycle.predict.predict`)
  with the configuration's memory system and with free DMA, so the table
  shows how far the memory side is from the matrix schedule;
* optionally the accuracy of the golden model (bit-exact with the RTL)
  against torch's ``scaled_dot_product_attention`` in float64, on the
  FlashAttention-3 input distribution (:func:`fsa.report.fa3_inputs`) at a
  capped length (``accuracy_len``);
* optionally the area of the configuration's PE (Yosys generic synthesis,
  :func:`fsa.area.pe_cells`; one task per distinct PE, shared by its points).

A point whose configuration is not valid (e.g. an AXI width that does not
divide the scratchpad row) becomes a row with ``error`` set, not a failure of
the sweep.  The tasks run on a Dask ``LocalCluster`` (one single-threaded
worker process per core) by default, on an existing cluster when a scheduler
address is given (its workers need this package installed), or in this
process with ``serial=True``.  The results are one table (CSV and Markdown,
:func:`write_table`) and, with matplotlib, plots (:func:`write_plots`).
"""
from __future__ import annotations

import csv
import io
import itertools
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

__all__ = ["Point", "points", "derive", "evaluate", "run", "COLUMNS", "write_table",
           "markdown_path", "csv_text", "markdown_text", "write_plots", "PLOT_NAMES"]


@dataclass(frozen=True)
class Point:
    """One point of a sweep: a preset, a sequence length (seq_q = seq_kv),
    P (None: the preset's), an AXI width (None: the preset's), causal."""

    config: str
    seq: int
    pieces: "int | None" = None
    axi_bits: "int | None" = None
    causal: bool = False


#: the files :func:`write_plots` writes into its folder (the second with accuracy figures)
PLOT_NAMES = ("sweep_utilisation.png", "sweep_accuracy.png")

#: the table's columns, in order
COLUMNS = ["config", "base", "R", "C", "e_type", "a_type", "pieces", "axi_bits", "causal", "seq",
           "cycles", "utilisation", "free_dma_cycles", "free_dma_utilisation", "dma_slowdown_pct",
           "per_key_block", "reference_period", "model", "acc_seq", "max_abs_err", "rmse",
           "pe_cells", "seconds", "error"]


def points(configs: Sequence[str], lengths: Sequence[int], pieces: Sequence["int | None"] = (None,),
           axi_bits: Sequence["int | None"] = (None,),
           causal: Sequence[bool] = (False,)) -> list[Point]:
    """The cartesian product, in that nesting order (config outermost)."""
    if not configs or not lengths:
        raise ValueError("a sweep needs at least one config and one length")
    for n in lengths:
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"sequence lengths must be positive integers, got {n!r}")
    return [Point(c, n, p, b, bool(k)) for c, p, b, k, n in
            itertools.product(configs, pieces, axi_bits, causal, lengths)]


def derive(point: Point):
    """The point's configuration: the preset with P and the AXI width
    replaced (named ``<preset>P<P>`` / ``...Axi<bits>``).

    Raises:
        ValueError: an unknown preset or a combination the config rejects.
    """
    from fsa import config as fconfig

    cfg = fconfig.get(point.config)
    if point.pieces is not None and point.pieces != cfg.exp2_pieces:
        cfg = cfg.replace(exp2_pieces=point.pieces, name=f"{cfg.name}P{point.pieces}")
    if point.axi_bits is not None and point.axi_bits != cfg.axi_data_bits:
        cfg = fconfig.with_axi_bits(cfg, point.axi_bits)
    return cfg


def _accuracy(cfg, seq: int, causal: bool, cap: int, seed: int = 0) -> dict:
    """Golden-model error against torch (float64) at min(seq, cap), rounded
    down to the kernel's block multiple (at least one block)."""
    import numpy as np

    from fsa import numerics as nx
    from fsa.golden import fast
    from fsa.report import error_stats, fa3_inputs, torch_reference

    R, C = cfg.sa_rows, cfg.sa_cols
    step = R * C // math.gcd(R, C)
    n = max(step, (min(seq, cap) // step) * step)
    rng = np.random.default_rng(seed)
    q, k, v = (fa3_inputs(rng, (n, R)) for _ in range(3))
    e = cfg.e_type
    qb, kb, vb = (nx.from_float64(x, e) for x in (q, k, v))
    o = nx.to_float64(fast.attention(cfg, qb, kb, vb, causal=causal), cfg.a_type)
    ref = torch_reference(*(nx.to_float64(x, e) for x in (qb, kb, vb)), causal)
    st = error_stats(o, ref)
    return {"acc_seq": n, "max_abs_err": st["max_abs"], "rmse": st["rmse"]}


def evaluate(point: Point, accuracy_len: int = 0) -> dict:
    """One row of the table for `point` (see the module docstring); errors
    of the configuration or the shape go into the row's ``error``."""
    from fsa.cycle.predict import predict

    t0 = time.perf_counter()
    row = {c: None for c in COLUMNS}
    row.update(config=point.config, base=point.config, seq=point.seq, causal=point.causal,
               pieces=point.pieces, axi_bits=point.axi_bits)
    try:
        cfg = derive(point)
        row.update(config=cfg.name, R=cfg.sa_rows, C=cfg.sa_cols, e_type=cfg.e_type,
                   a_type=cfg.a_type, pieces=cfg.exp2_pieces, axi_bits=cfg.axi_data_bits)
        p = predict(cfg, point.seq, point.seq, point.causal)
        f = predict(cfg, point.seq, point.seq, point.causal, free_dma=True)
        row.update(cycles=p["cycles"], utilisation=p["utilisation"],
                   free_dma_cycles=f["cycles"], free_dma_utilisation=f["utilisation"],
                   dma_slowdown_pct=100.0 * (p["cycles"] / f["cycles"] - 1.0),
                   per_key_block=p["per_key_block"], reference_period=p["reference_period"],
                   model="program" if p["direct"] else "steady state")
        if accuracy_len:
            row.update(_accuracy(cfg, point.seq, point.causal, accuracy_len))
    except (ValueError, KeyError) as e:
        row["error"] = str(e).strip("'\"")
    row["seconds"] = time.perf_counter() - t0
    return row


def _area(cfg_point: Point) -> "int | None":
    from fsa.area import pe_cells

    return pe_cells(derive(cfg_point))["cells"]


def _client(scheduler: "str | None", workers: "int | None"):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("fsa sweep runs on Dask: pip install 'dask[distributed]' (the "
                           "project's `sweep` extra), or use --serial") from None
    if scheduler:
        return Client(scheduler), None
    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


def run(pts: Iterable[Point], *, accuracy_len: int = 0, area: bool = False,
        scheduler: "str | None" = None, workers: "int | None" = None, serial: bool = False,
        progress: "Callable[[str], None] | None" = None) -> list[dict]:
    """Evaluate every point; rows come back in the points' order.

    Args:
        pts: the points (:func:`points`).
        accuracy_len: > 0: also the golden model's error against torch at
            min(seq, accuracy_len).
        area: also the PE's Yosys cell count (one synthesis per distinct PE).
        scheduler: a Dask scheduler address (``tcp://host:8786``); default a
            local cluster of `workers` processes (default: one per core).
        serial: evaluate here, one point after another (no Dask).
        progress: called with a line per finished point.
    """
    pts = list(pts)
    say = progress or (lambda msg: None)
    rows: list = [None] * len(pts)
    pe_keys: dict[tuple, Point] = {}
    if area:
        for p in pts:
            try:
                c = derive(p)
            except (ValueError, KeyError):
                continue
            pe_keys.setdefault((c.sa_rows, c.sa_cols, c.e_type, c.a_type, c.exp2_pieces), p)
    areas: dict[tuple, "int | None"] = {}

    def done(i: int, row: dict) -> None:
        rows[i] = row
        n = sum(r is not None for r in rows)
        what = row["error"] or (f"{row['cycles']} cycles, utilisation {row['utilisation']:.3f}"
                                if row["cycles"] is not None else "")
        say(f"[{n}/{len(pts)}] {row['config']} seq {row['seq']}"
            f"{' causal' if row['causal'] else ''}: {what}")

    if serial:
        for i, p in enumerate(pts):
            done(i, evaluate(p, accuracy_len))
        for key, p in pe_keys.items():
            areas[key] = _area(p)
    else:
        from dask.distributed import as_completed

        client, cluster = _client(scheduler, workers)
        try:
            say(f"dask: {len(client.scheduler_info()['workers'])} workers at "
                f"{client.scheduler.address}")
            futs = client.map(evaluate, pts, accuracy_len=accuracy_len, pure=False)
            index = {f.key: i for i, f in enumerate(futs)}
            area_futs = {key: client.submit(_area, p, pure=False) for key, p in pe_keys.items()}
            for fut in as_completed(futs):
                done(index[fut.key], fut.result())
            for key, fut in area_futs.items():
                areas[key] = fut.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    for row in rows:
        key = (row["R"], row["C"], row["e_type"], row["a_type"], row["pieces"])
        row["pe_cells"] = areas.get(key)
    return rows


def markdown_path(path: "str | Path") -> Path:
    """Where the Markdown table goes beside the CSV at `path` (``.md``)."""
    return Path(path).with_suffix(".md")


def csv_text(rows: Sequence[dict]) -> str:
    """The rows as CSV (the :data:`COLUMNS`, a header line first)."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in COLUMNS})
    return buf.getvalue()


def markdown_text(rows: Sequence[dict]) -> str:
    """The rows as a Markdown table (floats to 4 significant digits)."""
    def cell(v) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.get(k)).replace("|", "/") for k in COLUMNS) + " |"
              for r in rows]
    return "\n".join(lines) + "\n"


def write_table(rows: Sequence[dict], path: "str | Path") -> list[Path]:
    """Write the rows as CSV at `path` and as a Markdown table beside it
    (:func:`markdown_path`); returns both paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(csv_text(rows), newline="")
    md = markdown_path(path)
    md.write_text(markdown_text(rows))
    return [path, md]


def _save(plt, fig, ax, xlabel: str, ylabel: str, path: Path) -> Path:
    """Finish a plot against sequence length (log2 x axis) and write it."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_plots(rows: Sequence[dict], folder: "str | Path") -> list[Path]:
    """Utilisation against sequence length (one line per configuration, P,
    AXI width and mask; solid: the memory system, dashed: free DMA), and
    the error against length when measured.  Needs matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plots need matplotlib (the project's `bench` extra)") from None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ok = [r for r in rows if not r["error"]]
    groups: dict[tuple, list[dict]] = {}
    for r in ok:
        groups.setdefault((r["config"], r["causal"]), []).append(r)
    out = []
    fig, ax = plt.subplots(figsize=(8, 5))
    for (name, causal), rs in groups.items():
        rs = sorted(rs, key=lambda r: r["seq"])
        x = [r["seq"] for r in rs]
        line, = ax.plot(x, [r["utilisation"] for r in rs], marker="o",
                        label=name + (" causal" if causal else ""))
        ax.plot(x, [r["free_dma_utilisation"] for r in rs], ls="--", color=line.get_color())
    out.append(_save(plt, fig, ax, "sequence length (seq_q = seq_kv)",
                     "utilisation (dashed: free DMA)", folder / PLOT_NAMES[0]))
    acc = [r for r in ok if r["max_abs_err"] is not None]
    if acc:
        fig, ax = plt.subplots(figsize=(8, 5))
        for (name, causal), rs in groups.items():
            rs = sorted((r for r in rs if r["max_abs_err"] is not None), key=lambda r: r["seq"])
            if rs:
                ax.plot([r["acc_seq"] for r in rs], [r["max_abs_err"] for r in rs], marker="o",
                        label=name + (" causal" if causal else ""))
        ax.set_yscale("log")
        out.append(_save(plt, fig, ax, "sequence length of the accuracy run",
                         "max |golden - torch float64|", folder / PLOT_NAMES[1]))
    return out
