"""The ``fsa`` command line (``fsa ...`` or ``python -m fsa.cli ...``).

:mod:`fsa.cli.commands` holds the parser and the small commands, one module per
long command (:mod:`~fsa.cli.run`, :mod:`~fsa.cli.exec`,
:mod:`~fsa.cli.compile`, :mod:`~fsa.cli.sweep`), and :mod:`fsa.cli.common`
what they share (argument types, input reading, output files).
"""
from __future__ import annotations

from fsa.cli.common import golden_estimate
from fsa.cli.commands import build_parser, main

__all__ = ["main", "build_parser", "golden_estimate"]
