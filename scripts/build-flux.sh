#!/usr/bin/env bash
# Build the real Flux controllers the e2e tests run (source-controller,
# kustomize-controller and helm-controller) from their Go modules into a cache outside the
# repo, with their CRDs beside them.
#
# Usage: scripts/build-flux.sh          prints the folder holding both binaries and crds/
#        scripts/build-flux.sh --check  the same, but exits 1 instead of building
#
# FRACCTL_FLUX_DIR, when set to a folder holding source-controller, kustomize-controller,
# helm-controller and crds/, wins and nothing is built. Otherwise the build lands in
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/flux/<versions>/ and a second run reuses it.
#
# Why these versions: later releases need a newer Go or a dependency version the module
# proxy does not serve (helm-controller v1.6.5 and v1.7.0 are not served; v1.6.4 requires
# source-controller/api v1.9.0, the source-controller built here, and helm v4.2.4). Why not `go install …@version`: each go.mod replaces its own
# `api` module with `./api`, a folder the published module zip lacks; dropping that
# replace makes the build use the published api module of the same version.
set -euo pipefail

SOURCE_VERSION="${FRACCTL_FLUX_SOURCE_VERSION:-v1.9.0}"
KUSTOMIZE_VERSION="${FRACCTL_FLUX_KUSTOMIZE_VERSION:-v1.9.6}"
HELM_VERSION="${FRACCTL_FLUX_HELM_VERSION:-v1.6.4}"

if [[ -n "${FRACCTL_FLUX_DIR:-}" ]]; then
  if [[ -x "$FRACCTL_FLUX_DIR/source-controller" && -x "$FRACCTL_FLUX_DIR/kustomize-controller" \
        && -x "$FRACCTL_FLUX_DIR/helm-controller" && -d "$FRACCTL_FLUX_DIR/crds" ]]; then
    echo "$FRACCTL_FLUX_DIR"
    exit 0
  fi
  echo "FRACCTL_FLUX_DIR=$FRACCTL_FLUX_DIR lacks a controller or crds/" >&2
  exit 1
fi

cache="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/flux/source-${SOURCE_VERSION}-kustomize-${KUSTOMIZE_VERSION}-helm-${HELM_VERSION}"
done_marker="$cache/crds/helm.toolkit.fluxcd.io_helmreleases.yaml"
if [[ -x "$cache/source-controller" && -x "$cache/kustomize-controller" \
      && -x "$cache/helm-controller" && -f "$done_marker" ]]; then
  echo "$cache"
  exit 0
fi
[[ "${1:-}" != "--check" ]] || exit 1

command -v go >/dev/null || { echo "go is required to build Flux" >&2; exit 1; }
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "build-flux: $*" >&2; }
mkdir -p "$cache/crds"

# build NAME VERSION: copy the module's source, drop its ./api replace, build main.go.
build() {
  local name="$1" version="$2" module="github.com/fluxcd/$1" start info srcdir
  [[ -x "$cache/$name" ]] && return 0
  start=$(date +%s)
  log "building $name $version"
  info="$(cd "$work" && go mod download -json "$module@$version")"
  srcdir="$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' <<<"$info")"
  cp -r "$srcdir" "$work/$name"
  chmod -R u+w "$work/$name"
  (
    cd "$work/$name"
    go mod edit -dropreplace "$module/api"
    go mod tidy >/dev/null 2>&1 || true
    go build -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false -o "$work/$name.bin" . >&2
  )
  cp "$srcdir"/config/crd/bases/*.yaml "$cache/crds/"
  chmod u+w "$cache/crds"/*.yaml
  mv "$work/$name.bin" "$cache/$name"
  log "built $name in $(( $(date +%s) - start ))s into $cache"
}

build source-controller "$SOURCE_VERSION"
build kustomize-controller "$KUSTOMIZE_VERSION"
build helm-controller "$HELM_VERSION"
echo "$cache"
