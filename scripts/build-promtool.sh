#!/usr/bin/env bash
# Build promtool (Prometheus's rule and metrics checker) from its Go module into a cache
# outside the repo, for the tests that check deploy/alerts/ and `-o prometheus` output.
# Prints the folder holding the binary. A promtool already on PATH is used as it is.
#
# The Go module github.com/prometheus/prometheus numbers Prometheus 3.x as v0.3XX.y
# (v0.316.0 is Prometheus 3.16.0). Releases up to v0.315.x carry replace or exclude
# directives in their go.mod, which `go install module@version` refuses; v0.316.0 is the
# first without (go 1.26.7). The build tag remove_all_sd leaves out the service
# discoveries of the clouds (plugins/plugin_*.go: AWS, Azure, GCE, Consul, …; 106 of its
# 1,364 packages, the AWS EC2 client among them), which checking rules and metrics never
# loads; the Kubernetes discovery that promtool imports itself stays.
set -euo pipefail
PROMTOOL_VERSION="${FRACCTL_PROMTOOL_VERSION:-v0.316.0}"
if command -v promtool >/dev/null; then
  dirname "$(command -v promtool)"
  exit 0
fi
dir="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/tools/promtool-${PROMTOOL_VERSION}"
if [[ -x "$dir/promtool" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build promtool" >&2; exit 1; }
start=$(date +%s)
GO_TAGS=remove_all_sd bash "$(dirname "$0")/go-install.sh" "$dir" promtool \
  "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_VERSION}"
echo "build-promtool: built promtool ${PROMTOOL_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
