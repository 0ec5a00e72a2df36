"""`fracctl config schema`: the JSON Schema of fracctl.yaml, committed, and the examples valid."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from fracctl import config as cfg
from fracctl.adapters.render import RENDERERS
from fracctl.config.json_schema import schema
from fracctl.config.loader import section_types, sections
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "schema" / "fracctl.schema.json"
EXAMPLES = sorted(p for p in (REPO / "examples").rglob("*.y*ml") if p.name.startswith("fracctl"))


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema())


def read(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())  # YAML 1.2, as the loader reads


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    s = schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)


def test_the_committed_schema_is_the_commands_output() -> None:
    r = run_cli("config", "schema")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.stdout == COMMITTED.read_text(), (
        "schema/fracctl.schema.json is stale: fracctl config schema > schema/fracctl.schema.json"
    )


def test_the_example_names_the_committed_schema() -> None:
    first = (REPO / "examples" / "fracctl.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schema/fracctl.schema.json"
    assert (REPO / "examples" / first.split("=", 1)[1]).resolve() == COMMITTED


def test_every_section_and_key_is_in_the_schema_with_its_default() -> None:
    props = schema()["properties"]
    assert list(props) == list(sections())
    defaults = cfg.Config()
    for name, cls in sections().items():
        assert props[name]["additionalProperties"] is False
        assert list(props[name]["properties"]) == list(section_types(cls)), name
        if hasattr(defaults, name):
            section = getattr(defaults, name)
            for key, prop in props[name]["properties"].items():
                value = getattr(cls(), key)
                if key in ("group", "kind", "plural", "finalizer"):  # filled from the preset
                    continue
                assert prop["default"] == value, f"{name}.{key}"
                assert getattr(section, key) == value


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(REPO)) for p in EXAMPLES])
def test_every_example_validates_and_loads(path: Path) -> None:
    errors = [e.message for e in validator().iter_errors(read(path))]
    assert errors == [], f"{path}: {errors}"
    cfg.load(str(path), env={})  # and the loader agrees


def test_there_are_examples() -> None:
    assert REPO / "examples" / "fracctl.yaml" in EXAMPLES


WRONG = [
    ({"bogus": {}}, "'bogus' was unexpected"),
    ({"kube": {"kubecfg": "x"}}, "'kubecfg' was unexpected"),
    ({"timeouts": {"ready": "ten minutes"}}, "is not valid under any of the given schemas"),
    ({"timeouts": {"ready": 0}}, "0 is less than or equal to the minimum of 0"),
    ({"git": {"renderer": "jsonnet"}}, "'jsonnet' is not one of"),
    ({"recreate": {"backend": "kubectl"}}, "'kubectl' is not one of"),
    ({"target": {"naming": "gpu"}}, "'gpu' is not one of"),
    ({"mps": {"protocol": 4}}, "4 is not one of [2, 3]"),
    ({"labels": {"allowed_classes": {"b200": True}}}, "is not of type 'array'"),
    ({"argocd": {"insecure": "maybe"}}, "'maybe' is not of type 'boolean'"),
    ({"fleet": {"parallel": 0}}, "0 is less than the minimum of 1"),
    ({"fleet": {"clusters": [{"name": "no-context"}]}}, "is not valid under any"),
    ({"fleet": {"clusters": [{"context": "eu", "region": "x"}]}}, "is not valid under any"),
]


@pytest.mark.parametrize(("doc", "message"), WRONG, ids=[json.dumps(d) for d, _ in WRONG])
def test_a_wrong_file_is_refused_by_the_schema_and_the_loader(
    tmp_path: Path, doc: dict[str, Any], message: str
) -> None:
    errors = [e.message for e in validator().iter_errors(doc)]
    assert any(message in e for e in errors), errors
    path = tmp_path / "fracctl.yaml"
    path.write_text(json.dumps(doc))  # JSON is YAML
    with pytest.raises(cfg.ConfigError):
        cfg.load(str(path), env={})


def test_a_wrong_example_is_refused(tmp_path: Path) -> None:
    doc = copy.deepcopy(read(REPO / "examples" / "fracctl.yaml"))
    doc["timeouts"]["ready"] = "soon"
    doc["git"]["renderr"] = "auto"
    paths = sorted(".".join(map(str, e.absolute_path)) for e in validator().iter_errors(doc))
    assert paths == ["git", "timeouts.ready"]


def enums() -> list[tuple[str, list[Any]]]:
    found = []
    for name, section in schema()["properties"].items():
        for key, prop in section["properties"].items():
            if "enum" in prop:
                found.append((f"{name}.{key}", prop["enum"]))
    return found


@pytest.mark.parametrize(("key", "choices"), enums(), ids=[k for k, _ in enums()])
def test_each_enum_is_what_the_configuration_accepts(key: str, choices: list[Any]) -> None:
    for choice in choices:
        cfg.check_value(key, choice)
    bogus = 99 if isinstance(choices[0], int) else "no-such-choice"
    with pytest.raises(ValueError):
        cfg.check_value(key, bogus)


def test_the_renderers_are_the_render_adapters() -> None:
    assert schema()["properties"]["git"]["properties"]["renderer"]["enum"] == list(RENDERERS)


def test_durations_take_both_forms() -> None:
    v = validator()
    for value in (90, 1.5, "90", "90s", "10m", "1h", "500ms", " 2m "):
        assert v.is_valid({"timeouts": {"ready": value}}), value
        cfg.check_value("timeouts.ready", value)


def test_descriptions_come_from_the_code() -> None:
    props = schema()["properties"]
    assert props["git"]["description"] == "Where the desired manifests live."
    assert props["kube"]["properties"]["kubeconfig"]["description"].startswith("None: $KUBECONFIG")
    product_keys = props["labels"]["properties"]["product_keys"]["description"]
    assert product_keys.startswith("Set by GPU feature discovery")
