"""The simulator runner: builds are cached by content, failures and hangs are reported."""

from pathlib import Path

import pytest
from myhdl import always_comb, block

from fsa import simrun
from rtl.convert import convert_block, sig

pytestmark = pytest.mark.sim


@block
def addone(a, y):
    s = sig(len(a) + 1)     # a + 1 without overflow; y is its low bits (mod 256)

    @always_comb
    def add():
        s.next = a + 1

    @always_comb
    def wrap():
        y.next = s[len(y):]
    return add, wrap


@block
def addone_wide(a, y):
    """The same function written with a width warning (a 32-bit ``%``
    truncated to y): Verilator warns WIDTHTRUNC."""
    @always_comb
    def comb():
        y.next = (a + 1) % 256
    return comb


@pytest.fixture(scope="module")
def verilog(tmp_path_factory):
    d = tmp_path_factory.mktemp("smoke")
    a, y = sig(8), sig(8)
    return convert_block(lambda: addone(a, y), "addone", d)


def test_passing_bench_and_cached_build(verilog):
    sim = simrun.get_sim()
    tdir = simrun.run("addone", [verilog], "tb.flow.tb_smoke", sim=sim, name="pass")
    assert (tdir / "results.xml").exists()
    bdir1 = simrun.build(sim, "addone", [verilog])
    stamp = (bdir1 / ".built").stat().st_mtime_ns
    bdir2 = simrun.build(sim, "addone", [verilog])
    assert bdir1 == bdir2 and (bdir1 / ".built").stat().st_mtime_ns == stamp, \
        "a cached build must not rebuild"


def test_changed_source_gets_new_build(verilog, tmp_path):
    sim = simrun.get_sim()
    other = tmp_path / "addone.v"
    other.write_text(verilog.read_text() + "\n// changed\n")
    assert simrun.build(sim, "addone", [verilog]) != simrun.build(sim, "addone", [other])


def test_failure_is_reported_with_rerun_hint(verilog):
    with pytest.raises(simrun.SimulationError, match="1 failing cocotb tests") as e:
        simrun.run("addone", [verilog], "tb.flow.tb_smoke", name="fail",
                   extra_env={"SMOKE_EXPECT_FAIL": "1"})
    assert "re-run:" in str(e.value) and "deliberate failure" in str(e.value)


def test_hang_is_stopped_by_wall_clock_timeout(verilog):
    with pytest.raises(simrun.SimulationError, match="wall-clock timeout after 3 s"):
        simrun.run("addone", [verilog], "tb.flow.tb_smoke", name="hang", testcase="hangs",
                   extra_env={"SMOKE_HANG": "1"}, timeout_s=3)


def test_warning_fails_the_build_unless_its_module_waives_it(tmp_path):
    """No global waiver: a Verilator warning fails the build; the waiver file
    beside the sources (as the generator writes it) lets it through, for the
    module it names only."""
    from fsa.hw.waivers import WAIVER_FILE, waiver_text

    # (Verilator whatever SIM says: waiver files are Verilator configuration files)
    a, y = sig(8), sig(8)
    src = convert_block(lambda: addone_wide(a, y), "addone", tmp_path / "wide")
    with pytest.raises(simrun.SimulationError, match="WIDTHTRUNC"):
        simrun.build("verilator", "addone", [src])
    (src.parent / WAIVER_FILE).write_text(waiver_text({"other": {"WIDTHTRUNC": "not addone"}}))
    with pytest.raises(simrun.SimulationError, match="WIDTHTRUNC"):
        simrun.build("verilator", "addone", [src])
    (src.parent / WAIVER_FILE).write_text(waiver_text({"addone": {"WIDTHTRUNC": "smoke test"}}))
    tdir = simrun.run("addone", [src], "tb.flow.tb_smoke", sim="verilator", name="waived")
    assert (tdir / "results.xml").exists()


def test_vpi_visibility_is_what_the_build_declares(verilog):
    """A declared visibility (fsa.simrun.VPI_PUBLIC-style) replaces cocotb's
    blanket --public-flat-rw: the ports stay reachable, the internal net does
    not; the default (None) still sees it; the two are distinct cached builds."""
    ports = {"addone": ("a", "y")}
    b1 = simrun.build("verilator", "addone", [verilog], public=ports)
    b2 = simrun.build("verilator", "addone", [verilog], public=None)
    assert b1 != b2
    assert (b1 / simrun.PUBLIC_FILE).read_text() == simrun.public_text(ports)
    assert not (b2 / simrun.PUBLIC_FILE).exists()
    for name, pub, probe in (("ports-only", ports, "hidden"), ("all-public", None, "visible")):
        tdir = simrun.run("addone", [verilog], "tb.flow.tb_smoke", sim="verilator", name=name, public=pub,
                          testcase="internal_visibility", extra_env={"SMOKE_PROBE": probe})
        xml = (tdir / "results.xml").read_text()
        assert "internal_visibility" in xml and "<skipped" not in xml, "the check did not run"


def test_verilator_gets_the_sources_relative_to_the_build_folder(tmp_path):
    """Verilator writes the source paths it is given into the C++ (here the
    top's, in the evaluation loop's fatal message); they are relative to the
    build folder, so the same design gives the same C++ in every checkout
    and ccache shares it (absolute paths made every checkout's C++ differ)."""
    import os
    import re

    if simrun.get_sim() != "verilator":
        pytest.skip("checks Verilator's C++ (SIM is not verilator)")
    a, y = sig(8), sig(8)
    v = convert_block(lambda: addone(a, y), "addone", tmp_path)
    v.write_text(v.read_text() + "\n// the relative-path probe's own build\n")
    bdir = simrun.build("verilator", "addone", [v])
    text = "".join(p.read_text() for p in bdir.glob("*.cpp"))
    # (the build is cached by content: a later run finds the one an earlier
    # run made from another temporary folder, so no particular path is asked)
    named = set(re.findall(r'VL_FATAL_MT\("([^"]*)"', text))
    assert named and all(n.endswith("/addone.v") and not os.path.isabs(n) for n in named), named


def test_fsa_top_builds_with_its_ports_public_only():
    assert simrun.VPI_PUBLIC["fsa_top"] == {"fsa_top": ("*",)}
    text = simrun.public_text(simrun.VPI_PUBLIC["fsa_top"])
    assert text.splitlines()[0] == "`verilator_config"
    assert 'public_flat_rw -module "fsa_top" -var "*"' in text.splitlines()
    with pytest.raises(ValueError):
        simrun.public_text({"bad name": ("*",)})


def test_bare_harness_runs_attention_bit_exact():
    """The bare C++ harness (bench/harness/fsa_bare.cpp, the speed ceiling
    of bench/simspeed.py) runs attention on fsa_top with the golden model's
    raw bits, reads the device's counters back, and reports a run that does
    not finish within its cycle limit."""
    import sys

    import numpy as np

    from fsa import config, kernels
    from fsa.engines import GoldenEngine
    from fsa.report import fa3_inputs

    sys.path.insert(0, str(simrun.ROOT / "bench"))
    from harness.bare import BareEngine

    cfg = config.get("FSA4X4Fp16Config")
    rng = np.random.default_rng(5)
    q, k, v = (fa3_inputs(rng, (n, 4)) for n in (8, 12, 12))
    prog = kernels.attention(cfg, 8, 12, causal=False)
    eng = BareEngine(cfg, idle=1000)
    res = eng.run(prog, {"Q": q, "K": k, "V": v})
    gold = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    assert res.outputs.keys() == gold.outputs.keys()
    for name in gold.outputs:
        assert np.array_equal(res.outputs[name], gold.outputs[name]), name
    words = prog.words()
    assert res.counters["words"] == len(words) and res.counters["deq"] == len(words)
    # the exec counter runs from the start write to irq, as the harness's run_cycles (the
    # harness counts from the write's B response: they may differ by the write's cycle)
    assert 0 < res.cycles < eng.last_run["cycles"]
    assert abs(res.cycles - eng.last_run["run_cycles"]) <= 1
    assert eng.last_run["idle_cycles"] == 1000 and eng.last_run["refused"] == 0
    short = BareEngine(cfg, max_cycles=50)
    short.exe = eng.exe
    with pytest.raises(simrun.SimulationError, match="did not finish within 50 cycles"):
        short.run(prog, {"Q": q, "K": k, "V": v})


def test_device_bus_models_do_not_log_every_burst():
    """fsa/harness/device.py sets cocotbext-axi's models to WARNING: a run's log has
    the bench's own summary but none of the per-transfer INFO lines the
    models print by default (the AXI4-Lite master's "Write start addr: ...",
    "Write complete addr: ..." for every push, the memory's "Write burst" /
    "Read burst")."""
    import numpy as np

    from fsa import config, kernels
    from fsa.engines import SimEngine
    from fsa.report import fa3_inputs

    cfg = config.get("FSA4X4Fp16Config")
    rng = np.random.default_rng(3)
    q, k, v = (fa3_inputs(rng, (4, 4)) for _ in range(3))
    eng = SimEngine(cfg, sim="verilator")
    eng.run(kernels.attention(cfg, 4, 4), {"Q": q, "K": k, "V": v})
    log = (Path(eng.last_run["run_dir"]) / "sim.log").read_text()
    assert "state done" in log
    for line in ("Write start", "Write complete", "Read start", "Read complete", "Write burst",
                 "Read burst"):
        assert line not in log, line
