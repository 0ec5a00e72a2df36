#!/usr/bin/env bash
# Build a real kube-apiserver and etcd from Go modules into a cache outside the repo.
#
# Usage: scripts/build-control-plane.sh        prints the folder holding both binaries
#
# KUBEBUILDER_ASSETS, when set to a folder holding kube-apiserver and etcd, wins and
# nothing is built. Otherwise the binaries land in
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/control-plane/<k8s>-<etcd>/ and a second run
# reuses them.
set -euo pipefail

K8S_VERSION="${FRACCTL_K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${FRACCTL_ETCD_VERSION:-v3.6.4}"

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver or etcd" >&2
  exit 1
fi

cache="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/control-plane/${K8S_VERSION}-etcd${ETCD_VERSION}"
if [[ -x "$cache/kube-apiserver" && -x "$cache/etcd" ]]; then
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

# etcd: the server module's root package is the etcd binary.
log "building etcd $ETCD_VERSION"
mkdir -p "$work/etcd" && cd "$work/etcd"
go mod init fracctl.local/etcd >/dev/null 2>&1
go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
go build -trimpath -ldflags='-s -w' -o "$work/out-etcd" go.etcd.io/etcd/server/v3 >&2

# kube-apiserver: k8s.io/kubernetes points its staging modules at ./staging; a wrapper
# module replaces each with the published module of the matching v0.x version.
log "building kube-apiserver $K8S_VERSION"
mkdir -p "$work/kas" && cd "$work/kas"
go mod init fracctl.local/kube-apiserver >/dev/null 2>&1
modfile="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
staging="v0.${K8S_VERSION#v1.}"
sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*#\1#p' "$modfile" | while read -r mod; do
  go mod edit -replace "$mod=$mod@$staging"
done
go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" >&2
go build -trimpath -ldflags='-s -w' -o "$work/out-kas" k8s.io/kubernetes/cmd/kube-apiserver >&2

mv "$work/out-etcd" "$cache/etcd"
mv "$work/out-kas" "$cache/kube-apiserver"
log "built in $(( $(date +%s) - start ))s into $cache"
echo "$cache"
