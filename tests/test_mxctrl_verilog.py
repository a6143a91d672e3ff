"""The matrix controller's generated Verilog is reviewable: -Wall clean with
no waiver on every array shape and exp2/divider setting, and its generated
comparators are named by the slot, wave and bit (or command / read) they
drive.  (Its behaviour is checked against the plans in tb/mxctrl/test_mxctrl.py.)"""
from __future__ import annotations

import re
import subprocess

import pytest

from fsa import config as fconfig
from fsa import plan as fplan
from rtl import fsa_mxctrl

CASES = [("FSA4X4Fp16Config", {}), ("FSA8X8Bf16OnlyConfig", {}), ("FSA16X8Fp16Config", {}),
         ("FSA4X8Fp16Config", {}), ("FSA8X8Fp32Config", {}),
         ("FSA16X16Fp16Config", {}), ("FSA4X4Fp16Config", {"exp2_pieces": 2}),
         ("FSA4X4Fp16Config", {"exp2_pieces": 32, "div_bits_per_cycle": 4})]


def _cfg(name, over):
    import dataclasses
    cfg = fconfig.get(name)
    return dataclasses.replace(cfg, **over) if over else cfg


@pytest.mark.parametrize("name,over", CASES, ids=[f"{n}{''.join(f'-{k}{v}' for k, v in o.items())}"
                                                   for n, o in CASES])
def test_mxctrl_is_wall_clean_without_waivers(name, over, tmp_path):
    from fsa.simrun import setup_tool_env

    setup_tool_env()
    path = fsa_mxctrl.convert(tmp_path, _cfg(name, over))
    r = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", fsa_mxctrl.MODULE,
                        str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr[-4000:]


def test_comparators_are_named_by_what_they_drive(tmp_path):
    cfg = fconfig.get("FSA4X4Fp16Config")
    text = fsa_mxctrl.convert(tmp_path, cfg).read_text()
    decl = set(re.findall(r"^(?:reg|wire)\s+(?:\[[^\]]*\]\s+)?(\w+);", text, flags=re.M))
    # MyHDL's automatic names (_member7_out, _slot_sources0_...) are gone
    assert not [n for n in decl if re.search(r"_member|_slot_sources|_pack_bits|_encode\d|_or3", n)]
    plans = fsa_mxctrl.plans_for(cfg)
    expected = set()
    for kind in ("parallel", "down", "up"):
        for b in fplan.PE_BITS:
            if any(fplan.compact(p).get((b, kind)) for p in plans):
                expected |= {f"slot{i}_{kind}_{b}_hit" for i in (0, 1)}
    for unit, names, attr in (("cmp", fplan.CMP_CMDS, "cmp"), ("acc", fplan.ACC_CMDS, "acc")):
        for name in names[1:]:
            if any(cmd == name for p in plans for _, cmd in getattr(p, attr)):
                expected |= {f"slot{i}_{unit}_{name.lower()}_hit" for i in (0, 1)}
    expected |= {f"slot{i}_rd_{s}" for i in (0, 1)
                 for s in ("sram", "const", "slope", "scale", "acc")}
    assert "slot0_down_mac_hit" in expected and "slot1_cmp_update_hit" in expected
    assert expected <= decl, sorted(expected - decl)
    # every comparator output is one of them: no unnamed comparator is left
    hits = {n for n in decl if n.endswith("_hit")}
    assert hits == {n for n in expected if n.endswith("_hit")}
    assert {f"row{r}_ctrl" for r in range(cfg.sa_rows)} <= decl
