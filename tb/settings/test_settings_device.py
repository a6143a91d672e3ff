"""The run-time softmax scale and key-limit mask on the RTL device
(``fsa_top``): the setting registers' behaviour over AXI4-Lite
(tb/settings/tb_settings.py), and attention with a non-default scale and key limit
(``mask_keys`` on the last key block) bit-exact with the golden model, with
the cycle model's counts (the flag and the settings do not change timing).
The bf16 case runs on the UD twin's build (the reference kernel, which UD
hardware runs unchanged; tb/attention/test_ud_attention.py builds the twin anyway)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa import simrun
from fsa.engines import GoldenEngine, SimEngine
from fsa.simdev import device_build, program_address
from fsa.hw.verilog import generate
from fsa.isa import Fence, Matrix, MxFunc, encode
from tb.common.programs import masked_program, settings_inputs

pytestmark = pytest.mark.sim


def test_setting_registers_over_axi_lite(tmp_path):
    cfg = fconfig.get("FSA4X4Fp16Config")
    se, sa = fconfig.scale_bits(cfg, 0.3)
    busy = encode([Matrix(MxFunc.ATTENTION_LSE_NORM_SCALE, acc_addr=0)] * 30
                  + [Fence(mx=True, dma=True, stop=True)])
    case = {"config": cfg.to_dict(), "new": {"scale_e": se, "scale_a": sa, "key_limit": 3},
            "bad": [["key_limit", 5], ["key_limit", 0xFFFF_FFFF], ["scale_e", 0x1_0000],
                    ["scale_e", 0x8000_3C00]],
            "busy": busy}
    (tmp_path / "case.json").write_text(json.dumps(case))
    top, srcs, public = device_build(generate(cfg, quiet=True))   # the device tests' shared build
    rd = simrun.run(top, srcs, "tb.settings.tb_settings", public=public,
                    extra_env={"FSA_CASE": str(tmp_path / "case.json")})
    seen = json.loads((rd / "settings_result.json").read_text())
    assert seen["written"] == case["new"] and seen["after_abort"]["key_limit"] == 0


CASES = [("FSA4X4Fp16Config", 8, 12, False, 0.3, 1), ("FSA4X4Fp16Config", 12, 12, True, 1.7, 3),
         ("FSA4X4Bf16UdConfig", 8, 8, False, 0.11, 2)]


@pytest.mark.parametrize("name,sq,skv,causal,scale,key_limit", CASES,
                         ids=[f"{c[0]}-{c[1]}x{c[2]}{'-causal' if c[3] else ''}" for c in CASES])
def test_attention_with_scale_and_key_limit_bit_exact(name, sq, skv, causal, scale, key_limit):
    cfg = fconfig.get(name)
    rng = np.random.default_rng([sq, skv, key_limit])
    q, k, v = settings_inputs(cfg, rng, sq, skv)
    # (the reference kernel: mask_keys is a flag of its ATTENTION_SCORE)
    prog = masked_program(cfg, sq, skv, causal, key_limit=key_limit, scale=scale,
                          kernel="reference")
    assert prog.settings["key_limit"] == key_limit and scale != 1 / math.sqrt(cfg.sa_rows)
    ins = {"Q": q, "K": k, "V": v}
    gold = GoldenEngine(cfg).run(prog, ins)
    sim = SimEngine(cfg, simrun.get_sim(None))
    res = sim.run(prog, ins)
    got, want = res.outputs["Ot"], gold.outputs["Ot"]
    bad = np.flatnonzero(got.ravel() != want.ravel())
    assert bad.size == 0, (f"{bad.size} of {got.size} values differ from the golden model; first "
                           f"{[(int(i), hex(got.ravel()[i]), hex(want.ravel()[i])) for i in bad[:5]]}"
                           f"; run folder {sim.last_run['run_dir']}")
    # the settings made a difference (not the reset values' result)
    plain = GoldenEngine(cfg).run(masked_program(cfg, sq, skv, causal, kernel="reference"),
                                  ins).outputs["Ot"]
    assert not np.array_equal(plain, want)
    # timing: the cycle model (which ignores the flag and the settings) predicts the device
    # (SimEngine fetches the program from the top of the memory window)
    fetch = cm.FetchTiming(program_address(cfg, len(prog.words())))
    m = cm.simulate(cfg, prog.instructions, cm.DEFAULT_DMA, fetch=fetch)
    assert m.cycles == res.cycles, (m.cycles, res.cycles)
    for c in ("bubble", "mx_active", "dma_active"):
        assert m.counters[c] == res.counters[c], (c, m.counters, res.counters)
