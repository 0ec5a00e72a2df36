#!/usr/bin/env bash
# Build KWOK (sigs.k8s.io/kwok), the simulated nodes' controller, from its Go module into a
# cache outside the repo, with the stages its module ships (kustomize/stage/) beside it.
#
# Usage: scripts/build-kwok.sh          prints the folder holding kwok and stages/
#        scripts/build-kwok.sh --check  the same, but exits 1 instead of building
#
# FRACCTL_KWOK_DIR, when set to a folder holding kwok and stages/, wins and nothing is
# built. Otherwise the build lands in ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/kwok/<version>/
# and a second run reuses it. KWOK exits with "no stages found" when started without
# stages: stages/node-fast.yaml makes a node Ready, node-heartbeat-with-lease.yaml keeps
# its status fresh beside the node Lease KWOK renews, pod-general.yaml carries pods from
# Pending to Running and through their deletion.
set -euo pipefail

KWOK_VERSION="${FRACCTL_KWOK_VERSION:-v0.8.0}"

if [[ -n "${FRACCTL_KWOK_DIR:-}" ]]; then
  if [[ -x "$FRACCTL_KWOK_DIR/kwok" && -d "$FRACCTL_KWOK_DIR/stages" ]]; then
    echo "$FRACCTL_KWOK_DIR"
    exit 0
  fi
  echo "FRACCTL_KWOK_DIR=$FRACCTL_KWOK_DIR lacks kwok or stages/" >&2
  exit 1
fi

cache="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/kwok/$KWOK_VERSION"
STAGES=(node/fast node/heartbeat-with-lease pod/general)
complete() {
  local stage
  [[ -x "$cache/kwok" ]] || return 1
  for stage in "${STAGES[@]}"; do
    [[ -f "$cache/stages/${stage//\//-}.yaml" ]] || return 1
  done
}

if complete; then
  echo "$cache"
  exit 0
fi
[[ "${1:-}" != "--check" ]] || exit 1

command -v go >/dev/null || { echo "go is required to build KWOK" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0
log() { echo "build-kwok: $*" >&2; }
start=$(date +%s)

if [[ ! -x "$cache/kwok" ]]; then
  log "building kwok $KWOK_VERSION"
  GOBIN="$work" go install -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
fi
srcdir="$(cd "$work" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" \
  | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"

mkdir -p "$cache/stages"
# Each stage folder holds one or more Stage documents; one file per folder, joined.
for stage in "${STAGES[@]}"; do
  out="$cache/stages/${stage//\//-}.yaml"
  : >"$out.tmp"
  for f in "$srcdir/kustomize/stage/$stage"/*.yaml; do
    [[ "$(basename "$f")" == kustomization.yaml ]] && continue
    { echo "---"; cat "$f"; } >>"$out.tmp"
  done
  mv "$out.tmp" "$out"
done
chmod -R u+w "$cache/stages"
[[ -x "$cache/kwok" ]] || mv "$work/kwok" "$cache/kwok"
log "built in $(( $(date +%s) - start ))s into $cache"
echo "$cache"
