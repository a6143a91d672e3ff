"""Every patch of cocotb's internals, in one place: the runner of
``cocotb_tools.runner`` (what :mod:`fsa.simrun` builds and runs with) with
two of its private hooks overridden, for the cocotb version the overrides
were written for (:data:`WRITTEN_FOR`).

cocotb's public runner options do most of the work (``build_args``,
``sources`` with Verilator control files, ``log_file``, ``waves``,
``timescale``); three needs have no option, so :func:`timed_runner` returns
the runner with these hooks:

* ``_build_command`` (Verilator): drop ``--public-flat-rw`` where a
  visibility file among the sources makes only the needed signals public
  (``public_file``), and name the HDL sources relative to the folder
  Verilator runs in (``relative_sources``): Verilator writes the paths it
  was given into the C++, so absolute paths made the same design's C++
  differ between checkouts and ccache could not reuse it.
* ``_execute_cmds``: a wall-clock limit on every simulator process
  (``sim_timeout_s``), and no process at all for a cached build
  (``skip_exec``: the runner only records the build's settings for
  ``test()``).

Another cocotb version is refused (:class:`CocotbVersionError` says what to
check); ``tests/test_compat.py`` fails when the installed cocotb no longer
has what the hooks override.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["WRITTEN_FOR", "CocotbVersionError", "supported", "timed_runner", "relative_sources"]

#: the cocotb release (major.minor) the hooks were written for
WRITTEN_FOR = "2.1"


class CocotbVersionError(RuntimeError):
    """The installed cocotb is not the one the runner hooks were written for."""


def supported(version: "str | None" = None) -> bool:
    """Whether cocotb `version` (default: the installed one) is of the
    release the hooks were written for."""
    if version is None:
        import cocotb

        version = cocotb.__version__
    return ".".join(version.split(".")[:2]) == WRITTEN_FOR


def _require() -> None:
    if not supported():
        import cocotb

        raise CocotbVersionError(
            f"fsa.compat_cocotb: written for cocotb {WRITTEN_FOR}.x, found {cocotb.__version__}: "
            f"check cocotb_tools.runner's _build_command (Verilator: --public-flat-rw, the "
            f"sources last) and _execute_cmds against the new version, then update WRITTEN_FOR")


class _TimedRunnerMixin:
    """The hooks (see the module docstring) over a cocotb runner class."""

    sim_timeout_s: float = 600.0
    skip_exec: bool = False
    public_file: "Path | None" = None     # set by fsa.simrun.build: drop --public-flat-rw
    relative_sources: bool = False        # Verilator: see relative_sources()

    def _build_command(self):  # noqa: D401 (cocotb hook)
        cmds = super()._build_command()
        if self.public_file is not None:
            # the visibility file (among the sources) replaces the blanket flag
            if "--public-flat-rw" not in cmds[0]:
                raise CocotbVersionError("cocotb's Verilator command has no --public-flat-rw any "
                                         "more: revisit fsa.simrun's visibility handling")
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
        if self.relative_sources:
            cmds[0] = relative_sources(cmds[0], self._sources, Path(self.cwd))
        return cmds

    def _execute_cmds(self, cmds, cwd, stdout=None):  # noqa: D401 (cocotb hook)
        if self.skip_exec:
            return
        for cmd in cmds:
            stderr = None if stdout is None else subprocess.STDOUT
            try:
                result = subprocess.run(cmd, cwd=cwd, env=self.env, check=False,
                                        stdout=stdout, stderr=stderr,
                                        timeout=self.sim_timeout_s)
            except subprocess.TimeoutExpired:
                raise RuntimeError(
                    f"simulator wall-clock timeout after {self.sim_timeout_s:.0f} s "
                    f"({' '.join(map(str, cmd))})") from None
            if result.returncode != 0:
                raise RuntimeError(f"Command failed with return code: {result.returncode}")


def relative_sources(cmd: list, sources, cwd: Path) -> list:
    """Verilator's command with the HDL sources named relative to `cwd` (where
    Verilator runs: the build folder), so that the C++ of the same design is
    the same wherever the work folder is (``sims/`` and ``gen/`` keep their
    places within it)."""
    names = {str(s.value) for s in sources}
    return [os.path.relpath(a, cwd) if a in names else a for a in cmd]


def timed_runner(sim: str, timeout_s: float):
    """cocotb's runner for `sim` with the hooks, every simulator process
    limited to `timeout_s` seconds.

    Raises:
        CocotbVersionError: the installed cocotb is not :data:`WRITTEN_FOR`.
    """
    from cocotb_tools.runner import get_runner

    _require()
    base = type(get_runner(sim))
    cls = type(f"Timed{base.__name__}", (_TimedRunnerMixin, base),
               {"relative_sources": sim == "verilator"})
    r = cls()
    r.sim_timeout_s = timeout_s
    return r
