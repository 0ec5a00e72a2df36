#!/usr/bin/env bash
# Build the real Flux controllers the e2e tests run (source-controller,
# kustomize-controller and helm-controller) from their Go modules into a cache outside the
# repo, with their CRDs beside them.
#
# Usage: scripts/build-flux.sh          prints the folder holding the controllers and crds/
#        scripts/build-flux.sh --check  the same, but exits 1 instead of building
#
# FRACCTL_FLUX_DIR, when set to a folder holding source-controller, kustomize-controller,
# helm-controller and crds/, wins and nothing is built. Otherwise the build lands in
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}/flux/<versions>/ and a second run reuses it.
#
# Why these versions: later releases need a newer Go or a dependency version the module
# proxy does not serve (helm-controller v1.6.5 and v1.7.0 are not served; v1.6.4 requires
# source-controller/api v1.9.0, the source-controller built here, and helm v4.2.4).
#
# One module builds all three, with one `go build`: a wrapper module requires the three
# controllers' modules (each controller is its module's root package) and repeats their
# versioned replace directives, the newer where two differ. Go's minimal version selection
# then picks one version of every shared dependency, the highest any controller asks for
# (k8s.io/* v0.36.4 where source-controller asks for v0.36.1, for example: patch releases
# of the same line), and each package compiles once for the three: 2,396 packages instead
# of 2,100 + 1,637 + 1,460 built one controller at a time. Each controller's own
# `replace …/api => ./api` (a folder the published module zip lacks) does not apply to a
# required module: the published api module of the required version is used.
set -euo pipefail

SOURCE_VERSION="${FRACCTL_FLUX_SOURCE_VERSION:-v1.9.0}"
KUSTOMIZE_VERSION="${FRACCTL_FLUX_KUSTOMIZE_VERSION:-v1.9.6}"
HELM_VERSION="${FRACCTL_FLUX_HELM_VERSION:-v1.6.4}"
CONTROLLERS=(source-controller kustomize-controller helm-controller)

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
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "build-flux: $*" >&2; }
start=$(date +%s)
cd "$work"
go mod init fracctl.local/flux >/dev/null 2>&1

version_of() {
  case "$1" in
    source-controller) echo "$SOURCE_VERSION" ;;
    kustomize-controller) echo "$KUSTOMIZE_VERSION" ;;
    helm-controller) echo "$HELM_VERSION" ;;
  esac
}

modules=()
for name in "${CONTROLLERS[@]}"; do
  modules+=("github.com/fluxcd/$name@$(version_of "$name")")
done
log "building ${CONTROLLERS[*]} (${modules[*]##*@})"
# Every versioned replace of the three go.mods (`old => new vX`), the highest version of
# each replaced module; a local-folder replace other than ./api would mean a controller
# that cannot be built from its module.
for module in "${modules[@]}"; do
  modfile="$(go mod download -json "$module" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  if grep -E '=>\s*\.{1,2}/' "$modfile" | grep -Evq '=>\s*\./api\s*$'; then
    echo "$module replaces a module with a local folder; it cannot be built from its module" >&2
    exit 1
  fi
  sed -n 's#^\s*\(replace\s\+\)\?\([^ ]\+\)\( v[^ ]\+\)\?\s*=>\s*\([^ ]\+\)\s\+\(v[^ ]\+\)\s*$#\2 \4 \5#p' "$modfile"
done | sort -k1,1 -k3,3V | awk '{last[$1]=$2"@"$3} END {for (m in last) print m, last[m]}' |
  while read -r old new; do
    go mod edit -replace "$old=$new"
  done
go get "${modules[@]}" >&2
mkdir -p "$work/out"
go build -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false -o "$work/out/" \
  "${modules[@]/%@*/}" >&2

mkdir -p "$cache/crds"
for module in "${modules[@]}"; do
  srcdir="$(go list -m -f '{{.Dir}}' "${module%@*}")"
  cp "$srcdir"/config/crd/bases/*.yaml "$cache/crds/"
done
chmod u+w "$cache/crds"/*.yaml
for name in "${CONTROLLERS[@]}"; do
  mv "$work/out/$name" "$cache/$name"
done
log "built in $(( $(date +%s) - start ))s into $cache"
echo "$cache"
