#!/usr/bin/env bash
# Build every real part the tests run against, all at once: the control plane, KWOK,
# helm 3 and 4, Argo CD with kustomize and redis-server, Flux and promtool.
#
# Usage: scripts/build-parts.sh        builds what the cache lacks; prints one line a part
#
# Each part is its own build script (scripts/build-*.sh), cached by version under
# ${FRACCTL_CACHE:-$HOME/.cache/fracctl}; a cached part costs a file test. The builds
# start together: on a 2-core machine one build's module downloads overlap another's
# compiling, and Go's module and build caches are safe to share between them (the go
# command locks them). Every script builds into a scratch folder and moves the finished
# binary into the cache last, so a build killed halfway leaves nothing that a second run
# would mistake for a finished part. Any failed build fails this script, with its log.
# Every build leaves debug information out, in the compiler too (-gcflags=all=-dwarf=false
# beside -ldflags='-s -w'): on 2 cores that took a tenth to a quarter off kustomize's
# compile time, and nothing here debugs these binaries.
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=(control-plane kwok helm helm4 argocd kustomize redis flux promtool)

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)

# Go's standard library first, with the flags every part's build uses: the build cache
# does not share a package that two go commands compile at the same time, so the parts
# started together would each compile it again. On a warm cache this is a second.
if command -v go >/dev/null; then
  CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false std
fi
declare -A pids
for part in "${PARTS[@]}"; do
  (
    t0=$(date +%s)
    bash "scripts/build-$part.sh" >"$logs/$part.out" 2>"$logs/$part.log"
    echo "$(( $(date +%s) - t0 ))" >"$logs/$part.secs"
  ) &
  pids[$part]=$!
done

failed=()
for part in "${PARTS[@]}"; do
  if wait "${pids[$part]}"; then
    printf 'build-parts: %-13s %4ss  %s\n' "$part" "$(cat "$logs/$part.secs")" \
      "$(tail -n1 "$logs/$part.out")" >&2
  else
    failed+=("$part")
    echo "build-parts: $part FAILED; its log:" >&2
    tail -n 30 "$logs/$part.log" >&2
  fi
done
echo "build-parts: ${#PARTS[@]} parts in $(( $(date +%s) - start ))s" >&2
(( ${#failed[@]} == 0 )) || { echo "build-parts: failed: ${failed[*]}" >&2; exit 1; }
