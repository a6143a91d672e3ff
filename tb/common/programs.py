"""Programs and inputs the benches share with each other and with tests/:
a fence-serialised attention program, the attention kernel with the
key-limit mask and softmax-scale settings, the 4x4 fp16 kernel case with
its golden outputs."""
from __future__ import annotations

import dataclasses

import numpy as np

from fsa import config
from fsa import numerics as nx
from fsa.golden.machine import Machine
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc
from fsa.kernels import attention
from fsa.program import Program
from tb.common.tier import SEED

#: the config of :func:`kernel_case`
CASE_CFG = config.get("FSA4X4Fp16Config")


def simple_attention_program(cfg, seq_q, seq_kv, causal, base):
    """A fence-serialised attention program (no double buffering)."""
    R, C = cfg.sa_rows, cfg.sa_cols
    es, as_ = cfg.e_fmt.bytes, cfg.a_fmt.bytes
    q_at, k_at = base, base + seq_q * R * es
    vt_at = k_at + seq_kv * R * es
    ot_at = vt_at + R * seq_kv * es
    Q, K, V = 0, C, C + R                  # spad rows
    L, O = 0, 1                            # acc rows
    prog = []
    for i in range(seq_q // C):
        prog.append(Dma(DmaFunc.LOAD, repeat=C, sram_addr=Q, sram_stride=1,
                        mem_addr=q_at + i * C * R * es, mem_stride=R * es, size=R * es))
        last = i if causal else seq_kv // R - 1
        for j in range(last + 1):
            prog.append(Dma(DmaFunc.LOAD, repeat=R, sram_addr=K, sram_stride=1,
                            mem_addr=k_at + j * R * R * es, mem_stride=R * es, size=R * es))
            prog.append(Dma(DmaFunc.LOAD, repeat=R, sram_addr=V, sram_stride=1,
                            mem_addr=vt_at + j * R * es, mem_stride=seq_kv * es, size=R * es))
            prog.append(Fence(dma=True))
            prog.append(Matrix(MxFunc.LOAD_STATIONARY, spad_addr=Q + C - 1, spad_stride=-1))
            prog.append(Matrix(MxFunc.ATTENTION_SCORE, spad_addr=K, spad_stride=1, rev_input=True,
                               rev_output=True, delay_output=True, acc_addr=L, zero=(j == 0),
                               causal=(causal and j == i)))
            prog.append(Matrix(MxFunc.ATTENTION_VALUE, spad_addr=V, spad_stride=1, rev_input=True,
                               delay_output=True, acc_addr=O, acc_stride=1, zero=(j == 0)))
            prog.append(Fence(mx=True))
        prog.append(Matrix(MxFunc.ATTENTION_LSE_NORM_SCALE, acc_addr=L))
        prog.append(Matrix(MxFunc.ATTENTION_LSE_NORM, acc_addr=O, acc_stride=1))
        prog.append(Fence(mx=True))
        prog.append(Dma(DmaFunc.STORE, repeat=R, sram_addr=O, sram_stride=1, is_accum=True,
                        mem_addr=ot_at + i * C * as_, mem_stride=seq_q * as_, size=C * as_))
    prog.append(Fence(mx=True, dma=True, stop=True))
    return prog, (q_at, k_at, vt_at, ot_at)


def masked_program(cfg, sq, skv, causal=False, key_limit=None, scale=None, blocks=None,
                   kernel=None):
    """The attention kernel (`kernel`: as :func:`fsa.kernels.attention`'s)
    with ``mask_keys`` on the scores of the key blocks `blocks` (default: the
    last one, when `key_limit` is given) and the settings for `key_limit` /
    softmax scale `scale`."""
    prog = attention(cfg, sq, skv, causal, check=False, kernel=kernel)
    n_qb, n_kb = sq // cfg.sa_cols, skv // cfg.sa_rows
    js = [j for i in range(n_qb) for j in range((min(i, n_kb - 1) if causal else n_kb - 1) + 1)]
    if blocks is None:
        blocks = {n_kb - 1} if key_limit is not None else set()
    it = iter(js)
    instrs = []
    for ins in prog.instructions:
        if isinstance(ins, Matrix) and ins.func == MxFunc.ATTENTION_SCORE:
            ins = dataclasses.replace(ins, mask_keys=next(it) in blocks)
        instrs.append(ins)
    settings = {}
    if key_limit is not None:
        settings["key_limit"] = key_limit
    if scale is not None:
        settings["scale_e"], settings["scale_a"] = config.scale_bits(cfg, scale)
    return Program(cfg, prog.name, instrs, prog.tensors, prog.views, prog.meta, prog.spad_rows,
                   prog.acc_rows, prog.semaphores, settings)


def settings_inputs(cfg, rng, sq, skv):
    """Q, K, V of `cfg`'s element type, standard normal."""
    R = cfg.sa_rows
    return [nx.from_float64(rng.standard_normal((n, R)), cfg.e_type) for n in (sq, skv, skv)]


def kernel_case(seq_q=4, seq_kv=8):
    """The attention kernel on :data:`CASE_CFG` with random inputs (``SEED``):
    (program, memory image, output regions, the golden model's output bytes)."""
    prog = attention(CASE_CFG, seq_q=seq_q, seq_kv=seq_kv, causal=False)
    rng = np.random.default_rng(SEED)
    inputs = {n: rng.standard_normal((s, CASE_CFG.sa_rows)) for n, s in
              (("Q", seq_q), ("K", seq_kv), ("V", seq_kv))}
    image = prog.memory_image(inputs)
    regions = prog.output_regions()
    m = Machine(CASE_CFG)
    for a, b in image:
        m.mem.write(a, b)
    m.run(list(prog.instructions))
    want = [m.mem.read(a, n) for a, n in regions]
    return prog, image, regions, want
