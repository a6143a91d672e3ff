"""rtl/convert.py: the cheap ``inspect.stack()`` used while MyHDL elaborates
changes nothing in the Verilog and is always put back."""
from __future__ import annotations

import contextlib
import inspect

import pytest

from fsa import config as fconfig
from rtl import convert, fsa_array


def test_fast_stack_gives_the_same_verilog(tmp_path, monkeypatch):
    cfg = fconfig.get("FSA4X4Fp16Config")
    fast = fsa_array.convert(tmp_path / "fast", cfg).read_text()
    monkeypatch.setattr(convert, "_fast_stack", contextlib.nullcontext)
    slow = fsa_array.convert(tmp_path / "slow", cfg).read_text()
    assert fast == slow
    assert fast.count("fsa_pe u_pe_") == 16


def test_fast_stack_records_match_the_standard_ones():
    def probe():
        return inspect.stack()

    original = inspect.stack
    std = probe()
    with convert._fast_stack():
        assert inspect.stack is not original
        fast = probe()
    assert inspect.stack is original
    assert [(f.function, f.filename) for f in fast] == [(f.function, f.filename) for f in std]
    assert fast[0].frame.f_code is std[0].frame.f_code


def test_standard_stack_is_restored_after_an_error(tmp_path):
    original = inspect.stack

    def broken():
        raise RuntimeError("elaboration failed")

    with pytest.raises(RuntimeError, match="elaboration failed"):
        convert.convert_block(broken, "nothing", tmp_path)
    assert inspect.stack is original
    assert convert._converting is False


def test_verilog_does_not_depend_on_what_the_process_converted_before(tmp_path):
    """MyHDL hands out names from process-wide counters; convert_block resets
    them, so a module's text is the same whatever was converted earlier (the
    simulator build cache is keyed on that text)."""
    small, other = fconfig.get("FSA4X4Fp16Config"), fconfig.get("FSA8X4Fp16Config")
    first = fsa_array.convert(tmp_path / "a", small).read_text()
    fsa_array.convert(tmp_path / "b", other)
    again = fsa_array.convert(tmp_path / "c", small).read_text()
    assert first == again
