# satemu: `make demo` runs the main job on the simulated board; `make test` runs the whole suite;
# `make check` runs the tests that build nothing heavy (no Verilator model, simulated board or
# bitstream) on every core, for between edits; `make bitstream BOARD=versa-ecp5` builds a
# board's bitstream and its report, which `make test` holds to the sources' key.
# All bootstrap first (Debian packages only if missing, the locked Python packages in .venv/,
# then satemu_quinn, the quinn-proto extension, built and installed once per content).
# SPDX-License-Identifier: BSD-2-Clause

.PHONY: demo test check bench bitstream bootstrap quinn lock clean
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BOARD ?= versa-ecp5
STAMP := $(VENV)/.satemu-$(shell cat pyproject.toml sim/pyproject.toml hw/pyproject.toml requirements.lock scripts/bootstrap.sh 2>/dev/null | sha256sum | cut -c1-16)

demo: bootstrap
	$(PY) -m sim.demo

test: bootstrap
	bash scripts/test.sh

check: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" -n auto --dist loadfile

bench: bootstrap
	$(PY) bench/bench_channel.py
	$(PY) bench/bench_board.py
	$(PY) bench/bench_engines.py --board
	$(PY) bench/bench_initial_rtt.py
	$(PY) bench/bench_preset.py
	$(PY) bench/bench_soak.py
	$(PY) bench/bench_pcapng.py
	$(PY) bench/bench_fuzz.py
	$(PY) bench/bench_datapath.py
	$(PY) bench/bench_datapath.py --board colorlight-5a-75b
	$(PY) -m hw.bitstream --board colorlight-5a-75b

bitstream: bootstrap
	$(PY) -m hw.bitstream --board $(BOARD)

bootstrap: $(STAMP) quinn

$(STAMP): pyproject.toml sim/pyproject.toml hw/pyproject.toml requirements.lock scripts/bootstrap.sh
	bash scripts/bootstrap.sh
	touch $@

# satemu_quinn (host/quinn/) into .venv/: the script does nothing when its content is installed.
quinn: $(STAMP)
	bash scripts/build_quinn.sh

# requirements.lock anew: the newest releases pyproject.toml's ranges allow, every one pinned.
lock:
	bash scripts/lock.sh

clean:
	rm -rf build
