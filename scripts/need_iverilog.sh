#!/usr/bin/env bash
# Makes sure Icarus Verilog (Debian's iverilog) is installed: installs it when
# run as root, otherwise stops with the exact command to run.
set -euo pipefail
command -v iverilog >/dev/null && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing Icarus Verilog (apt-get install -y iverilog)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null
    command -v iverilog >/dev/null && exit 0
fi
echo "error: SIM=icarus needs Icarus Verilog. Run: sudo apt-get install -y iverilog" >&2
exit 2
