#!/usr/bin/env bash
# Build a real Argo CD (one binary for server, repo server and application controller)
# from its Go module into a cache outside the repo, with its CRDs beside it.
#
# Usage: scripts/build-argocd.sh          prints the folder holding argocd and crds/
#        scripts/build-argocd.sh --check  the same, but exits 1 instead of building
#
# FRACCTL_ARGOCD_DIR, when set to a folder holding an argocd binary and crds/, wins and
# nothing is built. Otherwise the build lands in
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/argocd/<version>/ and a second run reuses it.
#
# Why v3.2.11: v3.3 and later replace github.com/argoproj/gitops-engine with a local
# folder that the published module zip does not contain, so they cannot be built from
# the module proxy; v3.2.12 does not compile (controller/cache/info.go refers to
# settings.ValidateExternalURL, which that release lacks).
set -euo pipefail

ARGOCD_VERSION="${FRACCTL_ARGOCD_VERSION:-v3.2.11}"
MODULE=github.com/argoproj/argo-cd/v3

if [[ -n "${FRACCTL_ARGOCD_DIR:-}" ]]; then
  if [[ -x "$FRACCTL_ARGOCD_DIR/argocd" && -d "$FRACCTL_ARGOCD_DIR/crds" ]]; then
    echo "$FRACCTL_ARGOCD_DIR"
    exit 0
  fi
  echo "FRACCTL_ARGOCD_DIR=$FRACCTL_ARGOCD_DIR lacks argocd or crds/" >&2
  exit 1
fi

cache="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/argocd/${ARGOCD_VERSION}"
if [[ -x "$cache/argocd" && -f "$cache/crds/application-crd.yaml" ]]; then
  echo "$cache"
  exit 0
fi
[[ "${1:-}" != "--check" ]] || exit 1

command -v go >/dev/null || { echo "go is required to build Argo CD" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "build-argocd: $*" >&2; }
start=$(date +%s)

log "building argocd $ARGOCD_VERSION"
cd "$work"
go mod init fracctl.local/argocd >/dev/null 2>&1
info="$(go mod download -json "$MODULE@$ARGOCD_VERSION")"
modfile="$(sed -n 's/.*"GoMod": "\(.*\)",*/\1/p' <<<"$info")"
srcdir="$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' <<<"$info")"
# Replace directives apply only in the main module: repeat every versioned one
# (`old => new vX`); a local-folder replacement would mean an unbuildable release.
sed -n 's#^\s*\(replace\s\+\)\?\([^ ]\+\)\( v[^ ]\+\)\?\s*=>\s*\([^ ]\+\)\s\+\(v[^ ]\+\)\s*$#\2 \4@\5#p' "$modfile" |
  while read -r old new; do
    go mod edit -replace "$old=$new"
  done
if grep -Eq '=>\s*\.{1,2}/' "$modfile"; then
  echo "argo-cd $ARGOCD_VERSION replaces a module with a local folder; it cannot be built from its module" >&2
  exit 1
fi
go get "$MODULE/cmd@$ARGOCD_VERSION" >&2
go build -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false -o "$work/argocd" "$MODULE/cmd" >&2

mkdir -p "$cache/crds"
for crd in application appproject applicationset; do
  cp "$srcdir/manifests/crds/$crd-crd.yaml" "$cache/crds/"
done
chmod u+w "$cache/crds"/*.yaml
mv "$work/argocd" "$cache/argocd"
log "built in $(( $(date +%s) - start ))s into $cache"
echo "$cache"
