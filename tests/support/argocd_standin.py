"""STAND-IN for the Argo CD API server, for tests only. It is not Argo CD.

A real HTTP server on 127.0.0.1 (ephemeral port, a thread per request) that serves the
subset of Argo CD's REST API fracctl uses, with Argo CD's status codes and grpc-gateway
error bodies ``{"error", "code", "message", "details"}``:

* ``POST /api/v1/session`` ``{username, password}`` -> ``{token}``;
* ``GET /api/v1/applications/{name}[?refresh=normal|hard]``;
* ``POST /api/v1/applications/{name}/sync`` (``resources``, ``revision``, ``prune``,
  ``dryRun``, ``syncOptions.items``); HTTP 400 with gRPC code 9 (FailedPrecondition)
  ``another operation is already in progress`` while an operation runs;
* ``DELETE /api/v1/applications/{name}/operation``;
* ``GET /api/v1/applications/{name}/managed-resources`` (states as JSON strings);
* ``GET /api/v1/applications/{name}/manifests[?revision=]``;
* ``GET /api/v1/account/can-i/applications/{action}/{project}/{name}``.

Every call but the session needs ``Authorization: Bearer <token>`` (401 otherwise).

A sync runs in the background like Argo CD's controller: the application's
``operation`` is set and ``status.operationState`` cleared at once, then the worker
server-side applies each selected desired manifest to the REAL API server (field
manager ``argocd-controller``), records ``syncResult.resources[]`` with ``Synced`` or
``SyncFailed`` and the API's message, and finishes with phase Succeeded or Failed,
clearing ``operation`` in the same step.

Quirks (``quirk=``) reproduce the documented ways Argo CD says "Succeeded" and
"Synced" while the live object did not get git's value:

* ``"swallow-rejection"``: an apply the API server rejects (for example the immutable
  ``nodeSelector``, HTTP 422) is reported ``Synced``; the live object keeps its value.
* ``"skip"``: nothing is applied (as with ``ApplyOutOfSyncOnly`` on a stale cache); each
  selected resource is reported ``Synced``.
* ``"stale-manifests"``: the manifests from before the last :meth:`set_manifests` are
  applied (a stale repo-server cache) and reported as the current revision.

``quirk_syncs`` limits a quirk to the first N syncs (``None``: every sync).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import ssl
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from fracctl.adapters.kube import APPLY_PATCH, Kube
from fracctl.core.kube.resources import split_api_version
from fracctl.errors import ApiError, FracctlError, Invalid

QUIRKS = ("swallow-rejection", "skip", "stale-manifests")
FIELD_MANAGER = "argocd-controller"
TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"

Obj = dict[str, Any]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _revision_of(manifests: list[Obj]) -> str:
    return hashlib.sha1(json.dumps(manifests, sort_keys=True).encode()).hexdigest()


def _key(obj: Obj) -> tuple[str, str, str, str]:
    group, _ = split_api_version(str(obj.get("apiVersion", "")))
    meta = obj.get("metadata") or {}
    return (group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta["name"]))


def _subset(want: Any, have: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in want.items())
    return bool(want == have)


def load_dir(path: Path) -> list[Obj]:
    """Every object in the directory's ``*.yaml``/``*.yml`` files (recursively, sorted)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    out: list[Obj] = []
    files = sorted(
        p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and ".git" not in p.parts
    )
    for file in files:
        for doc in yaml.load_all(file.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                out.append(doc)
    return out


class _Reply(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def grpc_error(status: int, code: int, message: str) -> _Reply:
    """An error reply in grpc-gateway's shape."""
    return _Reply(status, {"error": message, "code": code, "message": message, "details": []})


class ArgoCDStandIn:
    """A stand-in Argo CD server managing one application on the real API server.

    Args:
        kubeconfig: the control plane the application deploys to.
        manifests: the desired objects (dicts), or a directory of YAML files read at
            each sync and each read.
        token: the bearer token it accepts (and hands out from ``/api/v1/session``).
        quirk: one of :data:`QUIRKS`, or None for an honest sync.
        quirk_syncs: how many syncs the quirk affects (None: all).
        app_name: the application's name.
        username, password: credentials for ``/api/v1/session``.
        denied: actions (``get``, ``sync``) answered 403, as RBAC would.
        step_delay: seconds the worker pauses after each resource (an observable
            ``Running`` phase).
        tls: ``(certfile, keyfile)`` to serve HTTPS.
    """

    def __init__(
        self,
        *,
        kubeconfig: str,
        manifests: list[Obj] | str | Path,
        token: str | None = None,
        quirk: str | None = None,
        quirk_syncs: int | None = None,
        app_name: str = "gpu-fractioning",
        project: str = "default",
        username: str = "admin",
        password: str = "standin-password",
        denied: set[str] | None = None,
        step_delay: float = 0.02,
        tls: tuple[str, str] | None = None,
    ) -> None:
        if quirk is not None and quirk not in QUIRKS:
            raise ValueError(f"quirk must be one of {QUIRKS}, got {quirk!r}")
        self.kube = Kube.connect(kubeconfig=kubeconfig)
        self.token = token or f"standin-{secrets.token_hex(16)}"
        self.quirk = quirk
        self.quirk_syncs = quirk_syncs
        self.app_name = app_name
        self.project = project
        self.username = username
        self.password = password
        self.denied = set(denied or ())
        self.step_delay = step_delay
        self.tls = tls

        self._lock = threading.RLock()
        self._source: list[Obj] | Path
        self._revisions: dict[str, list[Obj]] = {}
        self._previous: list[Obj] | None = None
        self._set_source(manifests)
        self._operation: Obj | None = None
        self._op_state: Obj | None = None
        self._terminate = threading.Event()
        self._foreign: threading.Event | None = None
        self._release_after: int | None = None
        self._fail_next: list[_Reply] = []
        self._workers: list[threading.Thread] = []
        self._generation = 1
        #: Cleared, it holds a running sync before its next resource (set it to go on).
        self.gate = threading.Event()
        self.gate.set()

        # What happened, for assertions.
        self.requests: list[tuple[str, str, dict[str, list[str]], Any]] = []
        self.sync_requests: list[Obj] = []
        self.refreshes: list[str] = []
        self.busy_rejections = 0
        #: Set, ``syncwindows`` answers ``canSync: false`` (a deny window is active).
        self.sync_blocked = False

        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle -------------------------------------------------------------------

    def __enter__(self) -> ArgoCDStandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen on an ephemeral loopback port."""
        standin = self

        class Handler(_Handler):
            owner = standin

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving; finish running operations first (bounded)."""
        if self._foreign is not None:
            self._foreign.set()
        self.gate.set()
        for worker in list(self._workers):
            worker.join(timeout=30)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host}:{port}"

    @property
    def address(self) -> str:
        """``host:port``, as ``ARGOCD_SERVER`` is usually written."""
        return self.url.split("://", 1)[1]

    # --- the desired state ------------------------------------------------------------

    def _set_source(self, manifests: list[Obj] | str | Path) -> None:
        if isinstance(manifests, (str, Path)):
            self._source = Path(manifests)
        else:
            self._source = [json.loads(json.dumps(m)) for m in manifests]
            self._revisions[_revision_of(self._source)] = self._source

    def set_manifests(self, manifests: list[Obj] | str | Path) -> str:
        """Change what git holds (a new commit); returns the new revision."""
        with self._lock:
            self._previous = self.desired()
            self._set_source(manifests)
            return self.revision()

    def desired(self, revision: str | None = None) -> list[Obj]:
        """The desired manifests at ``revision`` (default: the current one)."""
        with self._lock:
            if revision:
                if revision in self._revisions:
                    return self._revisions[revision]
                current = self.desired()
                if _revision_of(current) == revision or revision in ("HEAD", "main"):
                    return current
                raise KeyError(revision)
            if isinstance(self._source, Path):
                objs = load_dir(self._source)
                self._revisions[_revision_of(objs)] = objs
                return objs
            return self._source

    def revision(self) -> str:
        """The current revision (a hash of the desired manifests)."""
        return _revision_of(self.desired())

    # --- test hooks -------------------------------------------------------------------

    def fail_next(self, status: int, code: int, message: str) -> None:
        """Answer the next authenticated request with this error."""
        with self._lock:
            self._fail_next.append(grpc_error(status, code, message))

    def begin_foreign_operation(self, *, release_after_rejections: int | None = None) -> None:
        """Start an operation nobody here asked for (say an automated sync) that holds.

        It ends on :meth:`end_foreign_operation`, or once ``release_after_rejections``
        syncs have been refused because of it.
        """
        with self._lock:
            if self._operation is not None:
                raise RuntimeError("an operation is already running")
            op = {
                "sync": {"revision": self.revision()},
                "initiatedBy": {"automated": True},
                "retry": {},
            }
            self._operation = op
            self._op_state = {
                "operation": op,
                "phase": "Running",
                "message": "waiting for healthy state of apps/Deployment elsewhere",
                "startedAt": _now(),
            }
            self._foreign = threading.Event()
            self._release_after = release_after_rejections

    def end_foreign_operation(self) -> None:
        """Let the foreign operation finish (Succeeded)."""
        with self._lock:
            if self._foreign is None:
                return
            self._foreign.set()
            self._foreign = None
            self._release_after = None
            state = dict(self._op_state or {})
            state.update(phase="Succeeded", message="successfully synced", finishedAt=_now())
            self._op_state = state
            self._operation = None

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Block until no sync worker runs."""
        for worker in list(self._workers):
            worker.join(timeout=timeout)

    # --- the application --------------------------------------------------------------

    def _quirk_now(self) -> str | None:
        if self.quirk is None:
            return None
        if self.quirk_syncs is None:
            return self.quirk
        if self.quirk_syncs <= 0:
            return None
        self.quirk_syncs -= 1
        return self.quirk

    def _live(self, obj: Obj) -> Obj | None:
        try:
            ref = self.kube.resolve(obj["apiVersion"], obj["kind"])
        except FracctlError:
            return None
        return self.kube.get_or_none(ref, obj["metadata"]["name"], obj["metadata"].get("namespace"))

    def _resource_status(self, obj: Obj, live: Obj | None) -> tuple[str, str]:
        if live is None:
            return "OutOfSync", "Missing"
        body = {
            k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")
        }
        in_sync = _subset(body, live)
        return ("Synced" if in_sync else "OutOfSync"), "Healthy"

    def application(self) -> Obj:
        """The Application as ``GET /api/v1/applications/{name}`` returns it."""
        desired = self.desired()
        resources = []
        overall = "Synced"
        health = "Healthy"
        for obj in desired:
            live = self._live(obj)
            sync_status, res_health = self._resource_status(obj, live)
            if self.quirk is not None:
                sync_status = "Synced"  # the quirk's lie extends to the comparison
            if sync_status != "Synced":
                overall = "OutOfSync"
            if res_health != "Healthy":
                health = "Missing"
            group, kind, namespace, name = _key(obj)
            resources.append(
                {
                    "group": group,
                    "version": split_api_version(obj["apiVersion"])[1],
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                    "status": sync_status,
                    "health": {"status": res_health},
                }
            )
        with self._lock:
            app: Obj = {
                "metadata": {
                    "name": self.app_name,
                    "namespace": "argocd",
                    "generation": self._generation,
                },
                "spec": {
                    "project": self.project,
                    "source": {
                        "repoURL": "file:///standin/gitops",
                        "path": ".",
                        "targetRevision": "HEAD",
                    },
                    "destination": {"server": "https://kubernetes.default.svc"},
                },
                "status": {
                    "sync": {"status": overall, "revision": self.revision()},
                    "health": {"status": health},
                    "resources": resources,
                    "reconciledAt": _now(),
                },
            }
            if self._op_state is not None:
                app["status"]["operationState"] = json.loads(json.dumps(self._op_state))
            if self._operation is not None:
                app["operation"] = json.loads(json.dumps(self._operation))
        return app

    def managed_resources(self, query: dict[str, list[str]]) -> Obj:
        """``{items: [...]}`` with live and target states as JSON strings."""
        items = []
        for obj in self.desired():
            group, kind, namespace, name = _key(obj)
            want = {"group": group, "kind": kind, "namespace": namespace, "name": name}
            if any(query.get(k, [v])[0] != v for k, v in want.items()):
                continue
            live = self._live(obj)
            sync_status, _ = self._resource_status(obj, live)
            items.append(
                {
                    **want,
                    "version": split_api_version(obj["apiVersion"])[1],
                    "targetState": json.dumps(obj),
                    "liveState": json.dumps(live),
                    "normalizedLiveState": json.dumps(live),
                    "hook": False,
                    "modified": sync_status != "Synced",
                }
            )
        return {"items": items}

    # --- sync -------------------------------------------------------------------------

    def sync(self, body: Obj) -> Obj:
        """Accept a sync request and start the operation in the background."""
        with self._lock:
            if self._operation is not None:
                self.busy_rejections += 1
                if self._release_after is not None and self.busy_rejections >= self._release_after:
                    self.end_foreign_operation()
                raise grpc_error(400, 9, "another operation is already in progress")
            self.sync_requests.append(body)
            sync: Obj = {
                "revision": body.get("revision") or self.revision(),
                "prune": bool(body.get("prune")),
                "dryRun": bool(body.get("dryRun")),
                "syncOptions": list((body.get("syncOptions") or {}).get("items") or []),
            }
            if body.get("resources") is not None:
                sync["resources"] = body["resources"]
            op = {"sync": sync, "initiatedBy": {"username": self.username}, "retry": {}}
            self._operation = op
            self._op_state = None  # as Argo CD's SetAppOperation does
            self._terminate.clear()
            self._generation += 1
            quirk = None if sync["dryRun"] else self._quirk_now()  # quirks hit real syncs
            worker = threading.Thread(
                target=self._run, args=(op, body.get("revision"), quirk), daemon=True
            )
            self._workers.append(worker)
        # Answer with the state as of the request: the worker may finish at once.
        response = self.application()
        worker.start()
        return response

    def terminate(self) -> Obj:
        """Ask the running operation to stop."""
        with self._lock:
            if self._operation is None:
                raise grpc_error(
                    400, 3, "Unable to terminate operation. No operation is in progress"
                )
            if self._foreign is not None:
                self._foreign.set()
                state = dict(self._op_state or {})
                state.update(phase="Failed", message="Operation terminated", finishedAt=_now())
                self._op_state = state
                self._operation = None
                self._foreign = None
                return {}
            self._terminate.set()
            if self._op_state is not None:
                self._op_state["phase"] = "Terminating"
        return {}

    def _run(self, op: Obj, revision: str | None, quirk: str | None) -> None:
        started = _now()
        state: Obj = {
            "operation": op,
            "phase": "Running",
            "message": "",
            "startedAt": started,
            "syncResult": {"revision": op["sync"]["revision"], "resources": []},
        }
        time.sleep(self.step_delay)  # the controller picks the operation up a moment later
        with self._lock:
            self._op_state = state
        try:
            desired = self.desired(revision)
        except KeyError:
            self._finish(
                state,
                "Error",
                f"rpc error: code = Unknown desc = unable to resolve '{revision}' to a commit SHA",
            )
            return
        if quirk == "stale-manifests" and self._previous is not None:
            desired = self._previous
        wanted = op["sync"].get("resources")
        selected = [
            obj
            for obj in desired
            if wanted is None
            or any(
                (r.get("group") or "", r.get("kind"), r.get("namespace") or "", r.get("name"))
                == _key(obj)
                for r in wanted
            )
        ]
        failures: list[str] = []
        for obj in selected:
            self.gate.wait(timeout=60)
            if self._terminate.is_set():
                self._finish(state, "Failed", "Operation terminated")
                return
            result = self._apply(obj, dry_run=op["sync"]["dryRun"], quirk=quirk)
            with self._lock:
                state["syncResult"]["resources"].append(result)
            if result["status"] == "SyncFailed":
                failures.append(result["message"])
            time.sleep(self.step_delay)
        if self._terminate.is_set():
            self._finish(state, "Failed", "Operation terminated")
        elif failures:
            self._finish(
                state, "Failed", f"one or more objects failed to apply, reason: {failures[0]}"
            )
        else:
            self._finish(state, "Succeeded", "successfully synced (all tasks run)")

    def _finish(self, state: Obj, phase: str, message: str) -> None:
        with self._lock:
            state.update(phase=phase, message=message, finishedAt=_now())
            self._op_state = state
            self._operation = None  # cleared together with the final state

    def _apply(self, obj: Obj, *, dry_run: bool, quirk: str | None) -> Obj:
        group, kind, namespace, name = _key(obj)
        version = split_api_version(obj["apiVersion"])[1]
        result: Obj = {
            "group": group,
            "version": version,
            "kind": kind,
            "namespace": namespace,
            "name": name,
            "syncPhase": "Sync",
        }
        ident = f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}"
        suffix = " (dry run)" if dry_run else ""
        if quirk == "skip":
            return {
                **result,
                "status": "Synced",
                "message": f"{ident} unchanged",
                "hookPhase": "Succeeded",
            }
        if dry_run:
            # As the real v3.2.11 does (contract test): kubectl's client-side dry run,
            # which reads the live object and sends nothing to the API server's admission.
            live = self._live(obj)
            verb = "configured" if live is not None else "created"
            return {
                **result,
                "status": "Synced",
                "message": f"{ident} {verb}{suffix}",
                "hookPhase": "Succeeded",
            }
        body = json.loads(json.dumps(obj))
        meta = body.setdefault("metadata", {})
        meta.setdefault("annotations", {})[TRACKING_ANNOTATION] = (
            f"{self.app_name}:{group}/{kind}:{namespace}/{name}"
        )
        try:
            ref = self.kube.resolve(obj["apiVersion"], kind)
            self.kube.patch(
                ref,
                name,
                body,
                namespace=namespace or None,
                content_type=APPLY_PATCH,
                field_manager=FIELD_MANAGER,
                force=True,
                dry_run=dry_run,
            )
        except ApiError as e:
            if quirk == "swallow-rejection" and isinstance(e, Invalid):
                return {
                    **result,
                    "status": "Synced",
                    "message": f"{ident} serverside-applied{suffix}",
                    "hookPhase": "Succeeded",
                }
            causes = "; ".join(f"{c.field}: {c.message}" for c in e.status.causes)
            message = f"{e.status.message}" + (
                f" ({causes})" if causes and causes not in e.status.message else ""
            )
            return {**result, "status": "SyncFailed", "message": message, "hookPhase": "Failed"}
        return {
            **result,
            "status": "Synced",
            "message": f"{ident} serverside-applied{suffix}",
            "hookPhase": "Succeeded",
        }

    # --- request dispatch -------------------------------------------------------------

    def handle(self, method: str, raw_path: str, headers: Any, body: Any) -> tuple[int, Any]:
        """Route one request; returns ``(status, JSON body)``."""
        parts = urlsplit(raw_path)
        query = parse_qs(parts.query)
        path = parts.path.rstrip("/")
        self.requests.append((method, path, query, body))
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip()
        if method in ("POST", "DELETE") and content_type != "application/json":
            return 415, "Invalid content type\n"  # plain text, as the real server answers
        try:
            if method == "POST" and path == "/api/v1/session":
                return 200, self._session(body)
            self._authenticate(headers)
            with self._lock:
                if self._fail_next:
                    raise self._fail_next.pop(0)
            return 200, self._route(method, path, query, body)
        except _Reply as r:
            return r.status, r.body

    def _session(self, body: Any) -> Obj:
        if (
            not isinstance(body, dict)
            or body.get("username") != self.username
            or body.get("password") != self.password
        ):
            raise grpc_error(401, 16, "Invalid username or password")
        return {"token": self.token}

    def _authenticate(self, headers: Any) -> None:
        auth = headers.get("Authorization") or ""
        if not auth:
            raise grpc_error(401, 16, "no session information")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip(), self.token):
            raise grpc_error(401, 16, "invalid session: token signature is invalid")

    def _deny(self, action: str) -> None:
        if action in self.denied:
            raise grpc_error(
                403,
                7,
                f"permission denied: applications, {action}, {self.project}/{self.app_name}, "
                f"sub: {self.username}",
            )

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        can_i = "/api/v1/account/can-i/"
        if method == "GET" and path.startswith(can_i):
            # Argo CD answers for the token's own account, whether or not the object exists.
            resource, action, *sub = (unquote(p) for p in path[len(can_i) :].split("/"))
            allowed = resource == "applications" and action not in self.denied
            return {"value": "yes" if allowed else "no"}
        prefix = "/api/v1/applications/"
        if not path.startswith(prefix):
            raise grpc_error(404, 5, "Not Found")
        name, _, sub = path[len(prefix) :].partition("/")
        name = unquote(name)
        # Terminating an operation needs the "sync" permission, as in Argo CD.
        action = "get" if method == "GET" else "sync"
        # RBAC is checked first: a user without access cannot tell whether an app exists.
        self._deny(action)
        if name != self.app_name:
            # As the real v3.2.11 answers (contract test): 403, never 404, so that a
            # caller cannot tell a missing app from one it may not see.
            raise grpc_error(403, 7, "permission denied")
        if method == "GET" and sub == "":
            refresh = (query.get("refresh") or [""])[0]
            if refresh:
                if refresh not in ("normal", "hard"):
                    raise grpc_error(400, 3, f"unknown refresh type {refresh!r}")
                self.refreshes.append(refresh)
            return self.application()
        if method == "GET" and sub == "managed-resources":
            return self.managed_resources(query)
        if method == "GET" and sub == "manifests":
            revision = (query.get("revision") or [""])[0] or None
            try:
                objs = self.desired(revision)
            except KeyError:
                raise grpc_error(
                    500,
                    2,
                    "rpc error: code = Unknown desc = "
                    f"unable to resolve '{revision}' to a commit SHA",
                ) from None
            return {
                "manifests": [json.dumps(o) for o in objs],
                "revision": revision or self.revision(),
                "sourceType": "Directory",
                "namespace": "",
                "server": "https://kubernetes.default.svc",
            }
        if method == "GET" and sub == "syncwindows":
            # As the real v3.2.11 answers with no window assigned (contract test).
            return {"canSync": not self.sync_blocked}
        if method == "POST" and sub == "sync":
            if not isinstance(body, dict):
                raise grpc_error(400, 3, "invalid request body")
            return self.sync(body)
        if method == "DELETE" and sub == "operation":
            return self.terminate()
        raise grpc_error(404, 5, "Not Found")


class _Handler(BaseHTTPRequestHandler):
    owner: ArgoCDStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # quiet; and request lines are never logged anywhere

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        try:
            status, payload = self.owner.handle(self.command, self.path, self.headers, body)
        except Exception as e:  # noqa: BLE001 - a bug in the stand-in shows as a 500
            status, payload = 500, {"error": str(e), "code": 13, "message": str(e), "details": []}
        text = isinstance(payload, str)
        data = payload.encode() if text else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _serve
    do_POST = _serve
    do_DELETE = _serve
