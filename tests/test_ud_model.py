"""The UD dataflow in the cycle model and on the command line: the steady
state is the STEP period 2R + P + 3 per key block, the reference kernel
keeps its cycles on UD hardware, `fsa predict` / `fsa plan show` /
`fsa run` / `fsa compile` handle UD configs and `--kernel`."""
from __future__ import annotations

import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict
from fsa import isa, kernels
from fsa import plan as fplan
from fsa.cli import main
from fsa.hw import timing


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA8X8Fp16UdConfig", "FSA16X16Fp16UdConfig",
                                  "FSA4X8Fp16UdConfig", "FSA8X4Fp16UdConfig", "FSA16X8Fp16UdConfig",
                                  "FSA8X16Fp16UdConfig", "FSA32X32Fp16UdConfig"])
def test_steady_state_is_the_step_period(name):
    cfg = fconfig.get(name)
    R, P = cfg.sa_rows, cfg.exp2_pieces
    ss = cpredict.steady_state(cfg, cm.IDEAL_DMA)
    assert ss["per_key_block"] == ss["per_key_block_check"] == 2 * R + P + 3
    ref = cpredict.steady_state(cfg, cm.IDEAL_DMA, kernel="reference")
    assert ref["per_key_block"] > ss["per_key_block"]


def test_steps_issue_T_apart_in_the_model():
    cfg = fconfig.get("FSA8X8Fp16UdConfig")
    prog = kernels.attention(cfg, 8, 64)
    res = cm.simulate(cfg, prog.instructions, cm.IDEAL_DMA)
    mx = [i for i in prog.instructions if isinstance(i, isa.Matrix)]
    steps = [s for i, s in zip(mx, res.mx_starts) if i.func == isa.MxFunc.STEP]
    assert len(steps) == 7
    assert {b - a for a, b in zip(steps, steps[1:])} == {2 * 8 + 8 + 3}


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA8X4Fp16Config"])
def test_reference_kernel_cycles_unchanged_on_ud_hardware(name):
    ref, ud = fconfig.get(name), fconfig.get(fconfig.ud_twin_name(name))
    for dma in (cm.DEFAULT_DMA, cm.IDEAL_DMA):
        a = cm.simulate(ref, kernels.attention(ref, 2 * ref.sa_cols, 3 * ref.sa_rows).instructions, dma)
        b = cm.simulate(ud, kernels.attention(ud, 2 * ud.sa_cols, 3 * ud.sa_rows,
                                              kernel="reference").instructions, dma)
        assert a.cycles == b.cycles and a.mx_starts == b.mx_starts


def test_cli_predict_ud(capsys):
    assert main(["predict", "--config", "FSA8X8Fp16UdConfig", "--seq-q", "64", "--seq-kv", "64",
                 "--free-dma"]) == 0
    out = capsys.readouterr().out
    assert "per key block     27 cycles" in out and "UD bound 2R+P+3 = 27" in out
    assert "kernel            ud" in out
    assert main(["predict", "--config", "FSA8X8Fp16UdConfig", "--seq-q", "64", "--seq-kv", "64",
                 "--free-dma", "--kernel", "reference"]) == 0
    out = capsys.readouterr().out
    assert "kernel            reference" in out and "UD bound" not in out


@pytest.mark.parametrize("func", fplan.UD_FUNCS)
def test_cli_plan_show_ud(func, capsys):
    assert main(["plan", "show", "FSA4X4Fp16UdConfig", func]) == 0
    assert capsys.readouterr().out == fplan.chart(timing.plan("FSA4X4Fp16UdConfig", func)) + "\n"
    assert main(["plan", "show", "FSA4X4Fp16Config", func]) == 2
    assert "UD function" in capsys.readouterr().err


def test_cli_run_and_compile_ud(tmp_path, capsys):
    # (the UD RTL on a simulator: tb/attention/test_ud_attention.py)
    assert main(["run", "--config", "FSA4X4Fp16UdConfig", "--sim", "golden", "--seq-q", "8",
                 "--seq-kv", "12"]) == 0
    capsys.readouterr()
    for kern, want_ud in (("ud", True), ("reference", False)):
        p = tmp_path / f"{kern}.bin"
        assert main(["compile", "--config", "FSA4X4Fp16UdConfig", "--seq-q", "8", "--seq-kv", "8",
                     "--kernel", kern, "--program", str(p), "--elf", str(tmp_path / f"{kern}.elf")]) == 0
        funcs = {i.func for i in isa.decode(isa.from_bytes(p.read_bytes())) if isinstance(i, isa.Matrix)}
        assert (isa.MxFunc.STEP in funcs) == want_ud
        assert (isa.MxFunc.ATTENTION_SCORE in funcs) == (not want_ud)


def test_ud_units_generated():
    """Stage 2: a UD config generates the UD units (the bottom comparator
    row among them); a reference config does not (docs/ud.md)."""
    from rtl import generate

    ud = {u.module for u in generate.units_for(fconfig.get("FSA4X4Fp16UdConfig"))}
    ref = {u.module for u in generate.units_for(fconfig.get("FSA4X4Fp16Config"))}
    assert ud - ref == {"fsa_bcmp"} and ref <= ud
    roles = {u.module: u.role for u in generate.units_for(fconfig.get("FSA4X4Fp16UdConfig"))}
    assert "qreg" in roles["fsa_pe"] and "LATCH" in roles["fsa_cmp"]


@pytest.mark.parametrize("early", [False, True])
def test_early_release_frees_the_slot_after_the_last_read(early):
    """`early_release` (UD): the semaphore release takes effect the cycle
    after the instruction's last scratchpad read (Plan.read_release), not
    after its last action; a DMA waiting for it starts that much sooner."""
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    flags = dict(rev_input=True, delay_output=True)
    prog = [isa.Matrix(isa.MxFunc.LOAD_Q, **flags),
            isa.Matrix(isa.MxFunc.KSTEP, sem_id=1, release_valid=True, release_value=1,
                       early_release=early, reset_max=True, **flags),
            isa.Dma(isa.DmaFunc.LOAD, sem_id=1, acquire_valid=True, acquire_value=1, repeat=1, size=8,
                    mem_addr=cfg.mem_base),
            isa.Fence(stop=True)]
    res = cm.simulate(cfg, prog, cm.IDEAL_DMA)
    kstep = timing.plan(cfg, "KSTEP")
    assert kstep.read_release == cfg.sa_rows < kstep.release
    rel = kstep.read_release if early else kstep.release
    # released in cycle start + rel, visible (and the DMA accepted) the cycle after
    assert res.dma_spans[0][0] == res.mx_starts[1] + rel + 1


def test_ud_kernel_releases_slots_early():
    prog = kernels.attention("FSA4X4Fp16UdConfig", 8, 8)
    steps = [i for i in prog.instructions if isinstance(i, isa.Matrix)
             and i.func in (isa.MxFunc.KSTEP, isa.MxFunc.STEP, isa.MxFunc.PVSTEP)]
    assert steps and all(i.early_release for i in steps)
    st = timing.plan("FSA4X4Fp16UdConfig", "STEP")
    assert st.read_release == 2 * 4 + 8 + 3 and st.release == 3 * 4 + 8 + 4 + 4


def test_cli_compile_exec_round_trip(tmp_path, capsys):
    """`fsa compile` of the UD kernel, `fsa exec --sim golden`: the same output
    bytes as the reference kernel on the reference config; the UD program on
    the reference config stops with ILLEGAL_FUNC at its first UD instruction."""
    def run(cfg, kern, tag):
        b, e, o = (str(tmp_path / f"{tag}.{x}") for x in ("bin", "elf", "out"))
        assert main(["compile", "--config", cfg, "--seq-q", "8", "--seq-kv", "8", "--kernel", kern,
                     "--program", b, "--elf", e]) == 0
        addr = capsys.readouterr().out.split("out.bin:")[1].split()[0]
        return b, e, o, addr

    b, e, o, addr = run("FSA4X4Fp16UdConfig", "ud", "ud")
    assert main(["exec", "--config", "FSA4X4Fp16UdConfig", "--program", b, "--load", e,
                 "--dump", f"{o}:{addr}", "--sim", "golden"]) == 0
    rb, re_, ro, raddr = run("FSA4X4Fp16Config", "reference", "ref")
    assert raddr == addr
    assert main(["exec", "--config", "FSA4X4Fp16Config", "--program", rb, "--load", re_,
                 "--dump", f"{ro}:{raddr}", "--sim", "golden"]) == 0
    assert open(o, "rb").read() == open(ro, "rb").read()
    capsys.readouterr()
    assert main(["exec", "--config", "FSA4X4Fp16Config", "--program", b, "--load", e,
                 "--sim", "golden"]) == 1
    assert "ILLEGAL_FUNC at instruction 2" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA8X4Fp16UdConfig", "FSA4X8Fp16UdConfig"])
def test_load_q_wave_holds_all_but_the_next_instruction(name):
    """LOAD_Q's slot retires after its last row-0 source (Plan.slot_last),
    its wave runs on until Plan.wave_retire: the instruction right after it
    may start at its conflict-free cycle, the one after that (and a blocking
    one, or one with wait_prev_acc, even right after it) waits for the wave.
    The cycle model and plan.schedule_starts agree."""
    cfg = fconfig.get(name)
    lq = timing.plan(cfg, "LOAD_Q")
    R, C = cfg.sa_rows, cfg.sa_cols
    assert lq.slot_last == C and lq.retire == C + 2 and lq.wave_retire == lq.last + 2 > lq.retire
    ud = dict(rev_input=True, delay_output=True)
    F = isa.MxFunc
    cases = {
        # LOAD_STATIONARY right after (cf), ATTENTION_SCORE two after: the wave
        "two after": ([isa.Matrix(F.LOAD_Q, **ud), isa.Matrix(F.LOAD_STATIONARY),
                       isa.Matrix(F.LOAD_STATIONARY)], [0, C, lq.wave_retire]),
        "blocking": ([isa.Matrix(F.LOAD_Q, **ud), isa.Matrix(F.ATTENTION_LSE_NORM_SCALE)],
                     [0, lq.wave_retire]),
        "wait_prev_acc": ([isa.Matrix(F.LOAD_Q, **ud),
                           isa.Matrix(F.LOAD_STATIONARY, wait_prev_acc=True)],
                          [0, lq.wave_retire]),
        "back to back": ([isa.Matrix(F.LOAD_Q, **ud), isa.Matrix(F.LOAD_Q, **ud),
                          isa.Matrix(F.KSTEP, reset_max=True, **ud)], [0, C, 2 * C]),
    }
    plans = timing.plans(cfg)
    for what, (mx, want) in cases.items():
        res = cm.simulate(cfg, mx + [isa.Fence(mx=True, stop=True)], cm.IDEAL_DMA)
        first = res.mx_starts[0]
        got = [s - first for s in res.mx_starts]
        sched = fplan.schedule_starts([plans[int(i.func)] for i in mx],
                                      [i.wait_prev_acc for i in mx])
        assert got[:2] == want[:2] or what != "two after", (what, got)
        assert got == sched, (what, got, sched)
        assert got[-1] >= want[-1], (what, got, want)
        if what in ("blocking", "wait_prev_acc"):
            assert got[-1] == lq.wave_retire, (what, got)
        # the controller stays busy (a Fence(mx) waits) until the wave is over
        assert res.cycles >= first + max(s - first + plans[int(i.func)].wave_retire
                                         for i, s in zip(mx, res.mx_starts)) - 2, (what, res.cycles)


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig", "FSA8X8Fp16UdConfig", "FSA16X16Fp16UdConfig",
                                  "FSA4X8Fp16UdConfig", "FSA8X4Fp16UdConfig"])
def test_query_block_costs_c_plus_6_with_the_non_blocking_normalisation(name):
    """With a free DMA a query block costs C + 6 cycles over its key-block
    steps: LOAD_Q's C lane cycles + 2 and two for each of NORM_SCALE and
    NORM (each issues 2 cycles before its partner STEP); with one
    accumulator set (the blocking LSE pair) it costs several times that."""
    cfg = fconfig.get(name)
    C = cfg.sa_cols
    assert kernels.attention(cfg, 3 * C, 12 * cfg.sa_rows).meta["buffers"]["acc"] == 2
    ss = cpredict.steady_state(cfg, cm.IDEAL_DMA)
    assert ss["per_query_block"] == C + 6, ss
    one = cpredict.steady_state(cfg.replace(name=name + "Acc1", acc_rows=0), cm.IDEAL_DMA)
    assert one["per_key_block"] == ss["per_key_block"]
    assert one["per_query_block"] > 2 * (C + 6), one


def test_ud_kernel_places_norms_before_steps():
    """The UD kernel's NORM_SCALE / NORM each come right before a STEP or
    PVSTEP (their partner) while steps remain, NORM(i) after NORM_SCALE(i),
    and the store of O(i) after NORM(i)."""
    cfg = fconfig.get("FSA8X8Fp16UdConfig")
    prog = kernels.attention(cfg, 4 * 8, 6 * 8)
    ins = prog.instructions
    mx = [(n, i) for n, i in enumerate(ins) if isinstance(i, isa.Matrix)]
    F = isa.MxFunc
    norms = [k for k, (_, i) in enumerate(mx) if i.func in (F.NORM_SCALE, F.NORM)]
    assert len(norms) == 2 * 4
    assert not any(i.func in (F.ATTENTION_LSE_NORM_SCALE, F.ATTENTION_LSE_NORM) for _, i in mx)
    last_step = max(k for k, (_, i) in enumerate(mx) if i.func in (F.STEP, F.PVSTEP))
    for k in norms:
        if k < last_step:
            assert mx[k + 1][1].func in (F.STEP, F.PVSTEP), k
    stores = [n for n, i in enumerate(ins) if isinstance(i, isa.Dma) and i.func == isa.DmaFunc.STORE]
    norm_at = [mx[k][0] for k in norms if mx[k][1].func == F.NORM]
    assert len(stores) == 4 and all(s > a for s, a in zip(stores, norm_at))
