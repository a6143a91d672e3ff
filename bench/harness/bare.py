"""The bare C++ Verilator harness (``fsa_bare.cpp``): build it for a config
and run a recorded program on ``fsa_top`` without cocotb.

It measures the ceiling of simulation speed: the same Verilated model and
flags as the cocotb builds (:func:`fsa.simrun.build_args`), with the host's
AXI4-Lite pushes and the AXI4 memory answered in C++ instead of Python.

* :func:`build_bare` runs ``verilator --cc --exe --build`` into
  ``sims/bare/fsa_top-<hash>/`` (the hash covers the Verilog, the waiver file,
  the harness source, the flags and the tool version; ccache through
  ``OBJCACHE`` as in :func:`fsa.simrun.setup_tool_env`), once per content.
* :class:`BareEngine` is an :class:`fsa.engines.Engine`: the program's words
  and memory image go into a case file, the output regions come back from
  the harness's dump, so its :class:`~fsa.engines.Result` compares with the
  golden model's raw bits as SimEngine's does.

Limits: one AXI memory port (any data width: the presets' bus); the
memory answers every burst at once (always ready, one beat per cycle), so
the device's cycle counts can differ slightly from the cocotb bench's
(cocotbext-axi's ``AxiRam`` has its own latencies); outputs cannot.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

from filelock import FileLock

from fsa import simrun
from fsa.config import FSAConfig
from fsa.engines import DeviceError, Engine, Execution
from fsa.hw import regs as hwregs
from fsa.hw.waivers import waiver_files

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fsa_bare.cpp"
CTRL_BASE = 0x8000          # where fsa/harness/device.py puts the registers (bits 7:0 decode)


def supported(cfg: FSAConfig) -> str | None:
    """None when the harness can run `cfg`, else why not."""
    if cfg.mem_ports != 1:
        return f"{cfg.name}: {cfg.mem_ports} memory ports (the harness answers one)"
    return None


def build_bare(cfg: FSAConfig, *, timeout_s: float = 3600, log=None) -> Path:
    """Generate `cfg`'s Verilog (cached) and build the harness; returns the
    executable.  Raises :class:`fsa.simrun.SimulationError` on a failed build."""
    from fsa.hw.verilog import generate, verilog_files

    why = supported(cfg)
    if why:
        raise ValueError(f"fsa_bare cannot run {why}")
    simrun.setup_tool_env()
    srcs = [Path(s).resolve() for s in verilog_files(generate(cfg, quiet=True))]
    srcs = waiver_files(srcs) + srcs
    args = simrun.build_args("verilator", False, "fsa_top") + ["--timescale", "1ns/1ps"]
    h = hashlib.sha256()
    for part in ("bare", repr(args), simrun._tool_version("verilator"),
                 os.environ.get("MAKEFLAGS", ""), SOURCE.read_text()):
        h.update(part.encode())
    for s in sorted(srcs):
        h.update(s.name.encode())
        h.update(s.read_bytes())
    bdir = simrun.SIMS / "bare" / f"fsa_top-{h.hexdigest()[:16]}"
    exe = bdir / "fsa_bare"
    bdir.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(bdir) + ".lock", timeout=timeout_s):
        if exe.exists():
            return exe
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        # run in the build folder with the sources named relative to it: the
        # C++ then holds no absolute path and ccache reuses it across
        # checkouts (as fsa.simrun does for the cocotb builds)
        bdir.mkdir(parents=True, exist_ok=True)
        rel = [os.path.relpath(s, bdir) for s in srcs + [SOURCE]]
        cmd = (["verilator", "--cc", "--exe", "--build", "-j", jobs, "--top-module", "fsa_top",
                "-Mdir", ".", "-o", "fsa_bare"] + args + rel)
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=bdir)
        (bdir.parent / f"{bdir.name}.build.log").write_text(p.stdout + p.stderr)
        if p.returncode != 0 or not exe.exists():
            raise simrun.SimulationError(f"fsa_bare build failed ({p.returncode}):\n"
                                         f"{(p.stdout + p.stderr)[-4000:]}")
        if log:
            log(f"built {exe} in {time.perf_counter() - t:.0f} s")
    return exe


def write_case(path: Path, cfg: FSAConfig, words, image, dumps, *, max_cycles: int,
               idle: int = 0) -> None:
    """The harness's case file (format in fsa_bare.cpp's header)."""
    off = hwregs.OFFSETS
    lines = [f"C {CTRL_BASE:x}", f"P {off['push']:x}", f"S {off['start']:x}",
             f"Q {cfg.inst_queue_size}", f"L {int(max_cycles)}", f"I {int(idle)}"]
    lines += [f"W {int(w) & 0xFFFFFFFF:x}" for w in words]
    lines += [f"M {int(a):x} {bytes(b).hex()}" for a, b in image if len(b)]
    lines += [f"D {int(a):x} {int(n)}" for a, n in dumps]
    lines += [f"R {name} {off[name]:x}" for name in ("state", "error") + tuple(hwregs.COUNTERS)]
    path.write_text("\n".join(lines) + "\n")


def read_out(path: Path) -> dict:
    """The harness's OUT file as a dict (registers under "regs", dumps under "dumps")."""
    res: dict = {"regs": {}, "dumps": {}}
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[0] == "R":
            res["regs"][parts[1]] = int(parts[2])
        elif parts[0] == "D":
            res["dumps"][int(parts[1], 16)] = bytes.fromhex(parts[2]) if len(parts) > 2 else b""
        else:
            v = parts[1]
            res[parts[0]] = float(v) if "." in v else int(v)
    return res


def run_bare(exe: Path, cfg: FSAConfig, words, image, dumps, *, max_cycles: int = 20_000_000,
             idle: int = 0, timeout_s: float = 3600) -> dict:
    """Run one program; returns :func:`read_out`'s dict.

    Raises:
        fsa.simrun.SimulationError: the harness failed or the device did not
            raise irq within `max_cycles`.
    """
    with tempfile.TemporaryDirectory(prefix="fsa-bare-") as d:
        case, out = Path(d) / "case.txt", Path(d) / "out.txt"
        write_case(case, cfg, words, image, dumps, max_cycles=max_cycles, idle=idle)
        p = subprocess.run([str(exe), str(case), str(out)], capture_output=True, text=True,
                           timeout=timeout_s)
        if p.returncode not in (0, 3) or not out.exists():
            raise simrun.SimulationError(f"fsa_bare failed ({p.returncode}): {p.stderr[-2000:]}")
        res = read_out(out)
    if not res["done"]:
        raise simrun.SimulationError(f"fsa_bare: the device did not finish within {max_cycles} "
                                     f"cycles (registers {res['regs']})")
    return res


class BareEngine(Engine):
    """The RTL device in the bare C++ harness (no cocotb): for measuring
    simulation speed.  ``last_run`` holds the harness's figures (cycles,
    cpu_s, ...)."""

    name = "bare"

    def __init__(self, cfg: "FSAConfig | str", max_cycles: int = 20_000_000, idle: int = 0):
        super().__init__(cfg)
        self.max_cycles, self.idle = max_cycles, idle
        self.exe: Path | None = None
        self.last_run: dict | None = None

    def execute(self, program, words, image) -> Execution:
        if self.exe is None:
            self.exe = build_bare(self.cfg)
        regions = program.output_regions()
        res = run_bare(self.exe, self.cfg, words, image, regions, max_cycles=self.max_cycles,
                       idle=self.idle)
        self.last_run = res
        regs = res["regs"]
        state = {int(s): s.name.lower() for s in hwregs.State}.get(regs["state"], regs["state"])
        if state != "done":
            raise DeviceError(f"fsa_bare: the device ended in state {state} (error register "
                              f"0x{regs['error']:x})", {"state": state, **regs})
        counters = {c: regs[c] for c in hwregs.COUNTERS}
        segments = [(a, res["dumps"][a]) for a, _ in regions]
        return Execution.from_segments(segments, counters, counters["exec"])
