#!/usr/bin/env bash
# Install one Go command into a cache folder, all or nothing: built into a scratch folder
# beside it, then moved in, so a build killed halfway leaves no binary that a second run
# would take for a finished one.
#
# Usage: [GO_TAGS=tag,...] scripts/go-install.sh DIR NAME MODULE/cmd/path@VERSION
# (prints nothing; GO_TAGS are the build tags)
set -euo pipefail
dir="$1" name="$2" package="$3"
mkdir -p "$dir"
scratch="$(mktemp -d "$dir.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
GOBIN="$scratch" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' -gcflags=all=-dwarf=false \
  ${GO_TAGS:+-tags "$GO_TAGS"} "$package" >&2
mv "$scratch/$name" "$dir/$name"
