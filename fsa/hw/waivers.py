"""Lint waivers contract: per-module Verilator lint waivers as one generated
configuration file, the file the generator writes beside the Verilog and the
lint and the simulator builds read.

A unit that needs a Verilator warning waived declares it beside its code as
``LINT_WAIVERS = {"RULE": "reason", ...}`` (the older ``"-Wno-RULE"`` keys are
accepted too).  The generator (``rtl/generate.py``) collects them per module
and writes :data:`WAIVER_FILE` beside the Verilog; ``make lint`` and the
Verilator simulator builds (:mod:`fsa.simrun`) read that file, so a waiver
applies only to the module that declared it and both use the same ones.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["WAIVER_FILE", "waiver_rule", "waiver_text", "waiver_files"]

#: The Verilator configuration file holding a design's lint waivers: the
#: generator writes it beside the Verilog (``gen/<config>/waivers.vlt``), and
#: :func:`fsa.simrun.build` and ``make lint`` (``fsa/lint.py``) use it.  There are no global ``-Wno-...``
#: flags: every waiver names its module's file and carries its reason.
WAIVER_FILE = "waivers.vlt"


def waiver_rule(key: str) -> str:
    """The Verilator rule of a ``LINT_WAIVERS`` key: ``"-Wno-WIDTHTRUNC"`` and
    ``"WIDTHTRUNC"`` both give ``"WIDTHTRUNC"``."""
    rule = key[len("-Wno-"):] if key.startswith("-Wno-") else key
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", rule):
        raise ValueError(f"not a Verilator warning name: {key!r}")
    return rule


def waiver_text(waivers: Mapping[str, Mapping[str, str]]) -> str:
    """A Verilator configuration file waiving, per module, the rules its unit
    declares: `waivers` maps a module name to its ``LINT_WAIVERS`` dict
    (``{"-Wno-RULE" or "RULE": reason}``).  Each waiver is one
    ``lint_off -rule RULE -file "*/<module>.v"`` preceded by its reason; a
    module without waivers gets no line."""
    lines = ["`verilator_config",
             "// Lint waivers, one per module and rule, each with the reason its unit",
             "// declares (LINT_WAIVERS beside the unit's code). Generated: do not edit."]
    for mod in sorted(waivers):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mod):
            raise ValueError(f"not a module name: {mod!r}")
        for key, reason in sorted(waivers[mod].items(), key=lambda kv: waiver_rule(kv[0])):
            reason = " ".join(str(reason).split())
            if not reason:
                raise ValueError(f"{mod}: waiver {key} has no reason")
            lines.append(f"// {mod}: {waiver_rule(key)}: {reason}")
            lines.append(f'lint_off -rule {waiver_rule(key)} -file "*/{mod}.v"')
    return "\n".join(lines) + "\n"


def waiver_files(sources: Sequence[Path]) -> list[Path]:
    """The waiver files (:data:`WAIVER_FILE`) beside `sources`, one per folder."""
    out: list[Path] = []
    for s in sources:
        f = Path(s).parent / WAIVER_FILE
        if f.is_file() and f not in out:
            out.append(f)
    return out
