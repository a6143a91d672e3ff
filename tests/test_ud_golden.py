"""The UD attention kernel (fsa/kernels/ud.py) on the instruction-level
golden model (fsa/golden/ud.py): raw bits equal to the reference kernel's
output; the UD function codes refused on hardware without UD."""
from __future__ import annotations

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import isa, kernels
from fsa.kernels import ud as kernels_ud
from fsa import numerics as nx
from fsa.engines import GoldenEngine
from fsa.golden import tile
from fsa.golden.machine import Machine, MachineError, UnsupportedProgram
from fsa.isa import Fence, Matrix, MxFunc
from fsa.kernel_lang import KernelBuilder, KernelError


def _inputs(cfg, sq, skv, seed, outliers=False):
    rng = np.random.default_rng(seed)
    R, e = cfg.sa_rows, cfg.e_type
    q = rng.standard_normal((sq, R)) * 1.5
    k = rng.standard_normal((skv, R)) * 1.5
    v = rng.standard_normal((skv, R))
    if outliers:
        q[0, 0], k[1, 1] = 300.0, -250.0      # scores far apart: exp2 underflows, big rescales
        v[2, 0], v[3, 1] = np.inf, -np.inf
        k[-1, :] = 0.0
        v[-1, -1] = 6e4 if e != "fp32" else 1e30
    return tuple(nx.from_float64(x, e) for x in (q, k, v))


def _run_ud(cfg, q, k, v, causal):
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal)     # picks the UD kernel
    assert prog.meta["kernel"] == "ud"
    assert any(isinstance(i, Matrix) and i.func == MxFunc.STEP for i in prog.instructions) \
        or prog.meta["key_blocks"] == 1
    eng = GoldenEngine(cfg, machine=True)
    res = eng.run(prog, {"Q": q, "K": k, "V": v})
    assert eng.last_path == "machine"
    return res.outputs["Ot"].T


CASES = [
    ("FSA4X4Fp16UdConfig", 8, 16, False), ("FSA4X4Fp16UdConfig", 16, 16, True),
    ("FSA8X8Fp16UdConfig", 16, 32, False), ("FSA8X8Fp16UdConfig", 24, 24, True),
    ("FSA4X8Fp16UdConfig", 16, 16, False), ("FSA8X4Fp16UdConfig", 8, 24, False),
    ("FSA4X4Bf16UdConfig", 8, 12, False), ("FSA4X4Bf16UdConfig", 12, 12, True),
    ("FSA4X4Fp32UdConfig", 8, 8, False), ("FSA4X4Fp32UdConfig", 8, 8, True),
    ("FSA4X4Fp16OnlyUdConfig", 8, 12, False), ("FSA8X8Fp16OnlyUdConfig", 16, 16, True),
    ("FSA4X4Bf16OnlyUdConfig", 4, 4, False), ("FSA8X8Bf16UdConfig", 8, 8, False),
]


@pytest.mark.parametrize("name,sq,skv,causal", CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("outliers", [False, True], ids=["normal", "outliers"])
def test_ud_kernel_bit_exact_with_the_reference(name, sq, skv, causal, outliers):
    cfg = fconfig.get(name)
    q, k, v = _inputs(cfg, sq, skv, seed=sq * 31 + skv, outliers=outliers)
    got = _run_ud(cfg, q, k, v, causal)
    want = tile.attention(cfg, q, k, v, causal)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]
    if outliers:    # the edge values really reach the output
        assert not np.all(np.isfinite(nx.to_float64(got, cfg.a_type)))


@pytest.mark.parametrize("name,sq,skv,causal,heads,kv_heads,kv_map", [
    ("FSA4X4Fp16UdConfig", 8, 12, False, 3, 3, None),        # batch x heads
    ("FSA4X4Fp16UdConfig", 8, 8, True, 4, 2, None),          # grouped-query, causal
    ("FSA8X4Fp16UdConfig", 8, 16, False, 2, 1, None),        # non-square, one kv head
    ("FSA4X4Bf16UdConfig", 12, 12, True, 3, 2, [1, 0, 1]),   # any kv_map
    ("FSA4X8Fp16UdConfig", 16, 8, False, 2, 2, [1, 0]),
], ids=lambda v: str(v))
def test_ud_kernel_many_heads_bit_exact_with_the_reference_kernel(name, sq, skv, causal, heads,
                                                                    kv_heads, kv_map):
    """Several heads in one UD program (one pipeline over all heads' query
    blocks), on the instruction-level model: raw bits equal to the
    reference kernel's multi-head program on the reference twin."""
    cfg = fconfig.get(name)
    ref_cfg = fconfig.get(name.replace("UdConfig", "Config"))
    R, e = cfg.sa_rows, cfg.e_type
    rng = np.random.default_rng(heads * 7 + kv_heads)
    q, k, v = (nx.from_float64(rng.standard_normal((n, R)) * 1.5, e)
               for n in (heads * sq, kv_heads * skv, kv_heads * skv))
    args = dict(heads=heads, kv_heads=kv_heads, kv_map=kv_map)
    prog = kernels.attention(cfg, sq, skv, causal, **args)
    assert prog.meta["kernel"] == "ud" and prog.meta["heads"] == heads
    eng = GoldenEngine(cfg, machine=True)
    got = eng.run(prog, {"Q": q, "K": k, "V": v}).outputs["Ot"]
    assert eng.last_path == "machine"
    ref_eng = GoldenEngine(ref_cfg, machine=True)
    want = ref_eng.run(kernels.attention(ref_cfg, sq, skv, causal, **args),
                       {"Q": q, "K": k, "V": v}).outputs["Ot"]
    assert got.shape == want.shape == (R, heads * sq)
    assert got.tobytes() == want.tobytes()
    # each head differs from a run of the wrong kv head (the map is honoured)
    if kv_heads > 1:
        one = kernels.attention(cfg, sq, skv, causal, heads=heads, kv_heads=kv_heads,
                                kv_map=[0] * heads)
        other = GoldenEngine(cfg, machine=True).run(one, {"Q": q, "K": k, "V": v}).outputs["Ot"]
        assert other.tobytes() != got.tobytes()


def test_ud_single_head_program_is_the_multi_head_programs_special_case():
    """heads = 1 (and kv_map [0]) builds the single-head UD program, word for word."""
    cfg = fconfig.get("FSA8X8Fp16UdConfig")
    for causal in (False, True):
        a = kernels.attention(cfg, 16, 16, causal).words()
        assert kernels.attention(cfg, 16, 16, causal, heads=1, kv_map=[0]).words() == a



@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA8X4Fp16UdConfig"])
def test_ud_equals_the_reference_kernel_program(name):
    """Raw bits of the UD program = those of the reference kernel's program
    run on the reference twin, both on the instruction-level model."""
    cfg = fconfig.get(name)
    ref_cfg = fconfig.get(name.replace("UdConfig", "Config"))
    q, k, v = _inputs(cfg, 2 * cfg.sa_cols, 3 * cfg.sa_rows, seed=5)
    ud = _run_ud(cfg, q, k, v, False)
    prog = kernels.attention(ref_cfg, q.shape[0], k.shape[0], kernel="reference")
    ref = GoldenEngine(ref_cfg, machine=True).run(prog, {"Q": q, "K": k, "V": v})
    assert np.array_equal(ud, ref.outputs["Ot"].T)


def test_reference_kernel_on_ud_hardware():
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    prog = kernels.attention(cfg, 8, 8, kernel="reference")
    assert "kernel" not in prog.meta
    assert all(int(i.func) <= 4 for i in prog.instructions if isinstance(i, Matrix))
    q, k, v = _inputs(cfg, 8, 8, seed=1)
    res = GoldenEngine(cfg, machine=True).run(prog, {"Q": q, "K": k, "V": v})
    assert np.array_equal(res.outputs["Ot"].T, tile.attention(cfg, q, k, v))
    with pytest.raises(ValueError, match="kernel must be"):
        kernels.attention(cfg, 8, 8, kernel="fast")


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA8X8Fp16UdConfig", "FSA4X8Fp16UdConfig"])
def test_ud_kernel_passes_the_dispatch_check(name):
    cfg = fconfig.get(name)
    for causal in ([False, True] if cfg.sa_rows == cfg.sa_cols else [False]):
        prog = kernels_ud.attention(cfg, 3 * cfg.sa_cols, 3 * cfg.sa_cols if causal else 2 * cfg.sa_rows,
                                    causal, check=False)
        prog.check_dispatch()             # raises on a deadlock or a race


def test_two_accumulator_sets():
    cfg = fconfig.get("FSA4X4Fp16UdConfig").replace(name="Ud4Acc2", acc_rows=10)
    assert kernels_ud.buffer_plan(cfg)["acc"] == 2
    q, k, v = _inputs(cfg, 12, 8, seed=3)
    assert np.array_equal(_run_ud(cfg, q, k, v, False), tile.attention(cfg, q, k, v))


def test_smallest_scratchpad_one_slot():
    cfg = fconfig.get("FSA4X4Fp16UdConfig").replace(name="Ud4Small", spad_rows=12)
    assert kernels_ud.buffer_plan(cfg)["slots"] == 1
    q, k, v = _inputs(cfg, 8, 12, seed=4)
    assert np.array_equal(_run_ud(cfg, q, k, v, False), tile.attention(cfg, q, k, v))


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("func", [MxFunc.LOAD_Q, MxFunc.KSTEP, MxFunc.STEP, MxFunc.PVSTEP])
def test_ud_codes_illegal_on_reference_hardware(func):
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Matrix(MxFunc.LOAD_STATIONARY), Matrix(func, rev_input=True, delay_output=True),
            Fence(stop=True)]
    with pytest.raises(MachineError, match="ILLEGAL_FUNC.*needs UD hardware") as e:
        Machine(cfg).run(prog)
    assert e.value.code == "ILLEGAL_FUNC" and e.value.index == 1
    with pytest.raises(MachineError) as e:           # the same from a word stream
        Machine(cfg).run(isa.encode(prog))
    assert e.value.code == "ILLEGAL_FUNC" and e.value.index == 1


def test_ud_kernel_refused_on_reference_configs():
    with pytest.raises(ValueError, match="dataflow 'ud'"):
        kernels_ud.attention("FSA4X4Fp16Config", 4, 4)
    with pytest.raises(ValueError, match="dataflow 'ud'"):
        kernels.attention("FSA4X4Fp16Config", 4, 4, kernel="ud")
    k = KernelBuilder("FSA4X4Fp16Config")
    with pytest.raises(KernelError, match="dataflow 'ud'"):
        kernels_ud.mx_load_q(k, k.alloc_spad((4, 4)))


def test_pv_part_without_scores_is_refused():
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    prog = [Matrix(MxFunc.PVSTEP, rev_input=True, delay_output=True), Fence(stop=True)]
    with pytest.raises(UnsupportedProgram, match="no K part"):
        Machine(cfg).run(prog)
    with pytest.raises(UnsupportedProgram, match="1/0/1"):
        Machine(cfg).run([Matrix(MxFunc.LOAD_Q), Fence(stop=True)])


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA4X4Fp32UdConfig", "FSA4X4Bf16UdConfig"])
def test_norm_pair_equals_the_lse_pair(name):
    """NORM_SCALE / NORM give the bits LSE_NORM_SCALE / LSE_NORM give (on
    scale2: the first scale register keeps its value), zero included."""
    cfg = fconfig.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng(5)
    acc = nx.from_float64(np.abs(rng.standard_normal((cfg.acc_rows, C))) * 3 + 0.01, cfg.a_type)
    acc[0, 1] = nx.from_float64(np.array([0.0]), cfg.a_type)[0]        # l = 0: 1/0 = inf
    outs = []
    for pair in ((MxFunc.ATTENTION_LSE_NORM_SCALE, MxFunc.ATTENTION_LSE_NORM),
                 (MxFunc.NORM_SCALE, MxFunc.NORM)):
        m = Machine(cfg)
        m.acc[:] = acc
        scale_before = m.state.scale.copy()
        m.matrix(Matrix(pair[0], acc_addr=0), 0)
        m.matrix(Matrix(pair[1], acc_addr=1, acc_stride=1), 1)
        if pair[0] == MxFunc.NORM_SCALE:
            assert np.array_equal(m.state.scale, scale_before)
        outs.append(m.acc.copy())
    assert np.array_equal(outs[0], outs[1])
    m = Machine(cfg)
    m.acc[:] = acc
    m.matrix(Matrix(MxFunc.NORM_SCALE, acc_addr=0, zero=True), 0)
    assert np.array_equal(m.ud.scale2, nx.reciprocal(np.zeros(C, acc.dtype), cfg.a_type))
