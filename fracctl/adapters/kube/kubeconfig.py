"""Kubeconfig loading for the Kubernetes adapter, and the credentials it must never show.

The kubeconfig is found as kubectl finds it and checked before the client library reads
it, so that a missing file, bad YAML or an unknown context is one line naming the file.
The secrets of a loaded configuration (tokens, passwords, the client key) are registered
with :mod:`fracctl.redact` so that no output shows them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from fracctl.errors import ConfigError
from fracctl.redact import redact, register_many


def load_configuration(
    *,
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    env: Mapping[str, str] | None,
) -> Any:
    """A client library ``Configuration`` from a kubeconfig or the in-cluster account.

    Raises:
        ConfigError: one line naming the file (or the context), never its contents.
    """
    from kubernetes import config as kconfig
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException

    configuration = Configuration()
    if in_cluster:
        try:
            kconfig.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as e:
            raise ConfigError(f"in-cluster config: {first_line(str(e))}") from None
        return configuration
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
        why = re.sub(r"\{.*\}", "{…}", first_line(str(e)))
        raise ConfigError(f"kubeconfig {name}: {why}") from None
    except OSError as e:
        raise ConfigError(f"kubeconfig {name}: {e.strerror}: {e.filename}") from None
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        # a malformed entry the checks above do not look into (a cluster, a user)
        raise ConfigError(
            f"kubeconfig {name}: not a valid kubeconfig ({type(e).__name__})"
        ) from None
    return configuration


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


def first_line(text: str) -> str:
    """The first line of ``text``, with every secret it holds redacted first."""
    text = redact(text)  # before cutting: a secret cut in half is not recognised whole
    return text.strip().splitlines()[0] if text.strip() else text


def register_credentials(configuration: Any) -> None:
    """Register the secrets a client configuration holds, so that no output shows them.

    The bearer token or basic-auth password (from ``api_key``), ``password``, and the
    client key (the file the kubeconfig's ``client-key-data`` was written to).
    """
    values: list[str | None] = [getattr(configuration, "password", None)]
    for value in (getattr(configuration, "api_key", None) or {}).values():
        values.extend(credential_parts(str(value)))
    key_file = getattr(configuration, "key_file", None)
    if key_file:
        try:
            with open(key_file, encoding="utf-8", errors="replace") as f:
                values.append(f.read())
        except OSError:
            pass  # the TLS layer will say it cannot read the key
    register_many(values)


def credential_parts(value: str) -> list[str]:
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
