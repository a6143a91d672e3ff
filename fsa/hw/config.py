"""The configuration the hardware is built for, as the contract names it.

:class:`FSAConfig` (the parameters of one device) and :func:`get` (a preset
name or an FSAConfig -> the FSAConfig) and :data:`MAX_FMA_STAGES` (the
most pipeline registers of the FMA) are defined and documented by
:mod:`fsa.config`, the user-facing module (presets, JSON files, checks).
They are named here so that ``rtl/`` builds from ``fsa.hw`` alone: the
generator and the units take a configuration and read its fields.
"""
from __future__ import annotations

from fsa.config import MAX_FMA_STAGES, FSAConfig, get

__all__ = ["FSAConfig", "get", "MAX_FMA_STAGES"]
