"""Cycle and utilisation prediction for an attention shape: what
``fsa predict`` prints and ``fsa sweep`` tabulates.

:func:`predict` runs the cycle model (:mod:`fsa.cycle.model`) on the
attention program itself when it has at most :data:`DIRECT_LIMIT` key-block
steps, and extrapolates from the model's steady state beyond that (the
figures say which): :func:`steady_state` runs the model on four short
programs and returns the per-key-block and per-query-block costs, which
:func:`predict_cycles` uses for long sequences on large arrays (where
building the program itself would be slow).  :func:`dma_demand` is what the
kernel asks of the DMA per key block.
"""
from __future__ import annotations

import math

from fsa import config as fconfig
from fsa import dataflows, isa, kernels
from fsa.config import FSAConfig
from fsa.cycle import model as cm
from fsa.cycle.timing import DEFAULT_DMA, DmaTiming, program_feed
from fsa.hw.dmarules import bursts, sram_bank_ports
from fsa.kernels import attention, check_attention_shape

__all__ = ["DIRECT_LIMIT", "predict", "steady_state", "predict_cycles", "block_counts",
           "attention_steps", "reference_period", "tile_bursts", "dma_demand"]

#: key-block steps up to which the model runs on the program itself
DIRECT_LIMIT = 20_000


def predict(cfg: "FSAConfig | str", seq_q: int, seq_kv: int, causal: bool = False,
            free_dma: bool = False, kernel: "str | None" = None,
            program: "str | None" = None) -> dict:
    """Predicted cycles of the attention kernel on `cfg`.

    Args:
        cfg: the configuration (its AXI width and memory system as given).
        seq_q, seq_kv: sequence lengths, any positive ones: padded to whole
            query / key blocks as ``fsa run`` pads them (``padded`` in the
            result); the shape is then checked as :func:`fsa.kernels.attention`
            does (e.g. causal needs a square array).
        causal: the causal kernel.
        free_dma: the matrix schedule alone (DMA transfers take no time).
        kernel: "reference" or "ud" (default: ud on a UD config, else reference).
        program: how the words reach the queue (:data:`fsa.cycle.timing.PROGRAM_FEEDS`):
            "fetch" (program fetch, what ``fsa run`` and ``fsa exec`` do), "push"
            (AXI4-Lite pushes, ``--push``) or "queue" (no cost: every word in the
            queue at the start).  Default: "fetch", or "queue" with `free_dma`.

    Returns:
        dict: ``cycles``, ``how`` (direct model run or extrapolation, in
        words), ``direct`` (bool), ``words`` (program length when run
        directly), ``flops`` (:func:`fsa.kernels.attention_flops`),
        ``utilisation`` (of the caller's shape's useful FLOPs),
        ``per_key_block`` and ``per_query_block`` (steady
        state, cycles), ``reference_period`` (``5R + P + 5``), ``kernel``,
        ``program``.

    Raises:
        ValueError: a shape the kernel does not support.
    """
    cfg = fconfig.get(cfg)
    R, C = cfg.sa_rows, cfg.sa_cols
    dma = cm.IDEAL_DMA if free_dma else cm.DEFAULT_DMA
    for name, n in (("seq_q", seq_q), ("seq_kv", seq_kv)):
        if type(n) is not int or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    # any length, padded as fsa run / fsa.scaled_dot_product_attention pad it
    sq_p, skv_p, key_limit = kernels.padded_shape(cfg, seq_q, seq_kv, causal)
    nq, nk = block_counts(cfg, sq_p, skv_p, causal)        # checks the shape
    steps = attention_steps(nq, nk, causal)
    flops = kernels.attention_flops(seq_q, seq_kv, R, causal)
    program = program or ("queue" if free_dma else "fetch")
    if program not in cm.PROGRAM_FEEDS:
        raise ValueError(f"program must be one of {cm.PROGRAM_FEEDS}, got {program!r}")
    kernel = kernels.kernel_for(cfg, kernel, key_limit)       # the one attention builds
    ss = steady_state(cfg, dma, kernel=kernel, program=program)
    out = {"config": cfg.name, "seq_q": seq_q, "seq_kv": seq_kv, "causal": bool(causal),
           "free_dma": bool(free_dma), "axi_data_bits": cfg.axi_data_bits, "flops": flops,
           "per_key_block": ss["per_key_block"], "per_query_block": ss["per_query_block"],
           "reference_period": reference_period(R, C, cfg.exp2_pieces), "words": None,
           "kernel": kernel, "program": program, "padded": (sq_p, skv_p)}
    if steps <= DIRECT_LIMIT:
        prog = kernels.attention(cfg, sq_p, skv_p, causal=causal, check=False, kernel=kernel,
                                 key_limit=key_limit)
        n_words = len(prog.words())
        cycles = cm.simulate(cfg, prog.instructions, dma,
                             **cm.program_feed(cfg, program, n_words)).cycles
        how = f"model run on the {n_words}-word program, " + {
            "fetch": "fetched from memory",
            "push": "pushed over AXI4-Lite by the cocotb harness",
            "queue": "every word in the queue at the start"}[program]
        out.update(direct=True, words=n_words)
    else:
        cycles = round(predict_cycles(cfg, sq_p, skv_p, causal, ss))
        how = (f"steady-state extrapolation ({steps} key-block steps > {DIRECT_LIMIT}: "
               f"{ss['per_key_block']:g} cycles per key block, {ss['per_query_block']:g} per "
               "query block" + ("; causal diagonal blocks costed as full ones" if causal
                                else "") + ")")
        out.update(direct=False)
    out.update(cycles=cycles, how=how, utilisation=kernels.utilisation(flops, cycles, R, C))
    return out


def steady_state(cfg: FSAConfig, dma: DmaTiming = DEFAULT_DMA, causal: bool = False,
                 kernel: "str | None" = None, program: str = "queue") -> dict:
    """Per-key-block and per-query-block costs of the attention kernel in
    the model, from four short programs: cycles(q, k) for q in (2, 3) query
    blocks and k in (36, 68) key blocks per query block (non-causal), fitted as
    ``fixed + q * (per_qblock + k * per_kblock)`` (exact when the schedule is
    periodic, which the four points check: the fit residual is returned).
    (36 and 68, not fewer: with two LOADs in flight a DMA-heavy config, 64x64
    fp16, takes up to 12 key blocks after each query block's Q load and O
    store to settle; 4 and 8 key blocks would fit 327 instead of its 333.
    Since the UD normalisation stopped stalling the array, a query block's
    Q load and O store at 4x4 UD, whose 64-bit bus is nearly saturated, take
    their ~56 cycles from the steps after them, over 20-30 key blocks: 12 and
    20 fitted 20.1 cycles per key block where longer runs give 19.2.)
    `kernel`: as :func:`fsa.kernels.attention` (None: the config's own; on a
    UD config the UD kernel, whose per-key-block cost with a free DMA is the
    STEP period ``2R + P + 3``).  `program`: how the words reach the queue,
    as :func:`program_feed`."""
    R, C = cfg.sa_rows, cfg.sa_cols
    K1, K2 = 36, 68
    pts = {}
    for q in (2, 3):
        for k in (K1, K2):
            prog = attention(cfg, q * C, k * R, causal=False, check=False, kernel=kernel)
            pts[(q, k)] = cm.simulate(cfg, prog.instructions, dma,
                                      **program_feed(cfg, program, len(prog.words()))).cycles
    per_kb = (pts[(2, K2)] - pts[(2, K1)]) / (2 * (K2 - K1))
    per_kb3 = (pts[(3, K2)] - pts[(3, K1)]) / (3 * (K2 - K1))
    per_qb = (pts[(3, K1)] - pts[(2, K1)]) - K1 * per_kb
    fixed = pts[(2, K1)] - 2 * (per_qb + K1 * per_kb)
    return {"per_key_block": per_kb, "per_key_block_check": per_kb3, "per_query_block": per_qb,
            "fixed": fixed, "points": {f"{q}x{k}": v for (q, k), v in pts.items()}}


def block_counts(cfg: FSAConfig, seq_q: int, seq_kv: int, causal: bool = False) -> tuple[int, int]:
    """(query blocks, key blocks) of attention(seq_q, seq_kv) on `cfg`;
    ValueError for a shape the kernel does not support."""
    check_attention_shape(cfg, seq_q, seq_kv, causal)
    return seq_q // cfg.sa_cols, seq_kv // cfg.sa_rows


def attention_steps(nq: int, nk: int, causal: bool) -> int:
    """(query block, key block) steps the kernel runs: all of them, or with a
    causal mask (top-left aligned, R == C) the blocks on or below the diagonal
    (each run whole; FLOPs count only the pairs the mask keeps:
    :func:`fsa.kernels.attention_flops`)."""
    if causal:
        return sum(min(i, nk - 1) + 1 for i in range(nq))
    return nq * nk


def predict_cycles(cfg: FSAConfig, seq_q: int, seq_kv: int, causal: bool,
                   ss: dict) -> float:
    """Cycles of attention(seq_q, seq_kv) from a :func:`steady_state` fit
    (causal: the diagonal blocks are costed like full ones)."""
    nq, nk = block_counts(cfg, seq_q, seq_kv, causal)
    return ss["fixed"] + nq * ss["per_query_block"] + attention_steps(nq, nk, causal) * ss["per_key_block"]


def reference_period(R: int, C: int, P: int) -> int:
    """The reference schedule's key-block period C + 2R + P + 4 + max(2R-1, R+C+1)."""
    return dataflows.get("reference").period(R, C, P)


def tile_bursts(cfg: FSAConfig, rows: int, blocks: int = 1) -> int:
    """AXI bursts of `blocks` row-major tiles of `rows` scratchpad rows one
    after another in memory (Q or K tiles, from a 4 KiB boundary), as the
    DMA makes them (:func:`fsa.hw.dmarules.bursts`: one per row, or merged)."""
    srb = cfg.spad_row_bytes
    return sum(len(bursts(isa.Dma(isa.DmaFunc.LOAD, repeat=rows, sram_addr=0, sram_stride=1,
                                  mem_addr=cfg.mem_base + b * rows * srb, mem_stride=srb,
                                  size=srb), cfg.axi_data_bits // 8, cfg.dma_burst_beats))
               for b in range(blocks))


def dma_demand(cfg: FSAConfig) -> dict[str, float]:
    """What the attention kernel asks of the DMA per key block in the steady
    state (d = R; both kernels, :mod:`fsa.kernels.reference` and :mod:`fsa.kernels.ud`,
    load one K and one V (V^T) tile of R rows per key block, as two LOADs;
    Q and O move once per query block), against what `cfg`'s memory system
    offers:

    * ``bytes``  = ``2 R^2 e``  (e = bytes per element),
    * ``rows`` = ``2R``; ``bursts``: the AXI bursts they take (the DMA
      queues at most one per cycle, whatever the ports): one per row, or
      with merged bursts (``dma_burst_beats``; K's rows follow each other in
      memory, V^T's do not) ``R + ceil(R^2 e / min(4096, dma_burst_beats W))``
      for a K tile on a 4 KiB boundary,
    * ``beats``  = ``2 R ceil(R e / W)`` (W = AXI bytes per beat; each beat is
      one cycle of a scratchpad narrow port),
    * ``lanes``: the narrow ports those beats spread over: 1 (one port, or
      several AXI ports sharing the SRAM's one narrow port), or with a
      narrow port per bank (:func:`fsa.hw.dmarules.bank_ports`) the lesser of
      the AXI ports and the banks,
    * ``period`` = the reference schedule's key-block period
      (:func:`reference_period`, ``4R + C + P + 5`` for R = C) and
      ``ud_period`` = the UD dataflow's (:meth:`fsa.dataflows.ud.Ud.period`, ``2R + P + 3``),
    * ``occupancy`` = ``beats / (lanes x period)``, the share of the narrow
      ports the K/V stream needs in the reference dataflow, and
      ``ud_occupancy`` = ``beats / (lanes x ud_period)`` in the UD dataflow
      (about twice); ``ud_bursts`` = ``bursts / ud_period``, the share of the
      DMA's one-burst-per-cycle queue it needs there.

    Above 1 the DMA cannot keep up whatever its latency; below 1 it still
    pays about ``6 + ceil(R e / W)`` cycles per LOAD (:data:`DEFAULT_DMA`),
    hidden by a second LOAD in flight only on one port
    (:func:`fsa.hw.dmarules.inflight_depth`; docs/performance.md section 1f).
    """
    R, C = cfg.sa_rows, cfg.sa_cols
    e = cfg.e_fmt.bytes
    beat = cfg.axi_data_bits // 8
    beats = 2 * R * math.ceil(R * e / beat)
    lanes = min(cfg.mem_ports, cfg.spad_banks) if sram_bank_ports(cfg, cfg.spad_banks) else 1
    period = reference_period(R, C, cfg.exp2_pieces)
    ud = dataflows.get("ud").period(R, C, cfg.exp2_pieces)
    # K's rows follow each other in memory, V^T's do not (its rows are
    # seq_kv elements apart)
    bursts = R + tile_bursts(cfg, R)
    return {"bytes": 2 * R * R * e, "rows": 2 * R, "bursts": bursts, "beats": beats,
            "lanes": lanes, "period": period, "ud_period": ud,
            "occupancy": beats / (lanes * period), "ud_occupancy": beats / (lanes * ud),
            "ud_bursts": bursts / ud}
