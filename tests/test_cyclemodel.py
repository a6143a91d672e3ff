"""The cycle model (fsa/cycle/model.py) without a simulator: its steady state
against the reference schedule, its extrapolation against direct runs, its
errors, and ``fsa predict``. (That it equals the RTL's exec counter is
checked on every regression run without AXI pauses: tb/attention/test_attention.py.)"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa.cycle import calibrate as cyclecal
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict
from fsa import isa, kernels
from fsa.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("n", [4, 8, 16, 32])
def test_free_dma_period_is_the_reference_schedule(n):
    """With a DMA that costs nothing the kernel's steady state is the
    reference period C + 2R + P + 4 + max(2R-1, R+C+1) = 4R + C + P + 5."""
    cfg = fconfig.get(f"FSA{n}X{n}Fp16Config")
    ss = cpredict.steady_state(cfg, cm.IDEAL_DMA)
    P = cfg.exp2_pieces
    assert ss["per_key_block"] == cpredict.reference_period(n, n, P) == 4 * n + n + P + 5
    assert ss["per_key_block_check"] == ss["per_key_block"]      # periodic: the fit is exact


def test_reference_period_formula():
    assert cpredict.reference_period(4, 4, 8) == 33
    assert cpredict.reference_period(8, 8, 8) == 53
    assert cpredict.reference_period(16, 8, 8) == 8 + 32 + 8 + 4 + 31     # max(2R-1, R+C+1) = 2R-1
    assert cpredict.reference_period(8, 16, 8) == 16 + 16 + 8 + 4 + 25    # R+C+1


def test_dma_bound_period_grows_with_the_tile():
    """64-bit AXI (the ``...Axi64Config`` presets, one scratchpad bank): a K
    or V tile is R * 2R bytes = R^2/4 beats; from 8x8 on the DMA, not the
    schedule, sets the period (68 at 8x8, 188 at 16x16, as measured on the
    RTL: bench/results/utilisation.json, docs/performance.md 1b; its rows of
    two beats keep one LOAD in flight, fsa/hw/dmarules.py)."""
    one_bank = fconfig.get("FSA4X4Fp16Config").replace(spad_banks=1, spad_rows=24,
                                                         name="OneBank")
    for name, want in ((one_bank, 33), ("FSA8X8Fp16Axi64Config", 68),
                       ("FSA16X16Fp16Axi64Config", 188)):
        cfg = fconfig.get(name)
        assert cfg.axi_data_bits == 64 and cfg.spad_banks == 1
        assert cpredict.steady_state(cfg)["per_key_block"] == want
    wide = fconfig.get("FSA16X16Fp16Axi64Config").replace(axi_data_bits=256, name="W")
    assert cpredict.steady_state(wide)["per_key_block"] == cpredict.reference_period(16, 16, 8)


@pytest.mark.parametrize("name,n,causal", [("FSA8X8Fp16Config", 128, False),
                                           ("FSA16X16Fp16Config", 256, False),
                                           ("FSA4X4Bf16Config", 64, False)])
def test_extrapolation_equals_direct_run(name, n, causal):
    cfg = fconfig.get(name)
    ss = cpredict.steady_state(cfg)
    direct = cm.simulate(cfg, kernels.attention(cfg, n, n, causal=causal, check=False).instructions)
    assert cpredict.predict_cycles(cfg, n, n, causal, ss) == direct.cycles


def test_counters_are_consistent():
    cfg = fconfig.get("FSA8X8Fp16Config")
    prog = kernels.attention(cfg, 32, 48)
    m = cm.simulate(cfg, prog.instructions)
    c = m.counters
    counts = prog.counts()
    assert c["mx"] == counts["matrix"] and c["dma"] == counts["dma"]
    assert c["bubble"] + c["mx_active"] == m.cycles
    assert 0 < c["dma_active"] <= m.cycles
    assert len(m.mx_starts) == counts["matrix"] and m.mx_starts == sorted(m.mx_starts)
    assert all(a < d for a, d in m.dma_spans)


def test_attention_steps_matches_a_brute_force_count():
    for nq in range(1, 7):
        for nk in range(1, 7):
            assert cpredict.attention_steps(nq, nk, False) == nq * nk
            brute = sum(1 for i in range(nq) for j in range(nk) if j <= i)
            assert cpredict.attention_steps(nq, nk, True) == brute


def test_bad_shapes_are_refused():
    cfg = fconfig.get("FSA8X4Fp16Config")
    with pytest.raises(ValueError, match="multiple of C"):
        cpredict.block_counts(cfg, 6, 8)
    with pytest.raises(ValueError, match="square array"):
        cpredict.block_counts(cfg, 8, 8, causal=True)
    assert cpredict.block_counts(cfg, 8, 16) == (2, 2)


def test_deadlock_is_reported_not_hung():
    """A semaphore that nobody releases: the model says so instead of looping."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [isa.Dma(func=isa.DmaFunc.LOAD, sem_id=3, acquire_valid=True, acquire_value=1,
                    repeat=1, mem_addr=cfg.mem_base, size=8), isa.Fence(stop=True)]
    with pytest.raises(RuntimeError, match="deadlock"):
        cm.simulate(cfg, prog)


def test_default_dma_timing_reproduces_the_rtl_calibration():
    """DEFAULT_DMA predicts, cycle for cycle, the exec counter the RTL
    measured for every DMA-only calibration program (calibrate_dma on
    Verilator, recorded by `make bench` in bench/results/utilisation.json);
    a changed default, model or calibration program fails here."""
    res = json.loads((ROOT / "bench" / "results" / "utilisation.json").read_text())
    fields = {k: v for k, v in dataclasses.asdict(cm.DEFAULT_DMA).items() if k != "ideal"}
    assert res["dma_timing"] == fields, (res["dma_timing"], cm.DEFAULT_DMA)
    cfg = fconfig.get("FSA4X4Fp16Config")
    progs = dict(cyclecal.dma_programs(cfg))
    rows = {r["program"]: r for r in res["calibration"]}
    assert set(rows) == set(progs) and len(rows) >= 8, (sorted(rows), sorted(progs))
    for name, prog in progs.items():
        assert cm.simulate(cfg, prog, cm.DEFAULT_DMA).cycles == rows[name]["rtl"], name


def test_host_push_rate_reproduces_the_rtl_queue_runs():
    """Programs longer than the queue: with the harness's push rate
    (HARNESS_HOST) the model gives the exec cycles the RTL measured
    (bench/results/utilisation.json, "queue_effect": 329 and 1201 words on a
    256-word queue); without it, the 1201-word program is predicted far too
    fast (the decoder would never wait for the host)."""
    res = json.loads((ROOT / "bench" / "results" / "utilisation.json").read_text())
    rows = res["queue_effect"]
    assert any(r["words"] > 2 * r["queue_words"] for r in rows), rows
    for r in rows:
        cfg = fconfig.get(r["config"])
        assert cfg.inst_queue_size == r["queue_words"]
        prog = kernels.attention(cfg, r["N"], r["N"])
        assert len(prog.words()) == r["words"]
        m = cm.simulate(cfg, prog.instructions, host=cm.HARNESS_HOST)
        assert m.cycles == r["rtl_cycles"], (r, m.cycles)
        if r["words"] > 2 * r["queue_words"]:
            assert cm.simulate(cfg, prog.instructions).cycles < r["rtl_cycles"] - 1000


def test_host_push_model_properties():
    """A program that fits the queue does not depend on the host; a longer
    one is never faster with a slower host, and a host far slower than the
    device leaves the decoder waiting for every word beyond the queue."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    short = kernels.attention(cfg, 8, 12).instructions
    free = cm.simulate(cfg, short).cycles
    for host in (cm.HostPush(0, 1), cm.HARNESS_HOST, cm.HostPush(50, 100)):
        assert cm.simulate(cfg, short, host=host).cycles == free
    prog = kernels.attention(cfg, 16, 32)
    extra = len(prog.words()) - cfg.inst_queue_size
    assert extra > 0
    cycles = [cm.simulate(cfg, prog.instructions, host=cm.HostPush(2, p)).cycles
              for p in (1, 2, 4, 8, 16, 1000)]
    assert cycles == sorted(cycles) and cycles[0] == cm.simulate(cfg, prog.instructions).cycles
    slow = cm.simulate(cfg, prog.instructions, host=cm.HostPush(2, 1000))
    assert 1000 * (extra - 1) < slow.cycles <= 1000 * (extra - 1) + cycles[0], (slow.cycles, extra)


def _predicted_cycles(out: str) -> int:
    return int(next(x for x in out.splitlines() if x.strip().startswith("cycles")).split()[1])


def test_cli_predict(capsys):
    """Default: the program is fetched from memory, as fsa run places it."""
    from fsa.simdev import program_address

    assert cli(["predict", "--config", "FSA4X4Fp16Config", "--seq-q", "8", "--seq-kv", "12"]) == 0
    out = capsys.readouterr().out
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = kernels.attention(cfg, 8, 12)
    fetch = cm.FetchTiming(program_address(cfg, len(prog.words())))
    want = cm.simulate(cfg, prog.instructions, fetch=fetch).cycles
    assert want != cm.simulate(cfg, prog.instructions).cycles      # fetch has a cost
    assert _predicted_cycles(out) == want
    assert "utilisation" in out and "fetched from memory" in out


@pytest.mark.parametrize("program", ["fetch", "push", "queue"])
def test_cli_predict_program_feed(capsys, program):
    """--program: each way the words reach the queue is the model with that
    feed; on a program longer than the queue push > fetch > queue."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = kernels.attention(cfg, 32, 32)
    assert len(prog.words()) > cfg.inst_queue_size
    kw = cm.program_feed(cfg, program, len(prog.words()))
    assert cli(["predict", "--config", cfg.name, "--seq-q", "32", "--seq-kv", "32",
                "--program", program]) == 0
    assert _predicted_cycles(capsys.readouterr().out) == cm.simulate(cfg, prog.instructions, **kw).cycles
    c = {p: cm.simulate(cfg, prog.instructions, **cm.program_feed(cfg, p, len(prog.words()))).cycles
         for p in cm.PROGRAM_FEEDS}
    assert c["push"] > c["fetch"] > c["queue"], c
    with pytest.raises(ValueError, match="program must be one of"):
        cm.program_feed(cfg, "dma", 10)


def test_predict_equals_fsa_run_golden_cycles(tmp_path, capsys):
    """fsa predict (default) and fsa run --sim golden report the same cycles."""
    import json

    import numpy as np

    cfg = fconfig.get("FSA4X4Fp16Config")
    rng = np.random.default_rng(3)
    for n in "qkv":
        np.save(tmp_path / f"{n}.npy", rng.standard_normal((16, 4)).astype(np.float16))
    assert cli(["run", "--config", cfg.name, "--sim", "golden", "--q", str(tmp_path / "q.npy"),
                "--k", str(tmp_path / "k.npy"), "--v", str(tmp_path / "v.npy"),
                "--json", str(tmp_path / "r.json")]) == 0
    ran = json.loads((tmp_path / "r.json").read_text())["cycles"]
    capsys.readouterr()
    assert cli(["predict", "--config", cfg.name, "--seq-q", "16", "--seq-kv", "16"]) == 0
    assert _predicted_cycles(capsys.readouterr().out) == ran


def test_cli_predict_long_sequence_extrapolates(capsys):
    assert cli(["predict", "--config", "FSA16X16Fp16Config", "--seq-q", "4096", "--seq-kv", "4096",
                "--free-dma"]) == 0
    out = capsys.readouterr().out
    assert "steady-state extrapolation" in out and "per key block     93 cycles" in out


def test_cli_predict_bad_shape(capsys):
    # any length is padded; causal needs a square array
    assert cli(["predict", "--config", "FSA8X4Fp16Config", "--seq-q", "30", "--seq-kv", "32",
                "--causal"]) == 2
    assert "square" in capsys.readouterr().err
    assert cli(["predict", "--config", "FSA8X4Fp16Config", "--seq-q", "30", "--seq-kv", "32"]) == 0
    assert "(padded to 32 x 32)" in capsys.readouterr().out


def test_two_loads_in_flight_on_one_port():
    """One port: the second LOAD is accepted once the first one's bursts
    are queued (before its done), so its data follows the first's without
    the AXI latency again; a STORE waits until the engine holds nothing; with
    two ports only into an SRAM with a narrow port per bank and disjoint rows."""
    from fsa import isa as fisa
    cfg = fconfig.get("FSA8X8Fp16Config")
    base = cfg.mem_base + 0x1000

    def ld(sa, func=fisa.DmaFunc.LOAD, acc=False):
        return fisa.Dma(func=func, repeat=8, sram_addr=sa, sram_stride=1, is_accum=acc,
                        mem_addr=base, mem_stride=256, size=16)
    two = cm.simulate(cfg, [ld(0), ld(8), fisa.Fence(stop=True)])
    (a0, d0), (a1, d1) = two.dma_spans
    # accepted the cycle after the first one's 8th burst was queued (c0 + 2 +
    # 8), before its done; then base + beats as alone
    assert a1 == a0 + 10 and a1 < d0 and d1 == a1 + 6 + 8, two.dma_spans
    one = cm.simulate(cfg, [ld(0), ld(0, fisa.DmaFunc.STORE, True), fisa.Fence(stop=True)])
    (a0, d0), (a1, d1) = one.dma_spans
    assert a1 >= d0
    # two ports into one scratchpad narrow port: one instruction in flight
    # (accepted in the first one's done cycle, as on one port when nothing
    # else is held)
    two_ports = cfg.replace(mem_ports=2, spad_banks=1, name="P2")
    spans = cm.simulate(two_ports, [ld(0), ld(8), fisa.Fence(stop=True)]).dma_spans
    assert spans[1][0] == spans[0][1], spans
    # a narrow port per bank: a second LOAD into disjoint rows is accepted
    # once the first one's bursts are queued; into overlapping rows it waits
    banked = cfg.replace(mem_ports=2, spad_banks=4, name="P2B4")
    spans = cm.simulate(banked, [ld(0), ld(8), fisa.Fence(stop=True)]).dma_spans
    assert spans[1][0] == spans[0][0] + 10 and spans[1][0] < spans[0][1], spans
    spans = cm.simulate(banked, [ld(0), ld(7), fisa.Fence(stop=True)]).dma_spans
    assert spans[1][0] == spans[0][1], spans


@pytest.mark.parametrize("name,sq,skv,causal", [
    ("FSA4X4Fp16Config", 10, 10, False), ("FSA4X4Fp16Config", 5, 13, True),
    ("FSA8X8Fp16UdConfig", 30, 30, True), ("FSA8X8Fp16UdConfig", 16, 21, False),
    ("FSA8X4Fp16Config", 7, 9, False)])
def test_predict_pads_any_length_as_fsa_run_does(name, sq, skv, causal):
    """fsa predict takes any length: the padded program's cycles are what
    fsa.scaled_dot_product_attention (and fsa run) report for that shape, and
    the FLOPs are the caller's shape's."""
    import torch

    import fsa
    from fsa.kernels import attention_flops
    from fsa.cycle.predict import predict

    cfg = fconfig.get(name)
    p = predict(cfg, sq, skv, causal)
    R, C = cfg.sa_rows, cfg.sa_cols
    assert p["padded"] == (-(-sq // C) * C, -(-skv // R) * R) != (sq, skv)
    assert p["flops"] == attention_flops(sq, skv, R, causal)
    torch.manual_seed(0)
    q, k, v = torch.randn(sq, R), torch.randn(skv, R), torch.randn(skv, R)
    _, st = fsa.scaled_dot_product_attention(q, k, v, is_causal=causal, config=cfg,
                                             return_stats=True)
    assert p["cycles"] == st.cycles and p["kernel"] == st.program.meta.get("kernel", "reference")
