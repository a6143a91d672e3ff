"""The fast memory path of the device simulations (issue 16 item 4): the
Verilog wrapper ``fsa_memtop`` (``rtl/fsa_memwrap.py``) that answers the
memory ports of ``fsa_top`` inside the simulator, with a backdoor load and
dump from Python (``fsa.harness.device.Device(memory="fast")``).

``fsa/`` never imports ``rtl/``: :func:`wrapper` runs
``python -m rtl.fsa_memwrap`` as a separate process (as
``fsa.hw.verilog.generate`` runs the generator) and caches its output under
``sims/gen/memtop/<hash>/`` (the hash covers the wrapped ``fsa_top.v`` and
the wrapper generator's source); its module name and backdoor files are
:mod:`fsa.hw.fastmem`'s.  Verilator only.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from fsa import paths
from fsa.hw import fastmem as _contract
from fsa.hw.fastmem import MODULE

__all__ = ["MEMORIES", "FAST_FROM", "default_memory",
           "wrapper", "wrapper_ports"]

#: the memory models a device simulation can use: cocotbext-axi's AxiRam
#: (bus models, pauses, fault injection) or the wrapper's memory
MEMORIES = ("axi", "fast")
#: ``fsa run`` uses the fast memory by default on Verilator from this many
#: PEs (16x16) on: long runs where the bus is not under test
FAST_FROM = 16 * 16


def default_memory(cfg, sim: str) -> str:
    """``fsa run``'s memory without ``--memory``: "fast" on Verilator for
    arrays of :data:`FAST_FROM` PEs or more, "axi" otherwise."""
    return "fast" if sim == "verilator" and cfg.sa_rows * cfg.sa_cols >= FAST_FROM else "axi"


def wrapper(gen_dir: "str | Path", top: str = "fsa_top") -> Path:
    """The ``fsa_memtop`` Verilog for the generated folder `gen_dir` (made
    once per distinct ``<top>.v``; safe for concurrent callers)."""
    top_v = Path(gen_dir) / f"{top}.v"
    root = paths.PACKAGE_ROOT
    h = hashlib.sha256(top_v.read_bytes())
    h.update((root / "rtl" / "fsa_memwrap.py").read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(Path(_contract.__file__).read_bytes())
    out = paths.work_root() / "sims" / "gen" / "memtop" / h.hexdigest()[:16]
    path = out / f"{MODULE}.v"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock", timeout=600):
        if not path.exists():
            tmp = out.with_name(out.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            cmd = [sys.executable, "-m", "rtl.fsa_memwrap", str(top_v.resolve()), "--out",
                   str(tmp), "--top", top]
            r = subprocess.run(cmd, cwd=root, text=True, capture_output=True)
            if r.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            tmp.replace(out)
    return path


def wrapper_ports(path: "str | Path") -> list[str]:
    """The port names of a generated ``fsa_memtop``."""
    return re.findall(r"^\s*(?:input|output) wire (?:\[\d+:0\] )?(\w+)", Path(path).read_text(), re.M)
