"""The vectorised attention model (fsa/golden/fast.py) against the
instruction-level machine and the tile model: raw bits, every format pair,
shapes, causal masks, buffer plans, exp2 pieces and special values; the
engine's choice of model, progress and memory."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from fsa import config
from fsa import numerics as nx
from fsa.engines import GoldenEngine
from fsa.golden import fast, tile
from fsa.kernels import attention
from fsa.program import Program

FORMATS = ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig",
           "FSA4X4Bf16OnlyConfig"]


def bits(cfg, rng, n, scale=1.0):
    return nx.from_float64(rng.standard_normal((n, cfg.sa_rows)) * scale, cfg.e_type)


def special_bits(cfg, rng, n, frac=0.05):
    """Normal values with a fraction replaced by NaN, +-inf, +-0, subnormals,
    the largest finite values and values that overflow the scores."""
    E = cfg.e_fmt
    b = bits(cfg, rng, n).astype(np.int64)
    man = (1 << E.man_bits) - 1
    pool = np.array([E.canonical_nan, E.pos_inf | 1, E.pos_inf, E.sign_mask | E.pos_inf, 0,
                     E.sign_mask, 1, man, E.sign_mask | 3, E.pos_inf - 1,
                     E.sign_mask | (E.pos_inf - 1), E.one, E.sign_mask | E.one], np.int64)
    hit = rng.random(b.shape) < frac
    b[hit] = rng.choice(pool, hit.sum())
    return b.astype(E.numpy_uint)


def run_both(cfg, sq, skv, causal, inputs):
    prog = attention(cfg, sq, skv, causal, check=False)
    fast_eng, mach_eng = GoldenEngine(cfg), GoldenEngine(cfg, machine=True)
    rf, rm = fast_eng.run(prog, inputs), mach_eng.run(prog, inputs)
    assert (fast_eng.last_path, mach_eng.last_path) == ("fast", "machine")
    return prog, rf, rm


def assert_same(rf, rm):
    assert set(rf.outputs) == set(rm.outputs) == {"Ot", "O"}
    for n in rm.outputs:
        assert rf.outputs[n].dtype == rm.outputs[n].dtype
        np.testing.assert_array_equal(rf.outputs[n], rm.outputs[n], err_msg=n)
    assert rf.counters == rm.counters


def shapes(cfg):
    R, C = cfg.sa_rows, cfg.sa_cols
    out = [(C, R, False), (3 * C, 2 * R, False), (C, 3 * R, False)]
    if R == C:
        out += [(3 * C, 3 * R, True), (2 * C, 4 * R, True), (4 * C, 2 * R, True)]
    return out


CASES = [(n, *s)
         for n in FORMATS + ["FSA8X8Fp16Config", "FSA8X4Fp16Config", "FSA4X8Fp16Config",
                             "FSA8X8Bf16OnlyConfig"]
         for s in shapes(config.get(n))]


@pytest.mark.parametrize("name,sq,skv,causal", CASES)
def test_fast_equals_machine(name, sq, skv, causal):
    cfg = config.get(name)
    rng = np.random.default_rng(sq * 100 + skv + causal)
    q, k, v = bits(cfg, rng, sq, 2.0), bits(cfg, rng, skv, 2.0), bits(cfg, rng, skv)
    _, rf, rm = run_both(cfg, sq, skv, causal, {"Q": q, "K": k, "V": v})
    assert_same(rf, rm)
    assert np.isfinite(rf.o).all()                      # a real result, not NaN everywhere


@pytest.mark.parametrize("name", FORMATS + ["FSA8X8Fp16Config"])
@pytest.mark.parametrize("causal", [False, True])
def test_fast_equals_machine_on_special_values(name, causal):
    cfg = config.get(name)
    R = cfg.sa_rows
    rng = np.random.default_rng(11 + causal)
    sq, skv = 4 * R, 4 * R
    q, k, v = (special_bits(cfg, rng, n, 0.02) for n in (sq, skv, skv))
    _, rf, rm = run_both(cfg, sq, skv, causal, {"Q": q, "K": k, "V": v})
    assert_same(rf, rm)
    o = rf.o
    assert np.isnan(o).any() and np.isfinite(o).any()   # both kinds of rows exercised


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("scale", [1e-4, 30.0, 3e3])
def test_fast_equals_tile_model_small_and_large_scores(name, scale):
    # tiny inputs give subnormal products and scores, large ones overflow E
    cfg = config.get(name)
    R = cfg.sa_rows
    rng = np.random.default_rng(int(scale * 10) % 997)
    for causal in (False, True):
        q, k, v = bits(cfg, rng, 3 * R, scale), bits(cfg, rng, 3 * R, scale), bits(cfg, rng, 3 * R)
        got = fast.attention(cfg, q, k, v, causal)
        want = tile.attention(cfg, q, k, v, causal)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", FORMATS)
def test_fast_equals_tile_model_on_random_bit_patterns(name):
    # every class of input: uniform raw patterns (NaNs, infinities, subnormals)
    cfg = config.get(name)
    E, R = cfg.e_fmt, cfg.sa_rows
    rng = np.random.default_rng(5)
    q, k, v = (rng.integers(0, 1 << E.width, (2 * R, R)).astype(E.numpy_uint) for _ in range(3))
    for causal in (False, True):
        np.testing.assert_array_equal(fast.attention(cfg, q, k, v, causal),
                                      tile.attention(cfg, q, k, v, causal))


def test_fast_equals_tile_model_on_short_exact_inputs():
    # small integers: scores and sums are exact, and many land on midpoints
    # of the narrow formats (the double-rounding checks run)
    for name in FORMATS:
        cfg = config.get(name)
        R = cfg.sa_rows
        rng = np.random.default_rng(3)
        q, k, v = (nx.from_float64(rng.integers(-3, 4, (4 * R, R)) / 2.0, cfg.e_type)
                   for _ in range(3))
        for causal in (False, True):
            np.testing.assert_array_equal(fast.attention(cfg, q, k, v, causal),
                                          tile.attention(cfg, q, k, v, causal))


@pytest.mark.parametrize("changes,sq,skv,causal", [
    (dict(spad_rows=12), 12, 8, False), (dict(spad_rows=16), 12, 12, True),
    (dict(acc_rows=10), 16, 8, False), (dict(acc_rows=10, spad_rows=12), 16, 16, True),
    (dict(exp2_pieces=4), 8, 12, True), (dict(exp2_pieces=16), 8, 8, False),
    (dict(exp2_pieces=2, e_type="bf16", a_type="fp32"), 8, 8, True)])
def test_fast_equals_machine_on_config_variants(changes, sq, skv, causal):
    cfg = config.get("FSA4X4Fp16Config").replace(name="FSA4X4Variant", **changes)
    rng = np.random.default_rng(2)
    inputs = {"Q": rng.standard_normal((sq, 4)) * 2, "K": rng.standard_normal((skv, 4)),
              "V": rng.standard_normal((skv, 4))}
    _, rf, rm = run_both(cfg, sq, skv, causal, inputs)
    assert_same(rf, rm)


def test_16x16_fast_equals_machine():
    cfg = config.get("FSA16X16Fp16Config")
    rng = np.random.default_rng(16)
    inputs = {n: rng.standard_normal((48, 16)) for n in "QKV"}
    for causal in (False, True):
        _, rf, rm = run_both(cfg, 48, 48, causal, inputs)
        assert_same(rf, rm)


def test_other_programs_run_on_the_machine():
    cfg = config.get("FSA4X4Fp16Config")
    prog = attention(cfg, 8, 8, check=False)
    assert GoldenEngine.fast_path_applies(prog)
    other = Program(cfg, prog.name, prog.instructions, prog.tensors, prog.views,
                    meta={k: v for k, v in prog.meta.items() if k != "kind"})
    assert not GoldenEngine.fast_path_applies(other)
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal((8, 4)) for n in "QKV"}
    eng = GoldenEngine(cfg)
    r_other = eng.run(other, inputs)
    assert eng.last_path == "machine"
    r_att = eng.run(prog, inputs)
    assert eng.last_path == "fast"
    assert_same(r_att, r_other)


def test_fast_path_only_for_the_kernels_own_programs():
    """A program whose meta says attention but whose instructions are not the
    kernel's (a user's kernel that forgot a key block, here: the kernel's
    program cut after its first key block's instructions, with a stop) runs
    on the instruction-level model, so golden computes what the program
    does; so does a kernel program changed after the build (the meta copied,
    one instruction dropped), and a JSON round trip keeps the fast path."""
    import dataclasses

    from fsa.isa import Fence, Matrix, MxFunc

    cfg = config.get("FSA4X4Fp16Config")
    prog = attention(cfg, 4, 8, check=False)
    assert GoldenEngine.fast_path_applies(prog)
    assert GoldenEngine.fast_path_applies(Program.from_json(prog.to_json()))
    ins = list(prog.instructions)
    # drop the second key block's ATTENTION_SCORE: the words no longer match
    scores = [i for i, x in enumerate(ins) if isinstance(x, Matrix)
              and x.func == MxFunc.ATTENTION_SCORE]
    cut = Program(cfg, prog.name, ins[:scores[1]] + ins[scores[1] + 1:], prog.tensors,
                  prog.views, meta=dict(prog.meta))
    assert cut.meta["kind"] == "attention" and not GoldenEngine.fast_path_applies(cut)
    # a changed fact (causal) with the same words: not the kernel's program either
    other = Program(cfg, prog.name, prog.instructions, prog.tensors, prog.views,
                    meta=dict(prog.meta, causal=True))
    assert not GoldenEngine.fast_path_applies(other)
    # a user kernel that copies the meta (signature included) onto its own words
    short = ins[:scores[0] + 1] + [Fence(stop=True)]
    user = Program(cfg, "mine", short, prog.tensors, prog.views, meta=dict(prog.meta))
    assert not GoldenEngine.fast_path_applies(user)
    rng = np.random.default_rng(0)
    inputs = {"Q": rng.standard_normal((4, 4)), "K": rng.standard_normal((8, 4)),
              "V": rng.standard_normal((8, 4))}
    eng = GoldenEngine(cfg)
    full = eng.run(prog, inputs).outputs["O"]
    assert eng.last_path == "fast"
    mine = eng.run(user, inputs).outputs["O"]
    assert eng.last_path == "machine" and not np.array_equal(mine, full)
    assert dataclasses.is_dataclass(ins[0])


def test_fast_path_reports_progress(monkeypatch):
    clock = iter(range(0, 10**9, 3))                 # every call: 3 s later
    monkeypatch.setattr(fast.time, "monotonic", lambda: next(clock))
    cfg = config.get("FSA4X4Fp16Config")
    msgs = []
    rng = np.random.default_rng(0)
    eng = GoldenEngine(cfg, progress=msgs.append)
    eng.run(attention(cfg, 16, 16, causal=True, check=False),
            {n: rng.standard_normal((16, 4)) for n in "QKV"})
    assert eng.last_path == "fast" and msgs
    assert all(m.startswith("golden model: ") and "key-block steps" in m for m in msgs)
    done = [int(m.split()[2].split("/")[0]) for m in msgs]
    assert done == sorted(done) and all(d <= 10 for d in done)    # 10 causal steps


def test_key_block_steps_match_the_kernel():
    cfg = config.get("FSA4X4Fp16Config")
    for sq, skv, causal in ((16, 8, True), (8, 16, True), (12, 20, False), (16, 16, True)):
        prog = attention(cfg, sq, skv, causal, check=False)
        assert fast.key_block_steps(cfg, sq, skv, causal) == prog.meta["key_blocks"]


def test_memory_is_linear_in_the_sequence_lengths():
    cfg = config.get("FSA8X8Fp16Config")
    rng = np.random.default_rng(0)
    fast.attention(cfg, *(bits(cfg, rng, 8) for _ in range(3)))    # the exp2 table, once
    peaks = {}
    for sq, skv in ((512, 512), (512, 4096), (4096, 512)):
        q, k, v = bits(cfg, rng, sq), bits(cfg, rng, skv), bits(cfg, rng, skv)
        tracemalloc.start()
        fast.attention(cfg, q, k, v)
        peaks[sq, skv] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    # float64 copies of Q, K, V, the per-query state and one group's working
    # arrays; one (seq_q, seq_kv) float64 array would be 16.8 MB for 512 x 4096
    for (sq, skv), peak in peaks.items():
        assert peak < 8 * 8 * (6 * sq + 3 * skv) + 16 * 8 * fast.GROUP_ELEMENTS, (sq, skv, peak)


@pytest.mark.parametrize("name,causal", [(n, c) for n in FORMATS for c in (False, True)]
                         + [("FSA8X4Fp16Config", False)])
def test_heads_axis_gives_each_head_alone(name, causal):
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng(9)
    H, sq, skv = 3, 3 * C, 2 * R
    q = np.stack([special_bits(cfg, rng, sq, 0.02) for _ in range(H)])
    k = np.stack([bits(cfg, rng, skv, 2.0) for _ in range(H)])
    v = np.stack([bits(cfg, rng, skv) for _ in range(H)])
    q[2] = q[1]                                      # same queries, other keys
    got = fast.attention(cfg, q, k, v, causal)
    assert got.shape == (H, sq, R)
    for h in range(H):
        np.testing.assert_array_equal(got[h], fast.attention(cfg, q[h], k[h], v[h], causal))
    assert not np.array_equal(got[1], got[2])


def test_fast_model_argument_errors():
    cfg = config.get("FSA4X4Fp16Config")
    z = np.zeros((8, 4), np.uint16)
    with pytest.raises(ValueError, match="multiple"):
        fast.attention(cfg, z[:6], z, z)
    with pytest.raises(ValueError, match="need q"):
        fast.attention(cfg, z, z[:, :3], z)
    with pytest.raises(ValueError, match="heads"):
        fast.attention(cfg, z[None], z[None].repeat(2, 0), z[None])
    with pytest.raises(ValueError, match="square"):
        fast.attention(config.get("FSA8X4Fp16Config"), np.zeros((4, 8), np.uint16),
                       np.zeros((8, 8), np.uint16), np.zeros((8, 8), np.uint16), causal=True)


@pytest.mark.parametrize("name,a,b,tiny", [
    ("FSA4X4Bf16OnlyConfig", 9.0, 29.0, 2.0 ** -70),        # 261: a bf16 midpoint
    ("FSA4X4Fp32Config", 24929.0, 673.0, 2.0 ** -80)])     # 2^24 + 1: an fp32 midpoint
def test_double_rounding_trap_in_a_score(name, a, b, tiny):
    # key 0's score is (a b = a midpoint of A) + tiny: correctly rounded it
    # goes up; a float64 sum rounded again would tie to even, and then key 0
    # would no longer be the maximum: the output depends on it
    cfg = config.get(name)
    A = cfg.a_type
    exact = nx.fma(nx.from_float64(a, cfg.e_type), nx.from_float64(b, cfg.e_type),
                   nx.from_float64(tiny, A), mul=cfg.e_type, acc=A)
    assert exact != nx.from_float64(a * b + tiny, A)         # a real double-rounding trap
    q = np.zeros((4, 4))
    q[:, 0], q[0, 3] = a, tiny
    k = np.zeros((4, 4))
    k[:, 0], k[0, 3] = b, 1.0
    v = np.arange(16.0).reshape(4, 4)
    qb, kb, vb = (nx.from_float64(x, cfg.e_type) for x in (q, k, v))
    want = tile.attention(cfg, qb, kb, vb)
    np.testing.assert_array_equal(fast.attention(cfg, qb, kb, vb), want)
    _, rf, rm = run_both(cfg, 4, 4, False, {"Q": qb, "K": kb, "V": vb})
    assert_same(rf, rm)


@pytest.mark.parametrize("name", FORMATS + ["FSA8X4Fp16Config"])
@pytest.mark.parametrize("group", [1, 2, 3, 1 << 15])
def test_key_block_groups_give_the_same_bits(monkeypatch, name, group):
    # groups of `group` key blocks (the last one shorter), one block at a time,
    # or all at once (the default for short query sequences)
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    monkeypatch.setattr(fast, "GROUP_ELEMENTS", group * 2 * C * R)
    rng = np.random.default_rng(group)
    q, k, v = special_bits(cfg, rng, 2 * C, 0.01), bits(cfg, rng, 7 * R, 2.0), bits(cfg, rng, 7 * R)
    np.testing.assert_array_equal(fast.attention(cfg, q, k, v), tile.attention(cfg, q, k, v))


def test_speed_bench_measures_both_models():
    import importlib.util
    import pathlib
    import sys

    bench = pathlib.Path(__file__).resolve().parents[1] / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("golden_speed", bench / "golden_speed.py")
        gs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gs)
    finally:
        sys.path.remove(str(bench))
    m = gs.measure("FSA4X4Fp16Config", 8, machine=True)
    f = gs.measure("FSA4X4Fp16Config", 8, machine=False)
    assert (m["path"], f["path"]) == ("machine", "fast")
    assert m["macs"] == f["macs"] == 2 * 8 * 8 * 4 and m["mac_per_s"] > 0 and f["mac_per_s"] > 0
    np.testing.assert_array_equal(m["ot"], f["ot"])
