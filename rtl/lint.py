"""Verilator lint (``--lint-only -Wall``) of a generated configuration.

``python -m rtl.lint FSA4X4Fp16Config`` (``make lint CONFIG=...``) generates
the config if needed and lints every module on its own (so each module is
checked as a top).  Waivers come only from the units' ``LINT_WAIVERS``
constants, each of which carries its reason in the unit's source.
"""
from __future__ import annotations

import subprocess
import sys

from rtl.generate import generate, verilog_files


def lint(config: str) -> int:
    """Lint all modules of `config`; returns the number of failing modules."""
    import json

    from fsa.simrun import setup_tool_env

    setup_tool_env()
    out = generate(config, quiet=True)
    manifest = json.loads((out / "manifest.json").read_text())
    files = verilog_files(out)
    waivers = manifest.get("lint_waivers", [])
    bad = 0
    for mod, f in zip(manifest["modules"], files):
        cmd = ["verilator", "--lint-only", "-Wall", *waivers, "--top-module", mod,
               *map(str, files)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        status = "ok" if r.returncode == 0 and "%Warning" not in r.stderr else "FAIL"
        print(f"[lint] {mod:<28} {status}")
        if status != "ok":
            bad += 1
            print(r.stderr[-4000:])
    if waivers:
        print(f"[lint] waivers in force: {' '.join(waivers)} (reasons: LINT_WAIVERS in rtl/)")
    print(f"[lint] {config}: {len(files) - bad}/{len(files)} modules clean")
    return bad


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m rtl.lint CONFIG", file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if lint(sys.argv[1]) else 0)
