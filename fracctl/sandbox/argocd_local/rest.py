"""One plain call to the Argo CD REST API, for setting the local Argo CD up.

Not fracctl's client (:mod:`fracctl.adapters.argocd`): that one always sends a bearer
token and maps error answers to its own error classes, while setup has to log in
without a token and reports any error answer as one :class:`ExternalError` line.
"""

from __future__ import annotations

from typing import Any

from fracctl.errors import ExternalError, TimedOut
from fracctl.redact import redact


def api(url: str, method: str, path: str, *, token: str | None = None, body: Any = None) -> Any:
    """One call to the Argo CD API with JSON in and out (setup only, not fracctl's client)."""
    import httpx

    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        resp = httpx.request(method, url + path, json=body, headers=headers, timeout=30.0)
    except httpx.TimeoutException as e:  # a busy server: a caller that waits may ask again
        raise TimedOut(f"Argo CD at {url}: {type(e).__name__}: {e}") from e
    except httpx.TransportError as e:
        raise ExternalError(f"Argo CD at {url}: {type(e).__name__}: {e}") from e
    if resp.status_code >= 400:
        raise ExternalError(
            f"Argo CD {method} {path}: {resp.status_code} {redact(resp.text)[:300]}"
        )
    return resp.json() if resp.content else {}
