"""The Argo CD server address and bearer token: where they come from and what they may be.

The token comes from ``ARGOCD_AUTH_TOKEN`` or a file, never from a command-line value
(which would show in ``ps``). It is checked when loaded (one line a header can carry) and
registered with :mod:`fracctl.redact`, so it is kept out of every message, log line and
repr; the client holds it in a :class:`Secret` that shows as ``<secret>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from fracctl.errors import ConfigError
from fracctl.redact import header_problem, register

if TYPE_CHECKING:
    from fracctl.config import ArgoCDConfig


class Secret:
    """A string that shows as ``***`` in every repr (locals dumps, debuggers, vars())."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The string itself."""
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


def server_url(server: str, *, plaintext: bool = False) -> str:
    """Normalise ``host:port`` or a URL into the API's base URL.

    Args:
        server: ``argocd.example.org``, ``argocd.example.org:8443`` or
            ``https://argocd.example.org/argocd`` (a path prefix is kept).
        plaintext: use ``http://`` for a server given without a scheme.

    Returns:
        The base URL, without a trailing slash.

    Raises:
        ConfigError: the value is empty, has another scheme, or asks for TLS and
            plaintext at once.
    """
    value = server.strip().rstrip("/")
    if not value:
        raise ConfigError("argocd.server is empty")
    if "://" not in value:
        value = ("http://" if plaintext else "https://") + value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"argocd.server: not a host[:port] or http(s) URL: {server!r}")
    if plaintext and parts.scheme == "https":
        raise ConfigError(
            f"argocd.server is an https:// URL but plaintext is set: {server!r}",
            hint="drop plaintext, or give the server as host:port or http://…",
        )
    if parts.username or parts.password:
        raise ConfigError("argocd.server must not carry credentials; use ARGOCD_AUTH_TOKEN")
    return value


def read_token(config: ArgoCDConfig, env: Mapping[str, str]) -> str:
    """The bearer token: ``argocd.token_file`` if set, else ``$ARGOCD_AUTH_TOKEN``.

    Raises:
        ConfigError: no token anywhere, the file is unreadable or empty, or the token
            is not one line a header can carry (the message names the source, never
            the contents).
    """
    from_env = env.get("ARGOCD_AUTH_TOKEN") or ""
    register(from_env)  # a secret in the environment, used or not
    if config.token_file:
        path = Path(config.token_file).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise ConfigError(f"argocd.token_file {path}: cannot read: {e.strerror}") from None
        if not token:
            raise ConfigError(f"argocd.token_file {path} is empty")
        return check_token(token, f"argocd.token_file {path}")
    token = from_env.strip()
    if not token:
        raise ConfigError(
            "no Argo CD token: set ARGOCD_AUTH_TOKEN or argocd.token_file",
            hint="create one with `argocd account generate-token`",
        )
    return check_token(token, "ARGOCD_AUTH_TOKEN")


def check_token(token: str, source: str) -> str:
    """Register ``token`` for redaction and make sure it can go in a header.

    Args:
        token: the bearer token.
        source: where it came from, for the message (never the token itself).

    Returns:
        The token.

    Raises:
        ConfigError: it is not one line of the characters a bearer token may have (the
            message says what is wrong without quoting it).
    """
    register(token)
    problem = header_problem(token, bearer_token=True)
    if problem:
        raise ConfigError(
            f"{source}: expected one line (a token) that can go in an HTTP header, but {problem}",
            hint="a bearer token is letters, digits and -._~+/ with optional trailing =, "
            "as `argocd account generate-token` prints it; the value is not shown",
        )
    return token
