# FSA: make targets. The first run of any target creates .venv and installs
# everything (see scripts/setup_venv.sh).
#
#   make                 = make test (SIM=verilator by default)
#   make test SIM=icarus the same tests on Icarus Verilog
#   make test SPLITS=4 GROUP=2  one shard of four (pytest-split, balanced by the
#                        committed .test_durations; docs/testing.md has a CI matrix)
#   make durations       rerun the regression and rewrite .test_durations
#   make verilog CONFIG=FSA8X8Fp16Config [PREFIX=fsa8_]  (module-name prefix: gen/<config>-<prefix>/)
#   make run             FlashAttention (8x8 fp16, seq 64) on the RTL, scored vs torch
#   make lint            Verilator lint (-Wall) of every generated module; the only
#                        waivers are the per-module ones in gen/<config>/waivers.vlt
#   make bench           benchmarks (tables, bench/results/*.json, docs/performance.md;
#                        QUICK=1 for a short run)
#   make timing CONFIG=FSA4X4Fp16Config [UNITS="fsa_pe fsa_acc"] [SEEDS=3]
#                        Fmax, cells, logic depth per unit on an ECP5-85k (Yosys +
#                        nextpnr-ecp5 from PyPI; bench/timing.py, bench/results/timing.json)
#   make clean           remove gen/ and sims/
SHELL    := /bin/bash
SIM      ?= verilator
CONFIG   ?= FSA4X4Fp16Config
RUN_CONFIG ?= FSA8X8Fp16Config
SEQ      ?= 64
JOBS     ?= 2
PY       := .venv/bin/python
STAMP    := .venv/.installed
PYTEST_ARGS ?=
PREFIX   ?=
SPLITS   ?=
GROUP    ?=
DURATIONS := .test_durations
SPLIT_ARGS := $(if $(SPLITS),--splits $(SPLITS) --group $(if $(GROUP),$(GROUP),$(error GROUP=1..$(SPLITS) is needed with SPLITS)) --durations-path $(DURATIONS) --splitting-algorithm least_duration,)
export SIM

.PHONY: all test durations verilog run lint bench timing clean distclean venv sim-tools

all: test

$(STAMP): pyproject.toml scripts/setup_venv.sh
	@bash scripts/setup_venv.sh
	@touch $@

venv: $(STAMP)

sim-tools: $(STAMP)
ifeq ($(SIM),icarus)
	@bash scripts/need_iverilog.sh
else ifneq ($(SIM),verilator)
	$(error SIM must be verilator or icarus, got '$(SIM)')
endif

# (the project's sources are byte-compiled first: the ~300 Python processes the
# regression starts (simulators, CLI runs) then read the .pyc files, also when
# PYTHONDONTWRITEBYTECODE keeps them from writing their own)
PYC := $(PY) -m compileall -q -j 0 fsa rtl tb tests bench examples >/dev/null

test: sim-tools
	@$(PYC)
	$(PY) -m pytest -n $(JOBS) --durations=10 -q $(SPLIT_ARGS) $(PYTEST_ARGS)

durations: sim-tools
	@$(PYC)
	$(PY) -m pytest -n $(JOBS) -q --store-durations --durations-path $(DURATIONS) $(PYTEST_ARGS)

verilog: $(STAMP)
	$(PY) -m rtl.generate $(CONFIG) $(if $(PREFIX),--prefix $(PREFIX),)

run: sim-tools
	$(PY) -m fsa.cli run --config $(RUN_CONFIG) --sim $(SIM) --seq-q $(SEQ) --seq-kv $(SEQ)

lint: $(STAMP)
	$(PY) -m fsa.lint $(CONFIG) $(MODULES)

BENCH_STAMP := .venv/.bench-installed
BQ := $(if $(QUICK),--quick,)

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	@touch $@

bench: $(BENCH_STAMP) sim-tools
	@# the simulation-speed bench also times Icarus: install it where we can,
	@# otherwise simspeed.py skips the Icarus rows and says so
	@bash scripts/need_iverilog.sh || echo "[bench] continuing without Icarus"
	$(PY) bench/numerics.py $(BQ)
	$(PY) bench/golden_speed.py $(BQ)
	$(PY) bench/accuracy.py $(BQ)
	$(PY) bench/utilisation.py $(BQ)
	$(PY) bench/memory.py $(BQ)
	$(PY) bench/ud.py $(BQ) $(if $(QUICK),--rtl,--rtl16 --area)
	$(PY) bench/fetch.py $(if $(QUICK),,--rtl)
	$(PY) bench/simspeed.py $(BQ)
	$(PY) bench/convert.py $(BQ)
	$(PY) bench/area.py $(BQ)
	$(PY) bench/faultfuzz.py $(BQ)
	$(PY) bench/plots.py $(BQ)
	$(PY) bench/mkdoc.py $(BQ)

SEEDS ?= 3
timing: $(BENCH_STAMP)
	$(PY) bench/timing.py --config $(CONFIG) --seeds $(SEEDS) $(if $(UNITS),--units $(UNITS),)

clean:
	rm -rf gen sims

distclean: clean
	rm -rf .venv
