# senpai: `make demo` runs the research loop with no keys; `make test` runs the tests.
# Both create .venv with a Python >= 3.12 if it is missing; `make demo` installs the core alone,
# `make test` the `test` extra too (the agents and kubernetes extras and the test tools).
# `make images` builds the wrapper, advisor and student images; `make kind-e2e` runs the chart on kind.
# `make e2e-llm` runs one advisor and one student turn against a real model on a local llama.cpp server.

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

.PHONY: demo test lint clean constraints images kind-e2e bench bench-quick bench-verdicts bench-requests bench-wake bench-replay bench-robustness bench-jobs bench-cpu bench-hostile bench-logstream bench-research e2e-llm

# Images: $(IMAGE_REPO)/<role>:$(IMAGE_TAG), the names the chart uses by default.
IMAGE_REPO ?= senpai
IMAGE_TAG ?= $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DOCKER ?= docker
# pip arguments for the target's own dependencies in the student image (e.g. "torch==2.7.1").
EXTRA_REQUIREMENTS ?=

# Two stamps: `make demo` installs the core alone (.venv/.demo); `make test` and the other targets
# install the `test` extra, which adds the agents and kubernetes extras and the test tools (.venv/.test).
# pip shows a progress bar for each download, and one for the install step on a terminal (not in a log, where
# that step says nothing for minutes: hence the package counts echoed first); see docs/first-run.md.
# constraints.txt pins every version (as the images do): pip resolves nothing, where the open
# ranges of openhands-sdk and wandb sent it backtracking through opentelemetry releases for minutes.
$(VENV)/bin/python:
	@test -n "$(PYTHON)" || { echo "error: no Python >= 3.12 found on PATH or under $(PYENV_ROOT)/versions" >&2; exit 2; }
	@echo "== creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "== upgrading pip"
	$(VENV)/bin/pip install --progress-bar on --upgrade pip

$(VENV)/.demo: pyproject.toml constraints.txt | $(VENV)/bin/python
	@echo "== installing senpai and what the demo needs (pip install -e .): about 80 packages, 560 MB; this may take"
	@echo "   minutes on a slow network or disk. pip shows each download, then a bar while it installs (on a terminal only)"
	$(VENV)/bin/pip install --progress-bar on -c constraints.txt -e .
	@touch $@

$(VENV)/.test: pyproject.toml constraints.txt | $(VENV)/bin/python
	@echo "== installing senpai with the test extra (agents, kubernetes, test tools: pip install -e '.[test]')"
	$(VENV)/bin/pip install --progress-bar on -c constraints.txt -e '.[test]'
	@touch $@ $(VENV)/.demo

demo: $(VENV)/.demo
	$(VENV)/bin/senpai demo

# pytest-xdist: 4 workers on any machine (most of the suite waits on jobs, ticks and the forge, not on
# the CPU: 4 fit 2 cores), tests handed out as workers free up (`worksteal`); one file alone: pytest FILE.
# senpai and the tests are byte-compiled first, as a wheel install would be: an editable install is
# not, and where PYTHONDONTWRITEBYTECODE is set (CI images) every worker, job and CLI the suite starts
# would compile them again from source.
test: $(VENV)/.test
	$(VENV)/bin/python -m compileall -q senpai tests
	WANDB_MODE=offline $(VENV)/bin/pytest -q -n 4 --dist worksteal

# Every figure of bench/ in turn, one table in bench/results/all-<UTC>.md (see bench/README.md);
# bench-quick: each figure's small size, robustness in the background beside the request and CPU figures.
BENCH_ARGS ?=
bench: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/all.py $(BENCH_ARGS)

bench-quick: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/all.py --quick $(BENCH_ARGS)

# Robustness alone: wrapper kills and forge faults (bench/README.md).
bench-robustness: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/run.py $(BENCH_ARGS)

# Forge requests per hour: the wrapper next to a per-student poller, 1 to 100 students, 10 to 10,000 PRs (bench/README.md).
bench-requests: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/forge_requests.py $(BENCH_ARGS)

# Wake latency, a human's comment to the advisor's launch: p50/p95 over 20 trials (bench/README.md).
bench-wake: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/wake_latency.py $(BENCH_ARGS)

# A 70-day programme's 3,480 events through the wrapper's refresh and plan (bench/README.md).
bench-replay: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/replay.py $(BENCH_ARGS)

# CLI import time, local job start and LocalFleet.list() per tick, each next to the code before issue 10 (bench/README.md).
bench-jobs: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/job_start.py $(BENCH_ARGS)

# Wrapper CPU per first, busy and idle tick at 10, 100 and 1,000 PRs (bench/README.md).
bench-cpu: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/ledger_cpu.py $(BENCH_ARGS)

# The verifier's false-accept rate on null edits and its power on 0.5/1/2-point edits (bench/README.md).
bench-verdicts: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/verdicts.py $(BENCH_ARGS)

# The hostile-target corpus through the real loop (hits per step), and the wall's launch cost (bench/README.md).
bench-hostile: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/hostile.py $(BENCH_ARGS)

# A train command printing 400 MiB: the train step's peak memory, log size and throughput (bench/README.md).
bench-logstream: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/log_stream.py $(BENCH_ARGS)

# senpai against plain Optuna TPE on digits and diabetes: holdout on fresh seeds, trainings, requests, CPU (bench/README.md).
bench-research: $(VENV)/.test
	WANDB_MODE=offline $(VENV)/bin/python bench/research.py $(BENCH_ARGS)

# Opt-in, not part of `make test`: a real model on a local llama.cpp server through one advisor and one
# student turn (bench/e2e_llm.py; the first run builds the server and fetches the model into .cache/e2e-llm/).
# E2E_LLM_MODEL: another GGUF file; E2E_LLM_SERVER_ARGS: more llama-server arguments (e.g. -ngl 99);
# E2E_LLM_CMAKE_ARGS: more build flags (e.g. -DGGML_CUDA=ON); README "A real model: make e2e-llm".
E2E_LLM_MODEL ?=
E2E_LLM_SERVER_ARGS ?=
E2E_LLM_CMAKE_ARGS ?=
e2e-llm: $(VENV)/.test
	WANDB_MODE=offline E2E_LLM_MODEL="$(E2E_LLM_MODEL)" E2E_LLM_SERVER_ARGS="$(E2E_LLM_SERVER_ARGS)" \
	  E2E_LLM_CMAKE_ARGS="$(E2E_LLM_CMAKE_ARGS)" $(VENV)/bin/python bench/e2e_llm.py

lint: $(VENV)/.test
	$(VENV)/bin/ruff check senpai tests examples
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) demo-out .pytest_cache

# constraints.txt pins every dependency of the images to the versions of the working .venv.
constraints: $(VENV)/.test
	{ echo "# Versions the images install (pip install -c constraints.txt). Regenerate: make constraints"; \
	  $(VENV)/bin/pip freeze --exclude-editable | grep -v '^senpai=='; } > constraints.txt

images:
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "error: make images needs the docker CLI ('$(DOCKER)' is not on PATH)" >&2; exit 2; }
	@$(DOCKER) info >/dev/null 2>&1 || { echo "error: no Docker daemon is reachable ('$(DOCKER) info' failed): start Docker or set DOCKER_HOST" >&2; exit 2; }
	$(DOCKER) build -f wrapper/Dockerfile -t $(IMAGE_REPO)/wrapper:$(IMAGE_TAG) .
	$(DOCKER) build -f advisor/Dockerfile -t $(IMAGE_REPO)/advisor:$(IMAGE_TAG) .
	$(DOCKER) build -f student/Dockerfile --build-arg EXTRA_REQUIREMENTS="$(EXTRA_REQUIREMENTS)" -t $(IMAGE_REPO)/student:$(IMAGE_TAG) .

# Needs docker, kind, kubectl and helm; see the header of scripts/kind-e2e.sh.
kind-e2e: $(VENV)/.test
	IMAGE_REPO=$(IMAGE_REPO) IMAGE_TAG=$(IMAGE_TAG) DOCKER=$(DOCKER) SENPAI=$(VENV)/bin/senpai bash scripts/kind-e2e.sh
