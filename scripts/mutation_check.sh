#!/usr/bin/env bash
# Mutation check of the regression (run by hand, reported in the issue notes):
# break one thing at a time in the RTL, in a throw-away clone, and show that
# the regression catches it. Usage: bash scripts/mutation_check.sh [workdir]
set -u
src="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/fsa-mutation}"
rm -rf "$work"; git clone -q "$src" "$work"; ln -s "$src/.venv" "$work/.venv"
cd "$work"
TESTS=(tb/attention/test_attention.py -k "FSA4X4Fp16Config-8x12 or FSA4X4Fp16Config-8x8-pauses or FSA4X4Fp16Config-12x12-causal")
TESTS_DMA=(tb/top/test_top.py -k "dma_only_program and not TwoPort")
run() {  # name, file, python replacement (old -> new), tests...
    local name=$1 file=$2 old=$3 new=$4; shift 4
    git checkout -q -- .
    python3 - "$file" "$old" "$new" <<'PY'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert s.count(old) == 1, f"mutation anchor not unique in {p}: {old!r}"
open(p, "w").write(s.replace(old, new))
PY
    if SIM=verilator .venv/bin/python -m pytest -q -x -p no:warnings "$@" > "/tmp/mut-$name.log" 2>&1; then
        echo "NOT CAUGHT  $name"
    else
        echo "caught      $name  ($(grep -E '^FAILED' /tmp/mut-$name.log | head -1))"
    fi
}
run swap_cmp_commands rtl/fsa_cmp.py "        if cmd_in == CMD_PROP_MAX:" "        if cmd_in == CMD_PROP_MAX_DIFF:" "${TESTS[@]}"
run no_rounding_to_E rtl/fp/fsa_fma.py "        encm[:] = (basem << MM) + qm + upm" "        encm[:] = (basem << MM) + qm" "${TESTS[@]}"
run dma_stride_off_by_one rtl/fsa_dma.py "                            ra.next = ra + mmag40" "                            ra.next = ra + mmag40 + 8" "${TESTS_DMA[@]}"
run ignore_axi_wready rtl/fsa_dma.py "        pop_w.next = wcnt != 0 and wready" "        pop_w.next = wcnt != 0" tb/attention/test_attention.py -k "FSA4X4Fp16Config-8x8-pauses or TwoPort"
run causal_mask_off_by_one rtl/fsa_cmp.py "        if causal_in and (cnt > col):" "        if causal_in and (cnt > col + 1):" "${TESTS[@]}"
git checkout -q -- .
