#!/usr/bin/env bash
# Build kustomize from its Go module into a cache outside the repo, for Argo CD's repo
# server (which renders kustomize sources with the kustomize binary on PATH).
# Prints the folder holding the binary. A kustomize already on PATH is used as it is.
set -euo pipefail
# The version Argo CD v3.2 ships with (hack/tool-versions.sh of argo-cd).
KUSTOMIZE_VERSION="${FRACCTL_KUSTOMIZE_VERSION:-v5.7.0}"
if command -v kustomize >/dev/null; then
  dirname "$(command -v kustomize)"
  exit 0
fi
dir="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/tools/kustomize-${KUSTOMIZE_VERSION}"
if [[ -x "$dir/kustomize" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build kustomize" >&2; exit 1; }
mkdir -p "$dir"
start=$(date +%s)
# Into a scratch folder beside the cache, then moved: a build killed halfway leaves no
# binary that a second run would take for a finished one.
scratch="$(mktemp -d "$dir.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
GOBIN="$scratch" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' \
  "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" >&2
mv "$scratch/kustomize" "$dir/kustomize"
echo "build-kustomize: built kustomize ${KUSTOMIZE_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
