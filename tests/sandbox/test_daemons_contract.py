"""The operator simulation rolls the daemons for exactly the fields upstream does.

:data:`fracctl.core.fractions.daemons.FIELDS` is read from the operator's source; the
simulation (:mod:`fracctl.sandbox.agents`) must change a daemon's pod template for each
field that reaches it, and for nothing else, or the sandbox's tests cannot see a roll.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fracctl.core.fractions import daemons as d
from fracctl.sandbox import agents

BASE: dict[str, Any] = {
    "apiVersion": "gpu-fractioning.kai.scheduler/v1alpha1",
    "kind": "GpuFractioningConfig",
    "metadata": {"name": "default", "uid": "u-1", "labels": {"a": "b"}},
    "spec": {"nodeSelector": {"example.org/gpu-fractions": "enabled"}},
}
SAMPLES = {  # a value of the field's type, for each kind of field
    "spec.tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    "spec.runtimeClassName": "nvidia-cdi",
    "spec.nodeSelector": {"example.org/gpu-class": "b200"},
}


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    cur = out
    keys = path.split(".")
    for key in keys[:-1]:
        cur = cur.setdefault(key, {})
    cur[keys[-1]] = value
    return out


def _templates(config: dict[str, Any]) -> dict[str, str]:
    """Each daemon's rendered template hash."""
    return {
        c: agents.daemonset(f"gpu-fractioning-{c}", "gpu-fractioning", config)["spec"]["template"][
            "metadata"
        ]["annotations"][agents.TEMPLATE_HASH]
        for c in d.DAEMONS
    }


def _rolled(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    a, b = _templates(before), _templates(after)
    return {c for c in d.DAEMONS if a[c] != b[c]}


@pytest.mark.parametrize("field", [f for f in d.FIELDS if f.effect != d.NO_EFFECT],
                         ids=lambda f: f.path)  # fmt: skip
def test_a_change_of_each_field_rolls_exactly_its_daemons(field: d.FieldEffect) -> None:
    base = (
        _set(BASE, "spec.metricsAgent.enabled", True) if "metricsAgent" not in field.path else BASE
    )
    value = SAMPLES.get(field.path, "changed-value")
    after = _set(base, field.path, value)
    assert _rolled(base, after) == set(field.daemons)


def test_the_runtime_class_reaches_fractiond_only_while_metrics_run() -> None:
    after = _set(BASE, "spec.runtimeClassName", "nvidia-cdi")
    assert _rolled(BASE, after) == {d.MPSD}


def test_a_change_outside_the_spec_rolls_nothing() -> None:
    after = _set(BASE, "metadata.annotations", {"team": "ml"})
    after = _set(after, "metadata.labels", {"a": "c"})
    after = _set(after, "status", {"observedGeneration": 4})
    assert _rolled(BASE, after) == set()
    for path in ("metadata.annotations.team", "metadata.labels.a", "status.conditions"):
        assert d.effect_of(path).effect == d.NO_EFFECT


def test_the_graceful_stop_delay_is_the_termination_grace_plus_fifteen_seconds() -> None:
    def grace(config: dict[str, Any]) -> int:
        ds = agents.daemonset("gpu-fractioning-mpsd", "gpu-fractioning", config)
        return int(ds["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])

    assert grace(BASE) == 75
    assert grace(_set(BASE, "spec.mpsDaemon.gracefulStopDelay", "2m")) == 135


def test_paths_inside_a_field_and_older_names_resolve_to_the_field() -> None:
    assert d.effect_of("spec.tolerations[1].key").path == "spec.tolerations"
    assert d.effect_of("spec.sharingAgent.logLevel").daemons == (d.FRACTIOND,)
    assert d.effect_of("spec.mpsDaemon").daemons == (d.MPSD,)
    unknown = d.effect_of("spec.somethingNew")
    assert unknown.effect == d.ROLLS and unknown.daemons == (d.MPSD, d.FRACTIOND)
    assert d.effect_of("spec.nodeSelector.a").effect == d.IMMUTABLE


def test_restarts_keeps_only_rolling_changes_and_names_their_daemons() -> None:
    found = d.restarts(
        [
            ("spec.tolerations[1]", None, {"key": "x"}),
            ("metadata.annotations.team", None, "ml"),
            ("spec.nodeSelector.a", "b", "c"),
            ("spec.mpsDaemon.logLevel", None, "debug"),
        ]
    )
    assert [r.path for r in found] == ["spec.tolerations[1]", "spec.mpsDaemon.logLevel"]
    assert d.daemons_of(found) == (d.MPSD, d.FRACTIOND)
    assert d.daemons_of([]) == ()
