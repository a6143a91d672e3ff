"""The software dataflow seam (fsa/dataflows/) and the import structure of
fsa/: one object per dataflow, its functions and bits from the hardware
tables, its kernel registered, the ILLEGAL_FUNC rule shared by the golden and
the cycle model; no import circle in fsa/, function-level imports included."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fsa import config as fconfig
from fsa import dataflows, isa, kernels
from fsa.cycle import model as cm
from fsa.golden.machine import Machine, MachineError
from fsa.hw import dataflow as hw_dataflow
from fsa.hw.isa import MX_FUNC_TABLE, MX_FUNCS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(dataflows.DATAFLOWS))
def test_each_dataflow_takes_its_facts_from_the_hardware_tables(name):
    df = dataflows.get(name)
    assert df.name == name and repr(df) == f"<dataflow {name}>"
    assert df.funcs == tuple(f for f, owner in MX_FUNC_TABLE if owner in ("reference", name))
    assert df.funcs[:len(MX_FUNCS)] == MX_FUNCS            # every dataflow runs the reference's
    assert df.own_funcs == df.funcs[len(MX_FUNCS):]
    assert df.pe_bits == hw_dataflow.of(name).pe_bits
    assert df.kernel in kernels.KERNELS


def test_the_config_chooses_the_dataflow_once():
    for preset, name in (("FSA4X4Fp16Config", "reference"), ("FSA4X4Fp16UdConfig", "ud")):
        cfg = fconfig.get(preset)
        assert dataflows.get(cfg) is dataflows.DATAFLOWS[name]
        assert kernels.kernel_for(cfg, None) == dataflows.get(cfg).kernel
    with pytest.raises(ValueError, match="unknown dataflow 'nope'"):
        dataflows.get("nope")


def test_illegal_func_is_one_rule_for_the_golden_and_the_cycle_model():
    ref, ud = fconfig.get("FSA4X4Fp16Config"), fconfig.get("FSA4X4Fp16UdConfig")
    step = isa.Matrix(isa.MxFunc.STEP)
    assert dataflows.illegal(ud, step) is None
    assert dataflows.illegal(ref, isa.Matrix(isa.MxFunc.ATTENTION_SCORE)) is None
    msg = dataflows.illegal(ref, step)
    assert msg == ("matrix function STEP (code 7) needs UD hardware (dataflow 'ud'); "
                   "FSA4X4Fp16Config has dataflow 'reference' (codes 0..4)")
    with pytest.raises(MachineError, match="ILLEGAL_FUNC") as e:
        Machine(ref).matrix(step, 3)
    assert msg in str(e.value)
    with pytest.raises(ValueError, match="STEP \\(code 7\\) needs UD hardware"):
        cm.simulate(ref, [step, isa.Fence(stop=True)])


def test_the_reference_period_and_the_ud_period():
    assert dataflows.get("reference").period(4, 4, 8) == 4 * 4 + 4 + 8 + 5
    assert dataflows.get("ud").period(4, 4, 8) == 2 * 4 + 8 + 3
    assert dataflows.get("reference").norm_slack(8) == 0 and dataflows.get("ud").norm_slack(8) == 4


def _fsa_imports(path: Path) -> set[str]:
    """The fsa modules a file imports, at any depth of its code."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "fsa"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "fsa":
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_fsa_has_no_import_circle():
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (ROOT / "fsa").rglob("*.py")}
    graph = {m: {i for i in _fsa_imports(p) if i in files and i != m} for m, p in files.items()}
    # a package's __init__ is not an edge of its submodules' imports
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if seen.get(n) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if n not in seen:
                visit(n)
        stack.pop()
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m)
    assert len(graph) > 60
