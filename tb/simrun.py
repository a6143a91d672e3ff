"""Bench-side name for :mod:`fsa.simrun` (build cache, timed cocotb runs)."""
from fsa.simrun import *  # noqa: F401,F403
from fsa.simrun import ROOT, SIMS, SimulationError, build, get_sim, run, setup_tool_env  # noqa: F401
