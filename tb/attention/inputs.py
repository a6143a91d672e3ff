"""Edge-value inputs of the attention benches (reference and UD)."""
from __future__ import annotations

import numpy as np

from fsa import numerics as nx
from tb.common.tier import SEED


def edge_inputs(kind: str, cfg, sq: int, skv: int):
    R = cfg.sa_rows
    rng = np.random.default_rng(SEED)
    q, k, v = (rng.standard_normal((n, R)) for n in (sq, skv, skv))
    if kind == "outliers":
        q[0, 0], k[3, 1], v[5, 2] = 60.0, -80.0, 1000.0
    elif kind == "equal_scores":
        k[:] = k[0]                                  # every key equal: uniform softmax
    elif kind == "all_negative":
        q = np.abs(q) + 0.5
        k = -np.abs(k) - 0.5
    elif kind == "dominant":
        k[5] = q[0] * 12                              # one key dominates query 0's row
    elif kind == "tiny":
        q, k, v = q * 1e-5, k * 1e-5, v * 1e-6       # subnormal range of fp16
    elif kind == "nan_inf":
        q[1, 0] = np.nan
        k[2, 3] = np.inf
        v[7, 1] = -np.inf
    return tuple(nx.from_float64(x, cfg.e_type) for x in (q, k, v))
