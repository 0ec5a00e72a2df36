#!/usr/bin/env bash
# Build helm 4 from its Go module into a cache outside the repo, beside helm 3
# (scripts/build-helm.sh), for the tests that run both. Prints the folder holding the
# binary. Helm 4's module path is helm.sh/helm/v4 (its cmd/helm).
set -euo pipefail
HELM4_VERSION="${FRACCTL_HELM4_VERSION:-v4.3.2}"
dir="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/tools/helm-${HELM4_VERSION}"
if [[ -x "$dir/helm" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build helm" >&2; exit 1; }
mkdir -p "$dir"
start=$(date +%s)
GOBIN="$dir" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' \
  "helm.sh/helm/v4/cmd/helm@${HELM4_VERSION}" >&2
echo "build-helm4: built helm ${HELM4_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
