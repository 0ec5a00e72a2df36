"""Loading the configuration: file, environment and flags, merged and validated.

Precedence is flags > environment > file > defaults. Each value keeps where it came
from (a file line, an environment variable, a flag), so a bad one raises
:class:`~fracctl.errors.ConfigError` naming that place: a value that does not parse is
known by its key as it is parsed, one a section's checks refuse by the key its
:class:`~fracctl.config.values.InvalidValue` names. :func:`check_value` parses a single
setting as :func:`load` would, for flags checked where they are parsed. The YAML
library is imported only when a file is read.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from fracctl.config.schema import Config
from fracctl.config.values import Duration, InvalidValue, parse_duration
from fracctl.errors import ConfigError


class Located:
    """A setting's value with where it came from, so an error can name that place.

    ``line`` is the line in the file (0 when not from the file); ``origin`` names a
    source other than the file: ``--timeout`` or ``environment variable FRACCTL_…``.
    """

    __slots__ = ("value", "line", "origin")

    def __init__(self, value: Any, line: int, origin: str = "") -> None:
        self.value = value
        self.line = line
        self.origin = origin


def _coerce(tp: Any, raw: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if raw is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(inner, raw, where)
    if tp is Duration:
        return parse_duration(raw)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _coerce_entry(tp, raw, where)
    if tp is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in ("true", "false", "1", "0", "yes", "no"):
            return raw.lower() in ("true", "1", "yes")
        raise ValueError(f"expected true or false, got {raw!r}")
    if tp is int:
        if isinstance(raw, bool):
            raise ValueError(f"expected an integer, got {raw!r}")
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ValueError(f"expected an integer, got {raw!r}") from None
    if tp is str:
        if isinstance(raw, (dict, list)) or raw is None:
            raise ValueError(f"expected a string, got {raw!r}")
        return str(raw)
    if origin is list:
        if isinstance(raw, str):  # from the environment: comma separated
            raw = [p.strip() for p in raw.split(",") if p.strip()]
        if not isinstance(raw, list):
            raise ValueError(f"expected a list, got {raw!r}")
        if dataclasses.is_dataclass(args[0]):  # entries with keys: say which entry
            return [_entry(args[0], i, item, where) for i, item in enumerate(raw)]
        return [_coerce(args[0], item, where) for item in raw]
    raise ValueError(f"unsupported type at {where}")  # pragma: no cover - schema bug


def _entry(tp: Any, index: int, raw: Any, where: str) -> Any:
    try:
        return _coerce(tp, raw, where)
    except ValueError as e:
        raise ValueError(f"entry {index + 1}: {e}") from None


def _coerce_entry(tp: type, raw: Any, where: str) -> Any:
    """A list entry with keys of its own (a fleet's cluster); a bare string is its first key."""
    hints = typing.get_type_hints(tp)
    first = next(iter(hints))
    if isinstance(raw, str):  # from the environment, or the short form in the file
        raw = {first: raw}
    if not isinstance(raw, dict):
        raise ValueError(f"expected a mapping with {first}, got {raw!r}")
    unknown = [k for k in raw if k not in hints]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(hints)})")
    if first not in raw:
        raise ValueError(f"{first} is required, got {raw!r}")
    values = {k: _coerce(hints[k], v, f"{where}.{k}") for k, v in raw.items()}
    return tp(**values)


def section_types(cls: type) -> dict[str, Any]:
    """Each field of the dataclass ``cls`` with its resolved type."""
    return typing.get_type_hints(cls)


#: Fields of :class:`Config` that are not sections of the file.
_NOT_SECTIONS = ("backends", "source")


def sections() -> dict[str, type]:
    """Every section of fracctl.yaml and its dataclass: Config's, then the backends' own."""
    from fracctl.core.gitops.backends import sections as declared

    found = {k: v for k, v in section_types(Config).items() if k not in _NOT_SECTIONS}
    for name, cls in declared().items():
        found.setdefault(name, cls)
    return found


def _build(values: Mapping[str, Mapping[str, Located]], file: str | None) -> Config:
    built: dict[str, Any] = {}
    hints = sections()
    for section, items in values.items():
        cls = hints[section]
        fields = section_types(cls)
        kwargs: dict[str, Any] = {}
        for key, loc in items.items():
            where = f"{section}.{key}"
            try:
                kwargs[key] = _coerce(fields[key], loc.value, where)
            except ValueError as e:
                raise ConfigError(_locate(file, loc, where, str(e))) from None
        try:
            built[section] = cls(**kwargs)
        except InvalidValue as e:
            at_fault = items.get(e.key) if e.key is not None else None
            where_from = at_fault or _anywhere(items)
            raise ConfigError(_locate(file, where_from, section, str(e))) from None
        except ValueError as e:  # a section that names no key (a backend's own, say)
            raise ConfigError(_locate(file, _anywhere(items), section, str(e))) from None
    own = section_types(Config)
    backends = {k: v for k, v in built.items() if k not in own}
    return Config(**{k: v for k, v in built.items() if k in own}, backends=backends, source=file)


def _anywhere(items: Mapping[str, Located]) -> Located | None:
    """Where a complaint that blames no given value points.

    The section's first line in the file when every value came from there, else nowhere
    (the values came from several places).
    """
    if all(not loc.origin for loc in items.values()):
        line = min((loc.line for loc in items.values() if loc.line), default=0)
        return Located(None, line)
    return None


def _locate(file: str | None, loc: Located | None, where: str, message: str) -> str:
    """``message`` prefixed with where the value came from: a flag, a variable, file:line."""
    if loc is not None and loc.origin:
        return f"{loc.origin}: {where}: {message}"
    if loc is None:  # values from several places, no one of them at fault
        return f"{where}: {message}"
    if file and loc.line:
        return f"{file}:{loc.line}: {where}: {message}"
    if file:
        return f"{file}: {where}: {message}"
    return f"{where}: {message}"


def read_file(path: Path) -> dict[str, dict[str, Located]]:
    """The config file's sections, each key with the line it stands on."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{name}: cannot read: {e.strerror}") from None
    try:
        doc = YAML(typ="rt").load(text)
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{name}{at}: not valid YAML: {problem}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{name}:1: the top level must be a mapping of sections")
    hints = sections()
    out: dict[str, dict[str, Located]] = {}
    for section, body in doc.items():
        sline = _line_of(doc, section)
        if section not in hints:
            known = ", ".join(hints)
            raise ConfigError(f"{name}:{sline}: unknown section {section!r} (known: {known})")
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{name}:{sline}: {section}: expected a mapping")
        fields = section_types(hints[section])
        for key, value in body.items():
            line = _line_of(body, key)
            if key not in fields:
                raise ConfigError(
                    f"{name}:{line}: {section}.{key}: unknown key (known: {', '.join(fields)})"
                )
            out.setdefault(section, {})[key] = Located(_plain(value), line)
    return out


def _line_of(mapping: Any, key: Any) -> int:
    try:
        return int(mapping.lc.key(key)[0]) + 1
    except (AttributeError, KeyError, TypeError):
        return 0


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def layer_from_env(env: Mapping[str, str]) -> dict[str, dict[str, Located]]:
    """The settings ``FRACCTL_<SECTION>_<KEY>`` variables give, as a layer of sections."""
    out: dict[str, dict[str, Located]] = {}
    for section, cls in sections().items():
        for key in section_types(cls):
            name = f"FRACCTL_{section}_{key}".upper()
            if name in env:
                out.setdefault(section, {})[key] = Located(
                    env[name], 0, f"environment variable {name}"
                )
    return out


def load(
    path: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Config:
    """Load the configuration.

    Args:
        path: ``--config`` value; when given the file must exist.
        env: the environment (defaults to ``os.environ``).
        overrides: flag values as ``{"section.key": value}``; ``None`` values are ignored.
        flags: the flag each override came from (``{"timeouts.ready": "--timeout"}``),
            so an error names the flag rather than the file.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: the file or a value is invalid.
    """
    env = os.environ if env is None else env
    explicit = path or env.get("FRACCTL_CONFIG")
    file: Path | None = None
    if explicit:
        file = Path(explicit).expanduser()
        if not file.is_file():
            what = "is a directory, not a config file" if file.is_dir() else "config file not found"
            raise ConfigError(
                f"{explicit}: {what}", hint=None if path else "named by FRACCTL_CONFIG"
            )
    elif Path("fracctl.yaml").is_file():
        file = Path("fracctl.yaml")

    merged: dict[str, dict[str, Located]] = {}
    layers = [read_file(file) if file else {}, layer_from_env(env)]
    flag_layer: dict[str, dict[str, Located]] = {}
    hints = sections()
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, key = dotted.split(".", 1)
        if section not in hints or key not in section_types(hints[section]):
            raise ConfigError(f"unknown setting {dotted!r}")  # pragma: no cover - code bug
        flag = (flags or {}).get(dotted) or "a command-line flag"
        flag_layer.setdefault(section, {})[key] = Located(value, 0, flag)
    layers.append(flag_layer)
    for layer in layers:
        for section, items in layer.items():
            merged.setdefault(section, {}).update(items)
    return _build(merged, str(file) if file else None)


def check_value(dotted: str, raw: Any) -> Any:
    """Parse one setting's value as the configuration would (``"timeouts.ready"``, ``"10m"``).

    For command-line flags that set a configuration key: checked where the flag is
    parsed, a bad value is reported as that flag's. The section's own checks run too,
    with every other key at its default; a complaint about another key or about a
    combination of keys is left to :func:`load`, which sees them all.

    Raises:
        ValueError: the value does not parse (a duration, integer, boolean…) or is out
            of range; the message does not repeat the key.
    """
    section, key = dotted.split(".", 1)
    cls = sections()[section]
    value = _coerce(section_types(cls)[key], raw, dotted)
    try:
        cls(**{key: value})
    except InvalidValue as e:
        if e.key == key:
            raise ValueError(e.problem) from None
    except ValueError:  # a section that names no key: load() says it, with the section
        pass
    return value
