# Every target bootstraps its own virtualenv, so a fresh clone needs only python3, go and git.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: venv control-plane helm argocd test test-unit lint demo bench clean image

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

# A real kube-apiserver + etcd, built once from Go modules into ~/.cache/fracctl.
control-plane:
	@bash scripts/build-control-plane.sh >/dev/null

# helm, for the helm render tests (built from its Go module unless one is on PATH).
helm:
	@bash scripts/build-helm.sh >/dev/null

# A real Argo CD v3.2.11 for the e2e tests, and kustomize for its repo server (built from
# Go modules into ~/.cache/fracctl unless one is on PATH). Needs redis-server and git to run.
argocd:
	@bash scripts/build-argocd.sh >/dev/null
	@bash scripts/build-kustomize.sh >/dev/null

test: venv control-plane helm argocd
	PATH="$$(bash scripts/build-helm.sh):$$PATH" $(VENV)/bin/pytest

test-unit: venv
	$(VENV)/bin/pytest -m "not cluster and not e2e"

lint: venv
	$(VENV)/bin/ruff check fracctl tests benchmarks
	$(VENV)/bin/ruff format --check fracctl tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

demo: venv control-plane
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash scripts/demo.sh

# Every benchmark, then benchmarks/RESULTS.md and benchmarks/plots/ from their results.
bench: venv control-plane
	$(VENV)/bin/pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/run.py $(BENCH_ARGS)

# The container image from the Containerfile, built with podman and checked by running it.
# IMAGE_ARGS=--offline-base makes the base images from Debian packages (no registry needed).
image:
	bash scripts/build-image.sh $(IMAGE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
