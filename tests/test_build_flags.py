"""Verilator build flags (fsa/simrun.py): the device tops get the model
flags chosen by measurement (``DEVICE_MODEL_ARGS``, docs/testing.md), other
tops do not, and the flags are part of a build's cache key."""
from __future__ import annotations

from fsa import simrun


def test_device_tops_get_the_model_flags():
    for top in simrun.DEVICE_TOPS:
        args = simrun.build_args("verilator", False, top)
        assert args[-len(simrun.DEVICE_MODEL_ARGS):] == simrun.DEVICE_MODEL_ARGS
        assert not [a for a in args if a.startswith("-Wno")]
    for top in ("fsa_pe", "fsa_array", None):
        args = simrun.build_args("verilator", False, top)
        assert "--inline-cfuncs" not in args and "--output-split" in args
    assert simrun.build_args("icarus", False, "fsa_top") == []
    # waveforms keep the model flags
    assert "--trace-fst" in simrun.build_args("verilator", True, "fsa_top")
    assert "--inline-cfuncs" in simrun.build_args("verilator", True, "fsa_top")


class _Recorder:
    skip_exec = False

    def __init__(self):
        self.calls = []

    def build(self, **kw):
        self.calls.append(kw)


def test_model_flags_change_the_cache_key(tmp_path, monkeypatch):
    monkeypatch.setattr(simrun, "SIMS", tmp_path / "sims")
    monkeypatch.setattr(simrun, "_tool_version", lambda sim: sim)
    src = tmp_path / "fsa_top.v"
    src.write_text("module fsa_top; endmodule\n")
    r = _Recorder()
    b1 = simrun.build("verilator", "fsa_top", [src], runner=r, public=None)
    assert "--inline-cfuncs" in r.calls[-1]["build_args"]
    monkeypatch.setattr(simrun, "DEVICE_MODEL_ARGS", ["--inline-cfuncs", "10"])
    b2 = simrun.build("verilator", "fsa_top", [src], runner=r, public=None)
    assert b1 != b2 and r.calls[-1]["build_args"][-2:] == ["--inline-cfuncs", "10"]
