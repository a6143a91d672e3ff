"""The coverage summary (tb/common/coverage_report.py, printed by tb/conftest.py):
merged across pytest-xdist workers and counted from what the runs did."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa import kernels
from fsa.isa import Dma, Fence, Matrix, MxFunc

from tb.common import coverage_report as cov

ROOT = Path(__file__).resolve().parents[2]


def _expected_instructions(lists) -> Counter:
    """Instruction kinds in `lists` (instruction lists or Programs)."""
    want = Counter()
    for p in lists:
        for ins in getattr(p, "instructions", p):
            if isinstance(ins, Matrix):
                want[MxFunc(ins.func).name] += 1
            elif isinstance(ins, Dma):
                want["DMA_" + ("STORE" if ins.func else "LOAD")] += 1
            elif isinstance(ins, Fence):
                want["FENCE" + ("_STOP" if ins.stop else "")] += 1
    return want


def _line(text: str, key: str) -> str:
    lines = [x for x in text.splitlines() if x.strip().startswith(key)]
    assert len(lines) == 1, (key, text)
    return lines[0]


def _items(line: str) -> Counter:
    return Counter({k: int(v) for k, v in re.findall(r"(\S+) x(\d+)", line)})


def test_summary_counts_the_records_it_is_given():
    """Without a simulator: two runs of different configs (as two workers
    would send them), one in error: the summary counts the executed
    instructions of each, the plans of each run's array, the counters."""
    c4, c8 = fconfig.get("FSA4X4Fp16Config"), fconfig.get("FSA8X8Fp16Config")
    p4, p8 = kernels.attention(c4, 4, 4), kernels.attention(c8, 8, 8, causal=True)
    saved = list(cov.RECORDS)
    try:
        cov.RECORDS.clear()
        mx4 = sum(isinstance(x, Matrix) for x in p4.instructions)
        cov.record(p4, {"state": "done", "error": "NONE", "counters": {"exec": 100, "mx": mx4}},
                   config=c4, cycles_checked=True, what="a")
        stop = next(i for i, x in enumerate(p8.instructions) if isinstance(x, Matrix)) + 1
        cov.record(p8, {"state": "error", "error": "AXI_RD_ERR", "error_index": stop,
                        "counters": {"exec": 7, "mx": 1}},
                   config=c8.name, pauses=0.3, cycles_checked=False, what="b")
        recs = list(cov.RECORDS)
    finally:
        cov.RECORDS[:] = saved
    text = cov.summary(recs)
    assert "(2 device runs)" in text
    assert f"exec 107, mx {mx4 + 1}," in _line(text, "device")
    want = _expected_instructions([p4, p8.instructions[:stop]])
    got = _items(_line(text, "instructions"))
    assert got == want and want["LOAD_STATIONARY"] == 2, (got, want)
    assert _items(_line(text, "configs")) == {"FSA4X4Fp16Config": 1, "FSA8X8Fp16Config": 1}
    assert _items(_line(text, "errors")) == {"NONE": 1, "AXI_RD_ERR": 1}
    assert "on 1 runs; not checked on 1: b (random AXI pauses)" in _line(text, "cycle model")
    assert "WARNING" not in text
    recs[0]["counters"]["mx"] += 1           # a device that ran one more than its program
    assert "differ from the device's mx counter: a" in _line(cov.summary(recs), "WARNING")


@pytest.mark.sim
def test_summary_appears_under_xdist_and_reflects_the_runs():
    """`pytest -n 2` on two attention cases (one per worker): the controller
    prints one summary holding both runs: their configs, the instructions
    of their programs, and the devices' exec counters, which equal the cycle
    model's predictions (checked by the runs themselves)."""
    cases = [(4, 4, False), (12, 12, True)]          # both in the Icarus tier too
    ids = [f"tb/attention/test_attention.py::test_attention[FSA4X4Fp16Config-{q}x{k}"
           f"{'-causal' if c else ''}]" for q, k, c in cases]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                        *ids], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout
    assert r.returncode == 0, out[-4000:] + r.stderr[-2000:]
    workers = set(re.findall(r"\[(gw\d)\] \[[ \d]+%\] PASSED", out))
    assert workers == {"gw0", "gw1"}, out[-3000:]          # each worker ran one of them
    cfg = fconfig.get("FSA4X4Fp16Config")
    progs = [kernels.attention(cfg, q, k, causal=c) for q, k, c in cases]
    assert "functional coverage of this session (2 device runs)" in out, out[-3000:]
    assert _items(_line(out, "instructions")) == _expected_instructions(progs)
    assert _items(_line(out, "configs")) == {"FSA4X4Fp16Config": 2}
    assert _items(_line(out, "stalls")) == {"pauses": 2}             # "no pauses x2"
    causal = sum(bool(i.causal) for p in progs for i in p.instructions if isinstance(i, Matrix))
    assert causal > 0 and _items(_line(out, "flags"))["causal"] == causal
    exec_total = sum(cm.simulate(cfg, p.instructions, host=cm.HARNESS_HOST).cycles for p in progs)
    words = sum(len(p.words()) for p in progs)
    dev = _line(out, "device")
    assert f"exec {exec_total}," in dev and f"words {words}" in dev, (dev, exec_total, words)
    assert "equal to the RTL's counters on 2 runs; not checked on 0" in _line(out, "cycle model")
