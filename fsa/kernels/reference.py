"""Kernels written in the kernel language (:mod:`fsa.kernel`).

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
the next, see :class:`fsa.kernel.Semaphore`):

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
at build time for deadlocks and semaphore races (:func:`fsa.kernel.check_dispatch`:
the cycle model under the device's one-pending-instruction-per-engine
dispatch and under the golden model's unbounded queues).

FLOPs and utilisation (:func:`attention_flops`, :func:`utilisation`) are
defined here once, for ``fsa run`` (:class:`fsa.engines.Result`), ``fsa
predict`` and the benchmarks: utilisation counts the *useful* matmul FLOPs,
``4 d`` per (query, key) pair that the causal mask keeps, over the array's
peak ``2 R C`` FLOPs per cycle.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fsa import config as fconfig
from fsa.config import FSAConfig
from fsa.kernel import Input, KernelBuilder, KernelError, MemTile, Program, kernel

__all__ = ["attention", "flash_attention", "buffer_plan", "check_attention_shape", "head_map",
           "attention_flops", "utilisation"]


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
    seq_q = Q.rows if seq_q is None else seq_q
    seq_kv = K.rows if seq_kv is None else seq_kv
    heads, kv_map = check_head_tiles(k, Q, K, Vt, seq_q, seq_kv, kv_map)
    Ot = k.alloc_mem((R, heads * seq_q), cfg.a_type, "Ot", role="output")
    k.view("V", Vt)
    k.view("O", Ot)
    q_blocks = Q.split(C, axis=0)           # [C, d], head h's from h * seq_q / C on
    k_blocks = K.split(R, axis=0)           # [R, d], kv head g's from g * seq_kv / R on
    v_blocks = Vt.split(R, axis=1)          # [d, R], likewise
    o_blocks = Ot.split(C, axis=1)          # [d, C], like q_blocks
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
        check: run :func:`fsa.kernel.check_dispatch` (deadlocks and semaphore races in
            the cycle model: six runs, two dispatch modes x three DMA timings).
        kernel: "reference" (this module's kernel) or "ud" (:mod:`fsa.kernels_ud`);
            None picks "ud" on a config with ``dataflow = "ud"``, else "reference".
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
        A :class:`~fsa.kernel.Program` with inputs ``Q [heads seq_q, R]``,
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
    if which == "ud":   # issue 15
        from fsa import kernels_ud
        prog = kernels_ud.attention(cfg, seq_q, seq_kv, causal, check, heads=heads,
                                    kv_heads=kv_heads, kv_map=kv_map)
        if scale is not None:
            e_bits, a_bits = fconfig.scale_bits(cfg, scale)
            prog = Program(prog.cfg, prog.name, prog.instructions, prog.tensors, prog.views,
                           prog.meta, prog.spad_rows, prog.acc_rows, prog.semaphores,
                           dict(prog.settings, scale_e=e_bits, scale_a=a_bits))
        return sign_attention(prog)
    check_attention_shape(cfg, seq_q, seq_kv, causal)
    kv_map, kv_heads = head_map(heads, kv_heads, kv_map)
    R = cfg.sa_rows
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
    if cfg.dataflow == "ud" and kernel is None:        # the fallback above
        prog.meta.update(kernel="reference",
                         kernel_why="the UD kernel has no key mask (padded keys)")
    return sign_attention(prog)


#: the meta facts the golden model's fast attention path computes from
FAST_META = ("kind", "seq_q", "seq_kv", "heads", "kv_heads", "kv_map", "causal")


def attention_signature(prog: Program) -> str:
    """A digest of what the fast golden path relies on: the instruction
    words, the config, the memory layout and the :data:`FAST_META` facts.
    (Not the ``mask_keys`` bits, which the fast path checks itself: it
    models them on each head's last key block, as ``key_limit`` sets them.)"""
    import dataclasses
    import hashlib
    import json

    from fsa import isa

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


def kernel_for(cfg: FSAConfig, kernel: "str | None", key_limit: "int | None" = None) -> str:
    """The kernel :func:`attention` builds: `kernel`, or (None) "ud" on a
    config with ``dataflow = "ud"``, else "reference"; the UD kernel has no
    key mask, so with `kernel` None a `key_limit` < R picks the reference
    kernel (UD hardware runs its functions unchanged).

    Raises:
        ValueError: an unknown kernel, "ud" on a config of another dataflow
            or with a key mask.
    """
    if kernel not in (None, "reference", "ud"):
        raise ValueError(f"attention: kernel must be 'reference' or 'ud', got {kernel!r}")
    masked = key_limit is not None and key_limit != cfg.sa_rows
    which = kernel or ("ud" if cfg.dataflow == "ud" and not masked else "reference")
    if which == "ud" and cfg.dataflow != "ud":
        raise ValueError(f"attention: the UD kernel needs a config with dataflow 'ud'; "
                         f"{cfg.name} has {cfg.dataflow!r} (use the reference kernel, or a "
                         f"...UdConfig preset)")
    if which == "ud" and masked:
        raise ValueError(f"attention: the UD kernel has no key mask yet: {cfg.name} needs "
                         f"sequences of whole key blocks ({cfg.sa_rows} keys; or causal "
                         f"with S_q <= S_kv)")
    return which


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
