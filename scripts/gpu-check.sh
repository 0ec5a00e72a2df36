#!/usr/bin/env bash
# GPU check for the node agent, on a machine with an NVIDIA GPU and driver.
#
# One run, bounded to under five minutes:
#   1. starts MPS with `fracctl node mps install --foreground` in a temporary pipe dir,
#      with a 4096 MiB default pinned limit on device 0;
#   2. runs `fracctl node probe-memory --limit 4096M` as its client (256M steps, the
#      incident's, then 64M steps for a finer overhead figure);
#   3. prints the figures, the daemon status, then stops MPS with SIGTERM and reports
#      how the supervisor exited.
#
# Environment: FRACCTL (the command, default .venv/bin/fracctl or python3 -m fracctl),
# GPU_CHECK_DEVICE (default 0), GPU_CHECK_LIMIT (default 4096M).
# Exit status: 0 when the limit was enforced and MPS stopped cleanly, 1 otherwise.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
device="${GPU_CHECK_DEVICE:-0}"
limit="${GPU_CHECK_LIMIT:-4096M}"

if [[ -n "${FRACCTL:-}" ]]; then
  read -r -a fracctl <<<"$FRACCTL"
elif [[ -x "$repo/.venv/bin/fracctl" ]]; then
  fracctl=("$repo/.venv/bin/fracctl")
else
  export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
  fracctl=(python3 -m fracctl)
fi

say() { printf '== %s\n' "$*"; }

for tool in nvidia-smi nvidia-cuda-mps-control; do
  command -v "$tool" >/dev/null || { echo "gpu-check: $tool not found on PATH" >&2; exit 1; }
done

driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i "$device" | head -n1)"
protocol=2
if (( ${driver%%.*} >= 615 )); then protocol=3; fi
multi=--multi-user
if [[ "$(id -u)" != 0 ]]; then multi=--single-user; fi

say "GPU $device: $(nvidia-smi --query-gpu=name,memory.total,compute_mode --format=csv,noheader -i "$device")"
say "driver $driver -> MPS protocol $protocol ($multi)"

# Short paths: Unix socket paths are limited to about 100 bytes.
work="$(mktemp -d /tmp/gpuchk.XXXXXX)"
pipe="$work/pipe"
logs="$work/log"
export FRACCTL_MPS_STATE_DIR="$work/state"  # the install manifest, not /var/lib/fracctl
export FRACCTL_MPS_GRACEFUL_STOP=30s
export FRACCTL_MPS_HEALTH_INTERVAL=5s
supervisor=""

cleanup() {
  if [[ -n "$supervisor" ]] && kill -0 "$supervisor" 2>/dev/null; then
    kill -TERM "$supervisor" 2>/dev/null || true
    wait "$supervisor" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

say "starting MPS: fracctl node mps install --foreground (pipe dir $pipe)"
# --foreground: plain timeout signals its whole process group, not just the supervisor.
timeout --foreground -s TERM 270 "${fracctl[@]}" node mps install --foreground \
  --pipe-dir "$pipe" --log-dir "$logs" --protocol "$protocol" "$multi" \
  --pinned-mem-limit "$device=$limit" 2> >(tee "$work/supervisor.log" >&2) &
supervisor=$!

ready=no
for _ in $(seq 1 120); do
  if grep -q "applied set_default_device_pinned_mem_limit" "$work/supervisor.log" 2>/dev/null; then
    ready=yes
    break
  fi
  kill -0 "$supervisor" 2>/dev/null || break
  sleep 0.5
done
if [[ "$ready" != yes ]]; then
  echo "gpu-check: the MPS daemon did not become ready" >&2
  cat "$logs/control.log" 2>/dev/null >&2 || true
  exit 1
fi

export CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_MPS_LOG_DIRECTORY="$logs"
status=0
for step in 256M 64M; do
  say "probe-memory --limit $limit --step $step (as an MPS client)"
  if timeout 60 "${fracctl[@]}" node probe-memory --device "$device" --limit "$limit" \
    --step "$step" -o json >"$work/probe-$step.json"; then
    :
  else
    status=1
  fi
  cat "$work/probe-$step.json"
done

say "figures"
python3 - "$work/probe-256M.json" "$work/probe-64M.json" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except (OSError, ValueError):
        print(f"{path}: no result")
        continue
    print(
        f"step {d['step_mib']:>4} MiB: limit {d['limit_mib']} MiB, usable {d['usable_mib']} MiB, "
        f"failing step #{d['failed_step']} to {d['failed_at_mib']} MiB ({d['error']}), "
        f"context overhead {d['overhead_mib']} MiB, enforced {d['enforced']}, "
        f"driver reported {d['free_mib_at_start']}/{d['total_mib']} MiB free/total"
    )
EOF

say "fracctl node mps status"
FRACCTL_MPS_PIPE_DIR="$pipe" FRACCTL_MPS_LOG_DIR="$logs" FRACCTL_MPS_PROTOCOL="$protocol" \
  FRACCTL_MPS_PINNED_MEM_LIMITS="$device=$limit" timeout 30 "${fracctl[@]}" node mps status || true

say "stopping MPS (SIGTERM to the supervisor)"
kill -TERM "$supervisor"
rc=0
wait "$supervisor" || rc=$?
supervisor=""
say "supervisor exit code $rc (0: quit honoured; 4: quit hung and the daemon was killed)"
[[ $rc == 0 ]] || status=1
exit "$status"
