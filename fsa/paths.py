"""Where the generated Verilog, the simulator builds and their run folders go.

Two situations:

* **In a checkout** (the ``fsa`` package is imported from a source tree: the
  folder holding ``fsa/`` also holds ``pyproject.toml`` and
  ``rtl/generate.py``, as with the editable install ``make`` sets up): the
  checkout's ``gen/`` (``make verilog``, ``fsa verilog``, the engines) and
  ``sims/`` (simulator builds, ``sims/<sim>/<top>-<hash>/runs/``), as always.
  ``$FSA_CACHE`` is not consulted there.
* **Installed** (``pip install .``, a wheel: the package lives in
  ``site-packages`` or a ``--target`` folder, with no checkout around it):
  the cache folder :func:`cache_dir`, i.e. ``$FSA_CACHE`` when set, else
  ``$XDG_CACHE_HOME/fsa``, else ``~/.cache/fsa``; with ``gen/`` and ``sims/``
  inside it.

:func:`work_root` is the one of the two in use; :mod:`fsa.simrun` and
:mod:`fsa.hw.verilog` take their folders from here (as module constants,
read once at import); ``rtl/generate.py`` takes its default output folder
from :mod:`fsa.hw.verilog`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

__all__ = ["PACKAGE_ROOT", "checkout_root", "cache_dir", "work_root", "gen_dir", "sims_dir",
           "check_output"]

#: the folder holding the ``fsa`` (and ``rtl``) packages: the checkout, or
#: the installation's site-packages
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def checkout_root(package_root: "Path | None" = None) -> "Path | None":
    """The checkout `package_root` (default :data:`PACKAGE_ROOT`) is, or None
    when it is an installation: a checkout has ``pyproject.toml`` and
    ``rtl/generate.py`` beside ``fsa/`` (an installed distribution never
    ships ``pyproject.toml`` into site-packages)."""
    root = Path(package_root) if package_root is not None else PACKAGE_ROOT
    if (root / "pyproject.toml").is_file() and (root / "rtl" / "generate.py").is_file() \
            and (root / "fsa" / "__init__.py").is_file():
        return root
    return None


def cache_dir(env: "Mapping[str, str] | None" = None) -> Path:
    """The cache folder of an installed ``fsa``: ``$FSA_CACHE``, else
    ``$XDG_CACHE_HOME/fsa``, else ``~/.cache/fsa`` (`env`: default
    ``os.environ``; empty values count as unset, and so does a relative
    ``$XDG_CACHE_HOME``, as the XDG specification says).  Not created here."""
    env = os.environ if env is None else env
    if env.get("FSA_CACHE"):
        return Path(env["FSA_CACHE"]).expanduser().resolve()
    if env.get("XDG_CACHE_HOME") and Path(env["XDG_CACHE_HOME"]).expanduser().is_absolute():
        return (Path(env["XDG_CACHE_HOME"]).expanduser() / "fsa").resolve()
    return (Path.home() / ".cache" / "fsa").resolve()


def work_root(package_root: "Path | None" = None,
              env: "Mapping[str, str] | None" = None) -> Path:
    """The folder holding ``gen/`` and ``sims/``: the checkout when there is
    one (:func:`checkout_root`), otherwise :func:`cache_dir`."""
    root = checkout_root(package_root)
    return root if root is not None else cache_dir(env)


def gen_dir() -> Path:
    """``gen/`` of :func:`work_root`: the default Verilog output folders."""
    return work_root() / "gen"


def sims_dir() -> Path:
    """``sims/`` of :func:`work_root`: simulator builds and their run folders."""
    return work_root() / "sims"


def check_output(path: "str | Path", what: str, *, folder: bool = False,
                 create: bool = False) -> Path:
    """The absolute `path` an output (a file, or with `folder` a folder) will
    be written to, or ValueError starting with `what` (e.g. the option):
    an existing path of the other kind, or no writable folder to write it in
    (the parent, or with `create` the nearest existing ancestor, since the
    missing folders will be created).  Checked before any work, so that a
    long run does not fail at its end."""
    p = Path(path).expanduser().resolve()
    if p.exists() and p.is_dir() != folder:
        raise ValueError(f"{what}: is a {'file; give a folder' if folder else 'folder; give a file name'}")
    up = p.parent
    if not create and not up.exists():
        raise ValueError(f"{what}: the folder {up} does not exist")
    while not up.exists():
        up = up.parent
    if not up.is_dir() or not os.access(up, os.W_OK | os.X_OK) or (
            p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{what}: {up} is not a writable folder")
    return p
