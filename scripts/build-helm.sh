#!/usr/bin/env bash
# Build helm from its Go module into a cache outside the repo, for the tests that run it.
# Prints the folder holding the binary. FRACCTL_HELM_VERSION picks the version (v3.16.4 by
# default; a v4.x builds helm.sh/helm/v4, see scripts/build-helm4.sh). With the default,
# a helm already on PATH is used as it is.
set -euo pipefail
HELM_VERSION="${FRACCTL_HELM_VERSION:-v3.16.4}"
if [[ -z "${FRACCTL_HELM_VERSION:-}" ]] && command -v helm >/dev/null; then
  dirname "$(command -v helm)"
  exit 0
fi
dir="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/tools/helm-${HELM_VERSION}"
if [[ -x "$dir/helm" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build helm" >&2; exit 1; }
major="${HELM_VERSION%%.*}"   # v3 or v4: the module path's major version
start=$(date +%s)
bash "$(dirname "$0")/go-install.sh" "$dir" helm \
  "helm.sh/helm/${major}/cmd/helm@${HELM_VERSION}"
echo "build-helm: built helm ${HELM_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
