"""Run-time softmax scale and key-limit mask (fsa/hw/regs.py settings,
the ``mask_keys`` flag): ``fsa.config.scale_bits``, the golden models (tile,
vectorised, instruction-level) with settings, bit-exact with each other,
against float64 softmax, against a numpy mask model, and reference programs
unchanged; ``Program.settings`` and its JSON form."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fsa import config
from fsa import numerics as nx
from fsa.engines import GoldenEngine
from fsa.golden import fast, tile
from fsa.golden.machine import Machine
from fsa.hw import regs as hwregs
from fsa.isa import Matrix, MxFunc, decode, encode
from fsa.kernel_lang import KernelError
from fsa.kernels import attention
from fsa.program import Program
from tb.common.programs import masked_program, settings_inputs as inputs

CONFIGS = ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA4X4Fp32Config", "FSA4X4Fp16OnlyConfig",
           "FSA4X4Bf16OnlyConfig", "FSA8X8Fp16Config"]


# ------------------------------------------------------------------ helpers
def softmax_ref(cfg, q, k, v, scale, causal, valid_keys):
    """float64 softmax(scale Q K^T) V over keys < valid_keys (and the causal mask)."""
    e = cfg.e_type
    qf, kf, vf = (nx.to_float64(x, e) for x in (q, k, v))
    s = scale * qf @ kf.T
    keep = np.arange(kf.shape[0])[None, :] < valid_keys
    if causal:
        keep = keep & (np.arange(kf.shape[0])[None, :] <= np.arange(qf.shape[0])[:, None])
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ vf


def assert_close(cfg, got, ref, v, scale=None):
    """The project's accuracy bounds (README): max abs <= 5e-3 s, MAE <= 5e-4 s,
    s = max(1, max|V| / 4), ten times that for bf16; for a softmax scale
    above the reference 1/sqrt(R), times scale sqrt(R): the CMP rounds each
    score to E before the PEs subtract the max and multiply by the scale, so
    that rounding's error in the exponent grows with the scale (fp32 E, where
    the rounding is exact, stays at the reference's error)."""
    assert np.all(np.isfinite(got))
    s = max(1.0, float(np.max(np.abs(nx.to_float64(v, cfg.e_type)))) / 4)
    tol = 10.0 if "bf16" in (cfg.e_type, cfg.a_type) else 1.0
    if scale is not None:
        tol *= max(1.0, scale * math.sqrt(cfg.sa_rows))
    err = np.abs(got - ref)
    assert err.max() <= 5e-3 * s * tol, f"{cfg.name}: max abs err {err.max():.3g}"
    assert err.mean() <= 5e-4 * s * tol, f"{cfg.name}: MAE {err.mean():.3g}"


def run_fast_and_machine(prog, ins):
    fe, me = GoldenEngine(prog.cfg), GoldenEngine(prog.cfg, machine=True)
    rf, rm = fe.run(prog, ins), me.run(prog, ins)
    assert (fe.last_path, me.last_path) == ("fast", "machine")
    np.testing.assert_array_equal(rf.outputs["O"], rm.outputs["O"])
    return rf


# ------------------------------------------------------------------ scale_bits
@pytest.mark.parametrize("name", config.names())
def test_scale_bits_of_one_over_sqrt_r_are_the_reset_values(name):
    cfg = config.get(name)
    d = hwregs.setting_defaults(cfg)
    assert config.scale_bits(cfg, 1 / math.sqrt(cfg.sa_rows)) == (d["scale_e"], d["scale_a"])
    assert d["key_limit"] == cfg.sa_rows


def test_scale_bits_round_the_float64_product_to_nearest_even():
    rng = np.random.default_rng(1)
    for name in CONFIGS:
        cfg = config.get(name)
        for s in 10 ** rng.uniform(-3, 3, 200):
            x = s * math.log2(math.e)
            be, ba = config.scale_bits(cfg, s)
            for b, fmt in ((be, cfg.e_type), (ba, cfg.a_type)):
                f = nx.get_format(fmt)
                val = float(nx.to_float64(b, fmt))
                # the nearest value: no neighbour of b is closer to x
                for nb in (b - 1, b + 1):
                    if 0 < nb < f.pos_inf:
                        assert abs(float(nx.to_float64(nb, fmt)) - x) >= abs(val - x)
                assert abs(val - x) <= x * 2.0 ** -f.man_bits


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), "x", None, 1e300, 1e-300])
def test_scale_bits_refuses_what_no_register_holds(bad):
    with pytest.raises(ValueError, match="scale"):
        config.scale_bits(config.get("FSA4X4Fp16Config"), bad)


def test_setting_ranges_and_checks():
    cfg = config.get("FSA4X4Fp16Config")
    assert hwregs.setting_range(cfg, "scale_e") == (0, 0xFFFF)
    assert hwregs.setting_range(cfg, "scale_a") == (0, 0xFFFF_FFFF)
    assert hwregs.setting_range(cfg, "key_limit") == (0, 4)
    assert hwregs.check_setting(cfg, "key_limit", np.int64(3)) == 3
    for name, v in (("key_limit", 5), ("key_limit", -1), ("scale_e", 0x10000), ("scale_a", 1.5),
                    ("key_limit", True)):
        with pytest.raises(ValueError, match=name):
            hwregs.check_setting(cfg, name, v)
    with pytest.raises(KeyError):
        hwregs.setting_range(cfg, "push")
    assert [hwregs.OFFSETS[n] for n in hwregs.SETTINGS] == [0x58, 0x5C, 0x60]
    assert all(r.access == "RW" for r in hwregs.REGS if r.name in hwregs.SETTINGS)


# ------------------------------------------------------------------ tile model: the mask
@pytest.mark.parametrize("name", CONFIGS)
def test_tile_score_masks_exactly_the_numpy_mask(name):
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    E = cfg.e_fmt
    rng = np.random.default_rng(2)
    ninf = E.sign_mask | E.pos_inf
    for causal in ([False, True] if R == C else [False]):
        for kl in range(R + 1):
            st = tile.TileState(cfg)
            q, k = (nx.from_float64(rng.standard_normal((n, R)), cfg.e_type) for n in (C, R))
            tile.score(st, q, k, zero=True)                  # a finite running max first
            st2 = tile.TileState(cfg)
            ref = tile.score(st2, q, k, zero=True)
            tr = tile.score(st, q, k, causal=causal, key_limit=kl)
            want = np.arange(R)[None, :] >= kl
            if causal:
                want = want | (np.arange(R)[None, :] > np.arange(C)[:, None])
            want = np.broadcast_to(want, (C, R))
            assert np.array_equal(tr.s_e == ninf, want | (ref.s_e == ninf))
            np.testing.assert_array_equal(tr.s_e[~want], ref.s_e[~want])
            assert np.all(tr.p[want] == 0)                    # masked keys contribute exactly 0


def test_a_fully_masked_block_after_a_valid_one_changes_nothing_and_a_first_one_gives_nan():
    cfg = config.get("FSA4X4Fp16Config")
    A = cfg.a_fmt
    rng = np.random.default_rng(3)
    q, k = (nx.from_float64(rng.standard_normal((4, 4)), cfg.e_type) for _ in range(2))
    st = tile.TileState(cfg)
    tile.score(st, q, k, zero=True)
    l_before = st.l.copy()
    tr = tile.score(st, q, k, key_limit=0)
    assert np.all(tr.p == 0) and np.all(tr.scale == A.one)
    np.testing.assert_array_equal(st.l, l_before)
    first = tile.score(tile.TileState(cfg), q, k, zero=True, key_limit=0)
    assert np.all(nx.to_float64(first.p, cfg.e_type) != nx.to_float64(first.p, cfg.e_type))


# ------------------------------------------------------------------ models agree, bit for bit
@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("causal", [False, True])
def test_machine_equals_fast_with_scale_and_key_limit(name, causal):
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng([len(name), int(causal)])
    for sq, skv in ((2 * C, 3 * R), (3 * C, 2 * R), (C, R)):
        for kl in (1, R - 1, R):
            scale = float(10 ** rng.uniform(-1, 0.5))
            prog = masked_program(cfg, sq, skv, causal, key_limit=kl, scale=scale)
            q, k, v = inputs(cfg, rng, sq, skv)
            rf = run_fast_and_machine(prog, {"Q": q, "K": k, "V": v})
            # the tile model's loop (the reference for both), where it applies
            if not causal or sq == skv:
                o = tile.attention(cfg, q, k, v, causal, scale_bits=config.scale_bits(cfg, scale),
                                   key_limit=kl)
                np.testing.assert_array_equal(rf.outputs["O"], o)


def test_flag_on_another_block_runs_on_the_machine():
    cfg = config.get("FSA4X4Fp16Config")
    prog = masked_program(cfg, 8, 12, key_limit=2, blocks={0, 2})
    assert not GoldenEngine.fast_path_applies(prog)
    rng = np.random.default_rng(4)
    q, k, v = inputs(cfg, rng, 8, 12)
    eng = GoldenEngine(cfg)
    res = eng.run(prog, {"Q": q, "K": k, "V": v})
    assert eng.last_path == "machine"
    ref = np.zeros((8, 4), np.uint32)
    for i in range(2):                           # per query block, as the kernel's loop
        st = tile.TileState(cfg)
        for j in range(3):
            tr = tile.score(st, q[4 * i:4 * i + 4], k[4 * j:4 * j + 4], zero=j == 0,
                            key_limit=2 if j in (0, 2) else None)
            tile.value(st, tr.p, v[4 * j:4 * j + 4], zero=j == 0)
        tile.lse_norm_scale(st)
        ref[4 * i:4 * i + 4] = tile.lse_norm(st).T
    np.testing.assert_array_equal(res.outputs["O"], ref)


# ------------------------------------------------------------------ against float64 softmax
@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA8X8Fp16Config",
                                  "FSA4X4Fp32Config"])
def test_scale_fuzz_against_float64_softmax(name):
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng(5)
    for _ in range(12):
        scale = float(10 ** rng.uniform(-1.3, 0.5))
        causal = bool(rng.random() < 0.5)
        sq, skv = 2 * C, 4 * R
        q, k, v = inputs(cfg, rng, sq, skv)
        o = fast.attention(cfg, q, k, v, causal, scale_bits=config.scale_bits(cfg, scale))
        ref = softmax_ref(cfg, q, k, v, scale, causal, skv)
        assert_close(cfg, nx.to_float64(o, cfg.a_type), ref, v, scale)


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Bf16Config", "FSA8X8Fp16Config"])
def test_key_limit_against_float64_softmax_over_the_valid_keys(name):
    cfg = config.get(name)
    R, C = cfg.sa_rows, cfg.sa_cols
    rng = np.random.default_rng(6)
    for kl in range(1, R + 1):
        for causal in (False, True):
            sq, skv = 3 * C, 2 * R
            q, k, v = inputs(cfg, rng, sq, skv)
            o = fast.attention(cfg, q, k, v, causal, key_limit=kl)
            ref = softmax_ref(cfg, q, k, v, 1 / math.sqrt(R), causal, skv - R + kl)
            assert_close(cfg, nx.to_float64(o, cfg.a_type), ref, v)


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Fp32Config", "FSA4X4Bf16OnlyConfig"])
def test_masked_keys_contribute_exactly_zero(name):
    """Whatever the padded keys hold (K: any bits, NaN and inf included; V:
    any finite values), the output bits are the same."""
    cfg = config.get(name)
    R = cfg.sa_rows
    E = cfg.e_fmt
    rng = np.random.default_rng(7)
    sq, skv, kl = 8, 3 * R, 1
    q, k, v = inputs(cfg, rng, sq, skv)
    outs = []
    for trial in range(3):
        k2, v2 = k.copy(), v.copy()
        pad = slice(skv - R + kl, skv)
        k2[pad] = rng.integers(0, 1 << E.width, k2[pad].shape) if trial else E.canonical_nan
        v2[pad] = nx.from_float64(rng.standard_normal(v2[pad].shape) * 1e3, cfg.e_type)
        prog = masked_program(cfg, sq, skv, key_limit=kl)
        outs.append(run_fast_and_machine(prog, {"Q": q, "K": k2, "V": v2}).outputs["O"])
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


# ------------------------------------------------------------------ reference programs unchanged
@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Bf16Config"])
def test_reference_programs_and_defaults_are_unchanged(name):
    cfg = config.get(name)
    rng = np.random.default_rng(8)
    prog = attention(cfg, 8, 12, check=False)
    assert prog.settings == {} and not any(getattr(i, "mask_keys", False)
                                           for i in prog.instructions)
    q, k, v = inputs(cfg, rng, 8, 12)
    ins = {"Q": q, "K": k, "V": v}
    base = GoldenEngine(cfg).run(prog, ins).outputs["O"]
    d = hwregs.setting_defaults(cfg)
    explicit = masked_program(cfg, 8, 12, scale=1 / math.sqrt(cfg.sa_rows))
    explicit.settings["key_limit"] = d["key_limit"]
    assert {k_: explicit.settings[k_] for k_ in d} == d
    np.testing.assert_array_equal(run_fast_and_machine(explicit, ins).outputs["O"], base)
    # key_limit = R with the flag set masks nothing
    full = masked_program(cfg, 8, 12, key_limit=cfg.sa_rows)
    np.testing.assert_array_equal(run_fast_and_machine(full, ins).outputs["O"], base)
    np.testing.assert_array_equal(fast.attention(cfg, q, k, v, scale_bits=(d["scale_e"], d["scale_a"])),
                                  fast.attention(cfg, q, k, v))


def test_mask_keys_is_word_2_bit_4():
    w = encode([Matrix(MxFunc.ATTENTION_SCORE, mask_keys=True)])
    assert w[2] == 1 << 4 and decode(w)[0].mask_keys
    assert not decode(encode([Matrix(MxFunc.ATTENTION_SCORE)]))[0].mask_keys


# ------------------------------------------------------------------ Program.settings, Machine
def test_program_settings_validated_and_kept_in_json(tmp_path):
    cfg = config.get("FSA4X4Fp16Config")
    prog = masked_program(cfg, 4, 8, key_limit=3, scale=0.3)
    text = prog.to_json(tmp_path / "p.json")
    back = Program.from_json(str(tmp_path / "p.json"))
    assert back.settings == prog.settings and back.words() == prog.words()
    assert Program.from_json(text).tensors == prog.tensors
    p = attention(cfg, 4, 8, check=False)
    for bad, msg in (({"key_limit": 5}, "key_limit"), ({"push": 1}, "not a setting"),
                     ({"scale_e": -1}, "scale_e")):
        with pytest.raises(KernelError, match=msg):
            Program(cfg, "x", p.instructions, p.tensors, settings=bad)


def test_machine_settings_are_kept_across_runs_and_abort():
    cfg = config.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    assert m.settings == hwregs.setting_defaults(cfg)
    m.write_setting("key_limit", 2)
    m.abort()
    m.run([Matrix(MxFunc.LOAD_STATIONARY)] + decode([0x04000000]))
    assert m.settings["key_limit"] == 2
    with pytest.raises(ValueError):
        m.write_setting("key_limit", 9)
    with pytest.raises(KeyError):
        m.write_setting("abort", 1)


def test_kernel_builder_emits_mask_keys_and_carries_settings():
    from fsa.kernel_lang import KernelBuilder

    cfg = config.get("FSA4X4Fp16Config")
    kb = KernelBuilder(cfg, "t")
    k, l = kb.alloc_spad((4, 4), "K"), kb.alloc_accumulator((1, 4), "l")
    ins = kb.mx_attn_score(k, l, mask_keys=True)
    assert ins.mask_keys and not kb.mx_attn_score(k, l).mask_keys
    kb.settings["key_limit"] = 2
    assert kb.build(None, check=False).settings == {"key_limit": 2}


@pytest.mark.parametrize("name,causal", [("FSA4X4Fp16UdConfig", False), ("FSA4X4Bf16UdConfig", True)])
def test_ud_functions_use_the_scale_registers(name, causal):
    """The UD dataflow's functions (fsa/golden/ud.py) take the scale from the
    setting registers too: the UD kernel with a softmax scale gives the
    tile model's bits for that scale."""
    cfg = config.get(name)
    rng = np.random.default_rng(9)
    q, k, v = inputs(cfg, rng, 8, 8)
    prog = attention(cfg, 8, 8, causal, check=False)
    assert prog.meta["kernel"] == "ud"
    sb = config.scale_bits(cfg, 0.21)
    prog = Program(cfg, prog.name, prog.instructions, prog.tensors, prog.views, prog.meta,
                   prog.spad_rows, prog.acc_rows, prog.semaphores,
                   {"scale_e": sb[0], "scale_a": sb[1]})
    got = GoldenEngine(cfg, machine=True).run(prog, {"Q": q, "K": k, "V": v}).outputs["Ot"].T
    np.testing.assert_array_equal(got, tile.attention(cfg, q, k, v, causal, scale_bits=sb))
    assert not np.array_equal(got, tile.attention(cfg, q, k, v, causal))


def test_cycle_model_accepts_the_flag_and_its_timing_is_unchanged():
    from fsa.cycle import model as cm

    cfg = config.get("FSA4X4Fp16Config")
    plain = attention(cfg, 8, 12, check=False)
    masked = masked_program(cfg, 8, 12, key_limit=1, scale=0.4)
    assert any(getattr(i, "mask_keys", False) for i in masked.instructions)
    a, b = (cm.simulate(cfg, p.instructions, cm.DEFAULT_DMA) for p in (plain, masked))
    assert (a.cycles, a.counters) == (b.cycles, b.counters)
    masked.check_dispatch()
