"""The fault-injecting AXI memory's fault selection (fsa/harness/axi_faults.py),
without a simulator: error responses and the protocol violations. (On the
RTL it serves tb/dma/tb_dma.py ``dma_axi_errors``, the device error tests of
tb/top/test_top.py and the fault matrix of tb/faults/test_faults.py.)"""
from __future__ import annotations

import pytest
from cocotbext.axi import AxiBurstType

from fsa.harness.axi_faults import Fault, FaultList, _beat_addrs

BURST = [0x1000 + 8 * i for i in range(5)]          # a 5-beat INCR burst of 8-byte beats


@pytest.mark.parametrize("beat,want", [("first", {0}), ("middle", {2}), ("last", {4}), (3, {3}),
                                       (7, set())])
def test_chosen_beat_of_a_hit_burst(beat, want):
    f = Fault("read", 0x1010, 0x1018, resp="DECERR", beat=beat)
    assert f.failing_beats(BURST) == want
    assert f.hits == (1 if want else 0)


def test_range_beats_and_misses():
    f = Fault("write", 0x1008, 0x1018)                    # beats 1 and 2
    assert f.failing_beats(BURST) == {1, 2}
    assert f.failing_beats([0x2000, 0x2008]) == set()     # a burst outside the range
    assert f.hits == 1


def test_times_limits_the_bursts_hit():
    f = Fault("read", 0x1000, 0x1008, beat="last", times=2)
    assert [f.failing_beats(BURST) for _ in range(3)] == [{4}, {4}, set()]


def test_fault_list_logs_what_it_injected_per_direction():
    fl = FaultList()
    fl.add(Fault("read", 0x1000, 0x1008, resp="SLVERR", beat="first"))
    fl.add(Fault("write", 0x1020, 0x1028, resp="DECERR"))
    assert fl.resolve("write", BURST) == {4: "DECERR"}
    assert fl.resolve("read", BURST) == {0: "SLVERR"}
    assert fl.injected == [("write", 0x1020, 4, 5, "DECERR"), ("read", 0x1000, 0, 5, "SLVERR")]
    fl.clear()
    assert fl.resolve("read", BURST) == {} and fl.injected == []


def test_burst_addresses():
    assert _beat_addrs(0x1000, 5, 3, AxiBurstType.INCR, 8) == BURST
    assert _beat_addrs(0x1008, 3, 3, AxiBurstType.FIXED, 8) == [0x1008] * 3
    assert _beat_addrs(0x1018, 4, 3, AxiBurstType.WRAP, 8) == [0x1018, 0x1000, 0x1008, 0x1010]


@pytest.mark.parametrize("lo,hi,want", [(0x1008, 0x1018, set()), (0x1008, 0x1028, {4})])
def test_missing_rlast_only_on_a_last_beat(lo, hi, want):
    f = Fault("read", lo, hi, resp="NO_RLAST")
    assert f.failing_beats(BURST) == want and f.hits == len(want)


def test_early_rlast_never_on_the_last_beat():
    assert Fault("read", 0x1018, 0x1028, resp="EARLY_RLAST").failing_beats(BURST) == {3}
    assert Fault("read", 0x1020, 0x1028, resp="EARLY_RLAST").failing_beats(BURST) == set()
    assert Fault("read", 0x1000, 0x1008, resp="EARLY_RLAST").failing_beats([0x1000]) == set()


@pytest.mark.parametrize("direction,resp", [("read", "STRAY_B"), ("write", "BID"),
                                            ("write", "STRAY_R")])
def test_burst_level_violations_fire_once_per_burst(direction, resp):
    f = Fault(direction, 0x1008, 0x1020, resp=resp)
    assert f.failing_beats(BURST) == {1}
    assert f.failing_beats(BURST) == {1} and f.hits == 2


def test_violations_resolve_by_direction():
    fl = FaultList()
    fl.add(Fault("read", 0x1000, 0x1028, resp="RID", beat="middle"))
    fl.add(Fault("write", 0x1000, 0x1028, resp="STRAY_R"))
    assert fl.resolve("read", BURST) == {2: "RID"}
    assert fl.resolve("write", BURST) == {0: "STRAY_R"}


@pytest.mark.parametrize("kw,msg", [(dict(direction="both"), "direction"),
                                    (dict(resp="OKAY"), "resp"),
                                    (dict(resp="BID"), "resp"),
                                    (dict(direction="write", resp="RID"), "resp"),
                                    (dict(beat="second"), "beat"),
                                    (dict(lo=8, hi=8), "empty")])
def test_bad_faults_are_refused(kw, msg):
    args = dict(direction="read", lo=0, hi=8) | kw
    with pytest.raises(ValueError, match=msg):
        Fault(**args)
