"""rtl/convert.py and its MyHDL patches (rtl/compat_myhdl.py): the cheap
``inspect.stack()`` and the cached source lookups used while MyHDL
elaborates change nothing in the Verilog and are always put back."""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys

import pytest

from fsa import config as fconfig
from rtl import compat_myhdl, convert, fsa_array, fsa_dma


@pytest.mark.parametrize("unit", ["array", "dma"])
def test_fast_stack_gives_the_same_verilog(tmp_path, monkeypatch, unit):
    """The array (16 PE instances) and the two-port DMA (mux trees: hundreds
    of instances of a few generator functions, whose sources are then read
    from the caches) convert to the same text with MyHDL's own lookups."""
    cfg = fconfig.get("FSA4X4Fp16TwoPortConfig" if unit == "dma" else "FSA4X4Fp16Config")
    mod = fsa_dma if unit == "dma" else fsa_array
    fast = mod.convert(tmp_path / "fast", cfg).read_text()
    monkeypatch.setattr(compat_myhdl, "_fast_stack", contextlib.nullcontext)
    slow = mod.convert(tmp_path / "slow", cfg).read_text()
    assert fast == slow
    if unit == "array":
        assert fast.count("fsa_pe u_pe_") == 16
    else:
        assert fast.count("always @(") > 20


def test_fast_stack_records_match_the_standard_ones():
    def probe():
        return inspect.stack()

    original = inspect.stack
    std = probe()
    with compat_myhdl._fast_stack():
        assert inspect.stack is not original
        fast = probe()
    assert inspect.stack is original
    assert [(f.function, f.filename) for f in fast] == [(f.function, f.filename) for f in std]
    assert fast[0].frame.f_code is std[0].frame.f_code
    assert len(fast) == len(std) and fast[-1].function == std[-1].function
    # (record 1 is this test at two lines; the callers beyond are the same)
    assert [f.lineno for f in fast[2:5]] == [f.lineno for f in std[2:5]]
    assert fast[2] is fast[2]         # one record per frame


def _wrapper(f):
    @functools.wraps(f)
    def inner(*a):
        return f(*a)
    return inner


@_wrapper
def _wrapped(x):
    return x + 1


def _plain(x):
    y = x * 2
    return y


def test_cached_source_lookups_equal_inspect(monkeypatch):
    """Inside the context inspect.getsourcelines and MyHDL's _dedent answer
    as the originals do (functions, a wrapped function, frames, a module's
    frame, a class), again from the cache; outside they are the originals."""
    from myhdl import _util

    getsourcelines, dedent = inspect.getsourcelines, _util._dedent
    here = sys._getframe()
    module_frame = here
    while module_frame.f_back is not None and module_frame.f_code.co_name != "<module>":
        module_frame = module_frame.f_back
    objs = [_plain, _wrapped, here, module_frame, fconfig.FSAConfig]
    want = [getsourcelines(o) for o in objs]
    texts = ["    def f():\n        return 1\n", "x = 1\n"]
    with compat_myhdl._fast_stack():
        assert inspect.getsourcelines is not getsourcelines
        for _ in range(2):                        # computed, then cached
            assert [inspect.getsourcelines(o) for o in objs] == want
            assert [_util._dedent(t) for t in texts] == [dedent(t) for t in texts]
        got = inspect.getsourcelines(_plain)
        got[0].append("changed by a caller\n")    # (callers get their own list)
        assert inspect.getsourcelines(_plain) == want[0]
    assert inspect.getsourcelines is getsourcelines and _util._dedent is dedent


def test_standard_stack_is_restored_after_an_error(tmp_path):
    original = inspect.stack

    def broken():
        raise RuntimeError("elaboration failed")

    with pytest.raises(RuntimeError, match="elaboration failed"):
        convert.convert_block(broken, "nothing", tmp_path)
    assert inspect.stack is original
    assert inspect.getsourcelines is compat_myhdl._GETSOURCELINES
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
