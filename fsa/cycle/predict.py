"""Cycle and utilisation prediction for an attention shape: what
``fsa predict`` prints and ``fsa sweep`` tabulates.

:func:`predict` runs the cycle model (:mod:`fsa.cyclemodel`) on the
attention program itself when it has at most :data:`DIRECT_LIMIT` key-block
steps, and extrapolates from the model's steady state beyond that (the
figures say which).
"""
from __future__ import annotations

from fsa import config as fconfig
from fsa import cyclemodel as cm
from fsa import kernels
from fsa.config import FSAConfig

__all__ = ["DIRECT_LIMIT", "predict"]

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
        program: how the words reach the queue (:data:`fsa.cyclemodel.PROGRAM_FEEDS`):
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
    nq, nk = cm.block_counts(cfg, sq_p, skv_p, causal)        # checks the shape
    steps = cm.attention_steps(nq, nk, causal)
    flops = kernels.attention_flops(seq_q, seq_kv, R, causal)
    program = program or ("queue" if free_dma else "fetch")
    if program not in cm.PROGRAM_FEEDS:
        raise ValueError(f"program must be one of {cm.PROGRAM_FEEDS}, got {program!r}")
    kernel = kernels.kernel_for(cfg, kernel, key_limit)       # the one attention builds
    ss = cm.steady_state(cfg, dma, kernel=kernel, program=program)
    out = {"config": cfg.name, "seq_q": seq_q, "seq_kv": seq_kv, "causal": bool(causal),
           "free_dma": bool(free_dma), "axi_data_bits": cfg.axi_data_bits, "flops": flops,
           "per_key_block": ss["per_key_block"], "per_query_block": ss["per_query_block"],
           "reference_period": cm.reference_period(R, C, cfg.exp2_pieces), "words": None,
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
        cycles = round(cm.predict_cycles(cfg, sq_p, skv_p, causal, ss))
        how = (f"steady-state extrapolation ({steps} key-block steps > {DIRECT_LIMIT}: "
               f"{ss['per_key_block']:g} cycles per key block, {ss['per_query_block']:g} per "
               "query block" + ("; causal diagonal blocks costed as full ones" if causal
                                else "") + ")")
        out.update(direct=False)
    out.update(cycles=cycles, how=how, utilisation=kernels.utilisation(flops, cycles, R, C))
    return out
