"""Vectorised bit-exact model of the attention kernel (``fsa.kernels.attention``).

The same arithmetic as :func:`fsa.golden.tile.attention` (and so as the
instruction-level machine, :mod:`fsa.golden.machine`, running the kernel's
program), but organised for speed: every query of the head (of every head,
with a leading heads axis) is one row of a numpy array, and each key block
is processed for all queries at once, in
the hardware's operation order with every rounding point of
``tile.score`` / ``tile.value`` / ``tile.lse_norm_scale`` / ``tile.lse_norm``:

1. ``S``: ``s <- RNE_A(q[r] k[r] + s)`` for ``r = R-1 .. 0``, from +0;
2. CMP: ``S`` rounded to E, masked (causal, diagonal block; keys
   ``>= key_limit`` of the last key block when ``key_limit`` is given), running max
   over the previous max then keys ``0 .. R-1`` (NaN sticky and canonical,
   ties keep the first operand, so a zero's sign is the first zero's);
3. PE: ``x1 = RNE_E(s_e - m)``, ``x = RNE_E(x1 sc_E + 0)``, ``p = exp2(x)``
   (``sc_E``, ``sc_A``: the scale registers, ``scale_bits``);
4. row sum ``RNE_A(p_j + rs)`` for keys ``R-1 .. 0``;
5. ``scale = exp2(RNE_A(RNE_A(m_old - m) sc_A + 0))``,
   ``l = RNE_A(scale l + rs)``;
6. ``o <- RNE_A(p_j v_j + o)`` for keys ``R-1 .. 0``, then
   ``O = RNE_A(scale O + o)``;
7. at the end ``scale = RNE_A(1 / l)``, ``O = RNE_A(scale O + 0)``.

A query block ``i`` of the kernel sees key blocks ``0 .. last(i)`` (all of
them, or ``0 .. min(i, n_kb - 1)`` when causal, the diagonal block masked),
so with the causal mask key block ``j`` updates the query rows from
``j C`` on.  Without the mask, key blocks are taken in groups (working
arrays of about :data:`GROUP_ELEMENTS` elements): steps 1-4, the scale of
step 5 and the products of step 6 depend on the earlier blocks only through
the running max, which is carried block by block; ``l`` and ``O`` are then
updated block after block.  The state per query (maxima, ``l``, ``O``) is a
few arrays of ``seq_q`` rows: memory is ``O((seq_q + seq_kv) d)``.

The roundings use :mod:`fsa.numerics.fast` (float64 values rounded by
numpy's casts, with the exact path for the rare double-rounding cases).
For 16-bit E the two PE steps after the subtraction and the exp2 form a
function of the 16-bit ``x1``; it is tabulated once per (E, A, P, scale)
with the exact path (:func:`fsa.numerics.fma`, :func:`fsa.numerics.exp2_pwl`).
The ACC scale's exp2 and the final reciprocal (one value per query and key
block, or per query) use the exact path.
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.hw.regs import check_setting
from fsa.numerics import fast as nf

__all__ = ["attention", "key_block_steps"]

#: elements (queries x keys) of the working arrays of one group of key blocks
GROUP_ELEMENTS = 1 << 15
#: fp16 x fp16 products accumulated in fp32 are computed in numpy float32
#: (:func:`_mac32`): the same bits, see there (False: the float64 path)
FLOAT32_MACS = True


def _u(fmt) -> type:
    return np.uint16 if nx.get_format(fmt).width == 16 else np.uint32


@lru_cache(maxsize=16)
def _pe_table(e: str, a: str, pieces: int, sc_bits: int) -> np.ndarray:
    """float64 values of ``exp2_pwl(RNE_E(x1 * sc_E + 0))`` for every 16-bit x1
    (the exact path, all 65536 patterns)."""
    x1 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = nx.fma(x1, np.uint16(sc_bits), _u(a)(0), mul=e, acc=a, out="elem")
    p = nx.exp2_pwl(x, e, pieces, a, out="elem")
    return nx.to_float64(p, e)


def key_block_steps(cfg: FSAConfig, seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query block, key block) steps the kernel runs (its ``key_blocks``)."""
    n_qb, n_kb = seq_q // cfg.sa_cols, seq_kv // cfg.sa_rows
    return sum(min(i, n_kb - 1) + 1 for i in range(n_qb)) if causal else n_qb * n_kb


def _block_maxima(s: np.ndarray) -> np.ndarray:
    """The CMP's maximum over each key block, ``s`` of shape (heads, queries,
    blocks, keys) in arrival order: NaN if any is NaN, and among equal zeros the first
    one (``nx.maximum`` keeps its first operand unless the next is greater)."""
    bm = np.max(s, axis=-1)                          # NaN if any NaN
    zero = bm == 0
    if zero.any():                                   # the sign of the first zero in the block
        where = np.nonzero(zero)
        blocks = s[where]
        bm[where] = blocks[np.arange(len(blocks)), np.argmax(blocks == 0, axis=-1)]
    return bm


def _running_max(prev: np.ndarray, bm: np.ndarray) -> np.ndarray:
    """``nx.maximum(prev, bm)`` on float64 values (the first operand unless
    the second is greater; NaN sticky)."""
    out = np.where(bm > prev, bm, prev)
    return np.where(np.isnan(bm) | np.isnan(prev), np.nan, out)


def attention(cfg: FSAConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
              causal: bool = False, progress=None, scale_bits: "tuple[int, int] | None" = None,
              key_limit: "int | None" = None) -> np.ndarray:
    """FlashAttention forward as the attention kernel computes it, bit for bit.

    Args:
        cfg: the config (d = R).
        q: (seq_q, R) E bits; k, v: (seq_kv, R) E bits; seq_q a multiple of C,
            seq_kv of R. With a leading heads axis, (H, seq_q, R) and
            (H, seq_kv, R), all heads are computed together (each exactly as
            alone).
        causal: the kernel's causal mask (needs R == C; seq_q and seq_kv may
            differ: query block i sees key blocks 0 .. min(i, n_kb - 1)).
        progress: optional ``progress(done, total)`` (key-block steps of all
            heads, see :func:`key_block_steps`), called about every 5 seconds.
        scale_bits: ``(scale_e, scale_a)``, the scale registers
            (``fsa.config.scale_bits(cfg, s)`` for a softmax scale ``s``);
            None: their reset values (log2(e)/sqrt(R)).
        key_limit: None, or the ``key_limit`` register (0..R) of a kernel
            that sets ``mask_keys`` on the last key block (padded keys): the
            keys ``>= key_limit`` of that block are masked for every query
            (together with the causal mask where both apply).

    Returns:
        O: (seq_q, R) A bits, or (H, seq_q, R).
    """
    R, C = cfg.sa_rows, cfg.sa_cols
    q, k, v = (np.asarray(x) for x in (q, k, v))
    one = q.ndim == 2
    if one:
        q, k, v = q[None], k[None], v[None]
    if q.ndim != 3 or k.ndim != 3:
        raise ValueError(f"attention: need q (seq_q, {R}), k and v (seq_kv, {R}), optionally "
                         f"with a leading heads axis; got {q.shape}, {k.shape}, {v.shape}")
    H, sq, skv = q.shape[0], q.shape[1], k.shape[1]
    if q.shape != (H, sq, R) or k.shape != (H, skv, R) or v.shape != (H, skv, R):
        raise ValueError(f"attention: need q (seq_q, {R}), k and v (seq_kv, {R}), optionally "
                         f"with a leading heads axis; got {q.shape}, {k.shape}, {v.shape}")
    if sq == 0 or skv == 0 or sq % C or skv % R:
        raise ValueError(f"seq_q must be a positive multiple of {C} and seq_kv of {R}; "
                         f"got {sq}, {skv}")
    if causal and R != C:
        raise ValueError("causal attention needs a square array (R == C)")
    if scale_bits is None:
        scale_bits = (cfg.attention_scale_bits(cfg.e_type), cfg.attention_scale_bits(cfg.a_type))
    scale_bits = (check_setting(cfg, "scale_e", scale_bits[0]),
                  check_setting(cfg, "scale_a", scale_bits[1]))
    if key_limit is not None:
        key_limit = check_setting(cfg, "key_limit", key_limit)
    with np.errstate(invalid="ignore", over="ignore"):   # inf - inf, inf * 0: NaN, as modelled
        o = _attention(cfg, q, k, v, bool(causal), progress, scale_bits, key_limit)
    return o[0] if one else o


def _mac32(xs, ys) -> np.ndarray:
    """``RNE_fp32(... (x[R-1] y[R-1] + 0) + ... + x[0] y[0])`` for fp16 values
    (float32 arrays), the multiply-add chain of :func:`_attention` with E =
    fp16 and A = fp32, computed in float32: a product of two fp16 numbers
    (11-bit significands, exponents in [-24, 15]) is exact in fp32, and each
    float32 addition is the correctly rounded (RNE) sum, which is what
    ``nf.add_round(p, c, "fp32", trap_free=True)`` gives (those sums are
    trap-free: two operands of at most 24 bits, the addend an fp32 number;
    fsa.numerics.fast); the first step adds +0 as the float64 path does
    (-0 + 0 = +0); inf and NaN follow IEEE in both."""
    acc = xs[-1] * ys[-1] + np.float32(0.0)
    for x, y in zip(xs[-2::-1], ys[-2::-1]):
        acc += x * y
    return acc


def _attention(cfg: FSAConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool,
               progress, scale_bits: tuple[int, int], key_limit: "int | None") -> np.ndarray:
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    E = cfg.e_fmt
    H, sq, skv = q.shape[0], q.shape[1], k.shape[1]
    n_kb = skv // R
    qv = nx.to_float64(q.astype(_u(e), copy=False), e)
    qt = np.ascontiguousarray(qv.transpose(2, 0, 1))  # qt[r] = element r of every query
    kv = nx.to_float64(k.astype(_u(e), copy=False), e)
    vv = nx.to_float64(v.astype(_u(e), copy=False), e)
    sc_e_bits, sc_a_bits = scale_bits
    sc_e = float(nx.to_float64(sc_e_bits, e))
    sc_a = float(nx.to_float64(sc_a_bits, a))
    table = _pe_table(e, a, P, sc_e_bits) if E.width == 16 else None
    # products of two E values accumulated in A: at most A's precision each (no
    # double-rounding trap, fsa.numerics.fast); A x A products are checked
    prod_ok = 2 * E.precision <= cfg.a_fmt.precision
    mask = np.arange(R)[None, :] > np.arange(C)[:, None]     # (C, R): key k > query c
    f32 = FLOAT32_MACS and e == "fp16" and a == "fp32"
    if f32:
        qt32, kv32, vv32 = (x.astype(np.float32) for x in (qt, kv, vv))

    new_max = np.full((H, sq), -np.inf)              # CMP maxima (old = new between blocks)
    l = np.zeros((H, sq))
    o_t = np.zeros((H, sq, R))                       # O, one row per query
    total = H * key_block_steps(cfg, sq, skv, causal)
    # key blocks in groups, so that short query sequences still make large
    # arrays; the causal mask changes the rows per key block: one at a time
    g_max = 1 if causal else max(1, GROUP_ELEMENTS // (H * sq * R))
    done = j = 0
    next_report = time.monotonic() + 5.0
    while j < n_kb:
        lo = j * C if causal else 0                  # causal: query blocks i >= j
        if lo >= sq:
            break
        G, n = min(g_max, n_kb - j), sq - lo
        kb = kv[:, j * R:(j + G) * R]                # (H, G R, R): the group's keys
        vb = vv[:, j * R:(j + G) * R].reshape(H, G, R, R)   # vb[h, g, key, i]
        # 1. scores, partial sums flowing up from row R-1: (H, n, G R)
        if f32:
            kb32 = kv32[:, j * R:(j + G) * R]
            s = _mac32([qt32[r, :, lo:, None] for r in range(R)],
                       [kb32[:, None, :, r] for r in range(R)]).astype(np.float64)
        else:
            s = nf.add_round(qt[R - 1, :, lo:, None] * kb[:, None, :, R - 1], 0.0, a,
                             trap_free=True)
            for r in range(R - 2, -1, -1):
                s = nf.add_round(qt[r, :, lo:, None] * kb[:, None, :, r], s, a,
                                 trap_free=prod_ok)
        # 2. CMP: to E, mask, running max (block by block)
        s_e = (nf.round_values(s, e) if e != a else s).reshape(H, n, G, R)
        if causal:
            s_e[:, :C, 0][:, mask] = -np.inf
        if key_limit is not None and j + G == n_kb:     # the last key block: padded keys
            s_e[:, :, G - 1, key_limit:] = -np.inf
        bm = _block_maxima(s_e)
        om, nm = np.empty((H, n, G)), np.empty((H, n, G))
        m = new_max[:, lo:]
        for g in range(G):
            om[..., g] = m
            m = nm[..., g] = _running_max(m, bm[..., g])
        new_max[:, lo:] = m
        # 3. PE: x1 = s_e - m (to E), then x = x1 * sc_E, p = exp2(x)
        if table is not None:
            x1 = nf.add_round(s_e, -nm[..., None], e, trap_free=True, bits=True)
            p = table[x1]
        else:
            x1 = nf.add_round(s_e, -nm[..., None], e, trap_free=True)
            x = nf.add_round(x1 * sc_e, 0.0, e, trap_free=True, bits=True)
            p = nx.to_float64(nx.exp2_pwl(x, e, P, a, out="elem"), e)
        # 4. row sums, keys R-1 .. 0
        if f32:
            p32 = p.astype(np.float32)
            ones = [np.float32(1.0)] * R       # (x 1: exact) the same chain of sums
            rs = _mac32([p32[..., jj] for jj in range(R)], ones).astype(np.float64)
        else:
            rs = nf.add_round(p[..., R - 1], 0.0, a, trap_free=True)
            for jj in range(R - 2, -1, -1):
                rs = nf.add_round(p[..., jj], rs, a, trap_free=True)
        # 5. the ACC scale of every block (exact path: per query and block)
        md = nf.add_round(om, -nm, a, trap_free=True)
        s1 = nf.add_round(md * sc_a, 0.0, a, trap_free=True, bits=True)
        scale = nx.to_float64(nx.exp2_pwl(s1, a, P, a, out="acc"), a)
        # 6. P V of every block, keys R-1 .. 0
        if f32:
            vb32 = vv32[:, j * R:(j + G) * R].reshape(H, G, R, R)
            o = _mac32([p32[..., jj, None] for jj in range(R)],
                       [vb32[:, None, :, jj, :] for jj in range(R)]).astype(np.float64)
        else:
            o = nf.add_round(p[..., R - 1, None] * vb[:, None, :, R - 1, :], 0.0, a,
                             trap_free=True)
            for jj in range(R - 2, -1, -1):
                o = nf.add_round(p[..., jj, None] * vb[:, None, :, jj, :], o, a,
                                 trap_free=prod_ok)
        # 5./6. l and O, block after block (the first key block reads zeros)
        for g in range(G):
            first = j + g == 0
            l[:, lo:] = nf.add_round(scale[..., g] * (0.0 if first else l[:, lo:]), rs[..., g], a)
            o_t[:, lo:] = nf.add_round(scale[..., g, None] * (0.0 if first else o_t[:, lo:]),
                                       o[:, :, g], a)
            done += H * (n // C)
            if progress is not None and time.monotonic() >= next_report:
                progress(done, total)
                next_report = time.monotonic() + 5.0
        j += G
    # 7. normalisation
    lb = nf.to_bits(l, a)
    rec = nx.to_float64(nx.reciprocal(lb, a), a)
    return nf.add_round(rec[..., None] * o_t, 0.0, a, trap_free=True, bits=True)
