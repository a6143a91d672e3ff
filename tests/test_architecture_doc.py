"""docs/architecture.md states the hardware contract in tables; they must
say what the code builds (error codes, register offsets, PE control bits,
CMP/ACC command codes, matrix function codes, the RECIPROCAL length)."""
from __future__ import annotations

import re
from pathlib import Path

from fsa import errors, plan
from fsa.hw import regs as hwregs
from rtl import fsa_acc, fsa_regs

DOC = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()


def _section(title: str) -> str:
    """The text of the section whose heading starts with `title`."""
    m = re.search(rf"^#+ {re.escape(title)}.*?$(.*?)(?=^#+ |\Z)", DOC, flags=re.M | re.S)
    assert m, f"no section {title!r} in docs/architecture.md"
    return m.group(1)


def _rows(text: str) -> list[list[str]]:
    """Table rows (cells stripped), header and rule lines left out."""
    out = []
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-| ]+\|$", line):
            out.append([c.strip() for c in line.strip().strip("|").split("|")])
    return out[1:] if out else out


def test_error_table_matches_the_error_codes():
    rows = _rows(_section("Error model"))
    assert {int(r[0]): r[1] for r in rows} == {c: n for c, (n, _) in errors.ERRORS.items()}


def test_register_offsets_match_the_register_block():
    rows = _rows(_section("9. Control registers"))
    offsets = {int(r[0], 16): r[1] for r in rows}
    assert {o for o, acc in offsets.items() if "R" in acc} == set(fsa_regs.READ_REGS)
    assert {o for o, acc in offsets.items() if acc == "RW"} == \
        {hwregs.OFFSETS[n] for n in hwregs.SETTINGS + ("fetch_lo", "fetch_hi", "fetch_words")}
    assert {o for o, acc in offsets.items() if acc == "W"} == \
        {r.offset for r in hwregs.REGS if r.access == "W"} == {0x00, 0x04, 0x50, 0x70}
    assert {o for o, acc in offsets.items() if acc == "RW"} == \
        {r.offset for r in hwregs.REGS if r.access == "RW"}
    assert f"0x{fsa_regs.MAGIC:08X}" in _section("9. Control registers")


def test_pe_control_bits_in_order():
    rows = _rows(_section("3. Processing element"))
    assert [(int(r[0]), r[1].strip("`")) for r in rows] == list(enumerate(plan.PE_BITS))


def test_cmp_and_acc_command_codes():
    text = _section("4. Comparator and accumulator units")
    rows = [(int(r[0]), r[1].strip("`")) for r in _rows(text) if r[0].isdigit()]
    assert rows == list(enumerate(plan.CMP_CMDS)) + list(enumerate(plan.ACC_CMDS))


def test_matrix_function_codes():
    text = _section("8. Instruction encoding")
    funcs = dict((int(c), n) for c, n in re.findall(r"(\d) (LOAD_STATIONARY|ATTENTION_\w+)", text))
    assert funcs == dict(enumerate(plan.FUNCS))
    table = _section("Plans")
    assert [(int(c), n) for n, c in re.findall(r"^\| (\w+) \((\d)\)", table, flags=re.M)] == \
        list(enumerate(plan.FUNCS))


def test_reciprocal_lengths():
    m = re.search(r"(\d+) cycles for fp32 with 2 bits per cycle, (\d+) for fp16,\s+(\d+) for bf16",
                  _section("Plans"))
    assert m
    assert [int(x) for x in m.groups()] == [fsa_acc.reciprocal_cycles(a, 2)
                                            for a in ("fp32", "fp16", "bf16")]
