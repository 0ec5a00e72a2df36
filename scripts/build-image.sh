#!/usr/bin/env bash
# Build the Containerfile's image with podman/buildah (vfs storage, chroot isolation) and
# check it: `fracctl --version`, `fracctl drift --help`, a non-root user, no pip, kustomize,
# the OCI labels and the entrypoint. Needs root (or a user namespace) and Debian packages
# only: podman, buildah and mmdebstrap are installed with apt-get when missing.
#
# With --offline-base (for machines that reach no image registry) the base images are
# made here: a Debian bookworm root filesystem from mmdebstrap (python3 3.11, venv, git)
# stands in for the slim Python image, and the same plus this machine's Go toolchain for
# the Go image. The host's CA bundle goes into both, so a TLS-intercepting proxy the host
# trusts is trusted inside the build too.
#
#   scripts/build-image.sh [--offline-base] [TAG]      (default TAG: fracctl:<version>)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
offline=0
if [[ "${1:-}" == "--offline-base" ]]; then offline=1; shift; fi
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$repo/fracctl/__init__.py")"
tag="${1:-fracctl:$version}"
storage=(--storage-driver vfs)

need=()
command -v podman >/dev/null || need+=(podman)
command -v buildah >/dev/null || need+=(buildah)
if (( offline )); then command -v mmdebstrap >/dev/null || need+=(mmdebstrap); fi
if (( ${#need[@]} )); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" uidmap >/dev/null
fi

build_args=(--build-arg "VERSION=$version")
if (( offline )); then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mmdebstrap --quiet --variant=minbase \
    --include=python3,python3-venv,python-is-python3,git,ca-certificates \
    bookworm "$work/rootfs.tar"
  mkdir "$work/root"
  tar -xf "$work/rootfs.tar" -C "$work/root"
  cp /etc/ssl/certs/ca-certificates.crt "$work/root/etc/ssl/certs/ca-certificates.crt"
  tar -C "$work/root" -cf "$work/python.tar" .
  podman "${storage[@]}" import --quiet --change 'CMD ["python3"]' \
    "$work/python.tar" fracctl-base-python:bookworm >/dev/null
  goroot="$(go env GOROOT)"
  mkdir -p "$work/root/usr/local"
  cp -a "$goroot" "$work/root/usr/local/go"
  tar -C "$work/root" -cf "$work/go.tar" .
  podman "${storage[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$work/go.tar" fracctl-base-go:host >/dev/null
  rm -rf "$work/root" "$work"/*.tar
  build_args+=(--build-arg PYTHON_IMAGE=fracctl-base-python:bookworm
               --build-arg GO_IMAGE=fracctl-base-go:host --pull=never)
fi

start=$(date +%s)
podman "${storage[@]}" build --isolation chroot --network host "${build_args[@]}" \
  -t "$tag" -f "$repo/Containerfile" "$repo"
echo "build-image: built $tag in $(( $(date +%s) - start ))s" >&2

# Run it. buildah's chroot isolation works where an OCI runtime cannot start containers.
ctr="$(buildah "${storage[@]}" from --pull-never "$tag")"
trap 'buildah "${storage[@]}" rm "$ctr" >/dev/null 2>&1 || true; rm -rf "${work:-/nonexistent-}"' EXIT
in_image() { buildah "${storage[@]}" run --isolation chroot "$ctr" -- "$@"; }
fail() { echo "build-image: $*" >&2; exit 1; }

[[ "$(in_image fracctl --version)" == "fracctl $version" ]] || fail "fracctl --version is wrong"
help="$(in_image fracctl drift --help)" || fail "fracctl drift --help failed"
grep -q "Usage: fracctl drift" <<<"$help" || fail "fracctl drift --help printed no usage"
[[ "$(in_image id -u)" != "0" ]] || fail "the image runs as root"
in_image sh -c '! python -m pip --version' >/dev/null 2>&1 || fail "pip is in the runtime image"
in_image kustomize version >/dev/null || fail "kustomize is missing"
in_image git --version >/dev/null || fail "git is missing"
fmt='{{json .Config.Entrypoint}} {{.Config.User}} {{index .Config.Labels "org.opencontainers.image.version"}}'
got="$(podman "${storage[@]}" inspect --format "$fmt" "$tag")"
[[ "$got" == "[\"fracctl\"] 65532:65532 $version" ]] || fail "entrypoint/user/labels: $got"
echo "build-image: $tag runs: fracctl --version, fracctl drift --help, non-root, no pip" >&2
