"""A pod's files, written where the runner binds them: volumes, the token, the message."""

from __future__ import annotations

import base64
from pathlib import Path

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import CONFIGMAPS
from fracctl.sandbox.pod_runner.launch import (
    SA_DIR,
    SECRETS,
    SERVICEACCOUNTS,
    TERMINATION_LOG,
    USER,
    WORKDIR,
    Launch,
    Obj,
    PodError,
    argv,
    chown,
    environment,
)

#: A bound token's lifetime as the ServiceAccount admission plugin asks for it.
TOKEN_SECONDS = 3607


def plan(kube: Kube, pod: Obj, *, work: Path, api: tuple[str, int], ca_file: str) -> Launch:
    """Everything the pod's one container needs, its files written under ``work``.

    Raises:
        PodError: something the pod names is missing or not supported here.
    """
    spec = pod["spec"]
    container = spec["containers"][0]
    user = _user(spec, container)
    work.mkdir(parents=True, exist_ok=True)
    chown(work, user)
    message_path = container.get("terminationMessagePath") or TERMINATION_LOG
    termination = work / "termination-log"
    termination.write_text("")
    chown(termination, user)
    launch = Launch(
        argv=argv(container),
        env=environment(kube, pod, container, api),
        cwd=container.get("workingDir") or WORKDIR,
        user=user,
        termination_file=termination,
        policy=container.get("terminationMessagePolicy") or "File",
        mounts=[(str(termination), message_path)],
    )
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        if mount.get("subPath"):
            raise PodError(f"volumeMount {mount['name']}: subPath is not supported here")
        volume = volumes.get(mount["name"])
        if volume is None:
            raise PodError(f"volumeMount {mount['name']}: no such volume in the pod")
        folder = _volume(kube, pod, volume, work / f"volume-{mount['name']}", user)
        launch.mounts.append((str(folder), mount["mountPath"]))
    if _automount(kube, pod) and not any(dst == SA_DIR for _s, dst in launch.mounts):
        folder = _token_volume(kube, pod, work / "serviceaccount", ca_file, user)
        launch.mounts.append((str(folder), SA_DIR))
    return launch


def _user(spec: Obj, container: Obj) -> tuple[int, int]:
    pod_ctx, ctx = spec.get("securityContext") or {}, container.get("securityContext") or {}
    uid = ctx.get("runAsUser", pod_ctx.get("runAsUser", USER[0]))
    gid = ctx.get("runAsGroup", pod_ctx.get("runAsGroup", USER[1]))
    return int(uid), int(gid)


def _volume(kube: Kube, pod: Obj, volume: Obj, folder: Path, user: tuple[int, int]) -> Path:
    ns = pod["metadata"]["namespace"]
    folder.mkdir(parents=True, exist_ok=True)
    chown(folder, user)
    if "emptyDir" in volume:
        return folder
    for key, ref, field in (("configMap", CONFIGMAPS, "name"), ("secret", SECRETS, "secretName")):
        if key not in volume:
            continue
        source = volume[key]
        obj = kube.get_or_none(ref, source[field], ns)
        if obj is None:
            if source.get("optional"):
                return folder
            raise PodError(f"volume {volume['name']}: {ref.kind} {ns}/{source[field]} not found")
        data = obj.get("data") or {}
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            value = data.get(item["key"])
            if value is None:
                raise PodError(f"volume {volume['name']}: no key {item['key']!r}")
            raw = base64.b64decode(value) if key == "secret" else str(value).encode()
            _write(folder / item["path"], raw, user)
        return folder
    raise PodError(f"volume {volume['name']}: only configMap, secret and emptyDir run here")


def _write(path: Path, data: bytes, user: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o644)
    chown(path, user)


def _automount(kube: Kube, pod: Obj) -> bool:
    spec = pod["spec"]
    if "automountServiceAccountToken" in spec:
        return bool(spec["automountServiceAccountToken"])
    sa = kube.get_or_none(SERVICEACCOUNTS, _account_of(pod), pod["metadata"]["namespace"])
    return bool((sa or {}).get("automountServiceAccountToken", True))


def _account_of(pod: Obj) -> str:
    return str(pod["spec"].get("serviceAccountName") or "default")


def _token_volume(kube: Kube, pod: Obj, folder: Path, ca_file: str, user: tuple[int, int]) -> Path:
    """The token, the CA and the namespace, as the admission plugin's projected volume."""
    ns, name = pod["metadata"]["namespace"], _account_of(pod)
    meta = pod["metadata"]
    spec: Obj = {"expirationSeconds": TOKEN_SECONDS}
    if pod["spec"].get("serviceAccountName"):  # bound to the pod, as the kubelet asks
        spec["boundObjectRef"] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "uid": meta["uid"],
        }
    # Without the name, the pod is as this API server left it: its ServiceAccount admission
    # plugin is off (it would have named "default"), so the token is the account's alone.
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"
    try:
        token = kube.request("POST", path, body=request)["status"]["token"]
    except Exception as e:  # noqa: BLE001 - the pod cannot start; say why, as a kubelet does
        raise PodError(f"the token of service account {ns}/{name}: {e}") from None
    folder.mkdir(parents=True, exist_ok=True)
    chown(folder, user)
    _write(folder / "token", token.encode(), user)
    _write(folder / "ca.crt", Path(ca_file).read_bytes(), user)
    _write(folder / "namespace", ns.encode(), user)
    return folder
