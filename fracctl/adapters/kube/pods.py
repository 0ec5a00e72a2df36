"""The pod pager: pages of pods walked from protobuf, the next page fetched meanwhile.

Listing every pod of a large cluster is the slowest read fracctl makes, so pods come as
protobuf and are walked, not decoded (:mod:`.podpage`), and a second thread asks for the
next page while this one is read. A server that answers JSON is read as JSON.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from typing import Any

from fracctl.adapters.kube import podpage, podpage_json, podscan
from fracctl.adapters.kube.transport import POD_LIST, Transport
from fracctl.adapters.kube.wire import PROTOBUF, ProtoError
from fracctl.core.kube.resources import PODS


class PodPager(Transport):
    """:meth:`pod_pages`: every pod, cut down to what fracctl reads of it."""

    def pod_pages(
        self,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
    ) -> Iterator[podscan.PodPage]:
        """Yield pages of pods, each cut down to name, namespace, annotations, node, phase.

        The pods come as protobuf and are walked, not decoded (:mod:`.podpage`): most
        of a pod is stepped over by its length. A server that answers JSON is read as
        JSON. A second thread asks for the next page (its ``continue`` token is at the
        head of this one) while this one is decoded, so the wire and the decoding
        overlap; at most two pages are held at a time.
        """
        bodies = self._pod_bodies(namespace, label_selector, field_selector, limit)
        with closing(bodies):
            for kind, page in bodies:
                try:
                    yield (
                        podscan.scan_page(page) if kind == "proto" else podscan.scan_page_json(page)
                    )
                except ProtoError as e:
                    raise self._unreadable("GET pods", str(e)) from None

    def picked_pod_pages(
        self,
        pick: podpage.Pick,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        refine: podpage.Refine | None = None,
    ) -> Iterator[podpage.PickedPage]:
        """:meth:`pod_pages`, each pod cut down to the fields ``pick`` names instead.

        Each pod is a plain dict shaped like its JSON, holding only those fields
        (:func:`podpage.compile_pod`), whether the server sent protobuf or JSON; the
        pods ``refine`` wants are read with its wider pick (:class:`podpage.Refine`).
        """
        bodies = self._pod_bodies(namespace, label_selector, field_selector, limit)
        with closing(bodies):
            for kind, page in bodies:
                try:
                    yield (
                        podpage.pod_page(page, pick, refine)
                        if kind == "proto"
                        else podpage_json.pod_page_json(page, pick, refine)
                    )
                except ProtoError as e:
                    raise self._unreadable("GET pods", str(e)) from None

    def _pod_bodies(
        self,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        limit: int,
    ) -> Generator[tuple[str, Any], None, None]:
        """Each page's body: ("proto", bytes) or ("json", dict).

        The next page is fetched by a second thread meanwhile; closing the iterator
        stops that thread.
        """
        pages: queue.Queue[tuple[str, Any] | BaseException | None] = queue.Queue(maxsize=1)
        stop = threading.Event()

        def hand_over(item: tuple[str, Any] | BaseException | None) -> None:
            while not stop.is_set():
                try:
                    pages.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        query = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit}
        fetcher = threading.Thread(
            target=self._fetch_pod_bodies,
            args=(PODS.path(namespace=namespace), query, hand_over, stop),
            name="fracctl-pod-pages",
            daemon=True,
        )
        fetcher.start()
        try:
            while True:
                item = pages.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()

    def _fetch_pod_bodies(
        self,
        path: str,
        query: dict[str, Any],
        hand_over: Callable[[tuple[str, Any] | BaseException | None], None],
        stop: threading.Event,
    ) -> None:
        """The second thread: hand over each page's body, then None, or the error met."""
        token: str | None = None
        try:
            while not stop.is_set():
                self._count("GET pods")
                resp = self._send("GET", path, query={**query, "continue": token}, accept=POD_LIST)
                kind, page = self._pod_list_body(resp)
                token = (
                    podpage.continue_token(page)
                    if kind == "proto"
                    else str((page.get("metadata") or {}).get("continue") or "")
                )
                hand_over((kind, page))
                if not token:
                    break
            hand_over(None)
        except ProtoError as e:
            hand_over(self._unreadable("GET pods", str(e)))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            hand_over(e)

    def _pod_list_body(self, resp: Any) -> tuple[str, Any]:
        """("proto", bytes) or ("json", decoded dict) by the response's Content-Type."""
        content_type = str(resp.headers.get("Content-Type") or "")
        if content_type.startswith(PROTOBUF):
            return "proto", resp.data
        try:
            page = json.loads(resp.data)
        except ValueError:
            raise self._unreadable("GET pods", f"a {content_type or 'untyped'} body") from None
        if not isinstance(page, dict):
            raise self._unreadable("GET pods", "not a list")
        return "json", page
