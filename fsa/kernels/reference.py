"""The reference FlashAttention kernel, written in the kernel language
(:mod:`fsa.kernel_lang`); :func:`fsa.kernels.attention` is its entry point.

:func:`attention` builds the FlashAttention forward pass (docs/architecture.md
section 6): ``Q [seq_q, d]``, ``K [seq_kv, d]``, ``V`` stored transposed
``Vt [d, seq_kv]`` (element format), output ``Ot [d, seq_q]`` (accumulate
format), with ``d = R``. The program's views let callers use the natural
orientation: inputs may be given as ``V [seq_kv, d]`` and outputs read as
``O [seq_q, d]``.

Several heads (``heads=H``: any (batch, head) pairs, flattened) are one
program: the heads are stacked in memory, ``Q [H seq_q, d]``, ``Ot [d, H
seq_q]`` (view ``O [H seq_q, d]``), and the ``G`` key/value heads ``K [G
seq_kv, d]``, ``Vt [d, G seq_kv]`` (view ``V [G seq_kv, d]``); head ``h``
occupies rows (columns for the transposed tensors) ``h seq .. (h+1) seq - 1``.
The kernel runs the query blocks of head 0, then of head 1 ..., each with
its own DMA addresses: query head ``h`` reads kv head ``kv_map[h]``
(grouped-query attention and broadcast batches read one stored kv head from
several query heads, without copies). The block pipeline below does not
care where a head ends: the loads of head ``h + 1`` overlap the last steps
of head ``h`` exactly as the loads of the next query block do. One head is
the single-head program, instruction for instruction.

Scale and padded keys: ``scale=`` puts the softmax scale in the program's
``settings`` (the ``scale_e`` / ``scale_a`` registers the host writes before
the start, :func:`fsa.config.scale_bits`), and ``key_limit=`` sets
``mask_keys`` on the scores of each head's last key block with the
``key_limit`` register: its keys ``>= key_limit`` (padding) get -inf and
contribute exactly 0 (with the causal mask too where both apply). Without
them the program is the one of earlier versions, instruction for
instruction.

Buffers (reference scratchpad ``2C + 4R`` rows): Q in 2 buffers of C rows, K
and Vt in 2 buffers of R rows each; with a smaller scratchpad the kernel
falls back to single buffers (Q first, then K/V). Accumulator: ``l`` (1 row)
and ``O^T`` (R rows); with ``acc_rows >= 2 (1 + R)`` two sets, so the store of
one query block overlaps the whole next block.

Schedule, per key-block step ``t = (i, j)`` (program order; the DMA loads of
step ``t + 1`` overlap the matrix work of step ``t``)::

    LS(i,j)  [load K(t+1)]  SCORE(t)  [STORE(i-1) if j == 0]  [load Vt(t+1)]  VALUE(t)
    [load Q(i+1)]  then after the last key block of i:  RECIPROCAL(i)  LSE_NORM(i)

Semaphore protocol (ids; each use acquires the current value and releases
the next, see :class:`fsa.kernel_lang.Semaphore`):

* Q buffer b, id ``0 + b`` (n = 2): ``load Q(i)`` 0 -> 1; ``LS(i, 0)``
  acquires 1 and holds it through the query block; ``LS(i, last)`` releases
  0 (buffer free).
* K buffer b, id ``2 + b`` (n = 2): ``load K(t)`` 0 -> 1, ``SCORE(t)`` 1 -> 0.
* Vt buffer b, id ``4 + b`` (n = 4): ``load Vt(t)`` v -> v+1, ``VALUE(t)``
  v+1 -> v+2. With one accumulator set, the first VALUE of query block
  ``i+1`` must wait until the store of block ``i`` has read O^T out of the
  accumulator; the token of that VALUE's buffer is passed through the store:
  ``load Vt`` v -> v+1, ``LSE_NORM(i)`` v+1 -> v+2, ``STORE(i)`` v+2 -> v+3,
  ``VALUE`` v+3 -> v+4. So the matrix engine runs LS and SCORE of block i+1
  while the store drains, and no fence is needed.
* Accumulator set a, id ``6 + a`` (n = 4): with two sets, ``LSE_NORM(i)``
  v -> v+1, ``STORE(i)`` v+1 -> v+2, ``RECIPROCAL(i+1)`` v+2 -> v+3 (so
  block ``i+2``, which reuses set a, starts after the store). With one set,
  only the last block's ``LSE_NORM`` -> ``STORE`` pair uses id 6.

The only fence is the final ``Fence(mx, dma, stop)``. The program is checked
at build time for deadlocks and semaphore races (:func:`fsa.kernel_lang.check_dispatch`:
the cycle model under the device's one-pending-instruction-per-engine
dispatch and under the golden model's unbounded queues).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fsa import config as fconfig
from fsa.config import FSAConfig
from fsa.kernel_lang import Input, KernelBuilder, MemTile, Program, kernel
from fsa.kernels.common import attention_io, check_attention_shape, head_map

__all__ = ["LABEL", "refuse", "attention", "flash_attention", "buffer_plan"]

#: how messages name this kernel
LABEL = "reference"


def refuse(cfg: FSAConfig, masked: bool) -> "str | None":
    """Why this kernel cannot run on `cfg` (None: it runs on every
    dataflow's hardware, whose functions include the reference ones)."""
    return None


def buffer_plan(cfg: FSAConfig) -> dict[str, int]:
    """How many Q, K/V and accumulator buffers the config's SRAMs hold."""
    R, C = cfg.sa_rows, cfg.sa_cols
    rows = cfg.spad_rows
    if rows >= 2 * C + 4 * R:
        nq, nkv = 2, 2
    elif rows >= C + 4 * R:
        nq, nkv = 1, 2
    elif rows >= 2 * C + 2 * R:
        nq, nkv = 2, 1
    else:
        nq, nkv = 1, 1
    nacc = 2 if cfg.acc_rows >= 2 * (1 + R) else 1
    return {"q": nq, "kv": nkv, "acc": nacc}


@kernel
def flash_attention(k: KernelBuilder, Q: MemTile, K: MemTile, Vt: MemTile, *,
                    causal: bool = False, seq_q: int | None = None, seq_kv: int | None = None,
                    kv_map: "tuple[int, ...] | None" = None, mask_last: bool = False,
                    settings: "dict[str, int] | None" = None) -> MemTile:
    """FlashAttention forward of one or more heads: returns ``Ot [R, H seq_q]``
    (see the module docstring; one head when `seq_q` / `seq_kv` / `kv_map`
    are left out). `mask_last`: ``mask_keys`` on the scores of each head's
    last key block (the ``key_limit`` register says which keys); `settings`:
    the program's setting registers."""
    cfg = k.cfg
    R, C = k.R, k.C
    # blocks: Q [C, d], K [R, d], Vt [d, R], Ot [d, C]
    seq_q, seq_kv, heads, kv_map, Ot, q_blocks, k_blocks, v_blocks, o_blocks = attention_io(
        k, Q, K, Vt, seq_q, seq_kv, kv_map)
    plan = buffer_plan(cfg)
    nq, nkv, nacc = plan["q"], plan["kv"], plan["acc"]
    q_sp = [k.alloc_spad((C, R), f"Q{b}") for b in range(nq)]
    k_sp = [k.alloc_spad((R, R), f"K{b}") for b in range(nkv)]
    v_sp = [k.alloc_spad((R, R), f"Vt{b}") for b in range(nkv)]
    l_acc = [k.alloc_accumulator((1, C), f"l{a}") for a in range(nacc)]
    o_acc = [k.alloc_accumulator((R, C), f"Ot{a}") for a in range(nacc)]
    sem_q = [k.semaphore(0 + b, 2) for b in range(nq)]
    sem_k = [k.semaphore(2 + b, 2) for b in range(nkv)]
    sem_v = [k.semaphore(4 + b, 4) for b in range(nkv)]
    sem_o = [k.semaphore(6 + a, 4) for a in range(max(nacc, 1))]

    n_qh, n_kb = seq_q // C, seq_kv // R    # query blocks of one head, key blocks of one kv head
    n_qb = heads * n_qh                     # query blocks of the whole program, head after head

    def last(i: int) -> int:
        """The last key block query block i (of the program) sees."""
        return min(i % n_qh, n_kb - 1) if causal else n_kb - 1

    def kv_block(i: int, j: int) -> int:
        """Index in k_blocks / v_blocks of key block j of query block i's kv head."""
        return kv_map[i // n_qh] * n_kb + j

    steps = [(i, j) for i in range(n_qb) for j in range(last(i) + 1)]
    k.meta.update(kind="attention", seq_q=seq_q, seq_kv=seq_kv, d=R, causal=bool(causal),
                  heads=heads, kv_heads=K.rows // seq_kv, kv_map=kv_map,
                  key_blocks=len(steps), buffers=plan)
    k.settings.update(settings or {})

    def load_q(i: int) -> None:
        k.load_tile(q_sp[i % nq], q_blocks[i], sem_q[i % nq])

    def load_k(t: int) -> None:
        k.load_tile(k_sp[t % nkv], k_blocks[kv_block(*steps[t])], sem_k[t % nkv])

    def load_v(t: int) -> None:
        k.load_tile(v_sp[t % nkv], v_blocks[kv_block(*steps[t])], sem_v[t % nkv])

    store_sem = {}                          # query block -> semaphore its STORE uses
    load_q(0)
    load_k(0)
    load_v(0)
    for t, (i, j) in enumerate(steps):
        is_last = j == last(i)
        more = t + 1 < len(steps)
        qb, kvb, ab = i % nq, t % nkv, i % nacc
        k.mx_load_stationary(q_sp[qb].reverse(), sem_q[qb], acquire=(j == 0), release=is_last)
        if nkv == 2 and more:
            load_k(t + 1)
        k.mx_attn_score(k_sp[kvb], l_acc[ab], accumulate=j > 0, sem=sem_k[kvb],
                        causal=causal and i % n_qh == j, mask_keys=mask_last and j == n_kb - 1)
        if j == 0 and i > 0:
            k.store_tile(o_blocks[i - 1], o_acc[(i - 1) % nacc], store_sem[i - 1])
        if nkv == 1 and more:
            load_k(t + 1)
        if nkv == 2 and more:
            load_v(t + 1)
        k.mx_attn_value(v_sp[kvb], o_acc[ab], accumulate=j > 0, sem=sem_v[kvb])
        if nkv == 1 and more:
            load_v(t + 1)
        if i + 1 < n_qb and j == (0 if nq == 2 else last(i)):
            load_q(i + 1)
        if is_last:
            relay = sem_o[(i - 1) % 2] if nacc == 2 and i > 0 else None
            k.mx_reciprocal(l_acc[ab], relay)
            if nacc == 1 and i + 1 < n_qb:
                sem = sem_v[(t + 1) % nkv]       # the token of VALUE(i+1, 0)'s buffer
            else:
                sem = sem_o[ab]
            k.mx_attn_lse_norm(o_acc[ab], sem)
            store_sem[i] = sem
            if i + 1 == n_qb:
                k.store_tile(o_blocks[i], o_acc[ab], sem)
    return Ot


def attention(cfg: FSAConfig, seq_q: int, seq_kv: int, causal: bool = False,
              check: bool = True, *, heads: int = 1, kv_heads: int | None = None,
              kv_map: "Sequence[int] | None" = None, scale: float | None = None,
              key_limit: int | None = None) -> Program:
    """The reference kernel's program (arguments as :func:`fsa.kernels.attention`,
    which checks the config and signs the program)."""
    R = cfg.sa_rows
    check_attention_shape(cfg, seq_q, seq_kv, causal)
    kv_map, kv_heads = head_map(heads, kv_heads, kv_map)
    e = cfg.e_type
    settings: dict[str, int] = {}
    if scale is not None:
        settings["scale_e"], settings["scale_a"] = fconfig.scale_bits(cfg, scale)
    if key_limit is not None:
        if isinstance(key_limit, bool) or not isinstance(key_limit, (int, np.integer)) \
                or not 1 <= key_limit <= R:
            raise ValueError(f"attention: key_limit must be an int in 1..R = {R} (keys kept in "
                             f"the last key block; 0 would leave a query without keys), got "
                             f"{key_limit!r}")
        key_limit = int(key_limit)
    mask = key_limit is not None and key_limit < R
    if mask:
        settings["key_limit"] = key_limit
    prog = flash_attention.build(cfg, Input((heads * seq_q, R), e),
                                 Input((kv_heads * seq_kv, R), e), Input((R, kv_heads * seq_kv), e),
                                 causal=bool(causal), seq_q=seq_q, seq_kv=seq_kv, kv_map=kv_map,
                                 mask_last=mask, settings=settings, check=check)
    return prog
