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
start=$(date +%s)
bash "$(dirname "$0")/go-install.sh" "$dir" kustomize \
  "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}"
echo "build-kustomize: built kustomize ${KUSTOMIZE_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
