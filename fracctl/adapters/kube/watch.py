"""Watching: one watch request's events, and the list-then-watch loop built on it.

:meth:`Watcher.watch` streams one watch request's events. :meth:`Watcher.watch_until`
keeps a current view of matching objects, one LIST and then WATCHes resumed from the
last resourceVersion seen, until a condition holds or a deadline passes; nothing polls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

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
        selectors = {
            "namespace": namespace,
            "label_selector": label_selector,
            "field_selector": field_selector,
        }
        w = _Watching(ref, selectors, done, on_change, deadline, clock)
        self._relist(w)
        while not done(w.view):
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return w.view, False
            self._resume(w, timeout=max(1, min(int(remaining + 0.999), max_watch_seconds)))
        return w.view, True

    def _resume(self, w: _Watching, *, timeout: int) -> None:
        """One WATCH from the last resourceVersion seen, the view kept current meanwhile.

        It ends when ``done`` holds, the deadline passes or the server closes it. A 410
        Gone lists afresh; a dropped connection pauses (backing off) before the next one.
        """
        try:
            for kind, obj in self.watch(
                w.ref, resource_version=w.version, timeout_seconds=timeout, **w.selectors
            ):
                w.version = (obj.get("metadata") or {}).get("resourceVersion") or w.version
                if kind == "BOOKMARK":
                    continue
                _apply_event(w.view, kind, obj)
                w.backoff.reset()
                if w.on_change:
                    w.on_change(w.view)
                if w.done(w.view) or w.clock.monotonic() >= w.deadline:
                    break
        except ApiError as e:
            if e.status.code != 410:
                raise
            self._relist(w)
        except Unreachable:
            w.clock.sleep(min(w.backoff.next(), max(0.0, w.deadline - w.clock.monotonic())))

    def _relist(self, w: _Watching) -> None:
        """Fill the view afresh from a LIST; watch from the list's resourceVersion."""
        w.view.clear()
        version = ""
        for page in self.list_pages(w.ref, **w.selectors):  # type: ignore[arg-type]
            version = (page.get("metadata") or {}).get("resourceVersion", "") or version
            for item in page.get("items") or []:
                w.view[_key(item)] = item
        w.version = version
        if w.on_change:
            w.on_change(w.view)


@dataclass
class _Watching:
    """One :meth:`Watcher.watch_until`: what it watches for, and its view so far."""

    ref: ResourceRef
    selectors: Mapping[str, str | None]
    done: Callable[[dict[str, Obj]], bool]
    on_change: Callable[[dict[str, Obj]], None] | None
    deadline: float
    clock: Clock
    view: dict[str, Obj] = field(default_factory=dict)
    version: str = ""  # the last resourceVersion seen: where the next watch resumes
    backoff: Backoff = field(default_factory=lambda: Backoff(first=0.2, factor=2.0, cap=5.0))


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
