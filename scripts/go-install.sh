#!/usr/bin/env bash
# Install one Go command into a cache folder, all or nothing: built into a scratch folder
# beside it, then moved in, so a build killed halfway leaves no binary that a second run
# would take for a finished one.
#
# Usage: scripts/go-install.sh DIR NAME MODULE/cmd/path@VERSION   (prints nothing)
set -euo pipefail
dir="$1" name="$2" package="$3"
mkdir -p "$dir"
scratch="$(mktemp -d "$dir.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
GOBIN="$scratch" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' \
  "$package" >&2
mv "$scratch/$name" "$dir/$name"
