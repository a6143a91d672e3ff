"""What the attention kernels share: the shape and head-map checks, the
padding of a caller's lengths, the program signature of the golden model's
fast path, and the FLOPs and utilisation.

FLOPs and utilisation (:func:`attention_flops`, :func:`utilisation`) are
defined here once, for ``fsa run`` (:class:`fsa.engines.Result`), ``fsa
predict`` and the benchmarks: utilisation counts the *useful* matmul FLOPs,
``4 d`` per (query, key) pair that the causal mask keeps, over the array's
peak ``2 R C`` FLOPs per cycle.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Sequence

import numpy as np

from fsa import isa
from fsa.config import FSAConfig
from fsa.program import Program
from fsa.tiles import KernelError

__all__ = ["FAST_META", "attention_signature", "sign_attention", "padded_shape",
           "check_head_tiles", "attention_io", "head_map", "check_attention_shape",
           "attention_flops", "utilisation"]


#: the meta facts the golden model's fast attention path computes from
FAST_META = ("kind", "seq_q", "seq_kv", "heads", "kv_heads", "kv_map", "causal")


def attention_signature(prog: Program) -> str:
    """A digest of what the fast golden path relies on: the instruction
    words, the config, the memory layout and the :data:`FAST_META` facts.
    (Not the ``mask_keys`` bits, which the fast path checks itself: it
    models them on each head's last key block, as ``key_limit`` sets them.)"""
    masked = any(isinstance(i, isa.Matrix) and i.mask_keys for i in prog.instructions)
    words = isa.encode([dataclasses.replace(i, mask_keys=False) if isinstance(i, isa.Matrix)
                        else i for i in prog.instructions]) if masked else prog.words()
    h = hashlib.sha256()
    h.update(np.asarray(words, dtype="<u4").tobytes())
    h.update(json.dumps(prog.cfg.to_dict(), sort_keys=True).encode())
    h.update(repr(sorted(prog.tensors.items())).encode())
    facts = {k: prog.meta.get(k) for k in FAST_META}
    facts["kv_map"] = None if facts["kv_map"] is None else [int(x) for x in facts["kv_map"]]
    h.update(json.dumps(facts, sort_keys=True, default=str).encode())
    return h.hexdigest()


def sign_attention(prog: Program) -> Program:
    """Mark `prog` (built here) as :func:`attention`'s, for the golden
    model's fast path (``meta["fast_signature"]``, checked against the
    program when it runs: a program changed since, or any other kernel that
    only says it computes attention, runs on the instruction-level model)."""
    prog.meta["fast_signature"] = attention_signature(prog)
    return prog


def padded_shape(cfg: FSAConfig, seq_q: int, seq_kv: int,
                 causal: bool = False) -> tuple[int, int, "int | None"]:
    """``(seq_q, seq_kv, key_limit)`` of the kernel that runs a caller's
    lengths: queries padded to whole query blocks (C), keys to whole key
    blocks (R), the padded keys masked by ``key_limit`` (the keys kept in the
    last block) unless the causal mask hides them (S_q <= S_kv); None when
    nothing is masked.  ``fsa run``, the API and ``fsa predict`` pad alike."""
    R, C = cfg.sa_rows, cfg.sa_cols
    sq_p, skv_p = -(-seq_q // C) * C, -(-seq_kv // R) * R
    hidden = bool(causal) and seq_q <= seq_kv       # padded keys lie beyond every real query
    return sq_p, skv_p, None if skv_p == seq_kv or hidden else seq_kv - (skv_p - R)


def check_head_tiles(k, Q, K, Vt, seq_q, seq_kv, kv_map) -> tuple[int, tuple[int, ...]]:
    """``(heads, kv_map)`` of an attention kernel build for tiles ``Q [H
    seq_q, R]``, ``K [G seq_kv, R]``, ``Vt [R, G seq_kv]``: KernelError
    unless the lengths are positive multiples of the blocks that divide the
    tiles and `kv_map` (default: head h reads kv head h) gives each of the H
    query heads one of the G kv heads (:func:`head_map`), so that calling
    ``flash_attention.build`` / ``flash_attention_ud.build`` directly never
    gives a wrong program."""
    R, C = k.R, k.C
    for name, v, m, n, tile in (("seq_q", seq_q, C, Q.rows, "Q"),
                                ("seq_kv", seq_kv, R, K.rows, "K")):
        ok = not isinstance(v, bool) and isinstance(v, (int, np.integer))
        if not ok or v <= 0 or v % m or n % v:
            raise KernelError(f"attention: {name} = {v!r} must be a positive multiple of {m} that "
                              f"divides {tile}'s {n} rows (one head after the other)")
    if Vt.shape != (R, K.rows):
        raise KernelError(f"attention: Vt {Vt.shape} must be [R, K rows] = {(R, K.rows)}")
    heads, kv_heads = Q.rows // int(seq_q), K.rows // int(seq_kv)
    try:
        kv_map, _ = head_map(heads, kv_heads, range(heads) if kv_map is None else kv_map)
    except ValueError as e:
        raise KernelError(str(e)) from None
    return heads, kv_map


def attention_io(k, Q, K, Vt, seq_q, seq_kv, kv_map) -> tuple:
    """What an attention kernel build starts with: the head lengths (`seq_q`
    / `seq_kv`, ``None``: all rows of Q / K, one head), the checked heads and
    `kv_map` (:func:`check_head_tiles`), the output tensor ``Ot [R, H seq_q]``
    (accumulate format) with the views ``V`` (of `Vt`) and ``O`` (of ``Ot``),
    and the blocks: Q and K by rows (C and R rows: head h's from
    ``h seq_q / C`` on, kv head g's from ``g seq_kv / R`` on), Vt by R
    columns, Ot by C columns (like Q's).

    Returns:
        ``(seq_q, seq_kv, heads, kv_map, Ot, q_blocks, k_blocks, v_blocks, o_blocks)``.
    """
    R, C = k.R, k.C
    seq_q = Q.rows if seq_q is None else seq_q
    seq_kv = K.rows if seq_kv is None else seq_kv
    heads, kv_map = check_head_tiles(k, Q, K, Vt, seq_q, seq_kv, kv_map)
    Ot = k.alloc_mem((R, heads * seq_q), k.cfg.a_type, "Ot", role="output")
    k.view("V", Vt)
    k.view("O", Ot)
    return (seq_q, seq_kv, heads, kv_map, Ot, Q.split(C, axis=0), K.split(R, axis=0),
            Vt.split(R, axis=1), Ot.split(C, axis=1))


def head_map(heads: int, kv_heads: int | None = None,
             kv_map: "Sequence[int] | None" = None) -> tuple[tuple[int, ...], int]:
    """Check the head arguments of :func:`attention`; returns ``(kv_map, kv_heads)``."""
    def count(name: str, v) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"attention: {name} must be a positive int, got {v!r}")
        return int(v)

    heads = count("heads", heads)
    if kv_map is None:
        kv_heads = heads if kv_heads is None else count("kv_heads", kv_heads)
        if heads % kv_heads:
            raise ValueError(f"attention: heads = {heads} is not a multiple of kv_heads = "
                             f"{kv_heads} (grouped-query attention shares each kv head among "
                             f"heads // kv_heads query heads); give kv_map for another sharing")
        group = heads // kv_heads
        return tuple(h // group for h in range(heads)), kv_heads
    try:
        m = tuple(kv_map)
    except TypeError:
        raise ValueError(f"attention: kv_map must be a sequence of ints (one kv head per query "
                         f"head), got {kv_map!r}") from None
    if len(m) != heads or any(isinstance(g, bool) or not isinstance(g, (int, np.integer))
                              for g in m):
        raise ValueError(f"attention: kv_map must hold one int per query head ({heads}), got "
                         f"{kv_map!r}")
    m = tuple(int(g) for g in m)
    kv_heads = max(m) + 1 if kv_heads is None else count("kv_heads", kv_heads)
    if min(m) < 0 or max(m) >= kv_heads:
        raise ValueError(f"attention: kv_map entries must be kv heads 0..{kv_heads - 1}, got "
                         f"{list(m)}")
    return m, kv_heads


def check_attention_shape(cfg, seq_q, seq_kv, causal: bool = False) -> None:
    """Raise ValueError unless :func:`attention` supports this shape on `cfg`."""
    R, C = cfg.sa_rows, cfg.sa_cols
    for name, v, m, what in (("seq_q", seq_q, C, "C (array columns, the query block)"),
                             ("seq_kv", seq_kv, R, "R (array rows, the key block)")):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0 or v % m:
            raise ValueError(f"attention: {name} must be a positive multiple of {what} = {m} for "
                             f"{cfg.name}, got {v!r}")
    if causal and R != C:
        raise ValueError(f"attention: causal masking needs a square array (R == C); {cfg.name} is "
                         f"{R}x{C}; use causal=False or a square config")


def attention_flops(seq_q: int, seq_kv: int, d: int, causal: bool = False) -> int:
    """The useful FLOPs of one attention head: ``4 d`` per (query, key) pair
    the output depends on (``2 d`` for the score ``q . k``, ``2 d`` for adding
    ``p v``), so ``4 seq_q seq_kv d``; with the causal mask (top-left aligned,
    query ``i`` sees keys ``0..i``) only the pairs it keeps, ``sum_i min(i + 1,
    seq_kv)``: ``N (N + 1) / 2`` for ``N x N``, about half.

    This is the project's one FLOPs definition (``fsa run``, ``fsa predict``,
    the benchmarks). It counts useful work, not executed work: the kernel
    runs the diagonal blocks of a causal mask whole (``R C`` pairs each, the
    masked part included), and that masked work is not counted, so a causal
    run's utilisation is what the array achieved on the attention itself.
    The softmax arithmetic (max, exp2, sums, rescale, normalisation), done by
    the same PEs, is not counted either.
    """
    for name, v in (("seq_q", seq_q), ("seq_kv", seq_kv), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"attention_flops: {name} must be a positive int, got {v!r}")
    if not causal:
        pairs = seq_q * seq_kv
    elif seq_q <= seq_kv:
        pairs = seq_q * (seq_q + 1) // 2
    else:                                    # queries past the last key see every key
        pairs = seq_kv * (seq_kv + 1) // 2 + (seq_q - seq_kv) * seq_kv
    return 4 * d * pairs


def utilisation(flops: int, cycles: float, rows: int, cols: int) -> float:
    """``flops / (cycles x 2 rows cols)``: the fraction of the peak of a
    ``rows x cols`` array (one multiply-add, 2 FLOPs, per PE per cycle) that
    `flops` (:func:`attention_flops`) used in `cycles`."""
    if cycles <= 0:
        raise ValueError(f"utilisation: cycles must be positive, got {cycles!r}")
    return flops / (cycles * 2 * rows * cols)
