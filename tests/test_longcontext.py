"""Long-context API (issue 37 item 4, item 3's reporting): the dispatch
check's verdict cache, progress bars, the API's refusal with an estimate,
DMA bytes and bus occupancy in the stats, ``fsa run --json`` and ``fsa predict``."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest

from fsa import config, kernels, progress
from fsa.cycle import checkcache
from fsa.cycle import dispatch as cdispatch
from fsa.cycle import model as cm
from fsa.cycle.predict import attention_steps, block_counts
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc
from fsa.kernel_lang import KernelError
from fsa.report import attention_dma_bytes, bus_figures, program_dma_bytes

CFG = config.get("FSA4X4Fp16Config")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Every test with an empty cache of its own (memory and disk)."""
    monkeypatch.setenv("FSA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FSA_DISPATCH_CACHE", raising=False)
    checkcache.clear_memory()
    yield
    checkcache.clear_memory()


# ------------------------------------------------------------------ the cache
@pytest.mark.parametrize("name,sq,skv,causal", [("FSA4X4Fp16Config", 8, 12, False),
                                                 ("FSA4X4Fp16UdConfig", 8, 8, True),
                                                 ("FSA8X8Fp16Config", 16, 24, False)])
def test_cached_verdict_equals_the_runs(name, sq, skv, causal):
    cfg = config.get(name)
    prog = kernels.attention(cfg, sq, skv, causal=causal, check=False)
    runs = cdispatch._run_checks(cfg, prog.instructions, cm.DISPATCH_MODES)
    k = checkcache.key(cfg, prog.instructions, cm.DISPATCH_MODES)
    assert checkcache.lookup(k) is None
    assert prog.check_dispatch() == runs > 0
    assert checkcache.lookup(k) == {"cycles": runs}
    assert prog.check_dispatch() == runs                    # the hit
    assert runs == cm.simulate(cfg, prog.instructions).cycles


def test_a_hit_does_not_run_the_model(monkeypatch):
    prog = kernels.attention(CFG, 8, 8, check=False)
    cycles = prog.check_dispatch()
    calls = []
    monkeypatch.setattr(cdispatch, "_run_checks", lambda *a: calls.append(a) or -1)
    assert prog.check_dispatch() == cycles and calls == []
    checkcache.clear_memory()                              # (small program: memory only)
    assert prog.check_dispatch() == -1 and len(calls) == 1


def test_every_field_is_in_the_key():
    prog = kernels.attention(CFG, 8, 8, check=False)
    ins = list(prog.instructions)
    base = checkcache.key(CFG, ins, cm.DISPATCH_MODES)
    i = next(n for n, x in enumerate(ins) if isinstance(x, Dma))
    import dataclasses
    for change in ({"mem_addr": ins[i].mem_addr + 64}, {"size": ins[i].size - 1},
                   {"sram_addr": ins[i].sram_addr + 1}):
        other = ins[:i] + [dataclasses.replace(ins[i], **change)] + ins[i + 1:]
        assert checkcache.key(CFG, other, cm.DISPATCH_MODES) != base, change
    assert checkcache.key(CFG, ins, ["hardware"]) != base
    assert checkcache.key(config.get("FSA4X4Fp16UdConfig"), ins, cm.DISPATCH_MODES) != base
    assert checkcache.key(CFG, list(ins), cm.DISPATCH_MODES) == base


def _deadlock():
    return [Matrix(MxFunc.LOAD_STATIONARY, sem_id=1, acquire_valid=True, acquire_value=1),
            Fence(mx=True, dma=True, stop=True)]


def test_an_error_is_cached_and_raised_again(monkeypatch):
    with pytest.raises(KernelError, match="deadlock") as first:
        cdispatch.check_dispatch(CFG, _deadlock())
    calls = []
    monkeypatch.setattr(cdispatch, "_run_checks", lambda *a: calls.append(a) or 0)
    with pytest.raises(KernelError) as again:
        cdispatch.check_dispatch(CFG, _deadlock())
    assert str(again.value) == str(first.value) and calls == []


def test_disk_copy_is_reused_by_a_new_process(monkeypatch, tmp_path):
    monkeypatch.setattr(checkcache, "DISK_MIN", 1)
    prog = kernels.attention(CFG, 8, 8, check=False)
    cycles = prog.check_dispatch()
    k = checkcache.key(CFG, prog.instructions, cm.DISPATCH_MODES)
    path = tmp_path / "cache" / "dispatch" / f"{k}.json"
    assert json.loads(path.read_text()) == {"cycles": cycles}
    checkcache.clear_memory()
    assert checkcache.lookup(k) == {"cycles": cycles}
    path.write_text("{not json")                           # a broken file: checked again
    checkcache.clear_memory()
    assert checkcache.lookup(k) is None
    monkeypatch.setenv("FSA_DISPATCH_CACHE", "0")
    assert checkcache.disk_folder() is None


def test_replaced_model_bypasses_the_cache(monkeypatch):
    prog = kernels.attention(CFG, 8, 8, check=False)
    prog.check_dispatch()
    seen = []
    real = cm.simulate
    monkeypatch.setattr(cm, "simulate", lambda *a, **kw: seen.append(1) or real(*a, **kw))
    prog.check_dispatch()
    assert len(seen) == 6


# ------------------------------------------------------------------ progress
def _bar_text(enabled: bool, updates: "list[int]", unit: str = "") -> str:
    """What the 4-step stage "work" of a `Progress(enabled)` writes, updated to
    each of `updates` in turn and closed."""
    out = io.StringIO()
    bar = progress.Progress(enabled, out).stage("work", 4, unit)
    for done in updates:
        bar.update(done)
    bar.close()
    return out.getvalue()


def test_bar_draws_after_the_delay_with_an_eta(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    text = _bar_text(True, [1, 4], " steps")
    assert "work:" in text and "4/4 steps" in text and "<" in text and text.endswith("\n")
    assert _bar_text(False, [4]) == ""


def test_bar_waits_for_the_delay():
    assert _bar_text(True, [1]) == ""


def test_enabled_rules():
    assert progress.enabled(None, io.StringIO()) is False        # not a terminal
    assert progress.enabled(True) is True and progress.enabled(False) is False
    with pytest.raises(TypeError, match="progress must be"):
        progress.enabled("yes")


def test_api_progress_and_dispatch_bar(monkeypatch, capsys):
    import torch

    import fsa
    monkeypatch.setattr(progress, "DELAY", 0.0)
    q = torch.randn(1, 1, 16, 4, generator=torch.Generator().manual_seed(1))
    fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", progress=True)
    err = capsys.readouterr().err
    assert "dispatch check" in err and "6/6 runs" in err
    fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress must be"):
        fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", progress=1)


# ------------------------------------------------------------------ refusal
def test_api_refuses_with_an_estimate(monkeypatch):
    import torch

    import fsa
    from fsa.cli import common
    monkeypatch.setattr(common, "GOLDEN_MAX_SECONDS", 1e-6)
    q = torch.randn(1, 1, 16, 4, generator=torch.Generator().manual_seed(2))
    with pytest.raises(ValueError, match=r"key-block steps.*force=True"):
        fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config")
    o = fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", force=True)
    assert o.shape == q.shape
    with pytest.raises(TypeError, match="force must be a bool"):
        fsa.scaled_dot_product_attention(q, q, q, config="FSA4X4Fp16Config", force="yes")


# ------------------------------------------------------------------ bits
def test_outputs_bit_identical_with_and_without_the_cache(monkeypatch):
    import torch

    import fsa
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 20, 6, generator=g, dtype=torch.float16) for _ in range(3))
    cold = fsa.scaled_dot_product_attention(q, k, v, is_causal=True, config="FSA8X8Fp16Config")
    warm = fsa.scaled_dot_product_attention(q, k, v, is_causal=True, config="FSA8X8Fp16Config")
    monkeypatch.setenv("FSA_DISPATCH_CACHE", "0")
    checkcache.clear_memory()
    again = fsa.scaled_dot_product_attention(q, k, v, is_causal=True, config="FSA8X8Fp16Config")
    bits = [x.view(torch.int16).numpy() for x in (cold, warm, again)]
    assert np.array_equal(bits[0], bits[1]) and np.array_equal(bits[0], bits[2])


# ------------------------------------------------------------------ bus figures
@pytest.mark.parametrize("name,sq,skv,causal,heads", [
    ("FSA4X4Fp16Config", 16, 32, False, 1), ("FSA4X4Fp16UdConfig", 16, 16, True, 1),
    ("FSA8X8Fp16Config", 8, 16, False, 3), ("FSA4X4Fp32Config", 8, 12, False, 2)])
def test_dma_bytes_of_the_kernels(name, sq, skv, causal, heads):
    cfg = config.get(name)
    prog = kernels.attention(cfg, sq, skv, causal=causal, heads=heads, check=False)
    nq, nk = block_counts(cfg, sq, skv, causal)
    steps = heads * attention_steps(nq, nk, causal)
    assert steps == prog.meta["key_blocks"]
    assert program_dma_bytes(prog.instructions) == attention_dma_bytes(cfg, heads * nq, steps)


def test_stats_bus_figures():
    import torch

    import fsa
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, 24, 8, generator=g) for _ in range(3))
    _, st = fsa.scaled_dot_product_attention(q, k, v, config="FSA8X8Fp16Config",
                                             return_stats=True)
    cfg = config.get("FSA8X8Fp16Config")
    assert st.dma_bytes == program_dma_bytes(st.program.instructions) > 0
    assert st.bus_bytes_per_cycle == cfg.mem_ports * cfg.axi_data_bits // 8
    assert st.bus_occupancy == pytest.approx(st.dma_bytes / (st.cycles * st.bus_bytes_per_cycle))
    assert st.array_bound_cycles == 2 * cfg.sa_rows * st.key_blocks
    assert st.cycles >= st.array_bound_cycles
    assert st.bus_occupancy_ceiling == pytest.approx(
        st.dma_bytes / (st.array_bound_cycles * st.bus_bytes_per_cycle))
    assert st.words == len(st.program.words())
    assert bus_figures(cfg, 100, None, 1)["bus_occupancy"] is None


def test_predict_prints_the_bus_figures():
    r = subprocess.run([sys.executable, "-m", "fsa.cli", "predict", "--config",
                        "FSA8X8Fp16Config", "--seq-q", "16", "--seq-kv", "32", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "bus occupancy" in r.stdout and "array bound" in r.stdout
    figures = json.loads(r.stdout[r.stdout.index("{"):])
    cfg = config.get("FSA8X8Fp16Config")
    assert figures["dma_bytes"] == attention_dma_bytes(cfg, 2, 8)
    assert figures["array_bound_cycles"] == 2 * 8 * 8
    assert figures["bus_occupancy"] == pytest.approx(
        figures["dma_bytes"] / (figures["cycles"] * figures["bus_bytes_per_cycle"]))


def test_run_json_has_the_bus_figures(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "fsa.cli", "run", "--sim", "golden", "--config",
                        "FSA4X4Fp16Config", "--seq-q", "8", "--seq-kv", "8", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["dma_bytes"] == attention_dma_bytes(config.get("FSA4X4Fp16Config"), 2, 4)
    assert rep["bus_occupancy"] == pytest.approx(
        rep["dma_bytes"] / (rep["cycles"] * rep["bus_bytes_per_cycle"]))
    assert rep["array_bound_cycles"] == 2 * 4 * 4
    assert "bus occupancy" in r.stdout


def test_parallel_runs_give_the_serial_verdict(monkeypatch):
    prog = kernels.attention(config.get("FSA4X4Fp16UdConfig"), 8, 12, check=False)
    serial = cdispatch._run_checks(prog.cfg, prog.instructions, cm.DISPATCH_MODES)
    with pytest.raises(KernelError) as serial_err:
        cdispatch._run_checks(CFG, _deadlock(), cm.DISPATCH_MODES)
    monkeypatch.setattr(cdispatch, "PARALLEL_MIN", 1)
    monkeypatch.setenv("FSA_CHECK_WORKERS", "3")
    assert cdispatch.check_workers() == 3
    assert cdispatch._run_checks(prog.cfg, prog.instructions, cm.DISPATCH_MODES) == serial > 0
    with pytest.raises(KernelError) as parallel_err:
        cdispatch._run_checks(CFG, _deadlock(), cm.DISPATCH_MODES)
    assert str(parallel_err.value) == str(serial_err.value)
    monkeypatch.setenv("FSA_CHECK_WORKERS", "many")
    with pytest.raises(ValueError, match="FSA_CHECK_WORKERS"):
        cdispatch.check_workers()


# ------------------------------------------------------------------ periods skipped
_PERIODIC = [("FSA4X4Fp16Config", 16, 64, False, 1), ("FSA4X4Fp16UdConfig", 8, 512, False, 1),
             ("FSA8X8Fp16Config", 32, 128, False, 2), ("FSA4X4Fp16TwoPortConfig", 16, 64, False, 1),
             ("FSA8X8Fp16TwoPortConfig", 16, 128, False, 1), ("FSA16X16Fp16Config", 32, 256, False, 1),
             ("FSA8X8Fp16UdConfig", 16, 512, False, 2)]


@pytest.mark.parametrize("name,sq,skv,causal,heads", _PERIODIC)
def test_periodic_skip_gives_the_same_run(name, sq, skv, causal, heads, monkeypatch):
    """Every cycle count, counter, matrix start and DMA span the same with
    and without skipping, both dispatch modes, the three check timings; and
    periods were skipped."""
    from fsa.cycle import skip
    made = []
    real_init = skip.Skipper.__init__
    monkeypatch.setattr(skip.Skipper, "__init__",
                        lambda self, *a: (real_init(self, *a), made.append(self))[0])
    cfg = config.get(name)
    prog = kernels.attention(cfg, sq, skv, causal=causal, heads=heads, check=False)
    for mode in cm.DISPATCH_MODES:
        for dma in cdispatch.check_timings(cfg).values():
            a = cm.simulate(cfg, prog.instructions, dma, dispatch=mode, races=True)
            b = cm.simulate(cfg, prog.instructions, dma, dispatch=mode, races=True, periodic=True)
            assert (a.cycles, a.counters, a.mx_starts, a.dma_spans) == \
                (b.cycles, b.counters, b.mx_starts, b.dma_spans), (mode, dma)
    assert len(made) == 6 and sum(s.skipped for s in made) > 0


def test_periodic_skip_keeps_errors():
    """A deadlock late in the repeating part is found at the same cycle,
    with the same message, with skipping."""
    import dataclasses
    cfg = config.get("FSA4X4Fp16Config")
    prog = kernels.attention(cfg, 8, 256, check=False)
    ins = list(prog.instructions)
    # an acquire deep inside waits for a value that never comes
    j = max(n for n, x in enumerate(ins[:len(ins) * 3 // 4])
            if isinstance(x, Matrix) and x.acquire_valid)
    ins[j] = dataclasses.replace(ins[j], acquire_value=(ins[j].acquire_value + 1) % 4)
    errs = []
    for periodic in (False, True):
        with pytest.raises((cm.DispatchError, RuntimeError)) as e:
            for mode in cm.DISPATCH_MODES:
                for dma in cdispatch.check_timings(cfg).values():
                    cm.simulate(cfg, ins, dma, dispatch=mode, races=True, periodic=periodic)
        errs.append(str(e.value))
    assert errs[0] == errs[1]


def test_instruction_keys_ignore_only_addresses():
    from fsa.cycle.skip import Skipper
    import dataclasses
    cfg = config.get("FSA8X8Fp16Config")
    a = Dma(DmaFunc.LOAD, repeat=8, sram_addr=0, sram_stride=1, mem_addr=cfg.mem_base,
            mem_stride=16, size=16)
    run = [dataclasses.replace(a, mem_addr=cfg.mem_base + 128 * i) for i in range(4)]
    keys = Skipper._keys(cfg, run + [dataclasses.replace(a, sram_addr=8)])
    assert keys[2] == keys[3] != keys[4]


# ------------------------------------------------------------------ float32 MACs
@pytest.mark.parametrize("name,sq,skv,causal,key_limit", [
    ("FSA8X8Fp16Config", 64, 128, False, None), ("FSA8X8Fp16Config", 64, 64, True, None),
    ("FSA8X8Fp16Config", 32, 64, False, 5), ("FSA16X16Fp16Config", 32, 96, False, None),
    ("FSA4X4Fp16Config", 16, 32, True, None)])
@pytest.mark.parametrize("dist", ["normal", "large", "tiny", "special"])
def test_float32_macs_same_bits(name, sq, skv, causal, key_limit, dist, monkeypatch):
    """The golden model's float32 multiply-add chains (fp16 x fp16 + fp32)
    give the float64 path's bits, also with overflow, subnormal products,
    infinities, NaN and -0."""
    from fsa import numerics as nx
    from fsa.golden import fast
    cfg = config.get(name)
    R = cfg.sa_rows
    rng = np.random.default_rng(hash((name, dist)) % 2**32)
    xs = [rng.standard_normal((2, n, R)) for n in (sq, skv, skv)]
    if dist == "large":
        xs = [x * 300 for x in xs]
    elif dist == "tiny":
        xs = [x * 1e-6 for x in xs]
    elif dist == "special":
        xs = [x * np.where(rng.random(x.shape) < 0.05, 1e5, 1.0) for x in xs]
        xs[0][0, 0, 0], xs[1][1, 3, 2], xs[2][0, 5, 1] = np.inf, np.nan, -np.inf
        xs[0][1, 2, :] = -0.0
    q, k, v = (nx.from_float64(x, cfg.e_type) for x in xs)
    out = []
    for on in (False, True):
        monkeypatch.setattr(fast, "FLOAT32_MACS", on)
        out.append(fast.attention(cfg, q, k, v, causal=causal, key_limit=key_limit))
    assert out[0].dtype == out[1].dtype and np.array_equal(out[0], out[1])


def test_built_skips_only_the_signature(monkeypatch):
    """GoldenEngine(built=True) does not recompute the fast signature, but a
    program without one still runs on the instruction-level model; the API's
    output is the same bits either way."""
    import torch

    import fsa
    from fsa import engines
    cfg = config.get("FSA4X4Fp16Config")
    prog = kernels.attention(cfg, 8, 8, check=False)
    calls = []
    real = engines.attention_signature
    monkeypatch.setattr(engines, "attention_signature", lambda p: calls.append(1) or real(p))
    assert engines.GoldenEngine.fast_path_applies(prog) and len(calls) == 1
    assert engines.GoldenEngine.fast_path_applies(prog, built=True) and len(calls) == 1
    del prog.meta["fast_signature"]
    assert not engines.GoldenEngine.fast_path_applies(prog, built=True)
    q = torch.randn(1, 2, 12, 4, generator=torch.Generator().manual_seed(5))
    o = fsa.scaled_dot_product_attention(q, q, q, config=cfg)
    assert len(calls) == 1                              # not recomputed by the API
    from fsa.api import prepare
    x = q.double().numpy()
    job = prepare(x, x, x, config=cfg)
    res = engines.GoldenEngine(cfg, machine=True).run(job.program, job.inputs)
    assert np.array_equal(job.output(res), o.double().numpy())
