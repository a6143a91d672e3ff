"""The CLI refuses bad input naming the argument, reports what it could not
score, and never claims accuracy it did not measure (issue: safe CLI).
Golden model only: no HDL simulator."""
from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from fsa import cli
from fsa.config import FSAConfig
from fsa.report import bound_scale, bounds_verdict, error_stats, within_bounds

CFG = "FSA4X4Fp16Config"


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def save(tmp_path, name, arr):
    p = tmp_path / f"{name}.npy"
    np.save(p, arr)
    return str(p)


def qkv(tmp_path, n=8, **over):
    rng = np.random.default_rng(0)
    arrs = {k: rng.standard_normal((n, 4)) for k in "qkv"}
    arrs.update(over)
    return [a for k in "qkv" for a in (f"--{k}", save(tmp_path, k, arrs[k]))]


def test_complex_input_refused_naming_argument(tmp_path, capsys):
    code, _, err = run(["run", "--config", CFG, "--sim", "golden",
                        *qkv(tmp_path, q=np.ones((8, 4), np.complex128))], capsys)
    assert code == 2 and "--q" in err and "complex" in err


def test_string_input_refused_naming_argument(tmp_path, capsys):
    code, _, err = run(["run", "--config", CFG, "--sim", "golden",
                        *qkv(tmp_path, k=np.full((8, 4), "x"))], capsys)
    assert code == 2 and "--k" in err and "not a real number" in err


@pytest.mark.parametrize("argv, name", [
    (["run", "--seq-q", "-8"], "--seq-q"), (["run", "--seq-kv", "0"], "--seq-kv"),
    (["run", "--max-cycles", "-1"], "--max-cycles"), (["compile", "--seq-q", "-4"], "--seq-q"),
    (["predict", "--seq-kv", "-4"], "--seq-kv"), (["predict", "--axi-bits", "0"], "--axi-bits"),
    (["run", "--seed", "-1"], "--seed"),
    (["exec", "--config", CFG, "--program", "x", "--max-cycles", "0"], "--max-cycles")])
def test_bad_sizes_named(argv, name, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert f"argument {name}" in capsys.readouterr().err


def test_overflowing_inputs_reported(tmp_path, capsys):
    v = np.random.default_rng(1).standard_normal((8, 4))
    v[0, :3] = 1e6                      # fp16 max is 65504
    rep = tmp_path / "r.json"
    code, out, _ = run(["run", "--config", CFG, "--sim", "golden", "--json", str(rep),
                        *qkv(tmp_path, v=v)], capsys)
    r = json.loads(rep.read_text())
    assert r["inputs"]["V"]["overflow"] == 3 and r["inputs"]["Q"]["overflow"] == 0
    assert "3 finite values of V overflow fp16" in out
    # V now holds infinities: no accuracy claim, and the exit code says so
    assert r["vs_torch"]["within_bounds"] is False and "infinite" in r["vs_torch"]["verdict"]
    assert code == 1 and "OUTSIDE the bounds" in out


def test_infinite_v_is_never_within_bounds():
    stats = {"max_abs": 0.0, "mae": 0.0, "compared": 4, "non_finite_mismatch": 0}
    assert within_bounds(stats, 1.0, "fp16")
    assert not within_bounds(stats, float("inf"), "fp16")
    assert bound_scale(np.array([1.0, np.inf])) == float("inf")
    assert bound_scale(np.array([np.nan, 8.0])) == 2.0


def test_non_finite_outputs_counted_and_not_within():
    ref = np.array([1.0, 2.0, np.nan, np.inf, 3.0])
    got = np.array([1.0, 2.0, np.nan, np.inf, np.nan])
    st = error_stats(got, ref)
    assert st["compared"] == 2 and st["non_finite"] == 3
    assert st["non_finite_agree"] == 2 and st["non_finite_mismatch"] == 1
    ok, why = bounds_verdict(st, 1.0, "fp16")
    assert not ok and "non-finite" in why
    # the same special values on both sides agree: the finite ones are scored
    st2 = error_stats(got[:4], ref[:4])
    assert st2["non_finite_mismatch"] == 0 and bounds_verdict(st2, 1.0, "fp16")[0]
    # opposite infinities disagree
    assert error_stats(np.array([np.inf]), np.array([-np.inf]))["non_finite_mismatch"] == 1
    # nothing finite to compare: no claim
    assert not bounds_verdict(error_stats(np.array([np.nan]), np.array([np.nan])), 1.0, "fp16")[0]


def test_huge_golden_run_refused_quickly(capsys):
    t0 = time.perf_counter()
    code, _, err = run(["run", "--config", "FSA8X8Fp16Config", "--sim", "golden",
                        "--seq-q", "100000", "--seq-kv", "100000"], capsys)
    assert code == 2 and time.perf_counter() - t0 < 60
    assert "key-block steps" in err and "memory" in err and "--force" in err


def test_golden_estimate_counts_causal_steps():
    from fsa import config, kernels
    cfg = config.get(CFG)
    for sq, skv, causal in ((16, 8, True), (8, 16, True), (12, 20, False), (16, 16, True)):
        prog = kernels.attention(cfg, sq, skv, causal=causal, check=False)
        assert cli.golden_estimate(cfg, sq, skv, causal)["steps"] == prog.meta["key_blocks"]


def test_exec_dump_outside_window_refused_before_running(tmp_path, capsys):
    from fsa import isa
    prog = tmp_path / "p.bin"
    prog.write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    for sim in ("golden", "verilator"):           # checked before any engine starts
        code, _, err = run(["exec", "--config", CFG, "--program", str(prog), "--sim", sim,
                            "--dump", f"{tmp_path}/o.bin:0x10:64"], capsys)
        assert code == 2 and "outside the memory window" in err
        code, _, err = run(["exec", "--config", CFG, "--program", str(prog), "--sim", sim,
                            "--dump", f"{tmp_path}/o.bin:0x80000000:0"], capsys)
        assert code == 2 and "must be positive" in err
    assert not (tmp_path / "o.bin").exists()


@pytest.mark.parametrize("kw, field", [
    (dict(sa_rows=3, sa_cols=4), "axi_data_bits"), (dict(sa_rows=4, sa_cols=3), "accumulator row"),
    (dict(sa_rows=4, sa_cols=4, axi_data_bits=512), "axi_data_bits"),
    (dict(sa_rows=4, sa_cols=4, spad_banks=16), "spad_rows"),
    (dict(sa_rows=4, sa_cols=4, acc_banks=4), "acc_rows"),
    (dict(sa_rows=4, sa_cols=4, ctrl_base=-5), "ctrl_base"),
    (dict(sa_rows=4, sa_cols=4, ctrl_base=0x8004), "ctrl_base"),
    (dict(sa_rows=4, sa_cols=4, mem_base=-64), "memory window")])
def test_config_validate_catches_generator_constraints(kw, field):
    with pytest.raises(ValueError, match=field):
        FSAConfig("Bad", **kw)


def test_generator_leaves_nothing_partial(tmp_path, monkeypatch):
    from rtl import generate as gen

    def boom(d):
        (d / "half.v").write_text("module half;\n")
        raise RuntimeError("conversion failed")

    monkeypatch.setattr(gen, "units_for", lambda cfg: [gen.Unit("half", boom, "test")])
    with pytest.raises(RuntimeError, match="conversion failed"):
        gen.generate(CFG, tmp_path / "out", force=True, quiet=True)
    # no output folder, and no work folder of the conversion (``.out.<random>.tmp``)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out.lock"]


def test_golden_machine_reports_progress(monkeypatch):
    from fsa import config, kernels
    from fsa.engines import GoldenEngine
    from fsa.golden import machine

    clock = iter(range(0, 10**9, 3))                 # every call: 3 s later
    monkeypatch.setattr(machine.time, "monotonic", lambda: next(clock))
    msgs = []
    cfg = config.get(CFG)
    rng = np.random.default_rng(0)
    GoldenEngine(cfg, progress=msgs.append).run(
        kernels.attention(cfg, 8, 8), {n: rng.standard_normal((8, 4)) for n in "QKV"})
    assert msgs and all(m.startswith("golden model: ") for m in msgs)


def test_closed_pipe_ends_quietly():
    """``fsa plan show ... | head -1``: the reader closes the pipe early; the
    CLI stops without a traceback (exit 141, as a shell reports SIGPIPE).  The
    64x64 chart (~170 kB) is larger than a pipe's buffer, so the writer must
    meet the closed pipe."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "fsa.cli", "plan", "show", "FSA64X64Fp16UdConfig",
                          "STEP"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141, err
    assert first.startswith(b"STEP") and "Traceback" not in err, err


def test_exec_refuses_broken_elf_segments(tmp_path, capsys):
    """A truncated mem.elf, p_memsz < p_filesz and a huge p_memsz are refused
    naming the file and the segment (no silent zero fill, no MemoryError)."""
    import struct

    from fsa import elf, isa
    prog = tmp_path / "p.bin"
    prog.write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    good = tmp_path / "good.elf"
    elf.write_elf(good, [(0x80000000, bytes(range(64))), (0x80001000, bytes(range(128)))])
    raw = good.read_bytes()
    assert [len(b) for _, b in elf.load_segments(good)] == [64, 128]
    cut = tmp_path / "cut.elf"
    cut.write_bytes(raw[:-50])
    mangled = {}
    t, f, o, va, pa, fs, ms, al = struct.unpack_from("<IIQQQQQQ", raw, 64)
    for name, memsz in (("small", fs - 8), ("huge", 10**12)):
        b = bytearray(raw)
        struct.pack_into("<IIQQQQQQ", b, 64, t, f, o, va, pa, fs, memsz, al)
        mangled[name] = tmp_path / f"{name}.elf"
        mangled[name].write_bytes(bytes(b))
    for path, want in ((cut, "truncated"), (mangled["small"], "p_memsz 56 < p_filesz 64"),
                       (mangled["huge"], "outside the memory window")):
        code, _, err = run(["exec", "--config", CFG, "--program", str(prog), "--sim", "golden",
                            "--load", str(path)], capsys)
        assert code == 2 and str(path) in err and "PT_LOAD segment" in err and want in err, err


def test_unwritable_outputs_refused_before_any_work(tmp_path, capsys):
    """--out/--json/--program/--elf/--dump that cannot be written: exit 2 naming
    the option, before the run (not a traceback at its end)."""
    from fsa import isa
    prog = tmp_path / "p.bin"
    prog.write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    missing = tmp_path / "no" / "such"
    small = ["--config", CFG, "--seq-q", "8", "--seq-kv", "8"]
    cases = [
        (["run", "--sim", "golden", *small, "--out", f"{missing}/o.npy"], "--out", "does not exist"),
        (["run", "--sim", "golden", *small, "--json", str(tmp_path)], "--json", "is a folder"),
        (["compile", *small, "--program", f"{missing}/i.bin", "--elf", f"{tmp_path}/m.elf"],
         "--program", "does not exist"),
        (["compile", *small, "--program", f"{tmp_path}/i.bin", "--elf", f"{missing}/m.elf"],
         "--elf", "does not exist"),
        (["exec", "--config", CFG, "--program", str(prog), "--sim", "golden",
          "--dump", f"{missing}/o.bin:0x80000000:64"], "--dump", "does not exist"),
        (["exec", "--config", CFG, "--program", str(prog), "--sim", "golden",
          "--json", f"{missing}/r.json"], "--json", "does not exist"),
        (["exec", "--config", CFG, "--program", str(prog), "--sim", "golden",
          "--load", f"{prog}@zz"], "--load", "is not a number"),
    ]
    for argv, opt, words in cases:
        t0 = time.perf_counter()
        code, _, err = run(argv, capsys)
        assert code == 2 and err.startswith(f"error: {opt} ") and words in err, (argv, err)
        assert time.perf_counter() - t0 < 5
    assert not (tmp_path / "i.bin").exists() and not (tmp_path / "m.elf").exists()


def test_compile_refuses_a_program_too_large_to_build(tmp_path, capsys):
    t0 = time.perf_counter()
    code, _, err = run(["compile", "--seq-q", "100000", "--seq-kv", "100000",
                        "--program", tmp_path / "i.bin", "--elf", tmp_path / "m.elf"],
                       capsys)
    assert code == 2 and time.perf_counter() - t0 < 30
    assert "key-block steps" in err and "building and checking the program" in err
    assert "--force" in err and list(tmp_path.iterdir()) == []


def test_exec_dumps_memory_also_after_a_failed_program(tmp_path, capsys):
    from fsa import isa
    from fsa.isa import Dma, DmaFunc, Fence
    bad = tmp_path / "bad.bin"          # a DMA into a scratchpad row that does not exist
    bad.write_bytes(isa.to_bytes(isa.encode([
        Dma(DmaFunc.LOAD, repeat=1, sram_addr=1 << 19, mem_addr=0x80000000, size=8),
        Fence(stop=True)])))
    data = tmp_path / "d.bin"
    data.write_bytes(bytes(range(64)))
    code, _, err = run(["exec", "--config", CFG, "--program", str(bad), "--sim", "golden",
                        "--load", f"{data}@0x80000040", "--dump",
                        f"{tmp_path}/o.bin:0x80000040:64"], capsys)
    assert code == 1 and "SRAM_RANGE" in err
    assert (tmp_path / "o.bin").read_bytes() == bytes(range(64))


def test_exec_runs_what_the_device_runs_and_refuses_what_it_stops_on(tmp_path, capsys):
    """Reserved bits set and a DMA of 0 rows: strict isa.decode refuses them,
    the device ignores / skips them, and so does fsa exec (with a warning);
    an unknown function code is refused as before."""
    from fsa import isa
    from fsa.isa import Dma, Fence, Matrix, MxFunc

    w = isa.encode([Dma(repeat=1, size=8, mem_addr=0x80000000), Fence(stop=True)])
    w[0] &= ~(0x1FF << 3)                  # repeat = 0
    w[-1] |= 1                             # a reserved bit of the fence
    with pytest.raises(ValueError):
        isa.decode(w)
    p = tmp_path / "p.bin"
    p.write_bytes(isa.to_bytes(w))
    code, out, err = run(["exec", "--config", CFG, "--program", str(p), "--sim", "golden"], capsys)
    assert code == 0 and "warning: --program" in out and "dma 1, fence 1" in out, (out, err)
    bad = isa.encode([Matrix(MxFunc.LOAD_STATIONARY), Fence(stop=True)])
    bad[0] |= 0x1F << 11                   # matrix function code 31
    with pytest.raises(isa.IllegalInstruction):
        isa.decode_device(bad, 0)
    p.write_bytes(isa.to_bytes(bad))
    code, _, err = run(["exec", "--config", CFG, "--program", str(p), "--sim", "golden"], capsys)
    assert code == 2 and "--program" in err


@pytest.mark.parametrize("argv, words", [
    (["run", "--sim", "golden", "--max-cycles", "5"], "--max-cycles: only with --sim verilator"),
    (["run", "--sim", "golden", "--memory", "fast"], "--memory: only with --sim verilator"),
    (["run", "--sim", "golden", "--keep"], "--keep: only with --sim verilator"),
    (["run", "--sim", "golden", "--kernel", "ud", "--config", "FSA8X8Fp16Config",
      "--seq-q", "13"], "UD kernel needs a config with dataflow 'ud'"),
    (["compile", "--seq-q", "5", "--seq-kv", "7", "--program", "p.bin", "--elf", "m.elf"],
     "fsa compile writes whole blocks only"),
    (["plan", "show", CFG, "a"], "is ambiguous: it matches LOAD_STATIONARY"),
    (["plan", "show", CFG, "SCORE", "--bits", "mac,nosuchbit"], "unknown PE bit\\(s\\) nosuchbit"),
])
def test_options_that_would_be_ignored_or_misread_are_refused(argv, words, capsys, tmp_path,
                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(argv, capsys)
    assert code == 2 and re.search(words, err), err


def test_seq_lengths_with_input_files_are_refused(tmp_path, capsys):
    code, _, err = run(["run", "--config", CFG, "--sim", "golden", "--seq-q", "4",
                        *qkv(tmp_path)], capsys)
    assert code == 2 and "--seq-q: only for generated inputs" in err
    code, out, _ = run(["run", "--config", CFG, "--sim", "golden", *qkv(tmp_path)], capsys)
    assert code == 0 and "attention 8 x 8" in out


def test_exec_refuses_program_fetch_over_a_region_the_program_stores_to(tmp_path, capsys):
    """A STORE into the memory where the device would fetch the program from
    (the top of the window) would overwrite words not yet fetched: refused
    (run it with --push), before any engine starts."""
    from fsa import config, isa
    from fsa.isa import Dma, DmaFunc, Fence
    cfg = config.get(CFG)
    top = cfg.mem_base + cfg.mem_size
    prog = tmp_path / "p.bin"
    prog.write_bytes(isa.to_bytes(isa.encode([
        Dma(DmaFunc.STORE, repeat=2, sram_addr=0, mem_addr=top - 16, mem_stride=-8, size=8),
        Fence(stop=True)])))
    for sim in ("golden", "verilator"):
        code, _, err = run(["exec", "--config", CFG, "--program", str(prog), "--sim", sim], capsys)
        assert code == 2 and "overlaps the data at" in err and "--push" in err, err
    code, out, _ = run(["exec", "--config", CFG, "--program", str(prog), "--sim", "golden",
                        "--push"], capsys)
    assert code == 0 and "dma 1" in out
