#!/usr/bin/env bash
# Regenerate deploy/rbac/*.yaml from `fracctl rbac print`, and deploy/policy/guard.yaml from
# `fracctl policy print`, with the default configuration.
# tests/project/test_deploy.py fails while the committed files differ from this output.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
fracctl="${FRACCTL:-$repo/.venv/bin/fracctl}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python="$(dirname "$fracctl")/python"
roles="$("$python" -c 'from fracctl.core.rbac import ROLES; print(*ROLES)')"
for role in $roles; do
  # An empty folder and environment: no fracctl.yaml or FRACCTL_* setting applies.
  (cd "$scratch" && env -i PATH="$PATH" HOME="$scratch" "$fracctl" rbac print --role "$role") \
    > "$repo/deploy/rbac/$role.yaml"
done
# The guard policy (fracctl policy print), for the defaults as well.
(cd "$scratch" && env -i PATH="$PATH" HOME="$scratch" "$fracctl" policy print) \
  > "$repo/deploy/policy/guard.yaml"
"$python" "$repo/scripts/generate-gate-component.py"
