"""The attention kernel (fsa.kernels) on the golden engine.

For every shape and config: O is bit-equal to the tile model's reference
loop (fsa.golden.tile.attention) on the same rounded inputs, within the
documented bound of torch's scaled_dot_product_attention (computed in
float64 from the same rounded inputs; FlashAttention-3-style inputs:
N(0, 1) plus, with probability 0.001, N(0, 10^2)), and the program runs to
completion under a model of the hardware's in-order dispatcher with ONE
pending instruction per engine (written here, independent of
fsa.cycle.model, which fsa.cycle.dispatch.check_dispatch runs), for many interleavings.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from fsa import config
from fsa import numerics as nx
from fsa.engines import Engine, Execution, GoldenEngine, Result, SimEngine
from fsa.golden import tile
from fsa.isa import Dma, Fence, Matrix, MxFunc, decode, encode
from fsa.kernel_lang import KernelError
from fsa.kernels import attention
from fsa.kernels.reference import buffer_plan


# ------------------------------------------------------------------ helpers
def fa3_inputs(rng, shape, fmt):
    """N(0,1) + Bernoulli(0.001) * N(0, 10^2), rounded (RNE) to `fmt` bits."""
    x = rng.standard_normal(shape)
    x = x + (rng.random(shape) < 0.001) * rng.normal(0.0, 10.0, shape)
    return nx.from_float64(x, fmt)


def torch_ref(cfg, q, k, v, causal):
    e = cfg.e_type
    qt, kt, vt = (torch.from_numpy(nx.to_float64(x, e))[None, None] for x in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    return o[0, 0].numpy()


def dispatch(program_words, policy="random", seed=0, max_steps=1_000_000):
    """A tiny model of the in-order dispatcher.

    Decode in program order; per engine one pending slot (the decoder waits
    while it is full); a pending instruction issues when its acquire succeeds
    (value equal, not held) and the engine's previous instruction has
    completed; it releases at completion. Fences wait for the engines they
    name (stop: both) to be idle. Among the enabled actions the policy picks
    one: "random", or "mx_slow"/"dma_slow" (complete that engine's work
    last). Returns the number of steps; raises AssertionError on deadlock.
    """
    prog = decode(program_words)
    rng = random.Random(seed)
    val, held = [0] * 32, [False] * 32
    pending = {"mx": None, "dma": None}
    running = {"mx": None, "dma": None}
    pc = 0

    def idle(e):
        return pending[e] is None and running[e] is None

    for step in range(max_steps):
        acts = []
        if pc < len(prog):
            ins = prog[pc]
            if isinstance(ins, Fence):
                if not (((ins.mx or ins.stop) and not idle("mx"))
                        or ((ins.dma or ins.stop) and not idle("dma"))):
                    if ins.stop:
                        return step
                    acts.append(("decode", None))
            elif pending["mx" if isinstance(ins, Matrix) else "dma"] is None:
                acts.append(("decode", None))
        elif idle("mx") and idle("dma"):
            return step
        for e in ("mx", "dma"):
            p = pending[e]
            if p is not None and running[e] is None and (
                    not p.acquire_valid or (val[p.sem_id] == p.acquire_value and not held[p.sem_id])):
                acts.append(("issue", e))
            if running[e] is not None:
                acts.append(("complete", e))
        assert acts, (f"deadlock at instruction {pc}: pending {pending}, sem values "
                      f"{val[:8]}, held {held[:8]}")
        if policy == "random":
            act = rng.choice(acts)
        else:
            slow = "mx" if policy == "mx_slow" else "dma"
            fast = [a for a in acts if a != ("complete", slow)]
            act = fast[0] if fast else acts[0]
        kind, e = act
        if kind == "decode":
            ins = prog[pc]
            pc += 1
            if not isinstance(ins, Fence):
                pending["mx" if isinstance(ins, Matrix) else "dma"] = ins
        elif kind == "issue":
            ins = pending[e]
            pending[e] = None
            if ins.acquire_valid:
                held[ins.sem_id] = True
            running[e] = ins
        else:
            ins = running[e]
            running[e] = None
            if ins.release_valid:
                val[ins.sem_id], held[ins.sem_id] = ins.release_value, False
    raise AssertionError("dispatcher model did not finish")


def run_case(cfg, sq, skv, causal, seed=0):
    rng = np.random.default_rng([sq, skv, cfg.sa_rows, cfg.sa_cols, len(cfg.e_type), int(causal), seed])
    e = cfg.e_type
    R = cfg.sa_rows
    q, k, v = (fa3_inputs(rng, (n, R), e) for n in (sq, skv, skv))
    prog = attention(cfg, sq, skv, causal)
    res = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    assert isinstance(res, Result)
    return prog, res, q, k, v


def check_against_torch(cfg, res, q, k, v, causal):
    got = res.o
    ref = torch_ref(cfg, q, k, v, causal)
    assert np.all(np.isfinite(got))
    s = max(1.0, float(np.max(np.abs(nx.to_float64(v, cfg.e_type)))) / 4)
    tol = 10.0 if cfg.e_type == "bf16" else 1.0
    err = np.abs(got - ref)
    assert err.max() <= 5e-3 * s * tol, f"{cfg.name}: max abs err {err.max():.3g}"
    assert err.mean() <= 5e-4 * s * tol, f"{cfg.name}: MAE {err.mean():.3g}"


def check_dispatch_all(prog):
    w = prog.words()
    for policy in ("mx_slow", "dma_slow"):
        dispatch(w, policy)
    for seed in range(3):
        dispatch(w, "random", seed)


# ------------------------------------------------------------------ cases
CONFIGS = ["FSA4X4Fp16Config", "FSA8X8Fp16Config", "FSA4X4Bf16Config", "FSA8X4Fp16Config",
           "FSA4X4Fp32Config"]


def shapes(cfg):
    """(seq_q, seq_kv, causal): one block, several, seq_q != seq_kv both ways."""
    R, C = cfg.sa_rows, cfg.sa_cols
    out = [(C, R, False), (2 * C, 3 * R, False), (3 * C, R, False), (3 * C, 2 * R, False)]
    if R == C:
        out += [(C, R, True), (3 * C, 3 * R, True)]
    return out


CASES = [(n, sq, skv, c) for n in CONFIGS for sq, skv, c in shapes(config.get(n))]


@pytest.mark.parametrize("name,sq,skv,causal", CASES)
def test_attention_golden_bit_exact_and_vs_torch(name, sq, skv, causal):
    cfg = config.get(name)
    prog, res, q, k, v = run_case(cfg, sq, skv, causal)
    want = tile.attention(cfg, q, k, v, causal)
    assert res.outputs["O"].dtype == want.dtype and np.array_equal(res.outputs["O"], want)
    assert np.array_equal(res.outputs["Ot"], want.T)
    check_against_torch(cfg, res, q, k, v, causal)
    check_dispatch_all(prog)


VARIANTS = [  # (config changes, seq_q, seq_kv, causal): buffer fallbacks and two acc sets
    (dict(spad_rows=12), 12, 8, False),          # single Q, single K/V
    (dict(spad_rows=20), 12, 8, False),          # single Q, double K/V
    (dict(spad_rows=16), 12, 12, True),          # double Q, single K/V
    (dict(acc_rows=10), 16, 8, False),           # two accumulator sets
    (dict(acc_rows=10, spad_rows=12), 16, 16, True),
    (dict(acc_rows=10), 4, 12, False),
]


@pytest.mark.parametrize("changes,sq,skv,causal", VARIANTS)
def test_attention_buffer_variants(changes, sq, skv, causal):
    cfg = config.get("FSA4X4Fp16Config").replace(name="FSA4X4Variant", **changes)
    prog, res, q, k, v = run_case(cfg, sq, skv, causal)
    assert np.array_equal(res.outputs["O"], tile.attention(cfg, q, k, v, causal))
    check_dispatch_all(prog)


def test_buffer_plan():
    base = config.get("FSA4X4Fp16Config")       # two accumulator sets (2 (1 + R) rows)
    assert buffer_plan(base) == {"q": 2, "kv": 2, "acc": 2}
    assert buffer_plan(base.replace(acc_rows=0)) == {"q": 2, "kv": 2, "acc": 1}
    assert buffer_plan(base.replace(spad_rows=12, acc_rows=10)) == {"q": 1, "kv": 1, "acc": 2}


@pytest.mark.parametrize("sq,skv", [(8, 16), (16, 8)])
def test_causal_with_unequal_lengths_matches_torch(sq, skv):
    # top-left aligned mask, as torch's is_causal
    cfg = config.get("FSA4X4Fp16Config")
    prog, res, q, k, v = run_case(cfg, sq, skv, True)
    check_against_torch(cfg, res, q, k, v, True)
    check_dispatch_all(prog)


def test_steady_state_uses_semaphores_not_fences():
    prog = attention("FSA4X4Fp16Config", 16, 16)
    fences = [i for i in prog.instructions if isinstance(i, Fence)]
    assert fences == [Fence(mx=True, dma=True, stop=True)]
    assert prog.instructions[-1] == fences[0]
    # every DMA load and matrix SCORE/VALUE is ordered by a semaphore
    for ins in prog.instructions:
        if isinstance(ins, Dma):
            assert ins.acquire_valid and ins.release_valid
    # the DMA load of the next K block comes before the current SCORE in program order
    kinds = [(type(i).__name__, getattr(i, "func", None)) for i in prog.instructions]
    first_score = next(n for n, (t, f) in enumerate(kinds) if t == "Matrix" and f == 1)
    assert sum(1 for t, f in kinds[:first_score] if t == "Dma") >= 4   # Q, K0, V0, K1


def test_inputs_as_bits_or_transposed_v_give_the_same_result():
    cfg = config.get("FSA4X4Fp16Config")
    prog, res, q, k, v = run_case(cfg, 8, 8, False)
    eng = GoldenEngine(cfg)
    res2 = eng.run(prog, {"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    assert np.array_equal(res.outputs["O"], res2.outputs["O"])
    res3 = eng.run(prog, {"Q": nx.to_float64(q, "fp16"), "K": nx.to_float64(k, "fp16"),
                          "V": nx.to_float64(v, "fp16").astype(np.float16)})
    assert np.array_equal(res.outputs["O"], res3.outputs["O"])


def test_result_fields_and_derived_figures():
    cfg = config.get("FSA4X4Fp16Config")
    prog, res, *_ = run_case(cfg, 8, 12, False)
    assert res.cycles is None and res.utilisation is None and res.cycles_per_key_block is None
    assert res.counters["matrix"] == prog.counts()["matrix"]
    assert res.instruction_counts["ATTENTION_SCORE"] == 6
    assert res.flops == 4 * 8 * 12 * 4

    class Timed(GoldenEngine):
        def execute(self, program, words, image):
            ex = super().execute(program, words, image)
            return Execution(ex.read, ex.counters, 1000)

    r = Timed(cfg).run(prog, {"Q": np.zeros((8, 4)), "K": np.zeros((12, 4)), "V": np.ones((12, 4))})
    assert r.utilisation == pytest.approx(4 * 8 * 12 * 4 / (1000 * 2 * 16))
    assert r.cycles_per_key_block == pytest.approx(1000 / 6)
    assert np.allclose(r.o, 1.0)              # uniform scores: mean of V
    assert r.summary()["cycles"] == 1000
    causal = attention(cfg, 8, 8, causal=True)
    rc = Timed(cfg).run(causal, {"Q": np.zeros((8, 4)), "K": np.zeros((8, 4)), "V": np.ones((8, 4))})
    # useful FLOPs: 4 d per (query, key) pair the causal mask keeps (36 of 64)
    kept = int(np.tril(np.ones((8, 8))).sum())
    assert rc.flops == 4 * 4 * kept == 576 and rc.cycles_per_key_block == pytest.approx(1000 / 3)
    assert rc.utilisation == pytest.approx(576 / (1000 * 2 * 16))
    assert rc.summary()["flops"] == 576


def unmasked_pairs(sq, skv):
    """(query, key) pairs torch's is_causal mask keeps, counted from the mask."""
    mask = torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=0)
    return int(mask.sum())


@pytest.mark.parametrize("sq,skv", [(8, 8), (8, 16), (16, 8), (12, 4)])
def test_attention_flops_count_the_pairs_the_mask_keeps(sq, skv):
    from fsa.kernels import attention_flops
    assert attention_flops(sq, skv, 4, causal=False) == 4 * sq * skv * 4
    assert attention_flops(sq, skv, 4, causal=True) == 4 * unmasked_pairs(sq, skv) * 4
    with pytest.raises(ValueError, match="seq_q must be a positive int"):
        attention_flops(0, skv, 4)


def test_fsa_run_and_fsa_predict_report_the_same_utilisation(tmp_path, capsys):
    """One FLOPs definition: causal 64 x 64 on 8x8, `fsa run --sim golden`
    (cycles from the cycle model) and `fsa predict` give the same FLOPs and
    utilisation, and the JSON report carries flops, cycles and utilisation."""
    import json

    from fsa.cycle import model as cm
    from fsa.cli import main as cli

    cfg = config.get("FSA8X8Fp16Config")
    args = ["--config", cfg.name, "--seq-q", "64", "--seq-kv", "64", "--causal"]
    # --push: the cycle model with the cocotb harness's AXI4-Lite pushes, as fsa
    # predict --program push (without it, the program-fetch model on both sides:
    # test_fsa_run_golden_cycles_model_program_fetch, tests/test_cyclemodel.py)
    assert cli(["run", "--sim", "golden", "--push", "--json", str(tmp_path / "r.json")]
               + args) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    flops = 4 * 8 * unmasked_pairs(64, 64)
    prog = attention(cfg, 64, 64, causal=True)
    assert len(prog.words()) > cfg.inst_queue_size        # the pushes are modelled
    cycles = cm.simulate(cfg, prog.instructions,
                         **cm.program_feed(cfg, "push", len(prog.words()))).cycles
    assert rep["flops"] == flops and rep["cycles"] == cycles
    assert rep["utilisation"] == pytest.approx(flops / (cycles * 2 * 8 * 8))
    assert rep["cycles_from"] == "cycle model (fsa/cycle/model.py, program push)"
    capsys.readouterr()
    assert cli(["predict", "--program", "push"] + args) == 0
    out = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]
           if line.startswith("  ")}
    assert int(out["cycles"]) == cycles and int(out["FLOPs"]) == flops
    assert out["utilisation"] == f"{rep['utilisation']:.4f}"


def test_engine_errors():
    cfg = config.get("FSA4X4Fp16Config")
    prog = attention(cfg, 4, 4)
    with pytest.raises(KernelError, match="built for FSA4X4Fp16Config.*rebuild"):
        GoldenEngine("FSA8X8Fp16Config").run(prog, {})
    eng = GoldenEngine(cfg)
    with pytest.raises(KernelError, match=r"missing inputs 'Vt' \(or 'V'\)"):
        eng.run(prog, {"Q": np.zeros((4, 4)), "K": np.zeros((4, 4))})
    with pytest.raises(KernelError, match=r"'K' must have shape \(4, 4\)"):
        eng.run(prog, {"Q": np.zeros((4, 4)), "K": np.zeros((8, 4)), "V": np.zeros((4, 4))})
    with pytest.raises(KernelError, match="uint32 but fp16 bits are uint16"):
        eng.run(prog, {"Q": np.zeros((4, 4), np.uint32), "K": np.zeros((4, 4)), "V": np.zeros((4, 4))})
    with pytest.raises(KernelError, match="no tensor or view called 'X'"):
        eng.run(prog, {"X": np.zeros((4, 4))})
    with pytest.raises(KernelError, match="given twice"):
        eng.run(prog, {"Q": np.zeros((4, 4)), "K": np.zeros((4, 4)), "V": np.zeros((4, 4)),
                       "Vt": np.zeros((4, 4))})
    with pytest.raises(KernelError, match="output tensor, not an input"):
        eng.run(prog, {"Ot": np.zeros((4, 4))})
    with pytest.raises(NotImplementedError):
        Engine(cfg).run(prog, {"Q": np.zeros((4, 4)), "K": np.zeros((4, 4)), "V": np.zeros((4, 4))})
    with pytest.raises(ValueError, match="sim must be one of"):
        SimEngine(cfg, sim="modelsim")
    assert SimEngine(cfg, sim="icarus").sim == "icarus"


@pytest.mark.parametrize("args,msg", [
    (("FSA4X4Fp16Config", 6, 4), r"seq_q must be a positive multiple of C .* = 4 .* got 6"),
    (("FSA8X4Fp16Config", 4, 4), r"seq_kv must be a positive multiple of R .* = 8 .* got 4"),
    (("FSA4X4Fp16Config", 0, 4), "seq_q must be a positive multiple"),
    (("FSA8X4Fp16Config", 4, 8, True), r"causal masking needs a square array \(R == C\)"),
])
def test_attention_argument_errors(args, msg):
    with pytest.raises(ValueError, match=msg):
        attention(*args)


def test_dispatch_model_finds_a_deadlock():
    # the matrix instruction waits for a DMA that sits behind a second matrix
    # instruction: the one-pending rule stalls the decoder forever
    from fsa.kernel_lang import KernelBuilder
    kb = KernelBuilder("FSA4X4Fp16Config")
    x = kb.alloc_mem((4, 4), "fp16", "X", role="input")
    s, s2 = kb.alloc_spad(4), kb.alloc_spad(4)
    ins = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=1, acquire_valid=True, acquire_value=1,
                  release_valid=True, release_value=0),
           Matrix(MxFunc.LOAD_STATIONARY),
           Dma(repeat=4, sram_addr=4, sram_stride=1, mem_addr=x.addr, mem_stride=8, size=8,
               sem_id=1, acquire_valid=True, acquire_value=0, release_valid=True, release_value=1),
           Fence(mx=True, dma=True, stop=True)]
    with pytest.raises(AssertionError, match="deadlock"):
        dispatch(encode(ins), "mx_slow")
    # the same instructions with the DMA first are fine
    dispatch(encode([ins[2], ins[0], ins[1], ins[3]]), "random")
    # and fsa.kernel_lang's own check agrees
    for i in ins[:3]:
        kb.emit(i)
    with pytest.raises(KernelError, match="deadlock.*matrix instruction 0 waits for semaphore 1 == 1"):
        kb.build()
    assert s.rows == s2.rows == 4


def test_16x16_seq128():
    cfg = config.get("FSA16X16Fp16Config")
    prog, res, q, k, v = run_case(cfg, 64, 128, False)
    assert np.array_equal(res.outputs["O"], tile.attention(cfg, q, k, v))


def test_execution_from_dumped_output_regions():
    # what SimEngine will do: dump the output regions and parse them
    cfg = config.get("FSA4X4Fp16Config")
    prog, res, *_ = run_case(cfg, 8, 8, False)

    class Dumping(GoldenEngine):
        def execute(self, program, words, image):
            ex = super().execute(program, words, image)
            dumps = [(a, ex.read(a, n)) for a, n in program.output_regions()]
            return Execution.from_segments(dumps, ex.counters, 123)

    r = Dumping(cfg).run(prog, {"Q": np.zeros((8, 4)), "K": np.zeros((8, 4)), "V": np.ones((8, 4))})
    assert r.cycles == 123 and np.allclose(r.o, 1.0)
    assert prog.output_regions() == [(prog.tensors["Ot"].addr, 4 * 8 * 4)]


def test_fsa_run_golden_cycles_model_program_fetch(tmp_path):
    """`fsa run --sim golden` (program fetch, the default) takes its cycles
    from the cycle model with the program fetched from the top of the memory
    window, as the device runs it; slower than a queue kept full."""
    import json

    from fsa.cycle import model as cm
    from fsa.cli import main as cli
    from fsa.simdev import program_address

    cfg = config.get("FSA4X4Fp16Config")
    assert cli(["run", "--sim", "golden", "--config", cfg.name, "--seq-q", "32", "--seq-kv", "32",
                "--json", str(tmp_path / "r.json")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    prog = attention(cfg, 32, 32)
    fetch = cm.FetchTiming(program_address(cfg, len(prog.words())))
    assert rep["cycles"] == cm.simulate(cfg, prog.instructions, fetch=fetch).cycles
    assert rep["cycles"] > cm.simulate(cfg, prog.instructions).cycles
    assert "cycles_note" not in rep
