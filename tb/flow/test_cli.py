"""The user-facing commands: `fsa run` on the RTL with user .npy inputs
(bit-equal to --sim golden, within the torch bounds) and the `fsa exec`
round trip (inst.bin + mem.elf from our kernel language: the same memory on
the RTL and the golden model, and the same output as `fsa run`)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa import isa, kernels, numerics as nx
from fsa.elf import write_elf
from fsa.report import fa3_inputs
from fsa.simdev import program_address
from fsa.simrun import get_sim

pytestmark = pytest.mark.sim
FSA = [sys.executable, "-m", "fsa.cli"]


def fsa(*args, check=True):
    r = subprocess.run(FSA + [str(a) for a in args], capture_output=True, text=True, timeout=1800)
    if check and r.returncode != 0:
        raise AssertionError(f"fsa {' '.join(map(str, args))} failed ({r.returncode}):\n"
                             f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


@pytest.mark.parametrize("name,causal", [("FSA4X4Fp16Config", False), ("FSA4X4Fp16Config", True),
                                         ("FSA8X8Fp16Config", False), ("FSA8X8Fp16Config", True)])
def test_fsa_run_rtl_equals_golden_with_user_inputs(tmp_path, name, causal):
    cfg = fconfig.get(name)
    rng = np.random.default_rng(7)
    n = 2 * cfg.sa_cols
    for t in "qkv":
        np.save(tmp_path / f"{t}.npy", fa3_inputs(rng, (n, cfg.sa_rows)))
    common = ["--config", name, "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy",
              "--v", tmp_path / "v.npy"] + (["--causal"] if causal else [])
    fsa("run", *common, "--sim", "golden", "--out", tmp_path / "gold.npy", "--json", tmp_path / "g.json")
    r = fsa("run", *common, "--sim", get_sim(), "--out", tmp_path / "rtl.npy", "--json", tmp_path / "r.json")
    assert "bit-exact" in r.stdout
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["rtl_vs_golden"]["differ"] == 0 and rep["vs_torch"]["within_bounds"], rep
    assert rep["cycles"] > 0 and 0 < rep["utilisation"] < 1
    # one FLOPs definition on every engine: 4 d per (query, key) pair the mask keeps
    pairs = int(np.tril(np.ones((n, n))).sum()) if causal else n * n
    flops = 4 * cfg.sa_rows * pairs
    area = 2 * cfg.sa_rows * cfg.sa_cols
    assert rep["flops"] == flops and rep["cycles_from"] == "device exec counter"
    assert rep["utilisation"] == pytest.approx(flops / (rep["cycles"] * area))
    # --sim golden: the cycle model's cycles (equal to the RTL's; both fetch the program)
    g = json.loads((tmp_path / "g.json").read_text())
    prog = kernels.attention(cfg, n, n, causal=causal)
    fetch = cm.FetchTiming(program_address(cfg, len(prog.words())))
    model = cm.simulate(cfg, prog.instructions, fetch=fetch).cycles
    assert g["flops"] == flops and g["cycles"] == model == rep["cycles"], (g, rep["cycles"])
    assert g["cycles_from"].startswith("cycle model") and "cycles_note" not in g
    assert g["utilisation"] == pytest.approx(flops / (model * area))
    gold, rtl = np.load(tmp_path / "gold.npy"), np.load(tmp_path / "rtl.npy")
    assert gold.tobytes() == rtl.tobytes()


def test_fsa_run_rejects_wrong_shapes(tmp_path):
    np.save(tmp_path / "q.npy", np.zeros((8, 5)))
    np.save(tmp_path / "k.npy", np.zeros((8, 4)))
    np.save(tmp_path / "v.npy", np.zeros((8, 4)))
    r = fsa("run", "--config", "FSA4X4Fp16Config", "--sim", "golden", "--q", tmp_path / "q.npy",
            "--k", tmp_path / "k.npy", "--v", tmp_path / "v.npy", check=False)
    assert r.returncode == 2 and "needs (sequence, 4)" in r.stderr
    # (any sequence length is padded now; a causal mask still needs a square array)
    r = fsa("run", "--config", "FSA8X4Fp16Config", "--sim", "golden", "--causal", check=False)
    assert r.returncode == 2 and "square" in r.stderr


def test_fsa_exec_round_trip(tmp_path):
    cfg = fconfig.get("FSA4X4Fp16Config")
    rng = np.random.default_rng(3)
    q, k, v = (fa3_inputs(rng, (8, 4)) for _ in range(3))
    for t, x in zip("qkv", (q, k, v)):
        np.save(tmp_path / f"{t}.npy", x)
    prog = kernels.attention(cfg, 8, 8)
    enc = {n: nx.from_float64(x, cfg.e_type) for n, x in (("Q", q), ("K", k), ("Vt", v.T.copy()))}
    (tmp_path / "inst.bin").write_bytes(isa.to_bytes(prog.words()))
    write_elf(tmp_path / "mem.elf", prog.memory_image(enc))
    (addr, size), = prog.output_regions()
    outs = {}
    for sim in ("golden", get_sim()):
        fsa("exec", "--config", cfg.name, "--program", tmp_path / "inst.bin", "--load",
            tmp_path / "mem.elf", "--dump", f"{tmp_path}/{sim}.bin:{addr:#x}:{size}", "--sim", sim)
        outs[sim] = (tmp_path / f"{sim}.bin").read_bytes()
    assert outs["golden"] == outs[get_sim()]
    # the same as fsa run with the same inputs
    fsa("run", "--config", cfg.name, "--sim", "golden", "--q", tmp_path / "q.npy", "--k",
        tmp_path / "k.npy", "--v", tmp_path / "v.npy", "--out", tmp_path / "o.npy")
    ot = np.frombuffer(outs["golden"], np.uint32).reshape(4, 8)
    assert np.array_equal(nx.to_float64(ot.T, "fp32"), np.load(tmp_path / "o.npy"))


def test_fsa_exec_bad_files(tmp_path):
    (tmp_path / "inst.bin").write_bytes(b"\x00\x00\x00")           # truncated word
    (tmp_path / "mem.elf").write_bytes(b"not an elf")
    r = fsa("exec", "--config", "FSA4X4Fp16Config", "--program", tmp_path / "inst.bin",
            "--sim", "golden", check=False)
    assert r.returncode == 2 and "multiple of 4" in r.stderr
    (tmp_path / "inst.bin").write_bytes(isa.to_bytes(isa.encode([isa.Fence(stop=True)])))
    r = fsa("exec", "--config", "FSA4X4Fp16Config", "--program", tmp_path / "inst.bin",
            "--load", tmp_path / "mem.elf", "--sim", "golden", check=False)
    assert r.returncode == 2 and "not a valid ELF" in r.stderr
    write_elf(tmp_path / "far.elf", [(0x10, b"abcd")])
    r = fsa("exec", "--config", "FSA4X4Fp16Config", "--program", tmp_path / "inst.bin",
            "--load", tmp_path / "far.elf", "--sim", "golden", check=False)
    assert r.returncode == 2 and "outside the memory window" in r.stderr
    (tmp_path / "bad.bin").write_bytes(isa.to_bytes([0xE0000000]))
    r = fsa("exec", "--config", "FSA4X4Fp16Config", "--program", tmp_path / "bad.bin",
            "--sim", "golden", check=False)
    assert r.returncode == 2 and "unknown" in r.stderr.lower()


@pytest.mark.parametrize("seq", [8, 16])     # fits the 256-word queue / does not (329 words)
def test_fsa_run_cycle_limit_is_a_clean_error(seq):
    """A run that hits --max-cycles ends with exit 1 and one message naming
    the timeout, how far the host got with the program, and the log; no
    Python traceback."""
    r = fsa("run", "--config", "FSA4X4Fp16Config", "--sim", get_sim(), "--seq-q", seq,
            "--seq-kv", seq, "--max-cycles", 150, "--push", check=False)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    err = r.stderr.strip().splitlines()
    assert err[0].startswith("error: ") and "DeviceTimeout" in err[0] and "150 cycles" in err[0], err
    assert ("words (the queue holds 256)" in err[0]) == (seq == 16), err[0]
    assert any(line.startswith("log: ") for line in err), err


def test_fsa_exec_several_programs_in_one_session(tmp_path):
    """`--program` repeated: the programs run one after another on one device
    without a reset (start from DONE); the kernel three times, then the
    dump; the JSON report has one entry per program, the same outcome on
    golden and the RTL (bit-equal dumps); a program that deadlocks is
    reported (DEADLOCK, its index and semaphore) and the next one still runs."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    rng = np.random.default_rng(5)
    q, k, v = (fa3_inputs(rng, (4, 4)) for _ in range(3))
    prog = kernels.attention(cfg, 4, 4)
    enc = {n: nx.from_float64(x, cfg.e_type) for n, x in (("Q", q), ("K", k), ("Vt", v.T.copy()))}
    (tmp_path / "inst.bin").write_bytes(isa.to_bytes(prog.words()))
    write_elf(tmp_path / "mem.elf", prog.memory_image(enc))
    dead = [isa.Matrix(isa.MxFunc.LOAD_STATIONARY, sem_id=9, acquire_valid=True, acquire_value=3),
            isa.Fence(mx=True, dma=True, stop=True)]
    (tmp_path / "dead.bin").write_bytes(isa.to_bytes(isa.encode(dead)))
    (addr, size), = prog.output_regions()
    reps, outs = {}, {}
    for sim in ("golden", get_sim()):
        progs = ["--program", tmp_path / "inst.bin"] * 3
        fsa("exec", "--config", cfg.name, *progs, "--load", tmp_path / "mem.elf", "--dump",
            f"{tmp_path}/{sim}.bin:{addr:#x}:{size}", "--sim", sim, "--json", tmp_path / f"{sim}.json")
        rep = json.loads((tmp_path / f"{sim}.json").read_text())
        assert [e["state"] for e in rep["programs"]] == ["done"] * 3, rep
        outs[sim] = (tmp_path / f"{sim}.bin").read_bytes()
        r = fsa("exec", "--config", cfg.name, "--program", tmp_path / "dead.bin", "--program",
                tmp_path / "inst.bin", "--load", tmp_path / "mem.elf", "--sim", sim, "--json",
                tmp_path / f"{sim}-dead.json", check=False)
        assert r.returncode == 1 and "DEADLOCK" in r.stderr, r.stderr[-2000:]
        reps[sim] = json.loads((tmp_path / f"{sim}-dead.json").read_text())["programs"]
    assert outs["golden"] == outs[get_sim()]
    rtl = json.loads((tmp_path / f"{get_sim()}.json").read_text())["programs"]
    assert all(e["counters"] == rtl[0]["counters"] and e["cycles"] > 0 for e in rtl), rtl
    g, d = reps["golden"], reps[get_sim()]
    for e in (g, d):
        assert [x["state"] for x in e] == ["error", "done"], e
        assert (e[0]["error"], e[0]["error_index"], e[0]["wait"]) == \
            ("DEADLOCK", 0, {"sem_id": 9, "want": 3, "have": 0}), e
