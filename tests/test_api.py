"""fsa.scaled_dot_product_attention on the golden model: torch's contract.

Every result is checked two ways: raw bits against the one-head model
(fsa.golden.fast.attention, one call per head on inputs padded here, by the
test, independently of fsa.api), and against torch's
scaled_dot_product_attention in float64 on the same E-rounded inputs within
the project's accuracy bounds (fsa.report.bounds_verdict). Shapes cover
leading dimensions 0..2, sequences that are not multiples of the array,
D < R, grouped-query and broadcast kv heads, causal masks with S_q != S_kv;
then the dtypes, empty inputs, the statistics and every error case.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fsa
from fsa import kernels
from fsa import config
from fsa import numerics as nx
from fsa.golden import fast
from fsa.report import bound_scale, bounds_verdict, error_stats, fa3_inputs

CFG = "FSA4X4Fp16Config"


def rand(rng, shape, dtype=torch.float32):
    return torch.from_numpy(fa3_inputs(rng, shape)).to(dtype)


def rounded(cfg, x):
    """x rounded to the config's element format, as float64 numpy."""
    return nx.to_float64(nx.from_float64(x.double().numpy(), cfg.e_type), cfg.e_type)


def expected_bits(cfg, q, k, v, causal, gqa=False, scale=None):
    """The output A bits [..., S_q, D_v], one head at a time on fast.attention,
    inputs zero-padded to the blocks and to d = R (the test's own padding);
    padded keys masked with the key limit whenever there are any (under a
    causal mask that hides them the API leaves the mask out: the same bits)."""
    R, C = cfg.sa_rows, cfg.sa_cols
    qn, kn, vn = (rounded(cfg, x) for x in (q, k, v))
    if gqa and qn.ndim >= 3 and qn.shape[-3] != kn.shape[-3]:
        rep = qn.shape[-3] // kn.shape[-3]
        kn, vn = np.repeat(kn, rep, axis=-3), np.repeat(vn, rep, axis=-3)
    lead = qn.shape[:-2]
    kn = np.broadcast_to(kn, lead + kn.shape[-2:])
    vn = np.broadcast_to(vn, lead + vn.shape[-2:])
    sq, d = qn.shape[-2:]
    skv, dv = vn.shape[-2:]
    sq_p, skv_p = -(-sq // C) * C, -(-skv // R) * R
    bits = config.scale_bits(cfg, 1 / math.sqrt(d) if scale is None else scale)
    limit = skv - (skv_p - R) if skv_p != skv else None
    out = np.zeros(lead + (sq, dv), np.uint16 if cfg.a_fmt.width == 16 else np.uint32)
    for idx in np.ndindex(*lead):
        qp, kp, vp = np.zeros((sq_p, R)), np.zeros((skv_p, R)), np.zeros((skv_p, R))
        qp[:sq, :d], kp[:skv, :d], vp[:skv, :dv] = qn[idx], kn[idx], vn[idx]
        o = fast.attention(cfg, *(nx.from_float64(x, cfg.e_type) for x in (qp, kp, vp)),
                           causal=causal, scale_bits=bits, key_limit=limit)
        out[idx] = o[:sq, :dv]
    return out


def check(cfg, out, q, k, v, causal, gqa=False, scale=None):
    """Raw bits equal to the one-head model; within the bounds of torch."""
    assert out.dtype == torch.float32 and out.shape[:-1] == q.shape[:-1]
    want = expected_bits(cfg, q, k, v, causal, gqa, scale)
    # A values are exact in float32 (fp32, fp16 or bf16 accumulation): back to A bits
    assert np.array_equal(nx.from_float64(out.double().numpy(), cfg.a_type), want)
    qn, kn, vn = (torch.from_numpy(rounded(cfg, x)) for x in (q, k, v))
    ref = F.scaled_dot_product_attention(qn, kn, vn, is_causal=causal, enable_gqa=gqa,
                                         scale=scale).numpy()
    stats = error_stats(out.double().numpy(), ref)
    ok, why = bounds_verdict(stats, bound_scale(vn.numpy()), cfg.e_type)
    assert ok and stats["compared"] == ref.size, (why, stats)


# ------------------------------------------------------------------ shapes
SHAPES = [  # (query shape, key/value shape, causal); d = R = 4 on FSA4X4Fp16Config
    ((8, 4), (8, 4), False),                 # no leading dims, no padding
    ((6, 4), (8, 4), False),                 # queries padded
    ((3, 6, 4), (3, 8, 4), False),           # one leading dim, queries padded
    ((2, 3, 9, 4), (2, 3, 9, 4), True),      # two, causal, S_q = S_kv padded
    ((2, 3, 5, 4), (2, 3, 11, 4), True),     # causal, S_q < S_kv, both padded
    ((2, 12, 4), (2, 8, 4), True),           # causal, S_q > S_kv, keys a multiple of R
    ((1, 1, 3, 4), (1, 1, 4, 4), False),
    ((5, 4), (7, 4), False),                 # keys padded: the key-limit mask
    ((2, 3, 6, 4), (2, 3, 13, 4), False),
    ((2, 11, 4), (2, 6, 4), True),           # causal, S_q > S_kv, keys padded: mask too
    ((2, 3, 6, 3), (2, 3, 10, 3), True),     # D = 3 < R (default scale 1/sqrt(3))
    ((4, 1), (5, 1), False),                 # D = 1
]


@pytest.mark.parametrize("qs,kvs,causal", SHAPES)
def test_shapes_bit_exact_and_vs_torch(qs, kvs, causal):
    cfg = config.get(CFG)
    rng = np.random.default_rng(sum(qs) + 7 * sum(kvs))
    q, k, v = rand(rng, qs), rand(rng, kvs), rand(rng, kvs)
    out, st = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, config=CFG,
                                               return_stats=True)
    check(cfg, out, q, k, v, causal)
    assert st.heads == math.prod(qs[:-2]) and st.program.meta["heads"] == st.heads
    # one program for every head: its stop fence is the only fence
    assert st.program.counts()["fence"] == 1
    # the key mask only where padded keys are not behind the causal mask
    hidden = kvs[-2] % 4 == 0 or (causal and qs[-2] <= kvs[-2])
    assert (st.key_limit is None) == hidden and ("key_limit" in st.settings) == (not hidden)


@pytest.mark.parametrize("name", ["FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig",
                                  "FSA8X8Fp16Config"])
def test_other_formats_and_sizes(name):
    cfg = config.get(name)
    rng = np.random.default_rng(len(name))
    R = cfg.sa_rows
    q, k, v = rand(rng, (2, 2, 5, R - 1)), rand(rng, (2, 1, 11, R - 1)), rand(rng, (2, 1, 11, R - 1))
    for causal in (False, True):
        out = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True,
                                               config=name)
        check(cfg, out, q, k, v, causal, gqa=True)


def test_many_heads_are_one_program_equal_to_one_call_per_head():
    rng = np.random.default_rng(1)
    q, k, v = rand(rng, (2, 3, 8, 4)), rand(rng, (2, 3, 12, 4)), rand(rng, (2, 3, 12, 4))
    out, st = fsa.scaled_dot_product_attention(q, k, v, config=CFG, return_stats=True)
    assert (st.heads, st.kv_heads, st.padded) == (6, 6, (8, 12, 4))
    for b in range(2):
        for h in range(3):
            one = fsa.scaled_dot_product_attention(q[b, h], k[b, h], v[b, h], config=CFG)
            assert torch.equal(one.view(torch.int32), out[b, h].view(torch.int32))


def test_head_dimensions_below_r_are_zero_padded():
    # D = 3 < R = 4, D_v = 2: the default scale is torch's 1/sqrt(D)
    cfg = config.get(CFG)
    rng = np.random.default_rng(2)
    q, k, v = rand(rng, (2, 8, 3)), rand(rng, (2, 9, 3)), rand(rng, (2, 9, 2))
    out, st = fsa.scaled_dot_product_attention(q, k, v, config=CFG, return_stats=True)
    assert out.shape == (2, 8, 2) and st.scale == 1 / math.sqrt(3)
    check(cfg, out, q, k, v, False)
    assert st.settings == dict(zip(("scale_e", "scale_a"), config.scale_bits(cfg, 3 ** -0.5)),
                               key_limit=1)


@pytest.mark.parametrize("scale,causal", [(0.05, False), (0.9, True), (2.0, False), (7, True)])
def test_scale_is_a_run_time_value(scale, causal):
    cfg = config.get(CFG)
    rng = np.random.default_rng(int(scale * 100))
    q, k, v = rand(rng, (3, 6, 4)), rand(rng, (3, 7, 4)), rand(rng, (3, 7, 4))
    out, st = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                               config=CFG, return_stats=True)
    check(cfg, out, q, k, v, causal, scale=scale)
    # the same instructions whatever the scale: only the settings differ
    other = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, config=CFG,
                                             return_stats=True)[1]
    assert st.program.words() == other.program.words()
    assert st.settings["scale_e"] != other.settings["scale_e"]


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_scale_outside_the_formats_is_refused(scale):
    with pytest.raises(ValueError, match="does not fit"):
        fsa.scaled_dot_product_attention(*good(), scale=scale, config=CFG)


# ------------------------------------------------------------------ kv heads
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_as_torch_without_copies(causal):
    cfg = config.get(CFG)
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, (2, 6, 8, 4)), rand(rng, (2, 2, 8, 4)), rand(rng, (2, 2, 8, 4))
    out, st = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True,
                                               config=CFG, return_stats=True)
    check(cfg, out, q, k, v, causal, gqa=True)
    # the kv heads are stored once: 4 in memory, read by 12 query heads
    assert (st.heads, st.kv_heads) == (12, 4)
    assert st.program.tensors["K"].shape == (4 * 8, 4)
    assert st.program.meta["kv_map"] == tuple(b * 2 + h // 3 for b in range(2) for h in range(6))
    # the same bits as the kv heads repeated by the caller
    rep = fsa.scaled_dot_product_attention(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1),
                                           is_causal=causal, config=CFG)
    assert torch.equal(rep.view(torch.int32), out.view(torch.int32))


def test_broadcast_kv_batch():
    cfg = config.get(CFG)
    rng = np.random.default_rng(4)
    q, k, v = rand(rng, (3, 2, 8, 4)), rand(rng, (1, 2, 8, 4)), rand(rng, (1, 2, 8, 4))
    out, st = fsa.scaled_dot_product_attention(q, k, v, config=CFG, return_stats=True)
    check(cfg, out, q, k, v, False)
    assert (st.heads, st.kv_heads) == (6, 2)


# ------------------------------------------------------------------ dtypes, empty inputs
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_dtype_of_the_query_is_returned(dtype):
    rng = np.random.default_rng(5)
    q, k, v = (rand(rng, (2, 8, 4), dtype) for _ in range(3))
    out = fsa.scaled_dot_product_attention(q, k, v, config=CFG)
    assert out.dtype == dtype and out.device.type == "cpu"
    wide = fsa.scaled_dot_product_attention(q.float(), k.float(), v.float(), config=CFG)
    assert torch.equal(out, wide.to(dtype))          # the fp32 result, rounded once


def test_numpy_inputs_give_a_torch_tensor():
    rng = np.random.default_rng(6)
    q, k, v = (fa3_inputs(rng, (8, 4)).astype(np.float32) for _ in range(3))
    out = fsa.scaled_dot_product_attention(q, k, v, config=CFG)
    want = fsa.scaled_dot_product_attention(*(torch.from_numpy(x) for x in (q, k, v)), config=CFG)
    assert isinstance(out, torch.Tensor) and torch.equal(out, want)


@pytest.mark.parametrize("qs,kvs", [((0, 8, 4), (0, 8, 4)), ((2, 0, 4), (2, 8, 4)),
                                    ((2, 5, 4), (2, 0, 4))])
def test_empty_inputs_follow_torch(qs, kvs):
    q, k, v = torch.ones(qs), torch.ones(kvs), torch.ones(kvs)
    out, st = fsa.scaled_dot_product_attention(q, k, v, config=CFG, return_stats=True)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert out.shape == ref.shape and torch.equal(out, ref)
    assert st.cycles is None and st.program is None


# ------------------------------------------------------------------ statistics
def test_stats_of_the_whole_run():
    from fsa.cycle import model as cm
    from fsa.kernels import attention_flops

    cfg = config.get(CFG)
    rng = np.random.default_rng(8)
    q, k, v = rand(rng, (2, 2, 6, 4)), rand(rng, (2, 2, 8, 4)), rand(rng, (2, 2, 8, 4))
    out = fsa.scaled_dot_product_attention(q, k, v, is_causal=True, config=CFG)
    assert isinstance(out, torch.Tensor)             # the default return type
    out2, st = fsa.scaled_dot_product_attention(q, k, v, is_causal=True, config=CFG,
                                                return_stats=True)
    assert torch.equal(out, out2)
    # the cycle model with program fetch (as the simulator engines run it), which
    # costs more than every word in the queue at the start
    feed = cm.program_feed(cfg, "fetch", len(st.program.words()))
    assert st.cycles == cm.simulate(cfg, st.program.instructions, **feed).cycles
    assert st.cycles > cm.simulate(cfg, st.program.instructions).cycles
    assert st.cycles_from.startswith("cycle model")
    assert st.flops == 4 * attention_flops(6, 8, 4, True)          # 4 heads, useful work
    assert st.utilisation == pytest.approx(st.flops / (st.cycles * 2 * 4 * 4))
    # the kernel ran 8 x 8 per head: its figure counts the padded queries
    assert st.kernel_utilisation == pytest.approx(
        4 * attention_flops(8, 8, 4, True) / (st.cycles * 32))
    assert st.key_blocks == 4 * 3 and st.words == len(st.program.words())
    assert st.counters["matrix"] == st.program.counts()["matrix"]
    assert st.as_dict()["heads"] == 4 and "program" not in st.as_dict()


# ------------------------------------------------------------------ errors
def good(n=8, d=4):
    return torch.ones(n, d), torch.ones(n, d), torch.ones(n, d)


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(attn_mask=torch.ones(8, 8, dtype=torch.bool)), NotImplementedError, "attn_mask"),
    (dict(dropout_p=0.1), NotImplementedError, "dropout_p"),
    (dict(dropout_p=-0.5), ValueError, "dropout_p"),
    (dict(dropout_p="x"), ValueError, "dropout_p"),
    (dict(scale=0.0), ValueError, "positive"),
    (dict(scale=-1.0), ValueError, "positive"),
    (dict(scale=float("nan")), ValueError, "positive"),
    (dict(scale=float("inf")), ValueError, "positive"),
    (dict(scale="big"), ValueError, "scale"),
    (dict(engine="spice"), ValueError, "engine"),
    (dict(config="FSA3X3Config"), ValueError, "unknown config"),
    (dict(config="FSA8X4Fp16Config", is_causal=True), ValueError, "square"),
])
def test_errors_name_what_is_supported(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        fsa.scaled_dot_product_attention(*good(), **{"config": CFG, **kwargs})


@pytest.mark.parametrize("q,k,v,words", [
    (torch.ones(8, 5), torch.ones(8, 5), torch.ones(8, 4), "D \\(query/key\\) = 5 exceeds the array rows R = 4"),
    (torch.ones(8, 4), torch.ones(8, 4), torch.ones(8, 6), "D_v \\(value\\) = 6"),
    (torch.ones(8, 4), torch.ones(8, 3), torch.ones(8, 3), "last dimension"),
    (torch.ones(8, 4), torch.ones(8, 4), torch.ones(7, 4), "agree"),
    (torch.ones(4), torch.ones(8, 4), torch.ones(8, 4), "at least 2 dimensions"),
    (torch.ones(8, 4), torch.ones(8, 4, dtype=torch.float16), torch.ones(8, 4), "same dtype"),
    (torch.ones(8, 4, dtype=torch.int32),) * 3 + ("floating-point",),
    (torch.ones(3, 8, 4), torch.ones(2, 8, 4), torch.ones(2, 8, 4), "broadcast"),
    (torch.ones(8, 0), torch.ones(8, 0), torch.ones(8, 4), "D is 0"),
])
def test_shape_and_dtype_errors(q, k, v, words):
    with pytest.raises(ValueError, match=words):
        fsa.scaled_dot_product_attention(q, k, v, config=CFG)


def test_gqa_errors():
    q, k = torch.ones(1, 6, 8, 4), torch.ones(1, 4, 8, 4)
    with pytest.raises(ValueError, match="must divide the query heads"):
        fsa.scaled_dot_product_attention(q, k, k, enable_gqa=True, config=CFG)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        fsa.scaled_dot_product_attention(q, torch.ones(1, 2, 8, 4), torch.ones(1, 2, 8, 4),
                                         config=CFG)
    # torch agrees that these are errors
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)


def test_non_tensor_inputs_are_refused():
    with pytest.raises(TypeError, match="torch.Tensor or a numpy.ndarray"):
        fsa.scaled_dot_product_attention([[1.0] * 4] * 8, *good()[1:], config=CFG)


@pytest.mark.parametrize("kwargs, words", [
    (dict(is_causal="False"), "is_causal must be a bool, got str 'False'"),
    (dict(is_causal=1), "is_causal must be a bool"),
    (dict(enable_gqa="False"), "enable_gqa must be a bool"),
    (dict(return_stats=None), "return_stats must be a bool"),
    (dict(config=None), "config must be a preset name"),
    (dict(config=123), "config must be a preset name"),
])
def test_argument_types_are_checked_as_torch_does(kwargs, words):
    """A string "False" must not turn the causal mask on (torch raises a
    TypeError for it too)."""
    with pytest.raises(TypeError, match=words):
        fsa.scaled_dot_product_attention(*good(), **{"config": CFG, **kwargs})
    if "is_causal" in kwargs:
        with pytest.raises(TypeError):
            F.scaled_dot_product_attention(*good(), **kwargs)
    assert fsa.scaled_dot_product_attention(*good(), is_causal=np.bool_(True), config=CFG).shape


def test_longdouble_and_too_long_kv_are_refused_clearly():
    x = np.ones((8, 4), np.longdouble)
    with pytest.raises(ValueError, match="float16, float32, float64"):
        fsa.scaled_dot_product_attention(x, x, x, config=CFG)
    # V^T is one [D, S_kv] tensor: its row stride is the DMA's 21-bit field
    q, kv = torch.ones(4, 4), torch.ones(600_000, 4)
    with pytest.raises(ValueError, match=r"S_kv = 600000 .* memory-stride field \(at most "
                                         r"1048575\); use S_kv <= 524284 per call"):
        fsa.scaled_dot_product_attention(q, kv, kv, config=CFG)


def test_d_above_r_names_a_config_that_fits():
    with pytest.raises(ValueError, match="sa_rows >= 16 \\(e.g. FSA16X16"):
        fsa.scaled_dot_product_attention(*good(8, 16), config="FSA8X8Fp16Config")


# ------------------------------------------------------------------ the UD dataflow
def test_ud_config_gives_the_reference_bits_one_head_at_a_time():
    rng = np.random.default_rng(11)
    q, k, v = rand(rng, (7, 4)), rand(rng, (8, 4)), rand(rng, (8, 4))
    for scale in (None, 0.3):
        ud, st = fsa.scaled_dot_product_attention(q, k, v, scale=scale,
                                                  config="FSA4X4Fp16UdConfig", return_stats=True)
        ref = fsa.scaled_dot_product_attention(q, k, v, scale=scale, config=CFG)
        assert st.program.meta["kernel"] == "ud"
        assert torch.equal(ud.view(torch.int32), ref.view(torch.int32))


@pytest.mark.parametrize("qs,kvs,causal,gqa", [
    ((2, 3, 8, 4), (2, 3, 12, 4), False, False),       # batch x heads
    ((1, 4, 8, 4), (1, 2, 8, 4), True, True),          # grouped-query, causal
    ((3, 4, 4), (1, 4, 4), False, True),               # three query heads share one kv head
])
def test_ud_config_runs_many_heads_with_the_reference_bits(qs, kvs, causal, gqa):
    """The UD kernel runs every (batch, head) pair in one program, each
    query head reading its kv head, bit for bit the reference kernel's output."""
    rng = np.random.default_rng(sum(qs))
    q, k, v = rand(rng, qs), rand(rng, kvs), rand(rng, kvs)
    kw = dict(is_causal=causal, enable_gqa=gqa)
    ud, st = fsa.scaled_dot_product_attention(q, k, v, config="FSA4X4Fp16UdConfig",
                                              return_stats=True, **kw)
    ref, rst = fsa.scaled_dot_product_attention(q, k, v, config=CFG, return_stats=True, **kw)
    assert st.program.meta["kernel"] == "ud" and st.heads == rst.heads == int(np.prod(qs[:-2]))
    assert st.program.meta["kv_map"] == rst.program.meta["kv_map"]
    assert torch.equal(ud.view(torch.int32), ref.view(torch.int32))
    assert st.program.counts()["matrix"] != rst.program.counts()["matrix"]    # another kernel


def test_ud_config_with_padded_keys_runs_the_reference_kernel():
    """The UD kernel has no key mask: keys that are not whole key blocks run
    the reference kernel on the UD hardware (its functions are unchanged
    there), and the program says so; asking for the UD kernel is refused."""
    rng = np.random.default_rng(12)
    q, k, v = rand(rng, (2, 5, 4)), rand(rng, (2, 7, 4)), rand(rng, (2, 7, 4))
    ud, st = fsa.scaled_dot_product_attention(q, k, v, config="FSA4X4Fp16UdConfig",
                                              return_stats=True)
    ref = fsa.scaled_dot_product_attention(q, k, v, config=CFG)
    assert st.program.meta["kernel"] == "reference" and "key mask" in st.program.meta["kernel_why"]
    assert torch.equal(ud.view(torch.int32), ref.view(torch.int32))
    with pytest.raises(ValueError, match="UD kernel has no key mask"):
        kernels.attention("FSA4X4Fp16UdConfig", 8, 8, heads=2, key_limit=3, kernel="ud")


def test_accuracy_notes_warn_where_the_bounds_can_fail():
    """Narrow accumulators on long key sequences and scores that overflow the
    element format give a RuntimeWarning (and stats.notes); ordinary runs on
    the presets with an fp32 accumulator give none."""
    import warnings

    rng = np.random.default_rng(3)
    q, k = torch.randn(8, 8), torch.randn(1024, 8)
    with pytest.warns(RuntimeWarning, match="accumulates the row sums and outputs in fp16: with "
                                            "1024 keys"):
        _, st = fsa.scaled_dot_product_attention(q, k, k, config="FSA8X8Fp16OnlyConfig",
                                                 return_stats=True)
    assert len(st.notes) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fsa.scaled_dot_product_attention(q, k[:256], k[:256], config="FSA8X8Fp16OnlyConfig")
        fsa.scaled_dot_product_attention(q, k, k, config="FSA8X8Fp16Config")
        fsa.scaled_dot_product_attention(rand(rng, (16, 4)), rand(rng, (64, 4)),
                                         rand(rng, (64, 4)), config=CFG)
    # scores beyond fp16's largest value: those outputs are NaN, as the note says
    q, k, v = 100 + torch.randn(8, 8), 100 + torch.randn(8, 8), torch.randn(8, 8)
    with pytest.warns(RuntimeWarning, match="overflow fp16 .* outputs become NaN"):
        o = fsa.scaled_dot_product_attention(q, k, v, scale=1e-3, config="FSA8X8Fp16Config")
    assert torch.isnan(o).any()
    assert not torch.isnan(F.scaled_dot_product_attention(q, k, v, scale=1e-3)).any()


def test_gqa_is_suggested_only_where_it_would_help():
    rng = np.random.default_rng(5)
    q, kv = rand(rng, (3, 1, 4, 4)), rand(rng, (1, 4, 4, 4))       # 4 kv heads, 1 query head
    with pytest.raises(ValueError, match="do not broadcast") as e:
        fsa.scaled_dot_product_attention(q, kv, kv, config=CFG)
    assert "enable_gqa" not in str(e.value)
    q = rand(rng, (2, 4, 4, 4))
    kv = rand(rng, (2, 2, 4, 4))                                     # 2 kv heads divide 4
    with pytest.raises(ValueError, match=r"enable_gqa=True"):
        fsa.scaled_dot_product_attention(q, kv, kv, config=CFG)


def test_big_endian_arrays_are_converted():
    rng = np.random.default_rng(6)
    q = fa3_inputs(rng, (5, 4)).astype(np.float32)
    want = fsa.scaled_dot_product_attention(q, q, q, config=CFG)
    big = q.astype(">f4")
    got = fsa.scaled_dot_product_attention(big, big, big, config=CFG)
    assert got.dtype == torch.float32
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))      # the same bits


def test_meta_tensor_is_refused_clearly():
    q = torch.empty((4, 4), device="meta")
    with pytest.raises(ValueError, match="query is a meta tensor"):
        fsa.scaled_dot_product_attention(q, q, q, config=CFG)


def test_keep_is_for_the_simulators_only():
    q = torch.zeros((4, 4))
    with pytest.raises(ValueError, match="keep=True: only with engine"):
        fsa.scaled_dot_product_attention(q, q, q, config=CFG, keep=True)
    with pytest.raises(TypeError, match="keep must be a bool"):
        fsa.scaled_dot_product_attention(q, q, q, config=CFG, keep="yes")
