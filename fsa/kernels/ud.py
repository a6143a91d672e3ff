"""The FlashAttention forward kernel for the UD dataflow (docs/ud.md).

Same tensors and results as :func:`fsa.kernels.attention` (``Q [seq_q, d]``,
``K [seq_kv, d]``, ``Vt [d, seq_kv]``, output ``Ot [d, seq_q]``, views ``V``
and ``O``; bit for bit the reference kernel's output), built from the UD
functions of a config with ``dataflow = "ud"``:

* the key-block steps ``t = (i, j)`` of all query blocks are one pipeline:
  matrix instruction ``n`` runs the K part of step ``n`` and the PV part of
  step ``n - 1`` (KSTEP for ``n = 0``, STEP, PVSTEP for the last), so the
  pipeline also runs across query blocks: ``LOAD_Q(i + 1)`` comes right
  after the STEP holding the last K part of block ``i`` (``qreg`` is free),
  and the STEP after it carries block ``i``'s last PV part together with the
  first K part of block ``i + 1`` (``reset_max``);
* block ``i``'s normalisation: with two accumulator sets (the presets) the
  non-blocking ``NORM_SCALE(i)`` and ``NORM(i)`` (the ACC's second scale
  register, the controller's third slot), each right before a later STEP or
  PVSTEP, their partner, in whose free ACC window they run (docs/ud.md),
  and the store of its ``O^T`` tile two instructions after ``NORM(i)``;
  with one set (or a query block of one key block), right after the
  instruction holding block ``i``'s last PV part, the blocking
  ``ATTENTION_LSE_NORM_SCALE(i)``, ``ATTENTION_LSE_NORM(i)`` and the store.

Buffers: one Q tile (C rows: LOAD_Q copies it into the PEs, so the next
block's Q loads while this one runs: in the DMA stream with the loads of
the block's middle step, ``L // 2`` of its ``L`` steps, away from the
previous block's O store near its start, so that the two big transfers of
a query block do not take their time from the same few steps: measured at
N = 4096, 128x128 fp32 UD +4.8 % -> +2.7 % over a free DMA, 16x16 and
32x32 fp16 UD +0.9 / +1.9 % -> +0.5 / +1.0 %; 4x4 fp16 UD +1.1 -> +1.3 %); ``slots`` KV slots of 2R rows (as many
as the scratchpad holds besides Q, at most 4): instruction ``n`` reads slot
``n % slots``, rows ``0..R-1`` K of step ``n`` and rows ``R..2R-1`` V^T of
step ``n - 1`` (a PVSTEP reads only the second half).  Accumulator: ``l``
and the R rows of ``O^T`` in one tile of ``1 + R`` rows (a UD STEP's acc walk
is ``l`` then ``O^T``), two sets when the accumulator holds them.

Semaphores (each use acquires the current value and releases the next):

* Q, id 0 (n = 2): ``load Q(i)`` 0 -> 1, ``LOAD_Q(i)`` 1 -> 0.
* slot ``b``, id ``1 + b`` (n = 8): ``load K``, ``load V^T``, then the
  instruction reading the slot, which releases it with ``early_release``
  (after its last scratchpad read, not after its ACC writes), so the next
  loads into the slot overlap the rest of the instruction.  With one accumulator set, the first PV
  part of block ``i + 1`` must follow the store of block ``i``: the token
  of its slot passes through ``ATTENTION_LSE_NORM(i)`` and ``STORE(i)``.
* accumulator set ``a``, id ``6 + a`` (n = 4): ``NORM(i)`` -> ``STORE(i)``
  (block ``i + 2``'s first PV part, which zeroes the tile again, comes after
  the store because the store precedes that instruction's loads in program
  order and the DMA finishes in order); with the blocking pair as in the
  reference kernel (``LSE_NORM(i)`` -> ``STORE(i)`` -> ``LSE_NORM_SCALE(i+1)``),
  with one set only the last block's ``LSE_NORM`` -> ``STORE`` pair.

The program ends with ``Fence(mx, dma, stop)``; :func:`fsa.kernel_lang.check_dispatch`
proves it free of deadlocks and races at build time.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from fsa import config as fconfig
from fsa import dataflows
from fsa.config import FSAConfig
from fsa.hw import timing
from fsa.hw.isa import UD_MX_FUNCS
from fsa.isa import Matrix, MxFunc
from fsa.kernel_lang import (AccTile, Input, KernelBuilder, KernelError, MemTile, Program,
                             SpadTile, kernel)
from fsa.kernels.common import attention_io, check_attention_shape, head_map
from fsa.plan_ud import period

__all__ = ["LABEL", "refuse", "attention", "flash_attention_ud", "buffer_plan", "mx_load_q",
           "mx_step", "mx_norm_scale", "mx_norm"]

#: how messages name this kernel
LABEL = "UD"

MAX_SLOTS = 4


def buffer_plan(cfg: FSAConfig) -> dict[str, int]:
    """Q tiles, KV slots (2R rows each) and accumulator sets the SRAMs hold."""
    R, C = cfg.sa_rows, cfg.sa_cols
    slots = max(1, min(MAX_SLOTS, (cfg.spad_rows - C) // (2 * R)))
    return {"q": 1, "slots": slots, "acc": 2 if cfg.acc_rows >= 2 * (1 + R) else 1}


def _has_ud_funcs(cfg: FSAConfig) -> bool:
    return set(UD_MX_FUNCS) <= set(dataflows.get(cfg).funcs)


def refuse(cfg: FSAConfig, masked: bool) -> "str | None":
    """Why this kernel cannot run on `cfg` (hardware without the UD
    functions, or a key mask: it has none yet), or None."""
    if not _has_ud_funcs(cfg):
        return (f"the UD kernel needs a config with dataflow 'ud'; {cfg.name} has "
                f"{cfg.dataflow!r} (use the reference kernel, or a ...UdConfig preset)")
    if masked:
        return (f"the UD kernel has no key mask yet: {cfg.name} needs sequences of whole key "
                f"blocks ({cfg.sa_rows} keys; or causal with S_q <= S_kv)")
    return None


def _need_ud(k: KernelBuilder, what: str) -> None:
    if not _has_ud_funcs(k.cfg):
        raise KernelError(f"{what}: the UD functions need a config with dataflow 'ud'; "
                          f"{k.cfg.name} has {k.cfg.dataflow!r}")


def mx_load_q(k: KernelBuilder, q: SpadTile, sem=None, *, acquire=None, release=None) -> Matrix:
    """LOAD_Q: C scratchpad rows into the PEs' ``qreg``; read ``i`` lands in
    column ``C-1-i`` (pass the Q tile reversed, as for LOAD_STATIONARY)."""
    what = f"mx_load_q({getattr(q, 'label', q)})"
    _need_ud(k, what)
    t = k._sram(what, "the Q tile", q, SpadTile, k.C, "C")
    return k._mx(what, MxFunc.LOAD_Q, sem, acquire, release, spad_addr=t.first,
                 spad_stride=k._stride(what, "spad_stride", t), rev_input=True, delay_output=True)


def mx_step(k: KernelBuilder, func: MxFunc, kv: SpadTile, lo: "AccTile | None", *,
            zero: bool = False, causal: bool = False, reset_max: bool = False,
            early_release: bool = False, sem=None, acquire=None, release=None) -> Matrix:
    """KSTEP (`kv`: R rows of K), STEP (`kv`: 2R rows, K then V^T of the
    previous block) or PVSTEP (`kv`: R rows of V^T); `lo`: the ``1 + R``
    accumulator rows ``l`` and ``O^T`` of the PV part (None for KSTEP).
    ``zero``: the PV part's block is its query block's first; ``causal``:
    mask the K part (diagonal block, R == C); ``reset_max``: the K part's
    block is its query block's first; ``early_release``: release the
    semaphore after the last scratchpad read (the slot is free then)."""
    what = f"mx_step({func.name}, {getattr(kv, 'label', kv)})"
    _need_ud(k, what)
    rows = {MxFunc.KSTEP: k.R, MxFunc.STEP: 2 * k.R, MxFunc.PVSTEP: k.R}[func]
    t = k._sram(what, "the K/V^T tile", kv, SpadTile, rows, f"{rows // k.R}R")
    acc: dict = {}
    if func != MxFunc.KSTEP:
        a = k._sram(what, "the l + O^T tile", lo, AccTile, 1 + k.R, "1 + R")
        acc = dict(acc_addr=a.first, acc_stride=k._stride(what, "acc_stride", a), zero=bool(zero))
    if causal and k.R != k.C:
        raise KernelError(f"{what}: causal masking needs a square array (R == C)")
    return k._mx(what, func, sem, acquire, release, spad_addr=t.first,
                 spad_stride=k._stride(what, "spad_stride", t), rev_input=True, delay_output=True,
                 causal=bool(causal) and func != MxFunc.PVSTEP,
                 reset_max=bool(reset_max) and func != MxFunc.PVSTEP,
                 early_release=bool(early_release), **acc)


def mx_norm_scale(k: KernelBuilder, l: AccTile, sem=None, *, acquire=None, release=None) -> Matrix:
    """NORM_SCALE: ``scale2 <- 1 / l`` (1 acc row; the ACC's second scale
    register), non-blocking: its commands use the free ACC window of the
    STEP or PVSTEP right after it (docs/ud.md)."""
    what = f"mx_norm_scale({getattr(l, 'label', l)})"
    _need_ud(k, what)
    lt = k._sram(what, "the l tile", l, AccTile, 1, "one")
    return k._mx(what, MxFunc.NORM_SCALE, sem, acquire, release, acc_addr=lt.first)


def mx_norm(k: KernelBuilder, o: AccTile, sem=None, *, acquire=None, release=None) -> Matrix:
    """NORM: ``O^T <- scale2 * O^T`` (R acc rows), non-blocking as NORM_SCALE."""
    what = f"mx_norm({getattr(o, 'label', o)})"
    _need_ud(k, what)
    ot = k._sram(what, "the O^T tile", o, AccTile, k.R, "R")
    return k._mx(what, MxFunc.NORM, sem, acquire, release, acc_addr=ot.first,
                 acc_stride=k._stride(what, "acc_stride", ot))


def _norm_gap(cfg) -> int:
    """STEPs between two normalisation instructions so that the first has
    retired (the controller's third slot is free) when the second starts."""
    T = period(cfg.sa_rows, cfg.exp2_pieces)
    ret = max(timing.plan(cfg, f).retire for f in ("NORM_SCALE", "NORM"))
    return max(1, math.ceil((ret + 2) / T))


@kernel
def flash_attention_ud(k: KernelBuilder, Q: MemTile, K: MemTile, Vt: MemTile, *,
                       causal: bool = False, seq_q: int | None = None, seq_kv: int | None = None,
                       kv_map: "tuple[int, ...] | None" = None) -> MemTile:
    """FlashAttention forward on UD hardware of one or more heads: returns
    ``Ot [d, H seq_q]`` (tensors as :func:`fsa.kernels.reference.flash_attention`'s:
    head ``h``'s queries and outputs from row / column ``h seq_q`` on, kv
    head ``g``'s keys and values from ``g seq_kv`` on; query head ``h``
    reads kv head ``kv_map[h]``; one head when `seq_q` / `seq_kv` /
    `kv_map` are left out).  The heads' query blocks are one pipeline, as a
    head's query blocks are."""
    cfg = k.cfg
    R, C = k.R, k.C
    seq_q, seq_kv, heads, kv_map, Ot, q_blocks, k_blocks, v_blocks, o_blocks = attention_io(
        k, Q, K, Vt, seq_q, seq_kv, kv_map)
    plan = buffer_plan(cfg)
    ns, nacc = plan["slots"], plan["acc"]
    q_sp = k.alloc_spad((C, R), "Q")
    kv_sp = [k.alloc_spad((2 * R, R), f"KV{b}") for b in range(ns)]
    lo_acc = [k.alloc_accumulator((1 + R, C), f"lOt{a}") for a in range(nacc)]
    sem_q = k.semaphore(0, 2)
    sem_s = [k.semaphore(1 + b, 8) for b in range(ns)]
    sem_o = [k.semaphore(6 + a, 4) for a in range(nacc)]

    n_qh, n_kb = seq_q // C, seq_kv // R    # query blocks of one head, key blocks of one kv head
    n_qb = heads * n_qh                     # query blocks of the program, head after head

    def last(i: int) -> int:
        """The last key block query block i (of the program) sees."""
        return min(i % n_qh, n_kb - 1) if causal else n_kb - 1

    def kv_block(i: int, j: int) -> int:
        """Index in k_blocks / v_blocks of key block j of query block i's kv head."""
        return kv_map[i // n_qh] * n_kb + j

    steps = [(i, j) for i in range(n_qb) for j in range(last(i) + 1)]
    N = len(steps)
    # The normalisation: with two accumulator sets and at least two key
    # blocks in every query block after the first, the non-blocking
    # NORM_SCALE(i) and NORM(i), each placed right before a STEP / PVSTEP
    # (its partner) at least `gap` instructions after the previous one, and
    # STORE(i) two instructions after NORM(i); all by the deadline that block
    # i + nacc's first PV part sets (its tile is block i's: the STORE must
    # come before the loads of the instruction before that PV part, so that
    # the DMA, which finishes in order, has stored the tile when that PV
    # part's slot token arrives).  Otherwise the blocking pair as before.
    use_norm = nacc >= 2 and all(last(i) >= 1 for i in range(1, n_qb))
    first_pv = {i: n + 1 for n, (i, j) in enumerate(steps) if j == 0}   # instruction of PV(i, 0)
    gap = _norm_gap(cfg)
    fifo: list = []                 # ("NS" | "N", i), in order
    stores: list = []               # (i, emit at instruction)
    last_norm = -gap

    def reuse(i: int) -> float:     # the instruction whose PV part zeroes block i's tile again
        return first_pv.get(i + nacc, math.inf)

    def emit_norm(kind: str, i: int) -> None:
        lo = lo_acc[i % nacc]
        if kind == "NS":
            mx_norm_scale(k, lo[0:1])
        else:
            mx_norm(k, lo[1:1 + R], sem_o[i % nacc])

    def emit_store(i: int) -> None:
        k.store_tile(o_blocks[i], lo_acc[i % nacc][1:1 + R], sem_o[i % nacc])
    k.meta.update(kind="attention", kernel="ud", seq_q=seq_q, seq_kv=seq_kv, d=R,
                  causal=bool(causal), heads=heads, kv_heads=K.rows // seq_kv, kv_map=kv_map,
                  key_blocks=N, buffers=plan)

    # The K load of step n >= 1 and the V^T load of step n - 1 fill one slot
    # for one instruction: the K load only acquires the slot's token and the
    # V^T load right after it only releases it, so both are in flight at once
    # (the DMA finishes instructions in the order it accepts them, so the V^T
    # load's release also says the K rows have landed).
    def load_k(n: int) -> None:
        k.load_tile(kv_sp[n % ns][0:R], k_blocks[kv_block(*steps[n])], sem_s[n % ns],
                    release=(n == 0))

    def load_v(n: int) -> None:          # V^T of step n, read by instruction n + 1
        k.load_tile(kv_sp[(n + 1) % ns][R:2 * R], v_blocks[kv_block(*steps[n])],
                    sem_s[(n + 1) % ns], acquire=(n + 1 == N))

    k.load_tile(q_sp, q_blocks[0], sem_q)
    load_k(0)
    store_sem: dict[int, object] = {}
    for n in range(N + 1):
        kpart = steps[n] if n < N else None
        pv = steps[n - 1] if n >= 1 else None
        if kpart is not None and kpart[1] == 0:
            mx_load_q(k, q_sp.reverse(), sem_q)
        if kpart is not None and kpart[0] + 1 < n_qb and kpart[1] == (last(kpart[0]) + 1) // 2:
            k.load_tile(q_sp, q_blocks[kpart[0] + 1], sem_q)     # the next block's Q
        slot = kv_sp[n % ns]
        lo = lo_acc[pv[0] % nacc] if pv is not None else None
        if pv is not None and pv[1] == 0 and pv[0] > 0 and nacc == 1:
            # the first PV part of a block waits for the store of the previous one
            sem = store_sem[pv[0] - 1]
        else:
            sem = sem_s[n % ns]
        early = dict(early_release=True, sem=sem)     # the slot is free after the last read
        if use_norm and pv is not None and fifo:
            kind, i = fifo[0]
            due = n >= reuse(i) - (2 if kind == "NS" else 1)
            if n - last_norm >= gap or due:
                fifo.pop(0)
                emit_norm(kind, i)
                last_norm = n
                if kind == "N":
                    stores.append((i, min(n + 2, reuse(i) - 2)))
        if kpart is None:
            mx_step(k, MxFunc.PVSTEP, slot[R:2 * R], lo, zero=pv[1] == 0, **early)
        elif pv is None:
            mx_step(k, MxFunc.KSTEP, slot[0:R], None,
                    causal=causal and kpart[0] % n_qh == kpart[1], reset_max=kpart[1] == 0,
                    **early)
        else:
            mx_step(k, MxFunc.STEP, slot, lo, zero=pv[1] == 0,
                    causal=causal and kpart[0] % n_qh == kpart[1], reset_max=kpart[1] == 0,
                    **early)
        for st in [s for s in stores if s[1] < n]:       # due before this one's loads
            stores.remove(st)
            emit_store(st[0])
        if n + 1 < N:
            load_k(n + 1)
        if n < N:
            load_v(n)
        for st in [s for s in stores if s[1] <= n]:
            stores.remove(st)
            emit_store(st[0])
        if use_norm:
            if pv is not None and pv[1] == last(pv[0]):
                fifo += [("NS", pv[0]), ("N", pv[0])]
            continue
        if pv is not None and pv[1] == last(pv[0]):
            i = pv[0]
            a = i % nacc
            relay = sem_o[(i - 1) % 2] if nacc == 2 and i > 0 else None
            k.mx_reciprocal(lo_acc[a][0:1], relay)
            if nacc == 1 and i + 1 < n_qb:
                sem = sem_s[(n + 1) % ns]       # the token of the next PV part's slot
            else:
                sem = sem_o[a]
            k.mx_attn_lse_norm(lo_acc[a][1:1 + R], sem)
            store_sem[i] = sem
            k.store_tile(o_blocks[i], lo_acc[a][1:1 + R], sem)
    for kind, i in fifo:           # after the last PVSTEP: no partner left
        emit_norm(kind, i)
        if kind == "N":
            stores.append((i, 0))
    for i, _ in stores:
        emit_store(i)
    return Ot


def attention(cfg: FSAConfig, seq_q: int, seq_kv: int, causal: bool = False,
              check: bool = True, *, heads: int = 1, kv_heads: int | None = None,
              kv_map: "Sequence[int] | None" = None, scale: float | None = None,
              key_limit: int | None = None) -> Program:
    """Build the UD FlashAttention program (arguments as
    :func:`fsa.kernels.attention`, heads included; `cfg` must have
    ``dataflow = "ud"``, and a `key_limit` must mask nothing).

    Raises:
        ValueError: what :func:`refuse` says, or a shape or head map
            :func:`fsa.kernels.check_attention_shape` / :func:`fsa.kernels.head_map`
            refuses.
    """
    cfg = fconfig.get(cfg)
    why = refuse(cfg, key_limit is not None and key_limit != cfg.sa_rows)
    if why is not None:
        raise ValueError(why)
    check_attention_shape(cfg, seq_q, seq_kv, causal)
    kv_map, kv_heads = head_map(heads, kv_heads, kv_map)
    R, e = cfg.sa_rows, cfg.e_type
    heads = len(kv_map)
    one = heads == 1 and kv_heads == 1
    more = {} if one else dict(seq_q=seq_q, seq_kv=seq_kv, kv_map=kv_map)
    prog = flash_attention_ud.build(cfg, Input((heads * seq_q, R), e),
                                    Input((kv_heads * seq_kv, R), e),
                                    Input((R, kv_heads * seq_kv), e), causal=bool(causal),
                                    check=check, **more)
    if scale is not None:
        e_bits, a_bits = fconfig.scale_bits(cfg, scale)
        prog = Program(prog.cfg, prog.name, prog.instructions, prog.tensors, prog.views,
                       prog.meta, prog.spad_rows, prog.acc_rows, prog.semaphores,
                       dict(prog.settings, scale_e=e_bits, scale_a=a_bits))
    return prog
