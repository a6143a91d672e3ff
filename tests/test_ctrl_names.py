"""Named control in the generated Verilog: the PE's control bits, the CMP's
and ACC's commands appear by name (``pe_ctrl_mac``, ``cmp_cmd_update``,
``acc_cmd_exp_s1``), with positions and codes from the one table in
``fsa/plan.py`` (PE_BITS, CMP_CMDS, ACC_CMDS)."""
from __future__ import annotations

import re

import pytest

from fsa import config as fconfig
from fsa import plan
from rtl import fsa_acc, fsa_array, fsa_cmp, fsa_pe


@pytest.fixture(scope="module")
def verilog(tmp_path_factory):
    out = tmp_path_factory.mktemp("names")
    cfg = fconfig.get("FSA4X4Fp16Config")
    return {
        "pe": fsa_pe.convert(out, "fp16", "fp32", 8).read_text(),
        "cmp": fsa_cmp.convert(out, "fp16", "fp32", 8).read_text(),
        "acc": fsa_acc.convert(out, "fp32", 8, 2).read_text(),
        "array": fsa_array.convert(out, cfg).read_text(),
    }


def test_pe_bits_are_named_from_the_plan_table(verilog):
    text = verilog["pe"]
    assigned = dict((name, int(bit)) for name, bit in
                    re.findall(r"assign (pe_ctrl_\w+) = ctrl_in\[(\d+)\];", text))
    assert assigned == {f"pe_ctrl_{b}": i for i, b in enumerate(plan.PE_BITS)}
    assert fsa_pe.CTRL_NAMES == tuple(f"pe_ctrl_{b}" for b in plan.PE_BITS)
    assert fsa_pe.CTRL_BITS == len(plan.PE_BITS)
    # the logic reads the names, never a raw bit of the control word
    assert len(re.findall(r"ctrl_in\[\d+\]", text)) == len(plan.PE_BITS)
    for name in assigned:
        assert re.search(rf"\b{name}\b", text.split(f"assign {name} =")[1]), f"{name} unused"


@pytest.mark.parametrize("unit,table,port,prefix",
                         [("cmp", plan.CMP_CMDS, "cmd_in", "cmp_cmd_"),
                          ("acc", plan.ACC_CMDS, "cmd", "acc_cmd_")])
def test_commands_are_decoded_by_name(verilog, unit, table, port, prefix):
    text = verilog[unit]
    decoded = dict((name, int(code)) for name, code in
                   re.findall(rf"assign ({prefix}\w+) = \({port} == (\d+)\);", text))
    assert decoded, f"no named command decode in fsa_{unit}"
    for name, code in decoded.items():
        assert table[code].lower() == name[len(prefix):]
    # every other use of the command port is a copy, never a comparison
    assert len(re.findall(rf"\b{port} ==", text)) == len(decoded)


def test_unit_command_codes_follow_the_plan_table():
    for mod, table in ((fsa_cmp, plan.CMP_CMDS), (fsa_acc, plan.ACC_CMDS)):
        for i, name in enumerate(table):
            assert getattr(mod, f"CMD_{name}") == i


def test_array_documents_the_control_word_by_name(verilog):
    text = verilog["array"]
    comment = " ".join(ln[2:].strip() for ln in text.splitlines() if ln.startswith("//"))
    listed = re.search(r"bits 0\.\.\d+ = (.*?) \(the names", comment).group(1)
    assert tuple(n.strip() for n in listed.split(",")) == fsa_pe.CTRL_NAMES
