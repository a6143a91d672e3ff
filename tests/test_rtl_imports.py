"""rtl/ builds from the hardware contract only: every import in rtl/ (at
module level and inside functions) of a project module names ``fsa.hw``,
``fsa.formats`` or ``fsa.numerics`` (or their submodules), or ``rtl``
itself.  Everything else the hardware needs from software (the plans, the
DMA rules, the fetch constants, the configuration type) is part of
``fsa.hw``; paths, lint waivers and the simulator runner belong where they
are used."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the project modules rtl/ may import (and their submodules)
ALLOWED = ("fsa.hw", "fsa.formats", "fsa.numerics")
#: the project's top-level packages (imports of anything else are third-party)
PROJECT = ("fsa", "rtl", "tb", "tests", "bench")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every import statement in `path`; ``from
    pkg import name`` gives ``pkg.name`` (name may be a submodule)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:          # relative: inside rtl/
                pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-node.level])
                base = pkg + ("." + node.module if node.module else "")
            else:
                base = node.module
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _allowed(mod: str) -> bool:
    top = mod.split(".")[0]
    if top not in PROJECT or top == "rtl":
        return True
    return any(mod == a or mod.startswith(a + ".") for a in ALLOWED)


def _violations(files) -> list[str]:
    return [f"{p.relative_to(ROOT)}:{line}: {mod}" for p in files for line, mod in _imports(p)
            if not _allowed(mod)]


def test_rtl_imports_only_the_contract():
    files = sorted((ROOT / "rtl").rglob("*.py"))
    assert len(files) > 30
    bad = _violations(files)
    assert not bad, "rtl/ imports outside fsa.hw, fsa.formats, fsa.numerics:\n" + "\n".join(bad)


@pytest.mark.parametrize("src,bad", [
    ("from fsa.plan import PE_BITS\n", True),
    ("def f():\n    from fsa import config\n", True),
    ("import fsa.simrun\n", True),
    ("def f():\n    if 1:\n        import fsa.paths as p\n", True),
    ("from fsa import numerics, waivers\n", True),
    ("from tests import helpers\n", True),
    ("from fsa.hw import timing\nfrom fsa.formats import get_format\n", False),
    ("def f():\n    from fsa import numerics\n    from fsa.hw.control import PE_BITS\n", False),
    ("from rtl import fsa_pe\nfrom . import fsa_cmp\nimport myhdl\n", False),
    ("from fsa.hwx import y\n", True),
])
def test_the_check_sees_every_import_form(tmp_path, monkeypatch, src, bad):
    """The parser finds imports at module level, in functions and nested
    blocks, plain and from-imports, and tells the contract from the rest."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "rtl").mkdir()
    f = tmp_path / "rtl" / "unit.py"
    f.write_text(src)
    assert bool(_violations([f])) is bad
