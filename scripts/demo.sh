#!/usr/bin/env bash
# The incident, end to end, in the local sandbox: a real control plane (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler), a CPU node and three GPU nodes
# whose kubelets KWOK plays, and clearly named simulations of the gpu-fractioning operator
# and of KAI. Git selects the opt-in label; the live object still selects the RTX class.
set -euo pipefail
export FRACCTL_SANDBOX_DIR="${FRACCTL_SANDBOX_DIR:-${TMPDIR:-/tmp}/fracctl-demo}"
say()  { printf '\n\033[1;34m# %s\033[0m\n' "$*"; }
step() { printf '\033[1m$ %s\033[0m\n' "$*"; }
# expect CODE CMD...: run CMD, and stop the demo unless it exits with CODE.
expect() {
  local want=$1; shift; step "$*"; set +e; "$@"; local rc=$?; set -e
  [[ $rc == "$want" ]] || { echo "demo: expected exit $want from '$*', got $rc" >&2; exit 1; }
  echo "(exit $rc)"
}

fracctl sandbox down >/dev/null
trap 'fracctl sandbox down >/dev/null' EXIT

# The recreate goes through the real Argo CD when it was built (make argocd, which also
# fetches redis-server); otherwise fracctl applies the object itself.
here="$(dirname "$0")"
up=(fracctl sandbox up)
if [[ -n "${DEMO_SCENARIO:-}" ]]; then
  # Another scenario (make demo DEMO_SCENARIO=examples/sandbox/operator-chart.yaml: the
  # operator from its chart, recreated through the chart's own helm upgrade).
  export PATH="$(bash "$here/build-helm.sh"):$PATH"
  say "A sandbox seeded with $DEMO_SCENARIO"
  expect 0 "${up[@]}" --scenario "$DEMO_SCENARIO"
  eval "$(fracctl sandbox env)"
  expect 0 fracctl config view
  say "Drift: the live object is what the chart's hook created; git wants another selector"
  expect 1 fracctl drift
  expect 0 fracctl nodes label b200-0
  say "The plan, then the chart's upgrade as a guarded recreate"
  expect 0 fracctl recreate --dry-run
  expect 0 fracctl recreate --yes
  expect 0 fracctl drift
  echo
  echo "demo: done ($DEMO_SCENARIO)"
  exit 0
fi
if argocd_dir="$(bash "$here/build-argocd.sh" --check 2>/dev/null)" \
    && bash "$here/build-redis.sh" --check >/dev/null 2>&1; then
  up+=(--argocd)
  backend="the real Argo CD ($argocd_dir/argocd)"
else
  backend="a direct server-side apply (Argo CD not built: run 'make argocd')"
fi

say "A sandbox: a control plane, KWOK nodes cpu-0, rtx-pro-6000-0, b200-0, h200-0"
echo "recreate backend: $backend"
expect 0 "${up[@]}"
eval "$(fracctl sandbox env)"
sleep 3
expect 0 fracctl sandbox status

say "Git wants the opt-in label; preflight refuses: b200-0 has not opted in"
expect 1 fracctl preflight

say "The node-join step: label the B200 (the H200 is refused, and left unchanged)"
expect 1 fracctl nodes label h200-0
expect 0 fracctl nodes label b200-0

say "Doctor: b200-0 opted in, but the live object does not select it"
expect 1 fracctl doctor

say "A fractional probe at the B200 pool stays Pending: no agent runs there, KAI holds it"
expect 0 fracctl probe --memory 4Gi --pool example.org/gpu-class=b200 --expect not-ready

say "Drift: the live object still selects the RTX class; the API server says why"
expect 1 fracctl drift

say "The plan, then the guarded delete -> recreate through $backend -> wait"
expect 0 fracctl recreate --dry-run
expect 0 fracctl recreate --yes

say "Afterwards: no drift, every fraction node ready, and a rerun has nothing to do"
expect 0 fracctl drift
expect 0 fracctl wait
expect 0 fracctl recreate --yes
kubectl get nodes -L example.org/gpu-class -L example.org/gpu-fractions
kubectl -n gpu-fractioning get daemonsets,pods -o wide

say "The same probe now runs on the B200: the agents the DaemonSet controller put there are ready"
expect 0 fracctl probe --memory 4Gi --pool example.org/gpu-class=b200 --expect running

say "Doctor: every known failure signature checked, none found"
expect 0 fracctl doctor
echo
echo "demo: done (recreated through $backend)"
