"""The patches of third-party internals (rtl/compat_myhdl.py,
fsa/compat_cocotb.py): written for one version each, refused (or, for
speed only, skipped) on another, applied only where needed, and these tests
fail as soon as the installed library no longer has what they replace."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import cocotb
import myhdl
import pytest

from fsa import compat_cocotb
from rtl import compat_myhdl

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------ MyHDL
def test_myhdl_is_the_version_the_patches_were_written_for():
    assert myhdl.__version__ == compat_myhdl.WRITTEN_FOR
    assert compat_myhdl.supported()
    assert not compat_myhdl.supported("0.11.53") and not compat_myhdl.supported("1.0.0")


def test_myhdl_still_has_what_the_patches_replace():
    """The private names each patch reaches into, with the shape it assumes:
    a new MyHDL without them fails here, not in a conversion."""
    import myhdl._always_seq as seq
    import myhdl._block as mblock
    import myhdl._simulator as msim
    from myhdl import _util

    src = inspect.getsource(seq._AlwaysSeq.__init__)
    # the loop the sorted-registers patch redoes in sorted order
    assert "self.sigregs" in src and "self.varregs" in src and "for n in self.outputs" in src
    assert isinstance(seq._Signal, type) and seq.intbv is myhdl.intbv
    assert isinstance(mblock._name_set, set) and isinstance(mblock._inst_name_set, set)
    assert isinstance(msim._blocks, list)
    assert callable(_util._dedent) and compat_myhdl._DEDENT is _util._dedent
    # MyHDL reads frames and function names from inspect.stack() records
    assert "inspect.stack()" in inspect.getsource(mblock)


def test_another_myhdl_version_is_refused_with_a_clear_message(monkeypatch, tmp_path):
    from rtl import convert

    monkeypatch.setattr(myhdl, "__version__", "0.12.0")
    with pytest.raises(compat_myhdl.MyHDLVersionError, match="written for MyHDL 0.11.52, found "
                       "0.12.0: check _AlwaysSeq.__init__"):
        convert.convert_block(lambda: None, "nothing", tmp_path)


def test_the_fast_stack_falls_back_on_another_version(monkeypatch):
    original = inspect.stack
    monkeypatch.setattr(myhdl, "__version__", "0.12.0")
    with pytest.warns(RuntimeWarning, match="standard inspect.stack"):
        with compat_myhdl._fast_stack():
            assert inspect.stack is original
    monkeypatch.undo()
    with compat_myhdl._fast_stack():
        assert inspect.stack is not original
    assert inspect.stack is original


def test_importing_rtl_patches_nothing():
    """A fresh process importing every rtl module leaves MyHDL and inspect
    as they are; a conversion patches them only while it runs."""
    code = ("import inspect, pkgutil, importlib, rtl, rtl.fp, rtl.prim\n"
            "import myhdl._always_seq as seq\n"
            "from myhdl import _util\n"
            "init, stack, dedent = seq._AlwaysSeq.__init__, inspect.stack, _util._dedent\n"
            "for pkg in (rtl, rtl.fp, rtl.prim):\n"
            "    for m in pkgutil.iter_modules(pkg.__path__):\n"
            "        importlib.import_module(pkg.__name__ + '.' + m.name)\n"
            "assert seq._AlwaysSeq.__init__ is init, 'always_seq patched on import'\n"
            "assert inspect.stack is stack and _util._dedent is dedent\n"
            "assert init.__qualname__ == '_AlwaysSeq.__init__'\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_registers_are_sorted_only_during_a_conversion():
    import myhdl._always_seq as seq

    init = seq._AlwaysSeq.__init__
    seen = []
    with compat_myhdl.conversion():
        seen.append(seq._AlwaysSeq.__init__)
    assert seen[0] is not init and seen[0].__wrapped__ is init
    assert seq._AlwaysSeq.__init__ is init


def test_sorted_registers_give_one_text_whatever_the_hash_seed(tmp_path):
    """Processes with different string hashing convert the instruction queue
    (registers whose reset branch the text post-processing cannot sort) to
    the same text; without the patch the same seeds give two texts."""
    code = ("import contextlib, sys\nfrom pathlib import Path\nfrom fsa import config\n"
            "from rtl import compat_myhdl, fsa_queue\n"
            "if sys.argv[2] == 'off':\n"
            "    compat_myhdl._sorted_registers = contextlib.nullcontext\n"
            "p = fsa_queue.convert(Path(sys.argv[1]), config.get('FSA4X4Fp16Config'))\n"
            "print(p)\n")

    def text(seed: str, patch: str) -> str:
        out = tmp_path / f"{patch}{seed}"
        r = subprocess.run([sys.executable, "-c", code, str(out), patch], cwd=ROOT,
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr[-2000:]
        return Path(r.stdout.strip()).read_text()

    on = [text(seed, "on") for seed in ("1", "2", "3")]
    assert on[0] == on[1] == on[2] and on[0].count("<=") >= 10
    assert text("1", "off") != text("2", "off")


# ----------------------------------------------------------------------- cocotb
def test_cocotb_is_the_release_the_hooks_were_written_for():
    assert compat_cocotb.supported()
    assert compat_cocotb.supported(compat_cocotb.WRITTEN_FOR + ".7")
    assert not compat_cocotb.supported("2.2.0") and not compat_cocotb.supported("3.0.0")


def test_cocotb_still_has_what_the_hooks_override():
    """The runner's private hooks exist with the signatures the overrides
    take, and cocotb's Verilator command still has the flag and the source
    order the overrides edit."""
    from cocotb_tools import runner

    assert list(inspect.signature(runner.Runner._execute_cmds).parameters) == \
        ["self", "cmds", "cwd", "stdout"]
    assert list(inspect.signature(runner.Verilator._build_command).parameters) == ["self"]
    src = inspect.getsource(runner.Verilator._build_command)
    assert '"--public-flat-rw"' in src
    assert src.rstrip().endswith("return cmds")
    assert "[str(source.value) for source in sources]" in src
    assert "subprocess.run(" in inspect.getsource(runner.Runner._execute_cmds)


def test_another_cocotb_version_is_refused_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(cocotb, "__version__", "3.0.0")
    with pytest.raises(compat_cocotb.CocotbVersionError,
                       match=r"written for cocotb 2\.1\.x, found 3\.0\.0: check cocotb_tools"):
        compat_cocotb.timed_runner("verilator", 10)


def test_the_timed_runner_builds_cocotbs_command_with_the_hooks(tmp_path):
    """The Verilator command of the hooked runner: the blanket flag dropped
    only with a visibility file, the sources relative to the build folder;
    a cached build runs no process."""
    from cocotb_tools.runner import Verilator

    from fsa.simrun import setup_tool_env

    setup_tool_env()            # (the runner looks for verilator on PATH)
    src = tmp_path / "gen" / "top.v"
    src.parent.mkdir()
    src.write_text("module top; endmodule\n")
    r = compat_cocotb.timed_runner("verilator", 5)
    assert isinstance(r, Verilator) and r.sim_timeout_s == 5 and r.relative_sources
    r.skip_exec = True
    r.build(sources=[src], hdl_toplevel="top", build_dir=tmp_path / "b", build_args=[])
    cmd = r._build_command()[0]
    assert "--public-flat-rw" in cmd and str(src) not in cmd
    assert str(Path("..") / "gen" / "top.v") in cmd
    r.public_file = tmp_path / "b" / "public.vlt"
    assert "--public-flat-rw" not in r._build_command()[0]
    assert not (tmp_path / "b" / "Vtop.mk").exists()
