"""The dataflow seam of the RTL: the hardware descriptors of fsa/hw/dataflow.py
and rtl/parts.py, which leaves out of a process the statements of the parts
a configuration does not have (the units are one body for every dataflow)."""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from fsa import config as fconfig
from fsa.hw import control, dataflow
from rtl import fsa_acc, fsa_cmp, fsa_pe
from rtl.parts import flat_ports, part_of
from rtl.prim import Bundle


def test_descriptors_by_name_and_config():
    ref, ud = dataflow.of("reference"), dataflow.of(fconfig.get("FSA4X4Fp16UdConfig"))
    assert ref is dataflow.REFERENCE and ud is dataflow.UD and dataflow.of(ud) is ud
    assert set(dataflow.names()) >= {"reference", "ud"}
    assert (ref.ctrl_bits, ud.ctrl_bits) == (9, 12)
    assert ud.pe_bits == control.PE_BITS + control.UD_PE_BITS
    assert (ref.cmp_latch, ud.cmp_latch, ref.acc_scale2, ud.acc_scale2) == (False, True, False, True)
    assert (ref.bottom_row, ud.bottom_row, ref.norm_slot, ud.norm_slot) == (False, True, False, True)
    # the units size their ports from the descriptor
    assert (fsa_pe.ctrl_width("reference"), fsa_pe.ctrl_width(ud)) == (9, 12)
    assert (fsa_acc.cmd_bits(ref), fsa_acc.cmd_bits(ud)) == (3, 4)


def test_unknown_or_inconsistent_dataflows_are_refused():
    with pytest.raises(ValueError, match="unknown dataflow 'wavefront'"):
        dataflow.of("wavefront")
    with pytest.raises(ValueError, match="registered already"):
        dataflow.register(dataflow.Dataflow("ud"))
    with pytest.raises(ValueError, match="norm_slot"):
        dataflow.Dataflow("broken", norm_slot=True)


def _source(func) -> str:
    """What part_of made of `func`, as text (the AST MyHDL converts)."""
    return ast.unparse(ast.parse(textwrap.dedent(inspect.getsource(func))))


def _block(q_present: bool):
    """A process written for every part: `qreg` and `load_q` exist only with q."""
    a, b, sreg, out = object(), object(), object(), object()
    qreg = object() if q_present else None
    load_q = object() if q_present else None

    def step():
        """doc"""
        if load_q:
            out.next = qreg
        elif a:
            out.next = sreg
        else:
            out.next = b
        if load_q:
            qreg.next = a
        sreg.next = b
    return step


def test_part_of_drops_the_statements_of_absent_parts():
    full = part_of(_block(True))
    assert full.__name__ == "step" and "load_q" in _source(full)       # nothing absent: unchanged
    pruned = part_of(_block(False), name="step_ref", doc="other doc")
    text = _source(pruned)
    assert "load_q" not in text and "qreg" not in text
    # the chain goes on with the next elif; the statements of present parts stay
    want = ("def step_ref():\n    \"\"\"other doc\"\"\"\n    if a:\n        out.next = sreg\n"
            "    else:\n        out.next = b\n    sreg.next = b")
    assert text == want
    # the closure is the block's: the pruned function sees the same objects
    assert set(pruned.__code__.co_freevars) == {"a", "b", "sreg", "out"}


def test_part_of_drops_an_if_left_empty_and_absent_locals():
    a, b, x, out = object(), object(), None, object()

    def step():
        if a:
            x.next = a
        y = x + 1
        out.next = b and y
        out.next = b
    assert _source(part_of(step)) == "def step():\n    out.next = b"


def test_part_of_refuses_a_branch_left_empty_before_an_else():
    a, b, x = object(), object(), None

    def step():
        if a:
            x.next = a
        else:
            b.next = a
    with pytest.raises(ValueError, match="absent part"):
        part_of(step)


def test_flat_ports_expands_bundles_in_order():
    s = object()
    got = flat_ports(dict(in_x=s, bcmp=Bundle(max=1, up=2), rel2=Bundle(valid=3)))
    assert list(got.items()) == [("in_x", s), ("bcmp_max", 1), ("bcmp_up", 2), ("rel2_valid", 3)]


def test_one_pe_and_one_cmp_body_convert_per_dataflow(tmp_path):
    """The same block, two dataflows: the UD parts appear only on UD."""
    ref, ud = tmp_path / "ref", tmp_path / "ud"
    pe_ref = fsa_pe.convert(ref, "fp16", "fp32", 8).read_text()
    pe_ud = fsa_pe.convert(ud, "fp16", "fp32", 8, "ud").read_text()
    assert "begin: step\n" in pe_ref and "begin: step_ud\n" in pe_ud
    assert "pe_ctrl_load_q" not in pe_ref and "else if (pe_ctrl_load_reg_di)" in pe_ud
    cmp_ref = fsa_cmp.convert(ref, "fp16", "fp32", 8).read_text()
    cmp_ud = fsa_cmp.convert(ud, "fp16", "fp32", 8, "ud").read_text()
    assert "cmp_cmd_latch" not in cmp_ref and "else if (cmp_cmd_latch) begin" in cmp_ud
