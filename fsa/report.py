"""Accuracy and agreement figures for attention runs (used by ``fsa run``,
the regression and the benchmarks)."""
from __future__ import annotations

import numpy as np

from fsa import numerics as nx


def fa3_inputs(rng: np.random.Generator, shape) -> np.ndarray:
    """FlashAttention-3 test distribution: N(0, 1) plus, with probability
    0.001, N(0, 10^2) noise."""
    x = rng.standard_normal(shape)
    return x + (rng.random(shape) < 0.001) * rng.standard_normal(shape) * 10


def torch_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """torch.nn.functional.scaled_dot_product_attention in float64 (CPU)."""
    import torch        # (heavy: loaded only where a torch reference is asked for)

    qt, kt, vt = (torch.tensor(np.asarray(x, np.float64))[None] for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)[0].numpy()


def error_stats(got: np.ndarray, ref: np.ndarray) -> dict:
    """MAE, RMSE, max abs error, mean and max relative error (relative to
    max(|ref|, 1e-6)) over the positions where both are finite, and an account
    of the rest, so that no value leaves the statistics unnoticed:

    * ``compared``: positions where both are finite (the statistics' population);
    * ``non_finite``: outputs that are ±inf or NaN;
    * ``non_finite_agree``: of those, the ones where the reference is the same
      special value (NaN and NaN, or the same infinity): they agree exactly;
    * ``non_finite_mismatch``: positions left out of the statistics that do
      not agree (one side finite, the other not; NaN against an infinity;
      opposite infinities).
    """
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    finite = np.isfinite(got) & np.isfinite(ref)
    agree = (np.isnan(got) & np.isnan(ref)) | (np.isinf(got) & (got == ref))
    d = np.abs(got[finite] - ref[finite])
    rel = d / np.maximum(np.abs(ref[finite]), 1e-6)
    return {"mae": float(d.mean()) if d.size else float("nan"),
            "rmse": float(np.sqrt((d ** 2).mean())) if d.size else float("nan"),
            "max_abs": float(d.max()) if d.size else float("nan"),
            "mean_rel": float(rel.mean()) if rel.size else float("nan"),
            "max_rel": float(rel.max()) if rel.size else float("nan"),
            "compared": int(finite.sum()),
            "non_finite": int((~np.isfinite(got)).sum()),
            "non_finite_agree": int(agree.sum()),
            "non_finite_mismatch": int((~finite & ~agree).sum())}


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
    """s = max(1, max|V| / 4): the accuracy bounds scale with it. An infinite V
    gives an infinite s (no bound); NaNs in V are ignored."""
    a = np.abs(np.asarray(v, np.float64))
    a = a[~np.isnan(a)]
    return max(1.0, float(a.max()) / 4) if a.size else 1.0


def bounds_verdict(stats: dict, s: float, e_type: str) -> tuple[bool, str]:
    """Whether an error_stats result is within the accuracy bounds, and why not.

    fp16/fp32 elements: max abs <= 5e-3 s and MAE <= 5e-4 s; bf16 ten times
    those. Never "within" when the bound is infinite (V holds an infinity),
    when an output was left out of the statistics without agreeing with the
    reference (see error_stats), or when no value could be compared.
    """
    k = 10.0 if e_type == "bf16" else 1.0
    if not np.isfinite(s):
        return False, "the bound is infinite (V holds an infinity): no accuracy claim"
    if stats.get("non_finite_mismatch", 0):
        return False, (f"{stats['non_finite_mismatch']} outputs are non-finite where the reference "
                       f"is not (or the other way round)")
    if not stats.get("compared", 1):
        return False, "no finite output to compare"
    if not (stats["max_abs"] <= 5e-3 * s * k):
        return False, f"max abs error {stats['max_abs']:.3e} > {5e-3 * s * k:.3e}"
    if not (stats["mae"] <= 5e-4 * s * k):
        return False, f"MAE {stats['mae']:.3e} > {5e-4 * s * k:.3e}"
    return True, "within the bounds"


def within_bounds(stats: dict, s: float, e_type: str) -> bool:
    """fp16/fp32 elements: max abs <= 5e-3 s and MAE <= 5e-4 s; bf16 ten times
    those (see bounds_verdict for the cases that are never within)."""
    return bounds_verdict(stats, s, e_type)[0]


def conversion_overflow(x: np.ndarray, fmt: str) -> dict:
    """How `x` (float64) fares when rounded to the element format `fmt`:
    ``overflow``: finite values that became ±inf; ``non_finite``: values that
    were already ±inf or NaN."""
    x = np.asarray(x, np.float64)
    back = nx.to_float64(nx.from_float64(x, fmt), fmt)
    return {"overflow": int((np.isfinite(x) & ~np.isfinite(back)).sum()),
            "non_finite": int((~np.isfinite(x)).sum())}


def bus_bytes_per_cycle(cfg) -> int:
    """Bytes the memory ports can move per cycle: ``mem_ports`` x the AXI
    beat (``axi_data_bits / 8``), one beat per port per cycle."""
    return cfg.mem_ports * cfg.axi_data_bits // 8


def bus_figures(cfg, dma_bytes: int, cycles: "int | None", key_blocks: int) -> dict:
    """DMA traffic against the bus and the array's input bound.

    * ``dma_bytes``: bytes the program's DMA instructions move (loads and
      stores, ``rows x size`` each);
    * ``bus_bytes_per_cycle``: :func:`bus_bytes_per_cycle`;
    * ``bus_occupancy``: dma_bytes / (cycles x bus_bytes_per_cycle) (None
      without cycles);
    * ``array_bound_cycles``: ``2 R`` cycles per (query block, key block)
      step: every key block enters the array as R rows of K and R rows of V
      from the left, whatever the bus, so the run takes at least this;
    * ``bus_occupancy_ceiling``: the occupancy at that bound,
      dma_bytes / (array_bound_cycles x bus_bytes_per_cycle): where the
      array, not the bus, limits (a ceiling below 1 means a faster bus
      cannot help).
    """
    per = bus_bytes_per_cycle(cfg)
    bound = 2 * cfg.sa_rows * key_blocks
    return {"dma_bytes": int(dma_bytes), "bus_bytes_per_cycle": per,
            "bus_occupancy": dma_bytes / (cycles * per) if cycles else None,
            "array_bound_cycles": bound,
            "bus_occupancy_ceiling": dma_bytes / (bound * per) if bound else None}


def program_dma_bytes(instructions) -> int:
    """Bytes moved by the DMA instructions of a program (``repeat x size`` each)."""
    from fsa.isa import Dma
    return sum(x.repeat * x.size for x in instructions if isinstance(x, Dma))


def attention_dma_bytes(cfg, q_blocks: int, steps: int) -> int:
    """Bytes the attention kernels move (both, :mod:`fsa.kernels.reference`
    and :mod:`fsa.kernels.ud`; d = R): per (query block, key block) step a K
    and a V^T tile (``2 R^2 e``), per query block a Q tile in (``C R e``) and
    an O^T tile out (``R C a``); e, a: bytes of the element and accumulate
    formats (:func:`program_dma_bytes` of the program gives the same)."""
    R, C = cfg.sa_rows, cfg.sa_cols
    e, a = cfg.e_fmt.width // 8, cfg.a_fmt.width // 8
    return steps * 2 * R * R * e + q_blocks * (C * R * e + R * C * a)
