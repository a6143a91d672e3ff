"""Bench-side name for :mod:`fsa.simrun` (build cache, timed cocotb runs)."""
from fsa.simrun import *  # noqa: F401,F403
from fsa.simrun import ROOT, SIMS, SimulationError, build, get_sim, run, setup_tool_env  # noqa: F401


def unit_deps(module: str) -> list[str]:
    """Repository-relative source files a unit's conversion reads (the import
    closure of `module`, e.g. "rtl.fsa_dma"): the key of a bench's cached
    conversion (:func:`fsa.simrun.cached_convert`), computed, never listed by hand."""
    from rtl.generate import source_files

    return [str(p.relative_to(ROOT)) for p in source_files(start=module)]
