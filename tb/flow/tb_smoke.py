"""cocotb side of tb/flow/test_simrun.py: a tiny combinational adder."""
import os

import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def adds_one(dut):
    """y == a + 1 (mod 256) for every input."""
    for v in range(256):
        dut.a.value = v
        await Timer(1, unit="ns")
        assert int(dut.y.value) == (v + 1) % 256, f"a={v}: y={int(dut.y.value)}"


@cocotb.test(skip=os.environ.get("SMOKE_EXPECT_FAIL") != "1")
async def expects_wrong_value(dut):
    """Deliberately failing check, used to prove failures are reported."""
    dut.a.value = 3
    await Timer(1, unit="ns")
    assert int(dut.y.value) == 5, "smoke: deliberate failure"


@cocotb.test(skip=os.environ.get("SMOKE_HANG") != "1")
async def hangs(dut):
    """Never finishes on its own: the wall-clock timeout must stop it."""
    while True:
        await Timer(1, unit="us")


@cocotb.test(skip=os.environ.get("SMOKE_PROBE") is None)
async def internal_visibility(dut):
    """The internal net ``s`` is reachable through VPI exactly when the build
    made it public (SMOKE_PROBE=visible) and not when only the ports are
    (SMOKE_PROBE=hidden): fsa.simrun's visibility files take effect."""
    want = os.environ["SMOKE_PROBE"] == "visible"
    try:
        dut.s
        seen = True
    except AttributeError:
        seen = False
    assert seen == want, f"internal signal s visible: {seen}, expected {want}"
    dut.a.value = 7
    await Timer(1, unit="ns")
    assert int(dut.y.value) == 8
