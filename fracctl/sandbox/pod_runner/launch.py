"""From a pod to a process: what the runner starts, and with what (see the package)."""

from __future__ import annotations

import base64
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import CONFIGMAPS, ResourceRef

Obj = dict[str, Any]
SECRETS = ResourceRef("", "v1", "secrets", "Secret", namespaced=True)
SERVICEACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)

# The image's own configuration, as the Containerfile sets it
# (tests/sandbox/test_pod_runner_contract.py holds them equal).
ENTRYPOINT = ("fracctl",)
CMD = ("--help",)
WORKDIR = "/tmp"
USER = (65532, 65532)
IMAGE_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
IMAGE_BIN = "/opt/fracctl/bin"  # the image's install; here, this fracctl's bin folder
IMAGE_HOME = "/nonexistent"  # the image user's home (useradd --home-dir)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Where the ServiceAccount admission plugin mounts the token, and the kubelet's default.
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TERMINATION_LOG = "/dev/termination-log"
#: Every source is bound from this view of the whole host tree, taken first, so that a
#: volume mounted over a folder (``/tmp``) hides nothing a later mount or fracctl needs.
ROOT_VIEW = "/var/lib/fracctl-pod-runner/root"


class PodError(Exception):
    """The pod cannot be started as written (a kubelet's CreateContainerConfigError)."""


@dataclass
class Launch:
    """One container's process: its argv, environment, folder, user and files."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    user: tuple[int, int]
    termination_file: Path
    policy: str  # terminationMessagePolicy
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (host path, pod path)

    def wrapped(self, *, switch_user: bool = True) -> list[str]:
        """The argv that runs it in a mount namespace of its own, with its files bound."""
        q = shlex.quote
        lines = ["set -e", f"mkdir -p {q(ROOT_VIEW)}", f"mount --rbind / {q(ROOT_VIEW)}"]
        for src, dst in sorted(self.mounts, key=lambda m: len(Path(m[1]).parts)):
            # A mount point where the image would have one: a folder, or a file for a file.
            point = (
                f"mkdir -p {q(dst)}"
                if Path(src).is_dir()
                else (f"mkdir -p {q(str(Path(dst).parent))} && touch {q(dst)}")
            )
            lines += [
                f"[ -e {q(dst)} ] || {{ {point}; }}",
                f"mount --bind {q(ROOT_VIEW + src)} {q(dst)}",
            ]
        roots = install_roots()
        for root in roots:  # fracctl itself stays where it is
            hidden = any(_under(root, dst) and root != dst for _src, dst in self.mounts)
            if hidden:
                lines += [f"mkdir -p {q(root)}", f"mount --bind {q(ROOT_VIEW + root)} {q(root)}"]
        if switch_user:
            lines += self._reachable(roots)
        lines.append(f"cd {q(self.cwd)}")
        uid, gid = self.user
        switch = f"/usr/bin/setpriv --reuid {uid} --regid {gid} --clear-groups -- " * switch_user
        lines.append(f'exec {switch}"$@"')
        unshare = ["/usr/bin/unshare", "--mount", "--propagation", "private"]
        if not switch_user:
            unshare.insert(1, "--map-root-user")
            unshare.insert(1, "--user")
        return [*unshare, "--", "/bin/sh", "-c", "\n".join(lines), "sh", *self.argv]

    def _reachable(self, roots: list[str]) -> list[str]:
        """Lines that let the image's user reach fracctl's install through a private folder.

        A checkout under a folder others may not enter (``mktemp -d``, a 0700 home) keeps
        the image's user (uid 65532) from the venv's ``fracctl``: in this mount namespace
        an empty world-readable tmpfs covers that folder, and fracctl's own folders alone
        are bound back into it, as the image has its install under ``/opt``.
        """
        q = shlex.quote
        out: list[str] = []
        covered = {str(Path(dst)) for _src, dst in self.mounts}
        for folder in sorted({f for r in roots if (f := _closed(r))}):
            if any(_under(folder, dst) for dst in covered):
                continue  # a volume mounted over it already: the roots were bound afresh
            out.append(f"mount -t tmpfs -o mode=0755 tmpfs {q(folder)}")
            for root in (r for r in roots if _under(r, folder)):
                out += [f"mkdir -p {q(root)}", f"mount --bind {q(ROOT_VIEW + root)} {q(root)}"]
        return out


def _closed(path: str) -> str | None:
    """The first folder above ``path`` that others may not enter (no ``o+x``), if any."""
    folder = Path("/")
    for part in Path(path).parts[1:-1]:
        folder = folder / part
        try:
            if not folder.stat().st_mode & 0o001:
                return str(folder)
        except OSError:
            return None
    return None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def install_roots() -> list[str]:
    """Where this fracctl lives (its environment, and its source for an editable install)."""
    import fracctl

    roots = {str(Path(sys.prefix).resolve()), str(Path(fracctl.__file__).resolve().parents[1])}
    return sorted(roots)


def fracctl_bin() -> str:
    """The folder of this fracctl's executable: the stand-in for the image's install."""
    return str(Path(sys.executable).parent)


def argv(container: Obj) -> list[str]:
    """The process's argv, by Kubernetes' rules for command and args over the image's."""
    command, args = container.get("command"), container.get("args")
    if command:
        return [*command, *(args or [])]
    return [*ENTRYPOINT, *(args if args is not None else CMD)]


def environment(kube: Kube, pod: Obj, container: Obj, api: tuple[str, int]) -> dict[str, str]:
    """The image's environment, the service's address, then the container's own."""
    host, port = api
    env = {
        "PATH": f"{fracctl_bin()}:{SYSTEM_PATH}",
        **IMAGE_ENV,
        "HOME": IMAGE_HOME,
        "HOSTNAME": pod["metadata"]["name"],
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
    }
    for var in container.get("env") or []:
        env[var["name"]] = _value(kube, pod, var)
    return env


def _value(kube: Kube, pod: Obj, var: Obj) -> str:
    if "valueFrom" not in var:
        return str(var.get("value", ""))
    source, ns = var["valueFrom"], pod["metadata"]["namespace"]
    if "fieldRef" in source:
        path = source["fieldRef"]["fieldPath"]
        fields: dict[str, str] = {
            "metadata.name": pod["metadata"]["name"],
            "metadata.namespace": ns,
            "metadata.uid": pod["metadata"]["uid"],
            "spec.nodeName": pod["spec"].get("nodeName", ""),
            "spec.serviceAccountName": _account(pod),
        }
        for key in ("annotations", "labels"):  # metadata.annotations['name']
            prefix = f"metadata.{key}['"
            if path.startswith(prefix) and path.endswith("']"):
                fields[path] = (pod["metadata"].get(key) or {}).get(path[len(prefix) : -2], "")
        if path not in fields:
            raise PodError(f"env {var['name']}: fieldRef {path} is not supported here")
        return str(fields[path])
    for key, ref, decode in (
        ("configMapKeyRef", CONFIGMAPS, False),
        ("secretKeyRef", SECRETS, True),
    ):
        if key in source:
            want = source[key]
            obj = kube.get_or_none(ref, want["name"], ns)
            data = (obj or {}).get("data") or {}
            if want["key"] not in data:
                raise PodError(
                    f"env {var['name']}: {ref.kind} {ns}/{want['name']} has no key {want['key']!r}"
                )
            value = data[want["key"]]
            return base64.b64decode(value).decode() if decode else str(value)
    raise PodError(f"env {var['name']}: this valueFrom is not supported here")


def _account(pod: Obj) -> str:
    return str(pod["spec"].get("serviceAccountName") or "default")


def chown(path: Path, user: tuple[int, int]) -> None:
    """Give ``path`` to the container's user, as a kubelet's volumes are readable by it."""
    if os.geteuid() == 0:
        os.chown(path, *user)
