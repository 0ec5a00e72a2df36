#!/usr/bin/env bash
# The incident, end to end, in the local sandbox (a real kube-apiserver + etcd).
set -euo pipefail
export FRACCTL_SANDBOX_DIR="${FRACCTL_SANDBOX_DIR:-${TMPDIR:-/tmp}/fracctl-demo}"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { step "$*"; "$@"; }
expect() { local want=$1; shift; step "$*"; set +e; "$@"; local rc=$?; set -e
  [[ $rc == "$want" ]] || { echo "demo: expected exit $want, got $rc" >&2; exit 1; }; }

fracctl sandbox down >/dev/null
trap 'fracctl sandbox down >/dev/null' EXIT
run fracctl sandbox up
eval "$(fracctl sandbox env)"
sleep 3
run fracctl sandbox status
run kubectl get nodes -L example.org/gpu-class -L example.org/gpu-fractions
echo
echo "demo: done"
