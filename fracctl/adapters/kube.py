"""The Kubernetes API adapter: raw JSON over the client library's connection pool.

The ``kubernetes`` package loads kubeconfig (contexts, exec plugins, in-cluster tokens)
and builds the TLS connection pool; requests and responses stay plain dicts, which is
much faster than the generated models and lets lists be requested as metadata only.
Every failure becomes a :mod:`fracctl.errors` exception; credentials never reach a
message.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fracctl.adapters import kubeproto
from fracctl.core.clock import Backoff, Clock
from fracctl.core.resources import CRDS, PODS, ResourceRef, split_api_version
from fracctl.errors import (
    ApiError,
    ApiStatus,
    Cause,
    ConfigError,
    ExternalError,
    NotFound,
    Unreachable,
    api_error_for,
)
from fracctl.redact import header_problem, redact, register_many

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + JSON
POD_LIST = f"{kubeproto.PROTOBUF}, {JSON}"

Obj = dict[str, Any]


class Kube:
    """A small, typed-by-convention Kubernetes client returning plain dicts."""

    def __init__(self, configuration: Any, *, timeout: float = 30.0) -> None:
        from kubernetes.client import ApiClient

        register_credentials(configuration)
        self._api = ApiClient(configuration)
        self._pool = self._api.rest_client.pool_manager
        self.host = str(configuration.host).rstrip("/")
        self.timeout = timeout
        self.calls: Counter[str] = Counter()  # "VERB plural" -> count, for tests and benchmarks
        self._calls_lock = threading.Lock()  # requests may come from several threads
        self._discovery: dict[tuple[str, str], ResourceRef] = {}
        self._discovered: set[str] = set()

    def _count(self, call: str) -> None:
        with self._calls_lock:
            self.calls[call] += 1

    def close(self) -> None:
        """Close pooled connections (also done when the client is garbage collected)."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.clear()

    def __del__(self) -> None:
        self.close()

    # --- construction -----------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> Kube:
        """Load credentials from a kubeconfig (or the in-cluster service account).

        The kubeconfig is found as kubectl finds it: ``kubeconfig``, else the files
        listed in ``$KUBECONFIG`` (read from ``env``, default ``os.environ``, at call
        time), else ``~/.kube/config``.

        Raises:
            ConfigError: one line naming the file (or the context): missing, not YAML,
                not a kubeconfig, no such context. Never its contents.
        """
        from kubernetes import config as kconfig
        from kubernetes.client import Configuration
        from kubernetes.config.config_exception import ConfigException

        configuration = Configuration()
        if in_cluster:
            try:
                kconfig.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except ConfigException as e:
                raise ConfigError(f"in-cluster config: {_first_line(str(e))}") from None
            return cls(configuration, timeout=timeout)
        files, name = kubeconfig_files(kubeconfig, os.environ if env is None else env)
        check_kubeconfig(files, name, context)
        try:
            kconfig.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=os.pathsep.join(files),
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except ConfigException as e:
            # The library names an entry by its whole dict ("…/{'name': 'u', 'user': …}"),
            # which for a user holds its credentials.
            why = re.sub(r"\{.*\}", "{…}", _first_line(str(e)))
            raise ConfigError(f"kubeconfig {name}: {why}") from None
        except OSError as e:
            raise ConfigError(f"kubeconfig {name}: {e.strerror}: {e.filename}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            # a malformed entry the checks above do not look into (a cluster, a user)
            raise ConfigError(
                f"kubeconfig {name}: not a valid kubeconfig ({type(e).__name__})"
            ) from None
        return cls(configuration, timeout=timeout)

    # --- raw requests -----------------------------------------------------------------

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": "fracctl"}
        if content_type:
            headers["Content-Type"] = content_type
        cfg = self._api.configuration
        if cfg.refresh_api_key_hook is not None:
            try:
                cfg.refresh_api_key_hook(cfg)
            except Exception as e:  # noqa: BLE001 - exec/OIDC plugins raise anything
                raise ConfigError(
                    f"kubeconfig: refreshing the credentials failed ({type(e).__name__})"
                ) from None
        auth = cfg.auth_settings().get("BearerToken")
        if auth and auth.get("value"):
            value = str(auth["value"]).strip()  # a tokenFile often ends with a newline
            register_many(_credential_parts(value))  # refreshed credentials are new ones
            problem = header_problem(value)
            if problem:
                # Refused here: the HTTP library's own error would quote the header.
                raise ConfigError(
                    f"kubeconfig: the user's credentials cannot go in an HTTP header: {problem}",
                    hint="check the token or tokenFile of the kubeconfig user; the value is "
                    "not shown",
                )
            headers[auth["key"]] = value
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        stream: bool = False,
        timeout: float | None = None,
    ) -> Any:
        from urllib.parse import urlencode

        import urllib3

        params = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        url = self.host + path + (("?" + urlencode(params, doseq=True)) if params else "")
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            content_type = content_type or JSON
        read = self.timeout if timeout is None else timeout
        try:
            resp = self._pool.request(
                method,
                url,
                body=data,
                headers=self._headers(content_type, accept),
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=min(10.0, self.timeout), read=read),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(
                f"cannot reach the API server at {self.host}: {_reason(e)}",
                hint="is the cluster up and the kubeconfig right?",
            ) from None
        if resp.status >= 400:
            raw = resp.data if not stream else resp.read()
            if stream:
                resp.release_conn()
            raise _api_error(resp.status, raw)
        return resp

    def request(self, method: str, path: str, *, label: str = "", **kwargs: Any) -> Obj:
        """One request; the decoded JSON body. ``label`` names it in :attr:`calls`."""
        plural = _plural_of(path)
        self._count(label or f"{method} {plural}")
        resp = self._send(method, path, **kwargs)
        if not resp.data:
            return {}
        try:
            return json.loads(resp.data)  # type: ignore[no-any-return]
        except ValueError:
            raise ExternalError(
                f"the API server at {self.host} sent a response that is not JSON "
                f"({method} {_plural_of(path)})",
                hint="is a proxy in the way?",
            ) from None

    # --- typed helpers ----------------------------------------------------------------

    def get(self, ref: ResourceRef, name: str, namespace: str | None = None) -> Obj:
        """GET one object; raises NotFound."""
        return self.request("GET", ref.path(namespace=namespace, name=name))

    def get_or_none(self, ref: ResourceRef, name: str, namespace: str | None = None) -> Obj | None:
        """GET one object, or None when it does not exist."""
        try:
            return self.get(ref, name, namespace)
        except NotFound:
            return None

    def list_pages(
        self,
        ref: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        metadata_only: bool = False,
    ) -> Iterator[Obj]:
        """Yield list pages (each a List object), following ``continue`` tokens."""
        token: str | None = None
        while True:
            page = self.request(
                "GET",
                ref.path(namespace=namespace),
                query={
                    "labelSelector": label_selector,
                    "fieldSelector": field_selector,
                    "limit": limit,
                    "continue": token,
                },
                accept=METADATA_LIST if metadata_only else JSON,
            )
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def pod_pages(
        self,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
    ) -> Iterator[kubeproto.PodPage]:
        """Yield pages of pods, each cut down to name, namespace, annotations, node, phase.

        The pods come as protobuf and are walked, not decoded (:mod:`kubeproto`): most
        of a pod is stepped over by its length. A server that answers JSON is read as
        JSON. A second thread asks for the next page (its ``continue`` token is at the
        head of this one) while this one is decoded, so the wire and the decoding
        overlap; at most two pages are held at a time.
        """
        path = PODS.path(namespace=namespace)
        pages: queue.Queue[tuple[str, Any] | BaseException | None] = queue.Queue(maxsize=1)
        stop = threading.Event()

        def hand_over(item: tuple[str, Any] | BaseException | None) -> None:
            while not stop.is_set():
                try:
                    pages.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def fetch() -> None:
            token: str | None = None
            try:
                while not stop.is_set():
                    self._count("GET pods")
                    resp = self._send(
                        "GET",
                        path,
                        query={
                            "labelSelector": label_selector,
                            "fieldSelector": field_selector,
                            "limit": limit,
                            "continue": token,
                        },
                        accept=POD_LIST,
                    )
                    kind, page = self._pod_list_body(resp)
                    token = (
                        kubeproto.continue_token(page)
                        if kind == "proto"
                        else str((page.get("metadata") or {}).get("continue") or "")
                    )
                    hand_over((kind, page))
                    if not token:
                        break
                hand_over(None)
            except kubeproto.ProtoError as e:
                hand_over(self._unreadable("GET pods", str(e)))
            except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
                hand_over(e)

        fetcher = threading.Thread(target=fetch, name="fracctl-pod-pages", daemon=True)
        fetcher.start()
        try:
            while True:
                item = pages.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                kind, page = item
                try:
                    yield (
                        kubeproto.pod_page(page)
                        if kind == "proto"
                        else kubeproto.pod_page_json(page)
                    )
                except kubeproto.ProtoError as e:
                    raise self._unreadable("GET pods", str(e)) from None
        finally:
            stop.set()

    def _pod_list_body(self, resp: Any) -> tuple[str, Any]:
        """("proto", bytes) or ("json", decoded dict) by the response's Content-Type."""
        content_type = str(resp.headers.get("Content-Type") or "")
        if content_type.startswith(kubeproto.PROTOBUF):
            return "proto", resp.data
        try:
            page = json.loads(resp.data)
        except ValueError:
            raise self._unreadable("GET pods", f"a {content_type or 'untyped'} body") from None
        if not isinstance(page, dict):
            raise self._unreadable("GET pods", "not a list")
        return "json", page

    def _unreadable(self, call: str, why: str) -> ExternalError:
        return ExternalError(
            f"the API server at {self.host} sent a response fracctl cannot read ({call}: {why})",
            hint="is a proxy in the way?",
        )

    def list(self, ref: ResourceRef, **kwargs: Any) -> list[Obj]:
        """Every item of a (paged) list."""
        return [item for page in self.list_pages(ref, **kwargs) for item in page.get("items") or []]

    def create(
        self, ref: ResourceRef, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        """POST a new object."""
        return self.request(
            "POST",
            ref.path(namespace=namespace or _ns(body)),
            body=body,
            query={"dryRun": "All" if dry_run else None, "fieldManager": "fracctl"},
        )

    def replace(self, ref: ResourceRef, body: Obj, *, dry_run: bool = False) -> Obj:
        """PUT an object (needs ``metadata.resourceVersion`` for optimistic locking)."""
        return self.request(
            "PUT",
            ref.path(namespace=_ns(body), name=body["metadata"]["name"]),
            body=body,
            query={"dryRun": "All" if dry_run else None, "fieldManager": "fracctl"},
        )

    def patch(
        self,
        ref: ResourceRef,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        content_type: str = MERGE_PATCH,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = "fracctl",
        force: bool = False,
    ) -> Obj:
        """PATCH an object or a subresource (merge, JSON or server-side apply)."""
        return self.request(
            "PATCH",
            ref.path(namespace=namespace, name=name, subresource=subresource),
            body=patch,
            content_type=content_type,
            query={
                "dryRun": "All" if dry_run else None,
                "fieldManager": field_manager,
                "force": "true" if force else None,
            },
        )

    def apply(
        self, ref: ResourceRef, body: Obj, *, dry_run: bool = False, force: bool = True
    ) -> Obj:
        """Server-side apply ``body`` with field manager ``fracctl``."""
        return self.patch(
            ref,
            body["metadata"]["name"],
            body,
            namespace=_ns(body),
            content_type=APPLY_PATCH,
            dry_run=dry_run,
            force=force,
        )

    def delete(
        self,
        ref: ResourceRef,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
        grace_period: int | None = None,
        resource_version: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """DELETE an object; with ``uid`` only that incarnation of it.

        ``grace_period=0`` removes a pod bound to a node at once (no kubelet confirms).
        ``dry_run`` runs authorization, the preconditions and admission (policies and
        webhooks) and changes nothing.
        """
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        preconditions = {"uid": uid, "resourceVersion": resource_version}
        if any(preconditions.values()):
            body["preconditions"] = {k: v for k, v in preconditions.items() if v}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        label = ""
        if dry_run:
            body["dryRun"] = ["All"]
            label = f"DELETE {ref.plural} (dry run)"
        path = ref.path(namespace=namespace, name=name)
        return self.request("DELETE", path, body=body, label=label)

    def watch(
        self,
        ref: ResourceRef,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, Obj]]:
        """Yield ``(type, object)`` watch events until the server closes the stream."""
        self._count(f"WATCH {ref.plural}")
        resp = self._send(
            "GET",
            ref.path(namespace=namespace),
            query={
                "watch": "1",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "timeoutSeconds": max(1, int(timeout_seconds)),
            },
            stream=True,
            timeout=timeout_seconds + 10,
        )
        try:
            buf = b""
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        try:
                            event = json.loads(line)
                        except ValueError:
                            raise ExternalError(
                                f"watch on {ref.plural} sent a line that is not JSON"
                            ) from None
                        if event.get("type") == "ERROR":
                            raise _status_error(event.get("object") or {})
                        yield event["type"], event["object"]
        except _protocol_errors() as e:
            raise Unreachable(f"watch on {ref.plural} broke: {_reason(e)}") from None
        finally:
            resp.release_conn()

    def watch_until(
        self,
        ref: ResourceRef,
        done: Callable[[dict[str, Obj]], bool],
        *,
        deadline: float,
        clock: Clock,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_change: Callable[[dict[str, Obj]], None] | None = None,
        max_watch_seconds: int = 60,
    ) -> tuple[dict[str, Obj], bool]:
        """Keep a current view of matching objects until ``done(view)`` or the deadline.

        One LIST, then a WATCH from the list's resourceVersion; no polling. A watch the
        server closes (its own timeout, at most ``max_watch_seconds``) or a dropped
        connection is resumed from the last resourceVersion seen; a 410 Gone (that
        version was compacted away) lists afresh. The view maps ``namespace/name`` (or
        ``name`` for cluster-scoped objects) to the object.

        Args:
            ref: the resource type.
            done: called with the view after the list and after each event.
            deadline: when to give up, on ``clock.monotonic()``.
            clock: reads the time, and pauses before resuming after a dropped connection.
            namespace: limit to one namespace.
            label_selector: limit by labels.
            field_selector: limit by fields (``metadata.name=X`` for one object).
            on_change: called with the view after the list and after each change.
            max_watch_seconds: the longest single watch request.

        Returns:
            The last view, and whether ``done`` held (False: the deadline passed).

        Raises:
            ApiError: an error other than 410 Gone.
            Unreachable: the server could not be reached to list.
        """
        view: dict[str, Obj] = {}
        selectors = {
            "namespace": namespace,
            "label_selector": label_selector,
            "field_selector": field_selector,
        }

        def key(obj: Obj) -> str:
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace")
            return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))

        def relist() -> str:
            view.clear()
            version = ""
            for page in self.list_pages(ref, **selectors):  # type: ignore[arg-type]
                version = (page.get("metadata") or {}).get("resourceVersion", "") or version
                for item in page.get("items") or []:
                    view[key(item)] = item
            if on_change:
                on_change(view)
            return version

        rv = relist()
        backoff = Backoff(first=0.2, factor=2.0, cap=5.0)
        while not done(view):
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return view, False
            try:
                for kind, obj in self.watch(
                    ref,
                    resource_version=rv,
                    timeout_seconds=max(1, min(int(remaining + 0.999), max_watch_seconds)),
                    **selectors,
                ):
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if kind == "BOOKMARK":
                        continue
                    if kind == "DELETED":
                        view.pop(key(obj), None)
                    else:
                        view[key(obj)] = obj
                    backoff.reset()
                    if on_change:
                        on_change(view)
                    if done(view) or clock.monotonic() >= deadline:
                        break
            except ApiError as e:
                if e.status.code != 410:
                    raise
                rv = relist()
            except Unreachable:
                clock.sleep(min(backoff.next(), max(0.0, deadline - clock.monotonic())))
        return view, True

    # --- discovery --------------------------------------------------------------------

    def can_i(
        self, verb: str, ref: ResourceRef, name: str | None = None, namespace: str | None = None
    ) -> tuple[bool, str]:
        """Ask the API server whether this identity may ``verb`` the resource.

        A ``SelfSubjectAccessReview``: read-only, and allowed to every authenticated
        identity. Returns whether it is allowed and the authorizer's reason, if any.
        """
        attrs: Obj = {"verb": verb, "group": ref.group, "resource": ref.plural}
        if name:
            attrs["name"] = name
        if namespace and ref.namespaced:
            attrs["namespace"] = namespace
        review = self.request(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs},
            },
        )
        status = review.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or "")

    def resolve(self, api_version: str, kind: str) -> ResourceRef:
        """Find the resource for ``apiVersion``/``kind`` through discovery (cached)."""
        if (api_version, kind) in self._discovery:
            return self._discovery[(api_version, kind)]
        if api_version not in self._discovered:
            group, version = split_api_version(api_version)
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                doc = self.request("GET", path)
            except NotFound:
                doc = {"resources": []}
            self._discovered.add(api_version)
            for r in doc.get("resources") or []:
                if "/" in r["name"]:
                    continue
                ref = ResourceRef(group, version, r["name"], r["kind"], bool(r["namespaced"]))
                self._discovery[(api_version, r["kind"])] = ref
        try:
            return self._discovery[(api_version, kind)]
        except KeyError:
            raise NotFound(
                ApiStatus(404, "NotFound", f"the server has no resource {kind} in {api_version}"),
                hint="is the CRD installed?",
            ) from None

    def crd(self, group: str, plural: str) -> Obj | None:
        """The CustomResourceDefinition for ``plural.group``, if installed."""
        return self.get_or_none(CRDS, f"{plural}.{group}")


# --- helpers --------------------------------------------------------------------------


def _ns(body: Obj) -> str | None:
    return (body.get("metadata") or {}).get("namespace")


def _plural_of(path: str) -> str:
    parts = [p for p in path.split("?")[0].split("/") if p]
    if "namespaces" in parts:
        i = parts.index("namespaces")
        parts = parts[:i] + parts[i + 2 :] if len(parts) > i + 2 else parts
    start = 2 if parts[:1] == ["api"] else 3
    return parts[start] if len(parts) > start else "/".join(parts)


def kubeconfig_files(kubeconfig: str | None, env: Mapping[str, str]) -> tuple[list[str], str]:
    """The kubeconfig file(s) to read, and how to name them in messages.

    Raises:
        ConfigError: the named file, every file ``$KUBECONFIG`` lists, or
            ``~/.kube/config`` (when nothing names one) does not exist.
    """
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        if not os.path.exists(path):
            raise ConfigError(f"kubeconfig {kubeconfig}: file not found")
        if os.path.isdir(path):
            raise ConfigError(f"kubeconfig {kubeconfig}: is a directory, not a file")
        return [path], kubeconfig
    listed = env.get("KUBECONFIG", "")
    entries = [p for p in listed.split(os.pathsep) if p.strip()]
    if entries:
        # like kubectl: entries that do not exist are skipped, but one must
        found = [os.path.expanduser(p) for p in entries]
        found = [p for p in found if os.path.isfile(p)]
        if not found:
            what = "file not found" if len(entries) == 1 else "none of these files exists"
            raise ConfigError(f"KUBECONFIG={listed}: {what}")
        return found, f"{os.pathsep.join(found)} (from KUBECONFIG)"
    home = env.get("HOME")
    default = (
        os.path.join(home, ".kube", "config") if home else os.path.expanduser("~/.kube/config")
    )
    if not os.path.isfile(default):
        raise ConfigError(
            f"no kubeconfig: {default} does not exist and KUBECONFIG is not set",
            hint="give --kubeconfig, set KUBECONFIG, or set kube.kubeconfig in fracctl.yaml",
        )
    return [default], default


def check_kubeconfig(files: list[str], name: str, context: str | None) -> None:
    """Read the kubeconfig files and check the context exists, with one-line errors.

    The client library would report these as "Invalid kube-config file" without the
    path, or as a KeyError; messages here carry a path and a YAML line, never content.
    """
    contexts, current = _read_contexts(files)
    known = f" (contexts: {', '.join(contexts)})" if contexts else " (it has no contexts)"
    if context:
        if context not in contexts:
            raise ConfigError(f"kubeconfig {name}: context {context!r} not found{known}")
    elif not current:
        raise ConfigError(
            f"kubeconfig {name}: no current-context set{known}", hint="give --context"
        )
    elif current not in contexts:
        raise ConfigError(f"kubeconfig {name}: current-context {current!r} not found{known}")


def kubeconfig_contexts(kubeconfig: str | None, env: Mapping[str, str] | None = None) -> list[str]:
    """Every context the kubeconfig names, in file order (``--all-contexts``).

    Raises:
        ConfigError: the kubeconfig is missing or unreadable (one line, never its content).
    """
    files, _name = kubeconfig_files(kubeconfig, os.environ if env is None else env)
    contexts, _current = _read_contexts(files)
    return list(dict.fromkeys(contexts))


def _read_contexts(files: list[str]) -> tuple[list[str], str]:
    """The context names in ``files`` and the current context (the last file's that sets one)."""
    import yaml

    contexts: list[str] = []
    current = ""
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except OSError as e:
            raise ConfigError(f"kubeconfig {path}: cannot read: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"kubeconfig {path}: not a text file") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}" if mark is not None else ""
            problem = getattr(e, "problem", None) or "cannot parse"
            raise ConfigError(f"kubeconfig {path}{at}: not valid YAML: {problem}") from None
        if doc is None:
            raise ConfigError(f"kubeconfig {path} is empty")
        entries = doc.get("contexts") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or not isinstance(entries or [], list):
            raise ConfigError(
                f"kubeconfig {path}: not a kubeconfig "
                "(expected a mapping with clusters, contexts and users)"
            )
        for entry in entries or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                contexts.append(entry["name"])
        if doc.get("current-context"):
            current = str(doc["current-context"])
    return contexts, current


def _first_line(text: str) -> str:
    text = redact(text)  # before cutting: a secret cut in half is not recognised whole
    return text.strip().splitlines()[0] if text.strip() else text


def register_credentials(configuration: Any) -> None:
    """Register the secrets a client configuration holds, so that no output shows them.

    The bearer token or basic-auth password (from ``api_key``), ``password``, and the
    client key (the file the kubeconfig's ``client-key-data`` was written to).
    """
    values: list[str | None] = [getattr(configuration, "password", None)]
    for value in (getattr(configuration, "api_key", None) or {}).values():
        values.extend(_credential_parts(str(value)))
    key_file = getattr(configuration, "key_file", None)
    if key_file:
        try:
            with open(key_file, encoding="utf-8", errors="replace") as f:
                values.append(f.read())
        except OSError:
            pass  # the TLS layer will say it cannot read the key
    register_many(values)


def _credential_parts(value: str) -> list[str]:
    """The secret parts of an Authorization value: the token, or Basic's password."""
    import base64
    import binascii

    scheme, _, rest = value.strip().partition(" ")
    if not rest.strip():
        return [value]
    parts = [rest.strip()]
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(rest.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        parts.append(decoded.partition(":")[2])
    return parts


def _reason(e: BaseException) -> str:
    reason = getattr(e, "reason", None) or e
    text = str(reason)
    # urllib3 embeds the connection object's repr; keep the part after the colon.
    if "Failed to establish a new connection:" in text:
        text = text.split("Failed to establish a new connection:", 1)[1]
    return _first_line(text).strip().rstrip("'\")")


def _protocol_errors() -> tuple[type[BaseException], ...]:
    import urllib3

    return (urllib3.exceptions.HTTPError, ConnectionError)


def _api_error(code: int, raw: bytes) -> ApiError:
    try:
        body = kubeproto.status(raw) if raw.startswith(kubeproto.MAGIC) else json.loads(raw)
    except (ValueError, TypeError):  # ProtoError is a ValueError
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return _status_error(body, code)
    text = redact(raw.decode(errors="replace"))[:300] if raw else ""
    return api_error_for(ApiStatus(code, "", text.strip()))


def _status_error(body: Obj, code: int | None = None) -> ApiError:
    details = body.get("details") or {}
    causes = [
        Cause(str(c.get("reason", "")), str(c.get("message", "")), str(c.get("field", "")))
        for c in details.get("causes") or []
    ]
    message = redact(str(body.get("message", "")))[:2000]
    return api_error_for(
        ApiStatus(
            int(code or body.get("code") or 500), str(body.get("reason", "")), message, causes
        )
    )
