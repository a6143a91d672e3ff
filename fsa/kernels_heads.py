"""The head arguments of the attention kernels' builds (fsa/kernels.py,
fsa/kernels_ud.py), checked against their tiles: a kernel author calling
``flash_attention.build`` / ``flash_attention_ud.build`` directly gets a
KernelError naming the mismatch, never a wrong program."""
from __future__ import annotations

import operator

from fsa.kernel import KernelError

__all__ = ["check_head_tiles"]


def check_head_tiles(k, Q, K, Vt, seq_q, seq_kv, kv_map) -> tuple[int, tuple[int, ...]]:
    """``(heads, kv_map)`` for tiles ``Q [H seq_q, R]``, ``K [G seq_kv, R]``,
    ``Vt [R, G seq_kv]``; KernelError unless the lengths are positive
    multiples of the blocks that divide the tiles and `kv_map` maps each of
    the H query heads to one of the G kv heads."""
    R, C = k.R, k.C
    for name, v, m, n, tile in (("seq_q", seq_q, C, Q.rows, "Q"),
                                ("seq_kv", seq_kv, R, K.rows, "K")):
        try:
            v = operator.index(v) if not isinstance(v, bool) else None
        except TypeError:
            v = None
        if v is None or v <= 0 or v % m or n % v:
            raise KernelError(f"attention: {name} = {(seq_q, seq_kv)[name == 'seq_kv']!r} must be a positive multiple of {m} that "
                              f"divides {tile}'s {n} rows (one head after the other)")
    if Vt.shape != (R, K.rows):
        raise KernelError(f"attention: Vt {Vt.shape} must be [R, K rows] = {(R, K.rows)}")
    heads, kv_heads = Q.rows // int(seq_q), K.rows // int(seq_kv)
    try:
        kv_map = tuple(range(heads)) if kv_map is None else tuple(operator.index(x) for x in kv_map)
    except TypeError:
        raise KernelError(f"attention: kv_map must be a sequence of ints, got {kv_map!r}") from None
    if len(kv_map) != heads or not all(0 <= x < kv_heads for x in kv_map):
        raise KernelError(f"attention: kv_map {kv_map!r} must give each of the {heads} query "
                          f"heads one of the {kv_heads} kv heads (0..{kv_heads - 1})")
    return heads, kv_map
