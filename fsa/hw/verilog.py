"""The generated Verilog folder: where it goes by default (:data:`GEN`),
which folders generation may replace (:func:`check_gen_outdir`; the
generator, ``rtl/generate.py``, takes both from here), and how software
obtains the Verilog of a configuration.

``fsa/`` describes the hardware and never imports ``rtl/`` (the hardware
builds from ``fsa/``, not the reverse).  Software that needs the generated
Verilog (``fsa verilog``, ``fsa run``, ``fsa exec``) runs the generator as a
separate process, ``python -m rtl.generate <config> --out <folder>``, exactly
as ``make verilog`` does, and reads the folder it writes (``filelist.f``).
A configuration that is not a preset is passed as its ``FSAConfig.json``.
The process runs in the folder holding ``fsa/`` and ``rtl/`` (the checkout, or
site-packages when installed), so it converts the ``rtl`` that ships with
this ``fsa``; the default output is ``gen/<config>`` of the checkout, or of
the cache folder of an installed ``fsa`` (:mod:`fsa.paths`).
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from fsa import paths

__all__ = ["ROOT", "GEN", "generate", "verilog_files", "check_gen_outdir"]

#: where ``rtl/`` lives (the checkout, or site-packages) and the default
#: output folder (``gen/`` of the checkout or of the cache, fsa.paths)
ROOT = paths.PACKAGE_ROOT
GEN = paths.gen_dir()


def generate(cfg, outdir: "str | Path | None" = None, *, force: bool = False,
             quiet: bool = False) -> Path:
    """Run ``python -m rtl.generate`` for `cfg` (preset name or FSAConfig).

    Args:
        outdir: the output folder (default :data:`GEN` ``/<config name>``).
        force: regenerate even when the folder is up to date.
        quiet: capture the generator's output (shown only if it fails).

    Returns:
        The output folder.

    Raises:
        ValueError: the generator rejected the configuration (exit status 2),
            or `outdir` cannot be the output (a file, a folder of other files,
            an unwritable place: :func:`check_gen_outdir`).
        RuntimeError: the generator failed otherwise.
        (With `quiet`, the generator's output is in the message.)
    """
    from fsa import config as fconfig

    cfg = fconfig.get(cfg)
    out = check_gen_outdir(outdir if outdir is not None else GEN / cfg.name)
    key = (cfg.to_json(), str(out.resolve()))
    if not force and key in _CHECKED and _CHECKED[key] == _fingerprint(out):
        return out          # checked by the generator in this process, nothing changed since
    with tempfile.TemporaryDirectory(prefix="fsa-cfg-") as tmp:
        if fconfig.PRESETS.get(cfg.name) == cfg:
            arg = cfg.name
        else:
            arg = str(Path(tmp) / "FSAConfig.json")
            cfg.to_json(arg)
        cmd = [sys.executable, "-m", "rtl.generate", arg, "--out", str(out.resolve())]
        if force:
            cmd.append("--force")
        r = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=quiet)
    if r.returncode != 0:
        detail = (r.stdout or "") + (r.stderr or "") if quiet else "(output above)"
        msg = (f"Verilog generation for {cfg.name} failed (exit {r.returncode}): "
               f"{' '.join(cmd)}\n{detail}")
        # exit 2: the generator rejected the configuration (its ValueError)
        raise (ValueError if r.returncode == 2 else RuntimeError)(msg)
    _CHECKED[key] = _fingerprint(out)
    return out


#: (config JSON, output folder) -> :func:`_fingerprint` after the generator
#: last ran for them in this process (and succeeded)
_CHECKED: dict = {}


def _fingerprint(out: Path) -> tuple:
    """What the generator's up-to-date check depends on, by file status:
    (path, size, mtime in ns) of every ``.py`` file under ``fsa/`` and
    ``rtl/`` of :data:`ROOT` (a superset of the sources the generator hashes,
    ``rtl.generate.input_hash``: it follows imports within that folder) and
    of every file in the output folder.  While it is unchanged, a second
    ``generate`` of the same config and folder in one process skips the
    generator's process (about 0.5 CPU s: Python, MyHDL and the source
    hash), as ``make`` would; any edit, deletion or new file runs it again."""
    items = []
    for top in (ROOT / "fsa", ROOT / "rtl", out):
        if not top.is_dir():
            items.append((str(top), None))
            continue
        files = sorted(top.rglob("*.py")) if top != out else sorted(top.iterdir())
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            items.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(items)


def verilog_files(outdir: "str | Path") -> list[Path]:
    """The Verilog files of a generated folder, in ``filelist.f`` order."""
    outdir = Path(outdir)
    return [outdir / line.strip() for line in (outdir / "filelist.f").read_text().splitlines()
            if line.strip()]


def check_gen_outdir(outdir: "str | Path") -> Path:
    """The absolute output folder for Verilog generation, or ValueError.

    Generation replaces the whole folder, so it must be new, empty, or a
    folder generation wrote before (it holds ``manifest.json``); there must be
    a writable folder to create it in (:func:`fsa.paths.check_output`).  (An existing
    folder of other files would be wiped.)"""
    p = Path(outdir).expanduser().resolve()
    paths.check_output(p, f"output folder {p}", folder=True, create=True)
    if p.is_dir() and not (p / "manifest.json").is_file() and any(p.iterdir()):
        raise ValueError(f"output folder {p}: exists and holds other files (no manifest.json of "
                         f"an earlier generation); generation replaces the whole folder, so give "
                         f"a new or empty one")
    return p
