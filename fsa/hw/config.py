"""The configuration the hardware is built for, as the contract names it.

:class:`FSAConfig` (the parameters of one device) and :func:`get` (a preset
name or an FSAConfig -> the FSAConfig) are defined and documented by
:mod:`fsa.config`, the user-facing module (presets, JSON files, checks).
They are named here so that ``rtl/`` builds from ``fsa.hw`` alone: the
generator and the units take a configuration and read its fields.
"""
from __future__ import annotations

from fsa.config import FSAConfig, get

__all__ = ["FSAConfig", "get"]
