r"""Keep known secrets out of everything fracctl writes.

Credentials are registered here when they are loaded (the Argo CD token, the kubeconfig's
bearer token, password and client key), and :func:`redact` replaces every occurrence of
them with ``***`` in a string about to leave the process: the error line, console
output, JSON, the audit log, Events and backups.

A server or a library can quote a secret in another form than the one fracctl sent, so
each character of a secret is matched in any of the forms it takes when text is
escaped: JSON and JavaScript (``\u002f``, ``\/``, nested ``\\u002f``), Python
``repr`` (``\x2f``, ``\n``), URL encoding (``%2F``, ``%252F``), HTML character
references (``&#47;``, ``&#x2f;``, ``&quot;``). Base64 of a secret is found at each of the
three byte alignments (standard and URL-safe alphabets), so it is also found inside the
base64 of ``user:secret``. A secret wrapped over lines is found across the line break,
and one cut short (followed by ``…``, ``...``, a line break, a closing quote or the end
of the text) is redacted from its first characters. A secret of several lines (a private
key in PEM) is also registered line by line, so a part of it is found on its own.

Nothing here is imported at start-up beyond the standard library.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import IO, Any, TypeVar

MASK = "***"
#: Shorter values are not registered: masking them would garble ordinary text.
MIN_LENGTH = 4
#: A secret cut short by a truncation is masked when at least this much of it remains.
MIN_PARTIAL = 6
#: A line of a multi-line secret is registered on its own when at least this long.
MIN_LINE = 16
_ANCHOR = 6
#: How much :class:`RedactingWriter` holds before it writes complete lines out.
HOLD_LIMIT = 1 << 16
_HOLD_TAIL = 1 << 13

#: A line break (real or JSON-escaped) with the indentation around it.
_BREAK = r"[ \t]*(?:\r?\n|\\+(?:r\\+)?n)[ \t]*"
#: What can follow a secret cut short: an ellipsis, a line break, the end of a quoted
#: value, or the end of the text (each also escaped).
_TRUNCATION = r"(?:…|\.\.\.|\r|\n|[\"']|\\+(?:u2026|r|n|[\"'])|$)"
_SHORT_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f"}
_ENTITIES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "(?:apos|#39)"}

T = TypeVar("T")

_lock = threading.Lock()
_secrets: set[str] = set()
_forms: list[str] = []  # every form to look for, longest first
_anchors: re.Pattern[str] | None = None


# --- registering ------------------------------------------------------------------------


def register(secret: str | None) -> None:
    """Add a secret; from now on :func:`redact` masks it in every form."""
    global _anchors
    if not secret:
        return
    values = {secret.strip()}  # the spaces or newline around a secret are not part of it
    lines = [ln.strip() for ln in secret.splitlines()]
    if len(lines) > 1:
        values.update(ln for ln in lines if len(ln) >= MIN_LINE and not ln.startswith("-----"))
    new = {v for v in values if len(v) >= MIN_LENGTH} - _secrets
    if not new:
        return
    with _lock:
        _secrets.update(new)
        forms = set(_forms)
        for value in new:
            forms.update(_forms_of(value))
        _forms[:] = sorted(forms, key=len, reverse=True)
        _anchors = None


def register_many(secrets: Iterable[str | None]) -> None:
    """:func:`register` each of ``secrets``."""
    for secret in secrets:
        register(secret)


def forget_all() -> None:
    """Drop every registered secret (for tests)."""
    global _anchors
    with _lock:
        _secrets.clear()
        _forms.clear()
        _anchors = None


def known() -> int:
    """How many secret values are registered."""
    return len(_secrets)


def _forms_of(value: str) -> set[str]:
    """The value itself and its base64 at each byte alignment."""
    import base64

    forms = {value}
    raw = value.encode("utf-8", "surrogatepass")
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        total = shift + len(raw)
        # Drop the first group (it mixes in the bytes before) and the last partial one
        # (it mixes in the bytes after): what is left is the same wherever it is embedded.
        core = encoded[4 if shift else 0 : 4 * (total // 3)]
        if len(core) >= 2 * MIN_PARTIAL:
            forms.add(core)
            forms.add(core.translate(_URLSAFE))
    return forms


_URLSAFE = str.maketrans("+/", "-_")


# --- matching ---------------------------------------------------------------------------


def _hex(number: int, width: int) -> str:
    """``number`` in hex as a pattern that takes either case of each letter."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}x}")


@lru_cache(maxsize=512)
def _unit_source(char: str) -> str:
    """A pattern for one character in any of the escaped forms it can take."""
    code = ord(char)
    utf8 = char.encode("utf-8", "surrogatepass")
    slash = r"\\+"  # one or more backslashes: escaped once, or JSON inside JSON
    escapes = []
    if code <= 0xFFFF:
        escapes.append("u" + _hex(code, 4))
    else:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        escapes.append("u" + _hex(high, 4) + slash + "u" + _hex(low, 4))
        escapes.append("U" + _hex(code, 8))
    escapes.append(slash.join("x" + _hex(b, 2) for b in utf8))
    if char in _SHORT_ESCAPES:
        escapes.append(_SHORT_ESCAPES[char])
    if not char.isalnum():
        escapes.append(re.escape(char))
    alternatives = [
        slash + "(?:" + "|".join(escapes) + ")",
        "".join("%(?:25)?" + _hex(b, 2) for b in utf8),
        f"&#(?:0*{code}|[xX]0*{_hex(code, 1)});",
    ]
    if char in _ENTITIES:
        alternatives.append(f"&{_ENTITIES[char]};")
    if char == " ":
        alternatives.append(r"\+")
    alternatives.append(re.escape(char))
    return "(?:" + "|".join(alternatives) + ")"


@lru_cache(maxsize=512)
def _unit(char: str) -> re.Pattern[str]:
    return re.compile(_unit_source(char))


def _anchor_pattern() -> re.Pattern[str]:
    global _anchors
    with _lock:
        if _anchors is None:
            heads = sorted({form[:_ANCHOR] for form in _forms})
            alternatives = ("".join(_unit_source(c) for c in head) for head in heads)
            _anchors = re.compile("(?=" + "|".join(alternatives) + ")")
        return _anchors


def _match(text: str, start: int, form: str) -> int | None:
    """Where an occurrence of ``form`` starting at ``start`` ends, or None.

    An occurrence cut short by a truncation counts when at least :data:`MIN_PARTIAL`
    characters of it are there.
    """
    pos = start
    for i, char in enumerate(form):
        unit = _unit(char)
        found = unit.match(text, pos)
        if found is None and i:
            wrapped = re.compile(_BREAK).match(text, pos)  # compiled once, then cached
            if wrapped is not None:
                found = unit.match(text, wrapped.end())
        if found is None:
            truncated = i >= MIN_PARTIAL and re.compile(_TRUNCATION).match(text, pos) is not None
            return pos if truncated else None
        pos = found.end()
    return pos


def redact(text: str) -> str:
    """``text`` with every registered secret, in any form, replaced by ``***``."""
    if not _forms or not text:
        return text
    forms = list(_forms)
    spans: list[tuple[int, int]] = []
    reach = 0
    for hit in _anchor_pattern().finditer(text):
        start = hit.start()
        if start < reach:
            continue
        for form in forms:
            end = _match(text, start, form)
            if end is not None:
                spans.append((start, end))
                reach = end
                break
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact_data(value: T) -> T:
    """A copy of JSON-like data (dicts, lists, strings) with every string redacted."""
    if not _forms:
        return value
    return _redact_data(value)  # type: ignore[no-any-return]


def _redact_data(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redact_data(k): _redact_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_redact_data(v) for v in value)
    return value


# --- header values ----------------------------------------------------------------------

_B64TOKEN = r"[A-Za-z0-9\-._~+/]+=*"


def header_problem(value: str, *, bearer_token: bool = False) -> str | None:
    """Why ``value`` cannot be sent in an HTTP header, or None when it can.

    The answer describes the problem without quoting the value.

    Args:
        value: the header value (or, with ``bearer_token``, the token alone).
        bearer_token: hold the value to RFC 6750's token syntax (letters, digits,
            ``-._~+/``, then optional ``=``), which a bearer token must follow.
    """
    if not value:
        return "it is empty"
    if "\n" in value or "\r" in value:
        return "it has more than one line"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "it has a control character"
    if any(ord(c) > 0x7E for c in value):
        return "it has a non-ASCII character"
    if value != value.strip():
        return "it has leading or trailing spaces"
    if bearer_token:
        if any(c.isspace() for c in value):
            return "it has a space"
        if not re.fullmatch(_B64TOKEN, value):
            return "it has a character a bearer token cannot have"
    return None


# --- streams ----------------------------------------------------------------------------


class RedactingWriter:
    """A text stream that redacts what is written to it.

    Text is held until :meth:`flush` (rich flushes after each print; the CLI flushes at
    exit), so a secret written in pieces, or wrapped over several writes, is seen whole.
    Past :data:`HOLD_LIMIT` characters, complete lines go out, minus a tail that may hold
    the start of a secret. Everything else is the wrapped stream's.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        """Write ``text`` (held until :meth:`flush`, then redacted)."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending += text
        if len(self._pending) > HOLD_LIMIT:
            cut = self._pending.rfind("\n", 0, len(self._pending) - _HOLD_TAIL) + 1
            if cut:
                ready, self._pending = self._pending[:cut], self._pending[cut:]
                self._stream.write(redact(ready))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each of ``lines``."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write out what is held (redacted) and flush the stream."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self._stream.write(redact(pending))
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # binary writes would go around the redaction
            raise AttributeError(name)
        return getattr(self._stream, name)
