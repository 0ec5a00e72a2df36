#!/usr/bin/env bash
# Build helm 4 from its Go module (helm.sh/helm/v4/cmd/helm) into the cache beside helm 3,
# for the tests that run both. Prints the folder holding the binary.
set -euo pipefail
FRACCTL_HELM_VERSION="${FRACCTL_HELM4_VERSION:-v4.3.2}" exec bash "$(dirname "$0")/build-helm.sh"
