"""The attention kernels, written in the kernel language
(:mod:`fsa.kernel_lang`), and their one entry point :func:`attention`.

* :mod:`fsa.kernels.reference` -- the reference FlashAttention kernel (the
  functions every dataflow's hardware runs; docs/architecture.md section 6).
* :mod:`fsa.kernels.ud` -- the UD dataflow's kernel (docs/ud.md).
* :mod:`fsa.kernels.common` -- the shape and head checks, padding, the fast
  golden path's signature, FLOPs and utilisation (re-exported here).

:func:`attention` builds the kernel :func:`kernel_for` picks: the config's
dataflow's own (:mod:`fsa.dataflows`), or the one named.  Each kernel module
has ``LABEL`` (its name in messages), ``refuse(cfg, masked)`` (why it cannot
run on a config, with or without a key mask; None: it can) and
``attention(cfg, ...)`` (:func:`attention`'s arguments but `kernel`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fsa import config as fconfig
from fsa import dataflows
from fsa.config import FSAConfig
from fsa.kernels import reference, ud
from fsa.kernels.common import (FAST_META, attention_flops, attention_signature,
                                check_attention_shape, check_head_tiles, head_map, padded_shape,
                                sign_attention, utilisation)
from fsa.program import Program

__all__ = ["KERNELS", "attention", "kernel_for", "FAST_META", "attention_flops",
           "attention_signature", "check_attention_shape", "check_head_tiles", "head_map",
           "padded_shape", "sign_attention", "utilisation"]

#: the attention kernels by name (:attr:`fsa.dataflows.base.Dataflow.kernel`)
KERNELS = {"reference": reference, "ud": ud}


def attention(cfg: "FSAConfig | str", seq_q: int, seq_kv: int, causal: bool = False,
              check: bool = True, kernel: "str | None" = None, *, heads: int = 1,
              kv_heads: int | None = None, kv_map: "Sequence[int] | None" = None,
              scale: float | None = None, key_limit: int | None = None) -> Program:
    """Build the FlashAttention forward program for `heads` heads.

    Args:
        cfg: config (or preset name); d = R.
        seq_q: queries per head, a positive multiple of C.
        seq_kv: keys/values per kv head, a positive multiple of R.
        causal: causal mask (query q sees keys <= q, top-left aligned like
            torch's ``is_causal``); needs R == C.
        check: run :func:`fsa.kernel_lang.check_dispatch` (deadlocks and semaphore races in
            the cycle model: six runs, two dispatch modes x three DMA timings).
        kernel: a key of :data:`KERNELS`, "reference" (:mod:`fsa.kernels.reference`)
            or "ud" (:mod:`fsa.kernels.ud`); None picks the config's dataflow's
            own (:attr:`fsa.dataflows.base.Dataflow.kernel`: "ud" on a config
            with ``dataflow = "ud"``, else "reference").
            The UD kernel runs any heads and `kv_map` too, but not the key
            mask: with `kernel` None, a `key_limit` < R on a UD config picks
            the reference kernel (UD hardware runs its functions unchanged;
            the program's ``meta["kernel"]`` is "reference").
        heads: query heads (any number of (batch, head) pairs, flattened),
            run one after another in one program.
        kv_heads: key/value heads stored (default `heads`, or one more than
            the largest entry of `kv_map`).
        kv_map: the kv head each query head reads (default: head ``h`` reads
            ``h // (heads // kv_heads)``, torch's grouped-query attention; with
            ``kv_heads == heads`` its own). A kv head read by several query
            heads is stored once: the DMA reads it again from the same
            addresses.
        scale: the softmax scale (scores times `scale`, as torch's); the
            program's ``settings`` hold its ``scale_e`` / ``scale_a``
            registers (:func:`fsa.config.scale_bits`). None: no setting (the
            registers' reset values, ``1/sqrt(R)``).
        key_limit: 1..R: each head's last key block keeps only its keys
            ``0 .. key_limit - 1`` (the others are padding): ``mask_keys`` on
            those scores and the ``key_limit`` register in ``settings``.
            None (or R): no key masked.

    Returns:
        A :class:`~fsa.program.Program` with inputs ``Q [heads seq_q, R]``,
        ``K [kv_heads seq_kv, R]``, ``Vt [R, kv_heads seq_kv]`` (view ``V``
        ``[kv_heads seq_kv, R]``) and output ``Ot [R, heads seq_q]`` (view
        ``O [heads seq_q, R]``): the heads stacked, head ``h`` at rows (or
        columns) ``h seq .. (h + 1) seq - 1``. With one head this is the
        single-head program, instruction for instruction.

    Raises:
        ValueError: sequence lengths that are not multiples of the blocks,
            causal on a non-square array, bad head counts or map.
    """
    cfg = fconfig.get(cfg)
    seq_q, seq_kv = (int(v) if isinstance(v, np.integer) else v for v in (seq_q, seq_kv))
    which = kernel_for(cfg, kernel, key_limit)
    prog = KERNELS[which].attention(cfg, seq_q, seq_kv, causal, check, heads=heads,
                                    kv_heads=kv_heads, kv_map=kv_map, scale=scale,
                                    key_limit=key_limit)
    own = dataflows.get(cfg).kernel
    if kernel is None and which != own:        # the fallback of kernel_for
        prog.meta.update(kernel=which,
                         kernel_why=f"the {KERNELS[own].LABEL} kernel has no key mask (padded keys)")
    return sign_attention(prog)


def kernel_for(cfg: FSAConfig, kernel: "str | None", key_limit: "int | None" = None) -> str:
    """The kernel :func:`attention` builds: `kernel`, or (None) the config's
    dataflow's own ("ud" on a config with ``dataflow = "ud"``, else
    "reference"); a kernel without a key mask (the UD one) is replaced by
    the reference kernel when `kernel` is None and a `key_limit` < R asks
    for one (every dataflow's hardware runs the reference functions).

    Raises:
        ValueError: an unknown kernel, or one that refuses the config (the UD
            kernel on a config of another dataflow or with a key mask).
    """
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"attention: kernel must be {' or '.join(map(repr, KERNELS))}, "
                         f"got {kernel!r}")
    masked = key_limit is not None and key_limit != cfg.sa_rows
    which = kernel or dataflows.get(cfg).kernel
    if kernel is None and KERNELS[which].refuse(cfg, masked) is not None:
        which = "reference"
    why = KERNELS[which].refuse(cfg, masked)
    if why is not None:
        raise ValueError(f"attention: {why}")
    return which
