"""Import what the project's processes import, so that Python writes their
``.pyc`` files once (run by scripts/setup_venv.sh with bytecode writing on).

Some environments set ``PYTHONDONTWRITEBYTECODE``; then no process writes
``.pyc`` files, and each of the regression's ~300 Python processes (pytest
workers, simulators, ``fsa`` runs) would compile torch, numpy, pytest and the
rest again.  Byte-compiling all of site-packages (8,600 files, most of torch,
sympy and networkx never imported) took 14 s of the setup on 2 cores; this
imports the ~1,500 modules that are used: torch with its attention, pytest
with its plugins (cocotb imports pytest in every simulator), cocotb and its
bus models, MyHDL, Dask and matplotlib (``fsa sweep``), and the project.
A module missed here is only compiled in memory when a process imports it.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def main() -> int:
    if sys.dont_write_bytecode:
        print("warm_imports: bytecode writing is off in this process; nothing to do",
              file=sys.stderr)
        return 0
    import numpy  # noqa: F401
    import torch
    import torch.nn.functional as F

    q = torch.zeros(1, 2, 4, dtype=torch.float64)
    F.scaled_dot_product_attention(q, q, q, is_causal=True)

    import cocotb  # noqa: F401
    import cocotb_tools.runner  # noqa: F401
    import cocotbext.axi  # noqa: F401
    import filelock  # noqa: F401
    import myhdl  # noqa: F401
    import pytest

    # a collection in an empty folder loads pytest's plugins (xdist,
    # pytest-split, ...) as every pytest process and simulator does
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
        pytest.main(["--collect-only", "-q", "--rootdir", tmp, tmp])
    try:
        import dask.distributed  # noqa: F401
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:         # (the sweep extra is optional)
        pass
    import fsa.api  # noqa: F401
    import fsa.cli  # noqa: F401
    return 0


if __name__ == "__main__":
    sys.exit(main())
