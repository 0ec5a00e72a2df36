#!/usr/bin/env bash
# Build fracctl's wheel with the locked build backend and fail on any warning it prints
# (a deprecation today is a broken build tomorrow). pip hides the backend's output unless
# asked, so the build runs verbosely and its warnings are picked out here.
# Usage: scripts/check-build.sh [PYTHON]   (default .venv/bin/python)
set -euo pipefail
python="${1:-.venv/bin/python}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
env -u PYTHONDONTWRITEBYTECODE "$python" -m pip wheel -v --no-deps --no-build-isolation -w "$out" . >"$out/log" 2>&1 || {
  cat "$out/log" >&2
  exit 1
}
if grep -Ei '(deprecat|warning)' "$out/log" | grep -v 'pip is looking' >"$out/warnings"; then
  echo "check-build: the build backend warned:" >&2
  cat "$out/warnings" >&2
  exit 1
fi
echo "check-build: $(ls "$out"/*.whl | xargs -n1 basename) built without a warning"
