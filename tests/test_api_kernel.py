"""The multi-head attention kernel (fsa.kernels.attention with heads /
kv_heads / kv_map) under the API: one program for many heads, each head's
DMA addresses, the golden engine's fast path against the instruction-level
machine (which follows the program's addresses), and the head arguments."""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config, kernels
from fsa.engines import GoldenEngine
from fsa.isa import Dma, DmaFunc
from fsa.kernels import attention, head_map


def run(cfg, prog, rng, machine=False):
    m = prog.meta
    h, g, sq, skv, R = m["heads"], m["kv_heads"], m["seq_q"], m["seq_kv"], cfg.sa_rows
    ins = {"Q": rng.standard_normal((h * sq, R)), "K": rng.standard_normal((g * skv, R)),
           "V": rng.standard_normal((g * skv, R))}
    eng = GoldenEngine(cfg, machine=machine)
    res = eng.run(prog, ins)
    return ins, res, eng.last_path


CASES = [  # (config, seq_q, seq_kv, causal, heads, kv_heads, kv_map)
    ("FSA4X4Fp16Config", 8, 12, False, 3, None, None),
    ("FSA4X4Fp16Config", 12, 8, True, 4, 2, None),
    ("FSA4X4Fp16Config", 4, 8, False, 3, 2, (1, 0, 1)),
    ("FSA4X4Bf16Config", 8, 8, True, 2, 1, None),
    ("FSA8X4Fp16Config", 8, 16, False, 2, None, None),
]


@pytest.mark.parametrize("name,sq,skv,causal,heads,kv_heads,kv_map", CASES)
def test_multi_head_program_equals_one_program_per_head(name, sq, skv, causal, heads, kv_heads,
                                                        kv_map):
    cfg = config.get(name)
    prog = attention(cfg, sq, skv, causal, heads=heads, kv_heads=kv_heads, kv_map=kv_map)
    rng = np.random.default_rng(heads * 10 + sq)
    ins, res, path = run(cfg, prog, rng)
    assert path == "fast"
    # the instruction-level machine follows the DMA addresses: the same bits
    _, res_m, path_m = run(cfg, prog, np.random.default_rng(heads * 10 + sq), machine=True)
    assert path_m == "machine" and np.array_equal(res.outputs["Ot"], res_m.outputs["Ot"])
    one = attention(cfg, sq, skv, causal)
    for h, g in enumerate(prog.meta["kv_map"]):
        r1 = GoldenEngine(cfg).run(one, {"Q": ins["Q"][h * sq:(h + 1) * sq],
                                         "K": ins["K"][g * skv:(g + 1) * skv],
                                         "V": ins["V"][g * skv:(g + 1) * skv]})
        assert np.array_equal(r1.outputs["O"], res.outputs["O"][h * sq:(h + 1) * sq]), h
    per_head = one.meta["key_blocks"]
    assert prog.meta["key_blocks"] == heads * per_head
    assert res.flops == heads * kernels.attention_flops(sq, skv, cfg.sa_rows, causal)


def test_one_head_is_the_single_head_program():
    cfg = config.get("FSA4X4Fp16Config")
    for causal in (False, True):
        a, b = attention(cfg, 8, 12 if not causal else 8, causal), \
            attention(cfg, 8, 12 if not causal else 8, causal, heads=1, kv_heads=1, kv_map=[0])
        assert a.words() == b.words()
        assert {n: (t.addr, t.shape) for n, t in a.tensors.items()} == \
            {n: (t.addr, t.shape) for n, t in b.tensors.items()}


def test_each_head_loads_its_own_addresses_and_shared_kv_heads_are_not_copied():
    cfg = config.get("FSA4X4Fp16Config")
    prog = attention(cfg, 4, 4, heads=4, kv_heads=2)          # GQA: heads 0,1 -> 0; 2,3 -> 1
    t = prog.tensors
    assert t["K"].shape == (2 * 4, 4) and t["Vt"].shape == (4, 2 * 4)
    loads = [i for i in prog.instructions if isinstance(i, Dma) and i.func == DmaFunc.LOAD]
    k_addrs = [i.mem_addr for i in loads if t["K"].addr <= i.mem_addr < t["K"].addr + t["K"].nbytes]
    q_addrs = [i.mem_addr for i in loads if t["Q"].addr <= i.mem_addr < t["Q"].addr + t["Q"].nbytes]
    row = t["K"].row_stride
    assert k_addrs == [t["K"].addr, t["K"].addr, t["K"].addr + 4 * row, t["K"].addr + 4 * row]
    assert q_addrs == [t["Q"].addr + 4 * h * t["Q"].row_stride for h in range(4)]
    stores = [i.mem_addr for i in prog.instructions if isinstance(i, Dma) and i.func == DmaFunc.STORE]
    # O^T [R, heads * seq_q]: head h's columns
    assert stores == [t["Ot"].addr + 4 * h * 4 for h in range(4)]   # 4 fp32 columns = 16 bytes


def test_head_map_rules():
    assert head_map(4) == ((0, 1, 2, 3), 4)
    assert head_map(6, 2) == ((0, 0, 0, 1, 1, 1), 2)
    assert head_map(3, kv_map=[2, 0, 2]) == ((2, 0, 2), 3)
    assert head_map(2, 5, [0, 0]) == ((0, 0), 5)
    for args, words in [((0,), "heads must be a positive int"), ((True,), "positive int"),
                        ((6, 4), "not a multiple of kv_heads"), ((2, None, [0]), "one int per"),
                        ((2, None, [0, 1.5]), "one int per"), ((2, 1, [0, 1]), "kv heads 0..0"),
                        ((2, None, [-1, 0]), "kv heads")]:
        with pytest.raises(ValueError, match=words):
            head_map(*args)


@pytest.mark.parametrize("causal", [False, True])
def test_key_limit_masks_the_last_key_block_of_every_head(causal):
    from fsa.isa import Matrix, MxFunc

    cfg = config.get("FSA4X4Fp16Config")
    prog = attention(cfg, 8, 8, causal, heads=3, kv_heads=1, scale=0.3, key_limit=2)
    assert prog.settings["key_limit"] == 2
    assert (prog.settings["scale_e"], prog.settings["scale_a"]) == config.scale_bits(cfg, 0.3)
    scores = [i for i in prog.instructions if isinstance(i, Matrix)
              and i.func == MxFunc.ATTENTION_SCORE]
    # per head: query blocks 0, 1 see key blocks 0..1 (causal: 0, then 0..1)
    per_head = [False, True] * 2 if not causal else [False, False, True]
    assert [i.mask_keys for i in scores] == per_head * 3
    ins, res, path = run(cfg, prog, np.random.default_rng(9))
    assert path == "fast"
    _, res_m, path_m = run(cfg, prog, np.random.default_rng(9), machine=True)
    assert path_m == "machine" and np.array_equal(res.outputs["Ot"], res_m.outputs["Ot"])
    # masked keys contribute exactly 0: the same bits with other values there
    ins2 = {n: a.copy() for n, a in ins.items()}
    for name in ("K", "V"):
        ins2[name][6:8] = 1e3
    assert np.array_equal(GoldenEngine(cfg).run(prog, ins2).outputs["Ot"], res.outputs["Ot"])
    # and the instructions are those of the unmasked program but for the flags
    plain = attention(cfg, 8, 8, causal, heads=3, kv_heads=1)
    assert len(plain.instructions) == len(prog.instructions) and not plain.settings


def test_key_limit_and_scale_arguments():
    cfg = config.get("FSA4X4Fp16Config")
    assert attention(cfg, 4, 4, key_limit=4).settings == {}          # R: nothing masked
    for bad in (0, 5, -1, True, 2.0):
        with pytest.raises(ValueError, match="key_limit must be an int in 1..R = 4"):
            attention(cfg, 4, 4, key_limit=bad)
    with pytest.raises(ValueError, match="scale"):
        attention(cfg, 4, 4, scale=-1.0)
