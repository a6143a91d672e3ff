"""The hardware contract (fsa/hw): one source of truth that the plan chart,
the matrix controller, the cycle model, the ISA encoder, the register block
and the testbenches all take their numbers from; and fsa/ never imports rtl/."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa import plan as fplan
from fsa.hw import errors as hwerrors
from fsa.hw import isa as hwisa
from fsa.hw import regs as hwregs
from fsa.hw import timing

ROOT = Path(__file__).resolve().parent.parent

# every preset up to 32x32 (the larger ones only repeat the pattern, slowly),
# plus the divider variants no preset has (another A format, other bits/cycle)
PLAN_CONFIGS = [n for n in fconfig.names() if fconfig.get(n).sa_rows * fconfig.get(n).sa_cols <= 32 * 32]
VARIANTS = [fconfig.get("FSA4X4Fp16Config").replace(name="FSA4X4Div1", div_bits_per_cycle=1),
            fconfig.get("FSA8X8Bf16OnlyConfig").replace(name="FSA8X8Bf16OnlyDiv4", div_bits_per_cycle=4)]


# ------------------------------------------------------------------ timing
def test_divider_and_reciprocal_lengths():
    # fp32 accumulators, 2 bits per cycle: 12 iterations + normalise + round
    assert timing.divider_latency("fp32", 2) == 14
    assert timing.reciprocal_cycles("fp32", 2) == 16
    for fmt, prec in (("fp16", 11), ("bf16", 8), ("fp32", 24)):
        for b in (1, 2, 4):
            assert timing.divider_latency(fmt, b) == -(-prec // b) + 2
            assert timing.reciprocal_cycles(fmt, b) == timing.divider_latency(fmt, b) + 2
    with pytest.raises(ValueError, match="bits_per_cycle"):
        timing.divider_latency("fp32", 3)


def test_rtl_divider_and_acc_use_the_contract():
    from rtl import fsa_acc
    from rtl.fp import fsa_div

    for fmt in timing.DIVIDER_FORMATS:
        for b in timing.DIVIDER_BITS_PER_CYCLE:
            assert fsa_div.latency(fmt, b) == timing.divider_latency(fmt, b)
    assert fsa_acc.reciprocal_cycles is timing.reciprocal_cycles


@pytest.mark.parametrize("cfg", PLAN_CONFIGS + VARIANTS, ids=lambda c: getattr(c, "name", c))
def test_controller_cycle_model_and_chart_use_one_plan(cfg):
    from fsa.cycle import model as cm
    from rtl import fsa_mxctrl

    cfg = fconfig.get(cfg)
    want = timing.plans(cfg)
    assert fsa_mxctrl.plans_for(cfg) == want          # the controller is generated from these
    assert cm._plans(cfg) == want              # the cycle model simulates these
    lse = want[fplan.FUNCS.index("ATTENTION_LSE_NORM_SCALE")]
    n = timing.reciprocal_cycles(cfg.a_type, cfg.div_bits_per_cycle)
    assert [c for _, c in lse.acc].count("RECIPROCAL") == n == lse.reciprocal_cycles


@pytest.mark.parametrize("cfg", ["FSA4X4Fp16Config", "FSA8X16Fp16Config", "FSA4X4Bf16OnlyConfig"]
                         + VARIANTS, ids=lambda c: getattr(c, "name", c))
def test_plan_show_draws_the_plan_the_controller_runs(cfg, capsys, tmp_path):
    """`fsa plan show` for every function prints exactly the chart of the plan
    the matrix controller of that config is generated from."""
    from fsa.cli import main
    from rtl import fsa_mxctrl

    cfg = fconfig.get(cfg)
    arg = cfg.name
    if fconfig.PRESETS.get(cfg.name) != cfg:
        arg = str(tmp_path / "FSAConfig.json")
        cfg.to_json(arg)
    hw_plans = fsa_mxctrl.plans_for(cfg)
    for code, func in enumerate(fplan.FUNCS):
        assert main(["plan", "show", arg, func]) == 0
        out = capsys.readouterr().out
        assert out == fplan.chart(hw_plans[code]) + "\n", (cfg.name, func)
    # the RECIPROCAL lane of the drawing has the hardware's length
    main(["plan", "show", arg, "ATTENTION_LSE_NORM_SCALE"])
    lane = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("ACC"))
    assert lane.count("/") == timing.reciprocal_cycles(cfg.a_type, cfg.div_bits_per_cycle)


# ------------------------------------------------------------------ ISA table
@pytest.mark.parametrize("kind", list(hwisa.WORDS))
def test_fields_and_reserved_bits_partition_every_word(kind):
    n = hwisa.WORDS[kind]
    seen = [0] * n
    for f in (hwisa.TYPE_FIELD,) + hwisa.FIELDS[kind]:
        for w, hi, lo in f.parts:
            assert 0 <= w < n and 0 <= lo <= hi <= 31, (kind, f)
            m = ((1 << (hi - lo + 1)) - 1) << lo
            assert not seen[w] & m, f"{kind}.{f.name} overlaps another field"
            seen[w] |= m
    for w in range(n):
        assert seen[w] | hwisa.RESERVED_MASKS[kind][w] == 0xFFFF_FFFF
        assert not seen[w] & hwisa.RESERVED_MASKS[kind][w]


@pytest.mark.parametrize("kind,cls", [("FENCE", "Fence"), ("MATRIX", "Matrix"), ("DMA", "Dma")])
def test_encoder_puts_each_field_where_the_table_says(kind, cls):
    """Each field alone at its extreme values sets exactly the table's bits."""
    from fsa import isa

    C = getattr(isa, cls)
    base = isa.words_of(C())
    for f in hwisa.FIELDS[kind]:
        lo, hi = (0, 1) if f.width == 1 else f.range
        if f.name == "func":
            hi = f.range[1]
        for v in {lo, hi, -1 if f.signed else hi}:
            words = isa.words_of(C(**{f.name: bool(v) if f.width == 1 else v}))
            expect = list(base)
            for w, h, l in f.parts:
                expect[w] &= ~(((1 << (h - l + 1)) - 1) << l)
            f.insert(expect, v)
            assert words == expect, (kind, f.name, v)
            assert f.extract(words) == v


def test_semaphore_count_and_kernel_limits_come_from_the_table():
    from fsa.kernel_lang import builder as kernel

    assert hwisa.SEM_IDS == 32 and hwisa.SEM_VALUE_BITS == 3
    assert kernel.SEM_IDS == hwisa.SEM_IDS and kernel.SEM_VALUES == 1 << hwisa.SEM_VALUE_BITS
    assert kernel.STRIDE_RANGE == (-16, 15)
    assert kernel.MEM_STRIDE_RANGE == (-(1 << 20), (1 << 20) - 1)
    assert (kernel.SIZE_MAX, kernel.REPEAT_MAX) == (1023, 511)


# ------------------------------------------------------------------ registers, states, errors
def test_register_map():
    offs = [r.offset for r in hwregs.REGS]
    assert len(set(offs)) == len(offs) and all(o % 4 == 0 and o < 1 << hwregs.ADDR_DECODE_BITS
                                               for o in offs)
    assert [hwregs.OFFSETS[c] for c in hwregs.COUNTERS] == list(range(0x0C, 0x34, 4))
    assert (hwregs.OFFSETS["push"], hwregs.OFFSETS["start"], hwregs.OFFSETS["state"]) == (0, 4, 8)
    assert [int(s) for s in hwregs.State] == [0, 1, 2, 3]


def test_rtl_and_harness_take_the_register_map_from_the_contract():
    from rtl import fsa_regs

    assert fsa_regs.READ_REGS == hwregs.READ_OFFSETS
    assert fsa_regs.identity is hwregs.identity and fsa_regs.MAGIC == hwregs.MAGIC
    src = (ROOT / "fsa" / "harness" / "device.py").read_text()
    assert "REGS = hwregs.OFFSETS" in src and "COUNTERS = hwregs.COUNTERS" in src


def test_errors_module_is_the_contract():
    from fsa import errors

    assert errors.CODES is hwerrors.CODES and errors.ERRORS is hwerrors.ERRORS
    assert errors.DMA_CODE_BASE == hwerrors.DMA_CODE_BASE and errors.name(3) == "SRAM_RANGE"
    assert max(hwerrors.ERRORS) < 1 << hwerrors.ERR_BITS


# ------------------------------------------------------------------ fsa/ never imports rtl/
def _rtl_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name == "rtl" or a.name.startswith("rtl.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "rtl" or node.module.startswith("rtl."):
                bad.append(node.module)
        elif isinstance(node, ast.Call):          # importlib.import_module("rtl...") / __import__
            fn = node.func
            name = getattr(fn, "attr", None) or getattr(fn, "id", None)
            if name in ("import_module", "__import__") and node.args:
                a = node.args[0]
                if isinstance(a, ast.Constant) and str(a.value).split(".")[0] == "rtl":
                    bad.append(str(a.value))
    return bad


def test_scanner_finds_rtl_imports(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("import os\nfrom rtl.fsa_acc import x\nimport rtl.generate as g\n"
                 "import importlib\nimportlib.import_module('rtl.fsa_core')\n")
    assert _rtl_imports(p) == ["rtl.fsa_acc", "rtl.generate", "rtl.fsa_core"]


def test_fsa_never_imports_rtl():
    files = sorted((ROOT / "fsa").rglob("*.py"))
    assert len(files) > 10
    bad = {str(f.relative_to(ROOT)): _rtl_imports(f) for f in files}
    assert not {k: v for k, v in bad.items() if v}


def test_importing_all_of_fsa_loads_no_rtl_module():
    mods = sorted("fsa." + ".".join(p.relative_to(ROOT / "fsa").with_suffix("").parts)
                  for p in (ROOT / "fsa").rglob("*.py") if p.name != "__init__.py")
    code = ("import importlib, json, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'rtl' or m.startswith('rtl.'))))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == []


def test_fsa_verilog_of_a_non_preset_config_runs_the_generator_process(tmp_path, capfd):
    from fsa.cli import main
    from fsa.hw.verilog import generate, verilog_files

    cfg = fconfig.get("FSA4X4Fp16Config").replace(name="FSA4X4Queue16", inst_queue_size=16)
    cfg.to_json(tmp_path / "cfg.json")
    out = tmp_path / "gen"
    assert main(["verilog", str(tmp_path / "cfg.json"), "--out", str(out)]) == 0
    printed = capfd.readouterr().out              # the generator's own output (its process)
    assert "[gen] FSA4X4Queue16: wrote" in printed
    assert generate(cfg, out, quiet=True) == out  # up to date: nothing printed
    assert capfd.readouterr().out == ""
    files = verilog_files(out)
    assert {f.name for f in files} >= {"fsa_top.v", "fsa_core.v", "fsa_queue.v"}
    assert fconfig.FSAConfig.from_json(out / "FSAConfig.json") == cfg
    assert "reg [31:0] fifo0_mem [0:16-1];" in (out / "fsa_queue.v").read_text()   # its queue size


def test_generate_skips_the_generator_process_only_while_nothing_changed(tmp_path, monkeypatch):
    """A second generate() of one config and folder in a process runs no
    generator process while no source under fsa/ or rtl/ and no output file
    changed (file status); touching an output file, removing one, or another
    config runs it again, and it regenerates what is missing."""
    import os

    from fsa.hw import verilog

    cfg = fconfig.get("FSA4X4Fp16Config").replace(name="FSA4X4Queue8", inst_queue_size=8)
    out = tmp_path / "gen"
    calls = []
    real = verilog.subprocess.run

    def counting(cmd, **kw):
        calls.append(cmd)
        return real(cmd, **kw)
    monkeypatch.setattr(verilog.subprocess, "run", counting)
    verilog.generate(cfg, out, quiet=True)
    verilog.generate(cfg, out, quiet=True)
    assert len(calls) == 1
    # the fingerprint covers the sources the generator hashes and the output
    fp = {item[0] for item in verilog._fingerprint(out)}
    assert {str(verilog.ROOT / "rtl" / "fsa_dma.py"), str(verilog.ROOT / "fsa" / "hw" / "dmarules.py"),
            str(out / "manifest.json")} <= fp
    st = (out / "fsa_queue.v").stat()
    os.utime(out / "fsa_queue.v", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    verilog.generate(cfg, out, quiet=True)
    assert len(calls) == 2
    (out / "fsa_queue.v").unlink()
    verilog.generate(cfg, out, quiet=True)
    assert len(calls) == 3 and (out / "fsa_queue.v").exists()
    verilog.generate(cfg, out, quiet=True, force=True)
    verilog.generate(cfg.replace(name="FSA4X4Queue8b"), tmp_path / "gen2", quiet=True)
    assert len(calls) == 5


@pytest.mark.parametrize("status,exc", [(2, ValueError), (3, RuntimeError)])
def test_a_failing_generator_process_is_reported(tmp_path, monkeypatch, status, exc):
    from fsa.hw import verilog

    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\necho 'error: the generator says no' >&2\nexit {status}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(verilog.sys, "executable", str(fake))
    with pytest.raises(exc, match=rf"(?s)failed \(exit {status}\).*the generator says no"):
        verilog.generate("FSA4X4Fp16Config", tmp_path / "gen", quiet=True)
