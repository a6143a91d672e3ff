"""Verilator lint (``--lint-only -Wall``) of a generated configuration.

``python -m fsa.lint FSA4X4Fp16Config`` (``make lint CONFIG=...``) generates
the config if needed (by running the generator, :func:`fsa.hw.verilog.generate`)
and lints every module on its own (so each module is checked as a top) with
the Verilator of :func:`fsa.simrun.setup_tool_env`.  There is no global
``-Wno-...`` flag: the only waivers are
the generated ``waivers.vlt`` (``fsa.hw.waivers``), where each waiver names the
one module whose unit declared it (``LINT_WAIVERS``) and carries its reason;
the Verilator simulator builds read the same file.  A module passes when
Verilator exits 0 and prints no warning.  ``python -m fsa.lint CONFIG MODULE
...`` (``make lint CONFIG=... MODULES='fsa_pe fsa_cmp'``) lints only the named
modules (the 128x128 presets' array and top need more memory and time than
the rest together).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fsa.hw.verilog import generate, verilog_files
from fsa.hw.waivers import WAIVER_FILE

__all__ = ["lint_command", "lint_module", "lint"]


def lint_command(outdir: Path, module: str) -> list[str]:
    """The Verilator command that lints `module` of the generated folder
    `outdir` as top: ``-Wall``, the folder's waiver file, every Verilog file
    (absolute paths: the waivers match ``*/<module>.v``)."""
    outdir = Path(outdir).resolve()
    files = [str(f) for f in verilog_files(outdir)]
    return ["verilator", "--lint-only", "-Wall", str(outdir / WAIVER_FILE),
            "--top-module", module, *files]


def lint_module(outdir: Path, module: str) -> tuple[bool, str]:
    """(clean, Verilator's messages) for one module of a generated folder."""
    r = subprocess.run(lint_command(outdir, module), capture_output=True, text=True)
    return r.returncode == 0 and "%Warning" not in r.stderr, r.stderr


def lint(config: str, modules: "list[str] | None" = None) -> int:
    """Lint all modules of `config` (or only `modules`, names from its
    manifest); returns the number of failing modules."""
    import json

    from fsa.simrun import setup_tool_env

    setup_tool_env()
    out = generate(config, quiet=True)
    manifest = json.loads((out / "manifest.json").read_text())
    waivers = manifest.get("lint_waivers", {})
    todo = list(manifest["modules"])
    if modules:
        unknown = sorted(set(modules) - set(todo))
        if unknown:
            raise SystemExit(f"[lint] {config} has no module {', '.join(unknown)}; its modules: "
                             f"{', '.join(todo)}")
        todo = [m for m in todo if m in modules]
    bad = 0
    for mod in todo:
        ok, msgs = lint_module(out, mod)
        rules = ", ".join(sorted(waivers.get(mod, {})))
        print(f"[lint] {mod:<28} {'ok' if ok else 'FAIL'}"
              + (f"   (waived in this module: {rules})" if rules else ""))
        if not ok:
            bad += 1
            print(msgs[-4000:])
    n = len(todo)
    part = "" if n == len(manifest["modules"]) else f" (of {len(manifest['modules'])})"
    print(f"[lint] {config}: {n - bad}/{n}{part} modules clean; waivers with their reasons in "
          f"{out / WAIVER_FILE}")
    return bad


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python -m fsa.lint CONFIG [MODULE ...]   (make lint CONFIG=... "
              "[MODULES='...']; `fsa configs` lists the presets; MODULE: lint only these "
              "modules of the config)", file=sys.stderr)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    sys.exit(1 if lint(sys.argv[1], sys.argv[2:]) else 0)
