#!/usr/bin/env bash
# Build a real control plane from Go modules into a cache outside the repo: etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler.
#
# Usage: scripts/build-control-plane.sh        prints the folder holding the binaries
#
# KUBEBUILDER_ASSETS, when set to a folder holding all four, wins and nothing is built.
# Otherwise the binaries land in
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/control-plane/<k8s>-<etcd>/ and a second run
# reuses them; a binary missing there is built alone (the three Kubernetes commands share
# one wrapper module and Go's build cache).
set -euo pipefail

K8S_VERSION="${FRACCTL_K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${FRACCTL_ETCD_VERSION:-v3.6.4}"

KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler)

missing() {  # the binaries that folder $1 lacks
  local bin
  for bin in etcd "${KUBE_COMMANDS[@]}"; do
    [[ -x "$1/$bin" ]] || echo "$bin"
  done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  lacks="$(missing "$KUBEBUILDER_ASSETS" | tr '\n' ' ')"
  if [[ -z "$lacks" ]]; then
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks ${lacks% }" >&2
  exit 1
fi

cache="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/control-plane/${K8S_VERSION}-etcd${ETCD_VERSION}"
todo="$(missing "$cache")"
if [[ -z "$todo" ]]; then
  echo "$cache"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the control plane" >&2; exit 1; }
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "build-control-plane: $*" >&2; }
start=$(date +%s)

mkdir -p "$work/out"
kube=()
for bin in $todo; do
  [[ "$bin" == etcd ]] || kube+=("$bin")
done

# etcd: the server module's root package is the etcd binary.
if grep -qx etcd <<<"$todo"; then
  log "building etcd $ETCD_VERSION"
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init fracctl.local/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  go build -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false -o "$work/out/etcd" go.etcd.io/etcd/server/v3 >&2
fi

# The Kubernetes commands: k8s.io/kubernetes points its staging modules at ./staging; a
# wrapper module replaces each with the published module of the matching v0.x version.
if (( ${#kube[@]} )); then
  log "building ${kube[*]} $K8S_VERSION"
  mkdir -p "$work/kube" && cd "$work/kube"
  go mod init fracctl.local/control-plane >/dev/null 2>&1
  modfile="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  staging="v0.${K8S_VERSION#v1.}"
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*#\1#p' "$modfile" | while read -r mod; do
    go mod edit -replace "$mod=$mod@$staging"
  done
  for bin in "${kube[@]}"; do
    go get "k8s.io/kubernetes/cmd/$bin@$K8S_VERSION" >&2
  done
  # One `go build` for all: their shared packages compile once, the links run side by side.
  go build -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false -o "$work/out/" \
    "${kube[@]/#/k8s.io/kubernetes/cmd/}" >&2
fi

mv "$work/out/"* "$cache/"
log "built ${todo//$'\n'/ } in $(( $(date +%s) - start ))s into $cache"
echo "$cache"
