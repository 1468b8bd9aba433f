# senpai: `make demo` runs the research loop with no keys; `make test` runs the tests.
# Both create .venv with a Python >= 3.12 if it is missing (openhands-sdk needs 3.12).

SHELL := /bin/bash
VENV := .venv
PYENV_ROOT ?= $(or $(shell pyenv root 2>/dev/null),$(HOME)/.pyenv)
# First interpreter that really runs and is >= 3.12: PATH, then pyenv's versions folder
# (the bare pyenv shim `python3.12` fails unless PYENV_VERSION is set, so it is tested, not trusted).
PYTHON ?= $(shell for p in python3.13 python3.12 python3 $(wildcard $(PYENV_ROOT)/versions/3.1[2-9]*/bin/python3); do \
	"$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { echo "$$p"; break; }; done)
export WANDB_SILENT := true
export LITELLM_LOCAL_MODEL_COST_MAP := True
export OPENHANDS_SUPPRESS_BANNER := 1

.PHONY: demo test lint clean

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no Python >= 3.12 found on PATH or under $(PYENV_ROOT)/versions" >&2; exit 2; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/senpai demo

test: $(VENV)/.installed
	WANDB_MODE=offline $(VENV)/bin/pytest -q

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check senpai tests examples
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) demo-out .pytest_cache
