"""Helpers shared by the benchmarks: paths, JSON records, plain-text tables."""
from __future__ import annotations

import json
import math
import os
import pathlib
import platform
import sys
import time
from typing import Any, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
RESULTS = BENCH / "results"


def results_dir(quick: bool) -> pathlib.Path:
    """Where a benchmark's JSON (and, from plots.py / mkdoc.py, the report)
    goes: ``bench/results/`` for full runs (committed, rendered into
    docs/performance.md), ``bench/results/quick/`` for ``--quick`` runs (not
    committed), so a quick run never overwrites the full figures."""
    return RESULTS / "quick" if quick else RESULTS


def deep_queue(cfg, words: int = 4096):
    """`cfg` with a deeper instruction queue (name suffixed ``Q4K``). The
    testbench (fsa/harness/device.py) pushes a program that fits the queue before
    ``start``; a longer one fills the queue, starts, and pushes the rest during
    the run, one AXI4-Lite write at a time (about 4 cycles per word, see
    bench/utilisation.py), so a program longer than the queue would measure
    the host, not the device."""
    if cfg.inst_queue_size >= words:
        return cfg
    return cfg.replace(inst_queue_size=words, name=f"{cfg.name}Q{words // 1024}K")


def attention_util(R: int, C: int, n: int, causal: bool, cycles: float) -> tuple[int, float]:
    """(FLOPs, utilisation) of attention seq_q = seq_kv = `n`, d = R, on an
    R x C array in `cycles`, by the project's one definition
    (fsa.kernels.attention_flops: useful FLOPs, 4 d per (query, key) pair the
    causal mask keeps; fsa.kernels.utilisation: over cycles x 2RC). The
    benchmarks and the report derive every utilisation from the cycles with
    this, so they agree with ``fsa run`` and ``fsa predict``."""
    from fsa import kernels

    fl = kernels.attention_flops(n, n, R, causal)
    return fl, kernels.utilisation(fl, cycles, R, C)


def write_json(name: str, data: dict) -> pathlib.Path:
    """Write ``bench/results/<name>.json`` (``bench/results/quick/`` when
    ``data["quick"]``) with a small environment header."""
    outdir = results_dir(bool(data.get("quick")))
    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / f"{name}.json"
    head = {"bench": name, "when": time.strftime("%Y-%m-%d %H:%M:%S"),
            "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count()}
    out.write_text(json.dumps({**head, **data}, indent=2, default=_jsonable) + "\n")
    return out


def _jsonable(x: Any):
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    return str(x)


def fmt(v: Any, spec: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    if spec:
        return format(v, spec)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], specs: Sequence[str] | None = None,
          indent: str = "  ") -> str:
    """A right-aligned plain-text table (also valid as a Markdown table body
    when `markdown` formatting is wanted: see :func:`md_table`)."""
    specs = specs or [""] * len(headers)
    cells = [[fmt(v, s) for v, s in zip(r, specs)] for r in rows]
    w = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = [indent + "  ".join(h.rjust(w[i]) for i, h in enumerate(headers))]
    lines.append(indent + "  ".join("-" * w[i] for i in range(len(headers))))
    for c in cells:
        lines.append(indent + "  ".join(x.rjust(w[i]) for i, x in enumerate(c)))
    return "\n".join(lines)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
             specs: Sequence[str] | None = None) -> str:
    specs = specs or [""] * len(headers)
    left = [bool(rows) and isinstance(rows[0][i], str) for i in range(len(headers))]
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join(":---" if lf else "---:" for lf in left) + "|"]
    for r in rows:
        out.append("| " + " | ".join(fmt(v, s) for v, s in zip(r, specs)) + " |")
    return "\n".join(out)
