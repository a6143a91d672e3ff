"""Run a program on the RTL device (``fsa_top``) in a simulator, through the
generic cocotb test ``fsa/harness/tb_top.py``: generate the config's Verilog (cached),
build the simulator (cached by content hash), run, and return what the
device did (state, error, counters, cycles, memory dumps)."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from fsa import fastmem, simrun
from fsa.config import FSAConfig
from fsa.cycle.fetch import PROGRAM_ALIGN, program_address
from fsa.hw.verilog import generate, verilog_files

__all__ = ["run_on_device", "device_build", "program_address", "PROGRAM_ALIGN"]


def device_build(out: "str | Path", sim: "str | None" = None):
    """``(top, sources, public)`` for :func:`fsa.simrun.run` of the device
    generated in `out` (``gen/<config>``): on Verilator ``fsa_memtop``
    (fsa/fastmem.py: ``fsa_top`` with a run-time choice of memory, so that
    the AxiRam benches and the fast memory share one build per config), on
    Icarus ``fsa_top`` itself."""
    sources = verilog_files(out)
    if simrun.get_sim(sim) != "verilator":
        return "fsa_top", sources, "auto"
    wrap = fastmem.wrapper(out)
    return fastmem.MODULE, sources + [wrap], {fastmem.MODULE: tuple(fastmem.wrapper_ports(wrap))}


def run_on_device(cfg: FSAConfig, words: list[int], memory: list[tuple[int, bytes]],
                  dumps: list[tuple[int, int]], *, sim: str | None = None,
                  max_cycles: int = 1_000_000, pauses: float = 0.0, seed: int = 1,
                  inject: dict | None = None, reset_midway: int = 0, overfill: int = 0,
                  timeout_s: float = 1800, name: str | None = None,
                  progress=None, programs: list[list[int]] | None = None,
                  abort_midway: int = 0, settings: dict[str, int] | None = None,
                  fetch: "bool | int" = False, mem_model: str = "axi") -> dict:
    """Run `words` (or several `programs` one after another, without a
    reset) on the device with `memory` preloaded; dump `dumps` after the last.

    Args:
        cfg: the configuration.
        words: the program (32-bit instruction words); ignored when
            `programs` is given.
        programs: several programs (lists of words), run one after another
            on the same device (start from DONE; after one that ends in
            ERROR the device is aborted first): one entry each in "runs".
        abort_midway: abort the first program this many cycles after its
            start (fsa/hw/regs.py abort), reload the memory, then run the
            program(s) on the same device.
        fetch: program fetch: place the words at :func:`program_address`
            and start in fetch mode (the device reads them itself); default:
            push them over the control port (the reference's way).
            ``fsa.engines.SimEngine`` and the CLI fetch by default.  An int
            (not a bool) is the address to place and fetch the program at,
            unchecked (the device checks it: FETCH_RANGE).
        memory: (address, bytes) segments written before the run.
        dumps: (address, size) regions read back after the run.
        sim: "verilator" or "icarus" (default $SIM or verilator).
        max_cycles: cycle limit for the run (the device must raise irq).
        pauses: probability of random pauses on every AXI channel.
        inject: {"read": [lo, hi]} / {"write": [lo, hi]}: SLVERR there.
        reset_midway: reset the device this many cycles after the first
            start, then run the program again.
        overfill: first push the queue's size plus this many words while the
            device is idle (the extra ones must be refused, not hang the
            host; result "overfill"), then reset and run the program.
        progress: optional callable(str) for progress messages.
        mem_model: "axi" (default): cocotbext-axi memories on the device's
            ports (pauses, fault injection); "fast": the memory inside the
            simulation (``fsa_memtop``, fsa/fastmem.py; Verilator only, no
            pauses or faults), the same bits and cycles, for long runs.
        settings: setting registers (fsa/hw/regs.py SETTINGS, e.g. a
            Program's ``settings``) written after the reset, before the first
            program (they are kept across starts); a refused write fails the run.

    Returns:
        dict with "runs" (state, error, error_index, counters, waited),
        "dumps" (bytes), "identity", "run_dir".
    """
    if mem_model not in fastmem.MEMORIES:
        raise ValueError(f"mem_model must be one of {fastmem.MEMORIES}, got {mem_model!r}")
    if mem_model == "fast":
        if simrun.get_sim(sim) != "verilator":
            raise ValueError("mem_model='fast' needs Verilator (the wrapper uses an associative array)")
        if pauses or inject:
            raise ValueError("mem_model='fast' has no pauses and injects no faults: use mem_model='axi'")
    say = progress or (lambda msg: None)
    say(f"generating Verilog for {cfg.name}")
    out = generate(cfg, quiet=True)
    top, sources, public = device_build(out, sim)
    tmp = Path(tempfile.mkdtemp(prefix="fsa-case-"))
    progs = [[int(w) & 0xFFFFFFFF for w in p] for p in (programs if programs else [words])]
    fetch_at = None if fetch is False else int(fetch) if fetch is not True else program_address(
        cfg, max(len(p) for p in progs),
        [(int(a), len(b)) for a, b in memory] + [(int(a), int(n)) for a, n in dumps])
    case = {"config": cfg.to_dict(), "words": progs[0], "programs": progs,
            "abort_midway": int(abort_midway),
            "memory": [[int(a), bytes(b).hex()] for a, b in memory],
            "dumps": [[int(a), int(n)] for a, n in dumps], "max_cycles": int(max_cycles),
            "pauses": pauses, "seed": seed, "inject": inject or {}, "reset_midway": reset_midway,
            "overfill": int(overfill), "settings": dict(settings or {}), "fetch": fetch_at,
            "mem_model": mem_model}
    (tmp / "case.json").write_text(json.dumps(case))
    say(f"building and running the {simrun.get_sim(sim)} simulation")
    try:
        tdir = simrun.run(top, sources, "fsa.harness.tb_top", sim=sim, name=name,
                          extra_env={"FSA_CASE": str(tmp / "case.json")}, timeout_s=timeout_s,
                          public=public)
    except simrun.SimulationError as e:         # the case file stays, to re-run it: named
        head, sep, tail = str(e).partition("\n--- log tail ---")
        e.args = (f"{head}\ncase file kept: {tmp / 'case.json'}{sep}{tail}",)
        raise
    # the case file is temporary: kept only when the run failed (the error above
    # leaves it for a re-run), removed here once the run has produced its result
    shutil.copy(tmp / "case.json", tdir / "case.json")
    shutil.rmtree(tmp, ignore_errors=True)
    res = json.loads((tdir / "result.json").read_text())
    res["dumps"] = [bytes.fromhex(d) for d in res["dumps"]]
    for run in res["runs"]:
        run["dumps"] = [bytes.fromhex(d) for d in run.get("dumps", [])]
    res["run_dir"] = str(tdir)
    return res
