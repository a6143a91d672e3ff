"""Accuracy and agreement figures for attention runs (used by ``fsa run``,
the regression and the benchmarks)."""
from __future__ import annotations

import numpy as np


def fa3_inputs(rng: np.random.Generator, shape) -> np.ndarray:
    """FlashAttention-3 test distribution: N(0, 1) plus, with probability
    0.001, N(0, 10^2) noise."""
    x = rng.standard_normal(shape)
    return x + (rng.random(shape) < 0.001) * rng.standard_normal(shape) * 10


def torch_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """torch.nn.functional.scaled_dot_product_attention in float64 (CPU)."""
    import torch

    qt, kt, vt = (torch.tensor(np.asarray(x, np.float64))[None] for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)[0].numpy()


def error_stats(got: np.ndarray, ref: np.ndarray) -> dict:
    """MAE, RMSE, max abs error, mean and max relative error (relative to
    max(|ref|, 1e-6)); non-finite outputs are counted, not averaged."""
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    finite = np.isfinite(got) & np.isfinite(ref)
    d = np.abs(got - ref)[finite]
    rel = d / np.maximum(np.abs(ref[finite]), 1e-6)
    return {"mae": float(d.mean()) if d.size else float("nan"),
            "rmse": float(np.sqrt((d ** 2).mean())) if d.size else float("nan"),
            "max_abs": float(d.max()) if d.size else float("nan"),
            "mean_rel": float(rel.mean()) if rel.size else float("nan"),
            "max_rel": float(rel.max()) if rel.size else float("nan"),
            "non_finite": int((~finite).sum())}


def bit_diff(a: np.ndarray, b: np.ndarray, first: int = 5) -> dict:
    """How many raw values differ, and the first few (index, a, b) in hex."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return {"differ": int(max(a.size, b.size)), "first": [f"shape {a.shape} vs {b.shape}"]}
    bad = np.argwhere(a != b)
    return {"differ": int(len(bad)),
            "first": [{"index": [int(i) for i in ix], "a": hex(int(a[tuple(ix)])),
                       "b": hex(int(b[tuple(ix)]))} for ix in bad[:first]]}


def bound_scale(v: np.ndarray) -> float:
    """s = max(1, max|V| / 4): the accuracy bounds scale with it."""
    return max(1.0, float(np.nanmax(np.abs(v))) / 4 if v.size else 1.0)


def within_bounds(stats: dict, s: float, e_type: str) -> bool:
    """fp16/fp32 elements: max abs <= 5e-3 s and MAE <= 5e-4 s; bf16 ten times those."""
    k = 10.0 if e_type == "bf16" else 1.0
    return stats["max_abs"] <= 5e-3 * s * k and stats["mae"] <= 5e-4 * s * k
