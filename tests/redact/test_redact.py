"""Known secrets never leave the process, in any form a server or a library could echo."""

from __future__ import annotations

import base64
import html
import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from fracctl import redact as r
from fracctl.errors import ExitCode, ExternalError, UsageError
from tests.support.helpers import run_cli

# A bearer token as Argo CD hands them out (a JWT), with the characters JSON, URLs and
# base64 treat specially.
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmcmFjY3RsIn0/Sig+nat_ure-x~y="


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    r.forget_all()
    r.register(TOKEN)
    yield
    r.forget_all()


def b64(text: str, *, prefix: str = "", urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode((prefix + text).encode()).decode()


def every_char_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def wrapped(text: str, width: int = 20, indent: str = "  ") -> str:
    return f"\n{indent}".join(text[i : i + width] for i in range(0, len(text), width))


#: Each form a server, a proxy or a library could echo the token in.
FORMS: dict[str, Callable[[str], str]] = {
    "raw": lambda t: f"invalid token {t}",
    "json": lambda t: json.dumps({"message": f"token {t} expired"}),
    "json-u002f": lambda t: t.replace("/", "\\u002f").replace("+", "\\u002B"),
    "json-every-char-escaped": every_char_escaped,
    "json-escaped-slash": lambda t: t.replace("/", "\\/"),
    "json-in-json": lambda t: json.dumps(json.dumps({"m": t.replace("/", "\\/")})),
    "json-in-json-u002f": lambda t: json.dumps(t.replace("/", "\\u002f")),
    "url-encoded": lambda t: quote(t, safe=""),
    "url-encoded-twice": lambda t: quote(quote(t, safe=""), safe=""),
    "query-string": lambda t: urlencode({"token": t, "app": "gpu"}),
    "base64": lambda t: b64(t),
    "base64-urlsafe": lambda t: b64(t, urlsafe=True),
    "base64-basic-auth": lambda t: "Authorization: Basic " + b64(t, prefix="admin:"),
    "base64-offset-1": lambda t: b64(t, prefix="a:"),
    "base64-offset-2": lambda t: b64(t, prefix="ab:", urlsafe=True),
    "authorization-header": lambda t: f"Authorization: Bearer {t}",
    "header-dict-repr": lambda t: repr({"Authorization": f"Bearer {t}"}),
    "header-bytes-repr": lambda t: f"Illegal header value {('Bearer ' + t).encode()!r}",
    "html-escaped": lambda t: html.escape(t).replace("/", "&#x2F;").replace("+", "&#43;"),
    "wrapped-over-lines": lambda t: wrapped(t),
    "base64-wrapped": lambda t: wrapped(b64(t, prefix="user:"), 16, ""),
    "truncated-with-ellipsis": lambda t: f"message: {t[: len(t) // 2]}…",
    "truncated-with-dots": lambda t: f"message: {t[:12]}...",
    "truncated-at-the-end": lambda t: f"message: {t[:9]}",
}


def leaked(out: str, *needles: str, window: int = 9) -> list[str]:
    """Pieces of ``needles`` (at least ``window`` long) that are still in ``out``."""
    return [
        n[i : i + window]
        for n in needles
        for i in range(max(1, len(n) - window + 1))
        if n[i : i + window] in out
    ]


def needles(form: str, token: str = TOKEN) -> list[str]:
    """What must not survive of ``token`` echoed in ``form`` (it and its encodings)."""
    if form.startswith("truncated"):
        return [token[:6]]
    found = [token, b64(token), b64(token, urlsafe=True), quote(token, safe="")]
    found += [b64(token, prefix=p)[8:] for p in ("admin:", "ab:", "user:")]
    found += [b64(token, prefix="a:", urlsafe=u)[4:] for u in (False, True)]
    return found


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_of_the_token_is_masked(form: str) -> None:
    text = FORMS[form](TOKEN)
    out = r.redact(text)
    assert r.MASK in out, out
    assert not leaked(out, *needles(form)), out
    assert not leaked(out.replace("\n", "").replace(" ", ""), TOKEN), out


def test_text_around_the_token_is_kept() -> None:
    assert r.redact(f'{{"error": "bad {TOKEN}", "code": 16}}') == '{"error": "bad ***", "code": 16}'
    assert r.redact("nothing secret [here]") == "nothing secret [here]"


def test_another_token_with_the_same_header_is_left_alone() -> None:
    other = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.c2ln"
    assert r.redact(f"the other {other} token") == f"the other {other} token"


def test_nothing_registered_is_a_no_op() -> None:
    r.forget_all()
    assert r.known() == 0
    assert r.redact(TOKEN) == TOKEN


def test_short_and_empty_values_are_not_registered() -> None:
    r.forget_all()
    r.register_many([None, "", "abc"])
    assert r.known() == 0
    assert r.redact("abc def") == "abc def"


def test_a_multi_line_secret_is_masked_whole_in_base64_and_line_by_line() -> None:
    body = [base64.b64encode(bytes([i]) * 48).decode() for i in range(3)]
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----\n"
    r.register(pem)
    assert r.MASK in r.redact(pem)
    assert not leaked(r.redact(pem), *body)
    assert not leaked(r.redact(json.dumps({"key": pem})), *body)
    client_key_data = base64.b64encode(pem.encode()).decode()  # as a kubeconfig holds it
    assert not leaked(r.redact(f"client-key-data: {client_key_data}"), client_key_data[4:])
    assert r.redact(f"line {body[1]} alone") == "line *** alone"


def test_redact_data_masks_keys_and_values_at_any_depth() -> None:
    data = {"a": [{"b": f"x {TOKEN}"}, (TOKEN,)], TOKEN: 1, "n": 2, "ok": None}
    assert r.redact_data(data) == {"a": [{"b": "x ***"}, ("***",)], "***": 1, "n": 2, "ok": None}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "empty"),
        ("abc\ndef", "more than one line"),
        ("abc\rdef", "more than one line"),
        ("abc\x00def", "control character"),
        ("abcdéf", "non-ASCII"),
        ("abc def", "space"),
        ('abc"def', "cannot have"),
        ("abc=def", "cannot have"),
    ],
)
def test_a_bearer_token_must_be_header_safe(value: str, problem: str) -> None:
    found = r.header_problem(value, bearer_token=True)
    assert found is not None and problem in found
    assert value not in found or not value


def test_header_safe_values_pass() -> None:
    assert r.header_problem(TOKEN, bearer_token=True) is None
    assert r.header_problem(f"Bearer {TOKEN}") is None


# --- streams and consoles ---------------------------------------------------------------


def test_the_writer_masks_a_token_written_in_pieces() -> None:
    sink = io.StringIO()
    w = r.RedactingWriter(sink)
    w.write(f"token {TOKEN[:20]}")
    w.write(f"{TOKEN[20:40]}\n  ")  # wrapped over two writes
    w.write(f"{TOKEN[40:]} end\nnext ")
    assert sink.getvalue() == ""  # held until flushed
    w.writelines([TOKEN, "\n"])
    w.flush()
    assert sink.getvalue() == "token *** end\nnext ***\n"


def test_the_writer_writes_out_complete_lines_past_its_limit() -> None:
    sink = io.StringIO()
    w = r.RedactingWriter(sink)
    line = f"{TOKEN} " + "x" * 100 + "\n"
    for _ in range(r.HOLD_LIMIT // len(line) + 1):
        w.write(line)
    assert sink.getvalue().startswith("*** xxx") and TOKEN not in sink.getvalue()
    w.write(TOKEN[:10])
    w.write(TOKEN[10:])
    w.flush()
    assert sink.getvalue().endswith("\n***") and TOKEN not in sink.getvalue()


def test_the_writer_offers_no_way_around_it() -> None:
    w = r.RedactingWriter(io.StringIO())
    with pytest.raises(AttributeError):
        _ = w.buffer
    with pytest.raises(TypeError):
        w.write(TOKEN.encode())  # type: ignore[arg-type]
    assert w.isatty() is False  # everything else is the stream's


def test_the_console_masks_before_laying_out() -> None:
    from rich.table import Table
    from rich.text import Text

    from fracctl.flows.context import redacting_console

    sink = io.StringIO()
    console = redacting_console(file=sink, width=48, color_system=None)
    table = Table("object", "note")
    table.add_row("GpuFractioningConfig default", Text(f"Argo CD said: {TOKEN}", style="red"))
    table.add_row("x", f"plain {json.dumps(TOKEN)}")
    console.print(table)
    console.print(f"a long line that wraps somewhere around here {TOKEN}", markup=False)
    out = sink.getvalue()
    assert out.count(r.MASK) == 3, out
    assert not leaked(out, TOKEN, window=6), out


def test_context_consoles_info_and_warn_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.helpers import unit_context

    ctx = unit_context()
    ctx.info(f"syncing with {TOKEN}")
    ctx.warn(f"server said {quote(TOKEN, safe='')}")
    ctx.out.print(f"result {TOKEN}")
    out = capsys.readouterr()
    assert "***" in out.out and "***" in out.err
    assert not leaked(out.out + out.err, TOKEN, quote(TOKEN, safe=""))


# --- the CLI boundary -------------------------------------------------------------------


@pytest.mark.parametrize("form", list(FORMS))
def test_the_error_line_masks_every_form(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    from fracctl.sandbox import flow as sandbox

    def boom(root: Any, **_: Any) -> list[str]:
        raise ExternalError(f"Argo CD said: {FORMS[form](TOKEN)}")

    monkeypatch.setattr(sandbox, "env_lines", boom)
    res = run_cli("sandbox", "env")
    assert res.exit_code == ExitCode.EXTERNAL, res.output
    assert res.stderr.startswith("Error: Argo CD said: ")
    assert r.MASK in res.stderr
    assert not leaked(res.stderr, *needles(form)), res.stderr


@pytest.mark.parametrize("form", list(FORMS))
def test_stdout_masks_every_form(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    from fracctl.sandbox import flow as sandbox

    monkeypatch.setattr(sandbox, "env_lines", lambda root, **_: [FORMS[form](TOKEN), "done"])
    res = run_cli("sandbox", "env")
    assert res.exit_code == ExitCode.OK, res.output
    assert r.MASK in res.stdout and res.stdout.endswith("done\n")
    assert not leaked(res.stdout, *needles(form)), res.stdout


def test_an_unexpected_error_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from fracctl.sandbox import flow as sandbox

    def boom(root: Any, **_: Any) -> list[str]:
        raise ValueError(f"Invalid header value {('Bearer ' + TOKEN).encode()!r}")

    monkeypatch.setattr(sandbox, "env_lines", boom)
    res = run_cli("sandbox", "env")
    assert res.exit_code == ExitCode.EXTERNAL, res.output
    assert "Unexpected error: ValueError: Invalid header value b'Bearer ***'" in res.stderr
    assert not leaked(res.output, TOKEN)


def test_json_output_is_masked(capsys: pytest.CaptureFixture[str]) -> None:
    from fracctl.cli._app import emit_json

    emit_json({"notes": [f"Argo CD sync: Succeeded (token {TOKEN})"], TOKEN: b64(TOKEN)})
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["notes"] == ["Argo CD sync: Succeeded (token ***)"]
    assert list(doc) == ["notes", "***"] and doc["***"].startswith("***")
    assert not leaked(out, *needles("base64"))


def test_debug_traceback_is_masked(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from fracctl import redact\n"
        "from fracctl.sandbox import flow as sandbox\n"
        "from fracctl.cli.main import main\n"
        f"redact.register({TOKEN!r})\n"
        "def boom(root, **_):\n"
        f"    raise RuntimeError('server echoed ' + {json.dumps(TOKEN)!r})\n"
        "sandbox.env_lines = boom\n"
        "sys.argv = ['fracctl', '--debug', 'sandbox', 'env']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" in done.stderr and "RuntimeError: server echoed" in done.stderr
    assert r.MASK in done.stderr
    assert not leaked(done.stderr, TOKEN), done.stderr


def test_a_usage_error_under_debug_keeps_its_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from fracctl.sandbox import flow as sandbox

    def boom(root: Any, **_: Any) -> list[str]:
        raise UsageError(f"bad {TOKEN}")

    monkeypatch.setattr(sandbox, "env_lines", boom)
    res = run_cli("--debug", "sandbox", "env")
    assert res.exit_code == ExitCode.USAGE, res.output
    assert res.stderr == "Error: bad ***\n"


# --- files and Events -------------------------------------------------------------------


class EventSink:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, ref: Any, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        self.created.append(body)
        return body


def test_audit_line_and_event_are_masked(tmp_path: Path) -> None:
    from fracctl import config as cfg
    from fracctl.flows.context import Context
    from fracctl.flows.recreate.state import record

    sink = EventSink()
    config = cfg.load(None, env={}, overrides={"recreate.state_dir": str(tmp_path)})
    ctx = Context(config=config, kube_factory=lambda: sink)  # type: ignore[arg-type,return-value]
    # (A token cut short is only recognised at the end of a value, not followed by more.)
    echoed = " | ".join(f(TOKEN) for k, f in FORMS.items() if k != "truncated-at-the-end")
    entry = {
        "time": "2026-01-01T00:00:00Z",
        "who": "ops@host",
        "outcome": f"failed: Argo CD said {echoed}",
        "before": {"a": "1"},
        "after": {"b": TOKEN},
    }
    path = record(ctx, live={"metadata": {"name": "default", "uid": "u1"}}, entry=entry)
    line = Path(path).read_text()
    assert json.loads(line)["after"] == {"b": "***"}
    assert not leaked(line, *needles("raw")), line
    (event,) = sink.created
    assert "***" in event["message"]
    assert not leaked(event["message"], *needles("raw"))


def test_backup_is_masked_even_where_yaml_would_fold_it(tmp_path: Path) -> None:
    from fracctl.flows.recreate.state import write_backup

    meta = {
        "name": "default",
        "uid": "0123456789",
        "annotations": {"note": "x " * 50 + TOKEN, "encoded": quote(TOKEN, safe="")},
    }
    live = {"apiVersion": "v1", "kind": "Thing", "metadata": meta}
    text = Path(write_backup(tmp_path, live, meta)).read_text()
    assert text.count("***") == 2, text
    assert not leaked(text.replace("\n", "").replace(" ", ""), TOKEN, quote(TOKEN, safe=""))


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://x-access-token:gh%2Ftok3n-s3cr3t@127.0.0.1:1/org/repo.git", "gh/tok3n-s3cr3t"),
        ("https://ghp_0123456789abcdefXYZ@127.0.0.1:1/org/repo.git", "ghp_0123456789abcdefXYZ"),
    ],
)
def test_git_url_credentials_are_masked(url: str, secret: str, tmp_path: Path) -> None:
    from fracctl.adapters.git import open_repo

    with pytest.raises(ExternalError) as e:
        open_repo(url, str(tmp_path))
    assert not leaked(str(e.value), secret, quote(secret, safe=""), window=6)
    said = r.redact(f"fatal: unable to access '{url}': Connection refused")
    assert r.MASK in said and said.endswith("@127.0.0.1:1/org/repo.git': Connection refused")
    assert not leaked(said, secret, quote(secret, safe=""), window=6)
