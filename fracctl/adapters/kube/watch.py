"""Watching: one watch request's events, and the list-then-watch loop built on it.

:meth:`Watcher.watch` streams one watch request's events. :meth:`Watcher.watch_until`
keeps a current view of matching objects, one LIST and then WATCHes resumed from the
last resourceVersion seen, until a condition holds or a deadline passes; nothing polls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping

from fracctl.adapters.kube.crud import Crud
from fracctl.adapters.kube.transport import Obj, connection_reason, protocol_errors, status_error
from fracctl.core.clock import Backoff, Clock
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ApiError, ExternalError, Unreachable


class Watcher(Crud):
    """:meth:`watch` and :meth:`watch_until`."""

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
                            raise status_error(event.get("object") or {})
                        yield event["type"], event["object"]
        except protocol_errors() as e:
            raise Unreachable(f"watch on {ref.plural} broke: {connection_reason(e)}") from None
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
        rv = self._relist(ref, view, selectors, on_change)
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
                    _apply_event(view, kind, obj)
                    backoff.reset()
                    if on_change:
                        on_change(view)
                    if done(view) or clock.monotonic() >= deadline:
                        break
            except ApiError as e:
                if e.status.code != 410:
                    raise
                rv = self._relist(ref, view, selectors, on_change)
            except Unreachable:
                clock.sleep(min(backoff.next(), max(0.0, deadline - clock.monotonic())))
        return view, True

    def _relist(
        self,
        ref: ResourceRef,
        view: dict[str, Obj],
        selectors: Mapping[str, str | None],
        on_change: Callable[[dict[str, Obj]], None] | None,
    ) -> str:
        """Fill ``view`` afresh from a LIST; the list's resourceVersion, to watch from."""
        view.clear()
        version = ""
        for page in self.list_pages(ref, **selectors):  # type: ignore[arg-type]
            version = (page.get("metadata") or {}).get("resourceVersion", "") or version
            for item in page.get("items") or []:
                view[_key(item)] = item
        if on_change:
            on_change(view)
        return version


def _key(obj: Obj) -> str:
    """An object's key in a view: ``namespace/name``, or ``name`` when cluster-scoped."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _apply_event(view: dict[str, Obj], kind: str, obj: Obj) -> None:
    """Bring ``view`` up to date with one ADDED, MODIFIED or DELETED event."""
    if kind == "DELETED":
        view.pop(_key(obj), None)
    else:
        view[_key(obj)] = obj
