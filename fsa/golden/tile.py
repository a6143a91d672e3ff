"""Tile-level bit-exact model of the array (docs/array.md, "Data layout and
the order of every rounding").

One query block (C queries, array columns) against one key block (R keys,
array rows), in the hardware's operation order, every rounding point
included. Values are raw bit patterns (uint16 / uint32 numpy arrays) in the
config's formats. This is what the array bench compares with, and the heart
of the instruction-level model.

Shapes (math orientation):
    q: (C, R)   queries of the block, q[c] = query in column c
    k: (R, R)   keys, k[j] = key j (the j-th K row read)
    v: (R, R)   values, v[j] = value of key j
    o_t: (R, C) O transposed as kept in the accumulator SRAM
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fsa import numerics as nx
from fsa.config import FSAConfig


def _u(fmt) -> type:
    return np.uint16 if nx.get_format(fmt).width == 16 else np.uint32


@dataclass
class TileState:
    """What persists between key blocks for one query block: the CMP row's
    maxima, the ACC row's scale, and the acc SRAM rows (l and O^T)."""

    cfg: FSAConfig
    new_max: np.ndarray = field(default=None)    # (C,) A
    old_max: np.ndarray = field(default=None)    # (C,) A
    scale: np.ndarray = field(default=None)      # (C,) A
    l: np.ndarray = field(default=None)          # (C,) A, acc row of the running sum
    o_t: np.ndarray = field(default=None)        # (R, C) A

    def __post_init__(self) -> None:
        c = self.cfg
        A = c.a_fmt
        ua = _u(c.a_type)
        neg_inf = A.sign_mask | A.pos_inf
        if self.new_max is None:
            self.new_max = np.full(c.sa_cols, neg_inf, ua)
        if self.old_max is None:
            self.old_max = np.full(c.sa_cols, neg_inf, ua)
        if self.scale is None:
            self.scale = np.full(c.sa_cols, A.one, ua)
        if self.l is None:
            self.l = np.zeros(c.sa_cols, ua)
        if self.o_t is None:
            self.o_t = np.zeros((c.sa_rows, c.sa_cols), ua)

    def reset_max(self) -> None:
        """CMP RESET."""
        A = self.cfg.a_fmt
        neg_inf = A.sign_mask | A.pos_inf
        self.new_max[:] = neg_inf
        self.old_max[:] = neg_inf


@dataclass
class ScoreTrace:
    """Intermediate values of one ATTENTION_SCORE (for benches and debugging)."""

    s: np.ndarray        # (C, R) A   S[c][k]
    s_e: np.ndarray      # (C, R) E   scores rounded to E (-inf where masked)
    x: np.ndarray        # (C, R) E   (s - m) * scale, the exp2 argument
    p: np.ndarray        # (C, R) E   exp2 results: the PE registers after exp2
    rowsum: np.ndarray   # (C,) A
    max_diff: np.ndarray  # (C,) A
    scale: np.ndarray    # (C,) A     the ACC scale after EXP_S2


def causal_mask(R: int, C: int, offset: int = 0) -> np.ndarray:
    """(C, R) bool: key k masked for the query in column c when k > c + offset."""
    return np.arange(R)[None, :] > (np.arange(C)[:, None] + offset)


def key_mask(R: int, C: int, key_limit: int) -> np.ndarray:
    """(C, R) bool: key k masked (every column) when k >= key_limit (the
    ``mask_keys`` flag with the ``key_limit`` register)."""
    return np.broadcast_to(np.arange(R)[None, :] >= key_limit, (C, R))


def _scales(cfg: FSAConfig, scale_bits) -> tuple[int, int]:
    """(E bits, A bits) of the scale: `scale_bits` or the reset values."""
    if scale_bits is None:
        return cfg.attention_scale_bits(cfg.e_type), cfg.attention_scale_bits(cfg.a_type)
    se, sa = scale_bits
    return int(se), int(sa)


def score(state: TileState, q: np.ndarray, k: np.ndarray, *, zero: bool = False,
          causal: bool = False, key_limit: "int | None" = None,
          scale_bits: "tuple[int, int] | None" = None) -> ScoreTrace:
    """ATTENTION_SCORE of one key block; updates the state (max, scale, l).

    Args:
        state: the query block's state.
        q: (C, R) E bits; k: (R, R) E bits.
        zero: the acc field's zero bit (first key block: l_old reads 0).
        causal: mask key k > query c (the diagonal block, R == C).
        key_limit: None, or mask every key k >= key_limit (the ``mask_keys``
            flag with the ``key_limit`` register); with `causal`, both masks.
        scale_bits: (E bits, A bits) of the scale registers ``scale_e`` and
            ``scale_a`` (fsa/hw/regs.py); None: their reset values.
    """
    cfg = state.cfg
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    E, A = cfg.e_fmt, cfg.a_fmt
    ue, ua = _u(e), _u(a)
    q = np.asarray(q, ue)
    k = np.asarray(k, ue)
    if q.shape != (C, R) or k.shape != (R, R):
        raise ValueError(f"score: q must be (C, R) = ({C}, {R}) and k ({R}, {R}); "
                         f"got {q.shape} and {k.shape}")
    # 1. S: partial sums flow up, row R-1 first
    s = np.zeros((C, R), ua)
    for r in range(R - 1, -1, -1):
        s = nx.fma(q[:, r][:, None], k[:, r][None, :], s, mul=e, acc=a)
    # 2. CMP: round to E, mask, running max over E values in arrival order
    s_e = nx.convert(s, a, e) if e != a else s.copy()
    masked = np.zeros((C, R), bool)
    if causal:
        masked |= causal_mask(R, C)
    if key_limit is not None:
        masked |= key_mask(R, C, key_limit)
    if masked.any():
        s_e = np.where(masked, ue(E.sign_mask | E.pos_inf), s_e).astype(ue)
    s_e_a = nx.convert(s_e, e, a) if e != a else s_e
    new_max = state.new_max.copy()
    for j in range(R):
        new_max = nx.maximum(new_max, s_e_a[:, j], a)
    state.new_max = new_max
    neg_m = np.where(_is_nan(new_max, A), ua(A.canonical_nan), new_max ^ ua(A.sign_mask)).astype(ua)
    # 3. PE: reg*1 - m (to E), reg*scale + 0 (to E), exp2
    one_e = ue(E.one)
    x1 = nx.fma(s_e, one_e, neg_m[:, None], mul=e, acc=a, out="elem")
    sc_e_bits, sc_a_bits = _scales(cfg, scale_bits)
    sc_e = ue(sc_e_bits)
    x = nx.fma(x1, sc_e, ua(0), mul=e, acc=a, out="elem")
    p = nx.exp2_pwl(x, e, P, a, out="elem")
    # 4. row sum, top row first: keys R-1 .. 0
    rs = np.zeros(C, ua)
    for j in range(R - 1, -1, -1):
        rs = nx.fma(p[:, j], one_e, rs, mul=e, acc=a)
    # 5. CMP max difference; ACC scale and l
    max_diff = nx.sub(state.old_max, new_max, a)
    state.old_max = new_max.copy()
    s1 = nx.fma(max_diff, ua(sc_a_bits), ua(0), mul=a, acc=a)
    state.scale = nx.exp2_pwl(s1, a, P, a, out="acc")
    l_old = np.zeros(C, ua) if zero else state.l
    state.l = nx.fma(state.scale, l_old, rs, mul=a, acc=a)
    return ScoreTrace(s, s_e, x, p, rs, max_diff, state.scale.copy())


def value(state: TileState, p: np.ndarray, v: np.ndarray, *, zero: bool = False) -> np.ndarray:
    """ATTENTION_VALUE of one key block: O^T <- scale * O^T + P V (in place).

    Args:
        p: (C, R) E bits, the exp2 results (ScoreTrace.p).
        v: (R, R) E bits, v[j] = value of key j.
        zero: first key block (O_old reads 0).

    Returns:
        The new O^T, (R, C) A bits.
    """
    cfg = state.cfg
    R, C = cfg.sa_rows, cfg.sa_cols
    e, a = cfg.e_type, cfg.a_type
    ue, ua = _u(e), _u(a)
    p = np.asarray(p, ue)
    v = np.asarray(v, ue)
    if p.shape != (C, R) or v.shape != (R, R):
        raise ValueError(f"value: p must be (C, R) = ({C}, {R}) and v ({R}, {R})")
    o_t = value_products(cfg, p, v)
    o_old = np.zeros((R, C), ua) if zero else state.o_t
    state.o_t = nx.fma(state.scale[None, :], o_old, o_t, mul=a, acc=a)
    return state.o_t


def value_products(cfg: FSAConfig, p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The P V part of :func:`value` (before ``scale * O^T_old`` is added):
    (R, C) A bits, row i = output dimension i."""
    R, C = cfg.sa_rows, cfg.sa_cols
    e, a = cfg.e_type, cfg.a_type
    p, v = np.asarray(p, _u(e)), np.asarray(v, _u(e))
    o = np.zeros((C, R), _u(a))                  # o[c][i]
    for j in range(R - 1, -1, -1):               # top row first: keys R-1 .. 0
        o = nx.fma(p[:, j][:, None], v[j][None, :], o, mul=e, acc=a)
    return o.T


def lse_norm_scale(state: TileState) -> None:
    """ATTENTION_LSE_NORM_SCALE: scale <- 1 / l."""
    state.scale = nx.reciprocal(state.l, state.cfg.a_type)


def lse_norm(state: TileState) -> np.ndarray:
    """ATTENTION_LSE_NORM: CMP reset; O^T <- scale * O^T + 0."""
    a = state.cfg.a_type
    state.reset_max()
    state.o_t = nx.fma(state.scale[None, :], state.o_t, _u(a)(0), mul=a, acc=a)
    return state.o_t


def _is_nan(bits: np.ndarray, f) -> np.ndarray:
    b = bits.astype(np.uint64)
    man = (1 << f.man_bits) - 1
    return ((b & f.pos_inf) == f.pos_inf) & ((b & man) != 0)


def attention(cfg: FSAConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
              causal: bool = False, scale_bits: "tuple[int, int] | None" = None,
              key_limit: "int | None" = None) -> np.ndarray:
    """FlashAttention forward with the tile model (the reference kernel's loop).

    Args:
        q: (seq_q, d) E bits; k, v: (seq_kv, d) E bits; d = R; seq_q a multiple
            of C, seq_kv a multiple of R.
        causal: causal mask (needs R == C and seq_q == seq_kv).
        scale_bits: (scale_e, scale_a) register values; None: the reset ones.
        key_limit: None, or the ``key_limit`` register for a kernel that sets
            ``mask_keys`` on the last key block (padded keys): its keys
            ``>= key_limit`` are masked, for every query block.

    Returns:
        O: (seq_q, d) A bits.
    """
    R, C = cfg.sa_rows, cfg.sa_cols
    sq, d = q.shape
    skv = k.shape[0]
    if d != R or k.shape != (skv, R) or v.shape != (skv, R):
        raise ValueError(f"attention: need q (seq_q, {R}), k and v (seq_kv, {R}); got "
                         f"{q.shape}, {k.shape}, {v.shape}")
    if sq % C or skv % R:
        raise ValueError(f"seq_q must be a multiple of {C} and seq_kv of {R}; got {sq}, {skv}")
    if causal and (R != C or sq != skv):
        raise ValueError("causal attention needs a square array (R == C) and seq_q == seq_kv")
    out = np.zeros((sq, R), _u(cfg.a_type))
    for i in range(sq // C):
        st = TileState(cfg)
        qi = q[i * C:(i + 1) * C]
        last = i if causal else skv // R - 1
        for j in range(last + 1):
            kj, vj = k[j * R:(j + 1) * R], v[j * R:(j + 1) * R]
            kl = key_limit if j == skv // R - 1 else None
            tr = score(st, qi, kj, zero=(j == 0), causal=(causal and j == i), key_limit=kl,
                       scale_bits=scale_bits)
            value(st, tr.p, vj, zero=(j == 0))
        lse_norm_scale(st)
        lse_norm(st)
        out[i * C:(i + 1) * C] = st.o_t.T
    return out
