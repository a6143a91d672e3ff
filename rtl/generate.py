"""Generator: converts the MyHDL design of one configuration to Verilog.

``python -m rtl.generate FSA4X4Fp16Config`` (or ``make verilog CONFIG=...``)
writes ``gen/<config>/``:

* one ``.v`` file per module (hierarchy kept: each unit is converted once and
  instantiated by its parents),
* ``FSAConfig.json`` (exactly the reference's 12 fields) and
  ``FSAConfig.fsa.json`` (ours, read back by ``FSAConfig.from_json``),
* ``filelist.f`` (the Verilog files, leaves first),
* ``waivers.vlt``: the Verilator configuration file with the lint waivers each
  unit declares for its own module (``LINT_WAIVERS``, rule -> reason), one
  ``lint_off -rule RULE -file "*/<module>.v"`` per waiver with its reason;
  ``make lint`` and the Verilator simulator builds read it (no global waivers),
* ``manifest.json`` with the hash of the inputs; an unchanged input hash means
  nothing is regenerated.

The input hash covers the configuration, the module-name prefix, the MyHDL
and Python versions and every project source file the generator imports,
directly or through other project modules (:func:`source_files` walks the
import statements, so a new module or package is covered as soon as
something the generator uses imports it).

``--prefix fsa16_`` (``make verilog PREFIX=fsa16_``) puts a prefix in front of
every module name and instantiation (``fsa16_fsa_top``, ...) so that two
configurations can be integrated in one design; the default output folder is
then ``gen/<config>-<prefix>/``.  Without a prefix the output is unchanged.
"""
from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import shutil
import tempfile
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fsa.hw import verilog as hwverilog
from fsa.hw.waivers import WAIVER_FILE, waiver_rule, waiver_text

#: the folder holding ``rtl/`` and ``fsa/``: the checkout, or site-packages
#: when installed (the sources hashed are the project's packages under it)
ROOT = Path(__file__).resolve().parent.parent
#: the default output: ``gen/`` of the checkout, or of the cache folder of an
#: installed ``fsa`` (fsa.hw.verilog.GEN)
GEN = hwverilog.GEN

__all__ = ["Unit", "units_for", "generate", "input_hash", "source_files", "verilog_files",
           "default_outdir", "main"]


@dataclass(frozen=True)
class Unit:
    """One Verilog module to generate: its name and how to convert it."""

    module: str
    convert: Callable[[Path], Path]
    role: str
    #: (rule key, reason) pairs from the unit's ``LINT_WAIVERS``
    lint_waivers: tuple[tuple[str, str], ...] = ()


def units_for(cfg) -> list[Unit]:
    """The modules a configuration needs, leaves first."""
    from rtl import (fsa_acc, fsa_array, fsa_bcmp, fsa_cmp, fsa_core, fsa_counters, fsa_decode,
                     fsa_delay, fsa_dispatch, fsa_dma, fsa_dma_port, fsa_fetch, fsa_mxctrl,
                     fsa_pe, fsa_rdarb,
                     fsa_queue, fsa_regs, fsa_sem, fsa_sram, fsa_sram_bp, fsa_status, fsa_top)
    from fsa.hw.dmarules import sram_bank_ports
    from fsa.hw import dataflow
    from rtl.fp import fsa_cvt, fsa_div, fsa_fcmp, fsa_fma

    e, a, p = cfg.e_type, cfg.a_type, cfg.exp2_pieces
    out: dict[str, Unit] = {}

    def waivers(mod) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(dict(getattr(mod, "LINT_WAIVERS", {})).items()))

    def add(mod, role: str, **kw) -> None:
        name = mod.module_name(**kw)
        if name not in out:
            out[name] = Unit(name, lambda d, mod=mod, kw=kw: mod.convert(d, **kw), role,
                             waivers(mod))

    def add_fixed(name: str, conv, role: str, src=None) -> None:
        """`src`: the rtl module declaring the unit's LINT_WAIVERS (default
        ``rtl.<name>``, the file a fixed-name unit lives in)."""
        w = dict(waivers(src if src is not None else _unit_module(name)))
        out[name] = Unit(name, conv, role, tuple(sorted(w.items())))

    # floating-point leaves
    add(fsa_fma, "PE multiply-add (E x E + A) with exp2 mode, gated by the PE's enable",
        mul=e, add=a, pieces=p, gated=True)
    add(fsa_fma, "ACC multiply-add (A x A + A) with exp2 mode, gated by the ACC's commands",
        mul=a, add=a, pieces=p, gated=True)
    add(fsa_fcmp, "CMP subtract / maximum", fmt=a)
    if e != a:
        add(fsa_cvt, "CMP rounding A -> E", src=a, dst=e)
        add(fsa_cvt, "CMP widening E -> A", src=e, dst=a)
    add(fsa_div, "ACC reciprocal", fmt=a, bits_per_cycle=cfg.div_bits_per_cycle)
    # array units
    df = dataflow.of(cfg)           # the dataflow's parts (fsa/hw/dataflow.py, docs/ud.md)
    add_fixed(fsa_pe.MODULE, lambda d: fsa_pe.convert(d, e, a, p, df.name),
              ("UD processing element with qreg" if df.pe_qreg else "processing element")
              + f" (x{cfg.sa_rows * cfg.sa_cols})")
    add_fixed(fsa_cmp.MODULE, lambda d: fsa_cmp.convert(d, e, a, p, df.name),
              "comparator unit" + (" with LATCH" if df.cmp_latch else "") + f" (x{cfg.sa_cols})")
    if df.bottom_row:
        add_fixed(fsa_bcmp.MODULE, lambda d: fsa_bcmp.convert(d, cfg.sa_rows, e, a),
                  f"bottom comparator unit (x{cfg.sa_cols})")
    add_fixed(fsa_acc.MODULE, lambda d: fsa_acc.convert(d, a, p, cfg.div_bits_per_cycle, df.name),
              f"accumulator unit (x{cfg.sa_cols})")
    add_fixed("fsa_idelay", lambda d: fsa_delay.convert_idelay(d, cfg.sa_rows, e), "input delayer",
              fsa_delay)
    add_fixed("fsa_odelay", lambda d: fsa_delay.convert_odelay(d, cfg.sa_cols, a), "output delayer",
              fsa_delay)
    add_fixed(fsa_array.MODULE, lambda d: fsa_array.convert(d, cfg), "systolic array")
    add_fixed(fsa_mxctrl.MODULE, lambda d: fsa_mxctrl.convert(d, cfg), "matrix controller (from fsa/plan.py)")
    geo = fsa_core.sram_geometries(cfg)
    for side, role in (("spad", "scratchpad SRAM"), ("acc", "accumulator SRAM")):
        # (with several AXI ports, or one working per port, a banked SRAM has
        # a narrow port per bank: fsa.hw.dmarules.sram_bank_ports)
        bp = sram_bank_ports(cfg, geo[side][3])
        add(fsa_sram_bp if bp else fsa_sram, role + (", a narrow port per bank" if bp else ""),
            rows=geo[side][0], row_bits=geo[side][1], lane_bits=geo[side][2],
            banks=geo[side][3])
    for mod, role in ((fsa_queue, "instruction queue"), (fsa_decode, "instruction decoder"),
                      (fsa_dispatch, "pending instructions, issue, range check, fences"),
                      (fsa_sem, "semaphores"), (fsa_status, "device state, errors, abort, deadlock"),
                      (fsa_counters, "performance counters")):
        add_fixed(mod.MODULE, lambda d, mod=mod: mod.convert(d, cfg), role)
    add_fixed(fsa_core.MODULE, lambda d: fsa_core.convert(d, cfg),
              "matrix engine (control units, controller, SRAMs, array)")
    add_fixed(fsa_dma_port.MODULE, lambda d: fsa_dma_port.convert(d, cfg),
              f"DMA AXI4 master port (x{cfg.mem_ports})")
    add_fixed(fsa_dma.MODULE, lambda d: fsa_dma.convert(d, cfg), f"DMA engine ({cfg.mem_ports} AXI4 port(s))")
    add_fixed(fsa_fetch.MODULE, lambda d: fsa_fetch.convert(d, cfg), "program fetch")
    add_fixed(fsa_rdarb.MODULE, lambda d: fsa_rdarb.convert(d, cfg),
              "memory port 0 read arbiter (DMA, program fetch)")
    add_fixed(fsa_regs.MODULE, lambda d: fsa_regs.convert(d, cfg), "AXI4-Lite control registers")
    add_fixed(fsa_top.MODULE, lambda d: fsa_top.convert(d, cfg), "the device")
    return list(out.values())


def _unit_module(name: str):
    """The module ``rtl.<name>`` if there is one (else None)."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"rtl.{name}") is None:
        return None
    return importlib.import_module(f"rtl.{name}")


#: the project's packages: only their modules count as sources (installed,
#: `root` is site-packages, which holds third-party packages too)
PROJECT_PACKAGES = ("fsa", "rtl")


def _module_path(name: str, root: Path) -> "Path | None":
    """The file of project module `name` under `root` (a package's
    ``__init__.py``), or None when it is not a project module."""
    if name.split(".")[0] not in PROJECT_PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imported_modules(path: Path, module: str) -> frozenset[str]:
    """Every module an ``import`` statement anywhere in `path` (module
    `module`) may load: the named modules, their parent packages and, for
    ``from X import n``, ``X.n`` in case ``n`` is a submodule.  Imports inside
    functions count too (``units_for`` imports the units lazily)."""
    return _imports_in(path.read_text(), module, path.name == "__init__.py", str(path))


@functools.lru_cache(maxsize=1024)
def _imports_in(text: str, module: str, is_pkg: bool, where: str) -> frozenset[str]:
    """:func:`_imported_modules` of source `text` (cached by the text itself:
    parsing is most of the cost of :func:`input_hash`, and a file that
    changes is parsed again)."""
    package = module if is_pkg else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(text, where)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    out = set()
    for n in names:
        parts = n.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(out)


def source_files(root: "Path | None" = None, start: str = "rtl.generate") -> list[Path]:
    """The project source files the generated Verilog depends on: the
    closure of the import statements of module `start` (default the
    generator, i.e. every unit) over the modules that live under `root`
    (default: this repository), found by reading the sources, not listed by
    hand.  ``start="rtl.fsa_dma"`` gives what one unit's conversion reads.
    (Only ``import`` statements are followed, not ``importlib`` calls;
    tests/test_generate.py checks the set against what a conversion really
    loads.)"""
    root = Path(root) if root is not None else ROOT
    seen: dict[str, Path] = {}
    todo = [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        path = _module_path(mod, root)
        if path is None:
            continue
        seen[mod] = path
        todo.extend(_imported_modules(path, mod) - set(seen))
    return sorted(seen.values())


def input_hash(cfg, prefix: str = "", root: "Path | None" = None) -> str:
    """Hash of everything the generated Verilog of `cfg` depends on (see the
    module docstring); `root` is the repository whose sources are hashed."""
    import myhdl

    root = Path(root) if root is not None else ROOT
    h = hashlib.sha256()
    h.update(cfg.to_json().encode())
    h.update(f"|prefix={prefix}|myhdl={myhdl.__version__}|python={sys.version_info[:2]}|".encode())
    for f in source_files(root):
        data = f.read_bytes()
        h.update(str(f.relative_to(root)).encode())
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def default_outdir(cfg_name: str, prefix: str = "") -> Path:
    """``gen/<config>`` (``gen/<config>-<prefix>`` with a module prefix)."""
    return GEN / (f"{cfg_name}-{prefix}" if prefix else cfg_name)


def generate(cfg, outdir: "str | Path | None" = None, *, force: bool = False,
             quiet: bool = False, prefix: str = "") -> Path:
    """Generate the Verilog of `cfg` (a preset name or FSAConfig).

    Args:
        prefix: put in front of every module name and instantiation (empty:
            the plain names ``fsa_top``, ...).

    Returns:
        The output folder. Nothing is rewritten when the manifest's input hash
        matches (unless `force`).
    """
    from fsa.hw import config as fconfig

    from rtl.convert import check_prefix

    cfg = fconfig.get(cfg)
    check_prefix(prefix)
    outdir = hwverilog.check_gen_outdir(outdir if outdir is not None
                                        else default_outdir(cfg.name, prefix))
    lock = str(outdir) + ".lock"
    try:     # (FileLock would retry a place it cannot create a file in until its timeout)
        outdir.parent.mkdir(parents=True, exist_ok=True)
        open(lock, "a").close()
    except OSError as e:
        raise ValueError(f"output folder {outdir}: cannot write beside it ({e})") from None
    from filelock import FileLock

    # several pytest workers may ask for the same config: one generates
    with FileLock(lock, timeout=1800):
        return _generate(cfg, outdir, force, quiet, prefix)


def _generate(cfg, outdir: Path, force: bool, quiet: bool, prefix: str) -> Path:
    from rtl.convert import module_prefix

    digest = input_hash(cfg, prefix)
    manifest = outdir / "manifest.json"
    if not force and manifest.exists():
        try:
            old = json.loads(manifest.read_text())
            vlt = outdir / WAIVER_FILE      # (its text also depends on fsa/hw/waivers.py)
            if (old.get("input_hash") == digest and all((outdir / f).exists() for f in old["files"])
                    and vlt.exists() and vlt.read_text() == waiver_text(
                        {prefix + m: w for m, w in lint_waivers(units_for(cfg)).items()})):
                if not quiet:
                    print(f"[gen] {cfg.name}: up to date ({outdir})")
                return outdir
        except (ValueError, KeyError):
            pass
    # a new work folder of our own beside the output (never a user's folder)
    tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", suffix=".tmp", dir=outdir.parent))
    try:
        _convert(cfg, units_for(cfg), tmp, outdir, digest, quiet, prefix)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)   # nothing partial is left behind
        raise
    return outdir


def _convert(cfg, units, tmp: Path, outdir: Path, digest: str, quiet: bool, prefix: str) -> None:
    """Convert every unit into `tmp`, then make it `outdir`."""
    from rtl.convert import module_prefix

    files, timings = [], {}
    for u in units:
        t0 = time.perf_counter()
        with module_prefix(prefix):
            path = u.convert(tmp)
        name = prefix + u.module
        timings[name] = round(time.perf_counter() - t0, 3)
        files.append(path.name)
        if not quiet:
            print(f"[gen] {cfg.name}: {name:<28} {u.role} ({timings[name]:.1f} s)")
    cfg.to_json(tmp / "FSAConfig.json")
    (tmp / "filelist.f").write_text("".join(f"{f}\n" for f in files))
    waivers = {prefix + m: w for m, w in lint_waivers(units).items()}
    (tmp / WAIVER_FILE).write_text(waiver_text(waivers))
    (tmp / "manifest.json").write_text(json.dumps({
        "config": cfg.name, "prefix": prefix, "input_hash": digest,
        "files": files + ["FSAConfig.json", "FSAConfig.fsa.json", "filelist.f", WAIVER_FILE],
        "modules": [prefix + u.module for u in units], "waiver_file": WAIVER_FILE,
        "lint_waivers": {m: {waiver_rule(k): r for k, r in w.items()} for m, w in waivers.items()},
        "convert_seconds": timings,
    }, indent=2) + "\n")
    if outdir.exists():
        shutil.rmtree(outdir)     # (a generated folder: check_gen_outdir)
    tmp.rename(outdir)
    if not quiet:
        print(f"[gen] {cfg.name}: wrote {len(files)} Verilog files to {outdir}")


def lint_waivers(units: "list[Unit]") -> dict[str, dict[str, str]]:
    """module -> {rule key: reason} for the units that declare waivers."""
    return {u.module: dict(u.lint_waivers) for u in units if u.lint_waivers}


def verilog_files(outdir: Path) -> list[Path]:
    """The Verilog files of a generated folder, in filelist order."""
    return [outdir / line.strip() for line in (outdir / "filelist.f").read_text().splitlines()
            if line.strip()]


def waiver_file(outdir: Path) -> Path:
    """The Verilator waiver file of a generated folder (:data:`WAIVER_FILE`)."""
    return Path(outdir) / WAIVER_FILE


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rtl.generate",
                                 description="Convert the FSA MyHDL design of a config to Verilog.")
    ap.add_argument("config", help="preset name, e.g. FSA4X4Fp16Config")
    ap.add_argument("--out", help="output folder (default gen/<config>, gen/<config>-<prefix>)")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    ap.add_argument("--prefix", default="",
                    help="prefix for every module name, e.g. fsa16_ (default: none)")
    args = ap.parse_args(argv)
    try:
        generate(args.config, args.out, force=args.force, prefix=args.prefix)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
