"""``-o prometheus``: drift and doctor reports as Prometheus text, read back by its parser."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fracctl.core import drift as d
from fracctl.core.prometheus import Family, drift_metrics, exposition, fleet_drift_metrics
from tests.support.metrics import NOW, assert_conventions, lbl, parse

GROUP = "gpu-fractioning.kai.scheduler"


def the_incident() -> d.DriftReport:
    selector = d.FieldDiff("spec.nodeSelector", {"gpu-class": "rtx"}, {"fractions": "enabled"})
    return d.DriftReport(
        objects=[
            d.ObjectDrift(
                f"{GROUP}/v1", "GpuFractioningConfig", "", "default", d.NEEDS_RECREATE,
                fields=[selector],
            ),
            d.ObjectDrift("apps/v1", "Deployment", "ml", "web", d.APPLIES_IN_PLACE),
            d.ObjectDrift("v1", "ConfigMap", "ml", "settings", d.IN_SYNC),
        ],
        warnings=["one warning"],
    )  # fmt: skip


def test_the_incident_as_metrics() -> None:
    text = drift_metrics(the_incident(), now=NOW, seconds=2.5)
    assert_conventions(text)
    families, s = parse(text)
    assert list(families) == [
        "fracctl_drift_objects",
        "fracctl_drift_object_verdict",
        "fracctl_drift_immutable_fields_differing",
        "fracctl_drift_warnings",
        "fracctl_drift_run_timestamp_seconds",
        "fracctl_drift_run_duration_seconds",
    ]
    # every verdict has its series, zero included, so that an alert's absence means in sync
    assert s["fracctl_drift_objects"] == {
        lbl(verdict=v): {d.NEEDS_RECREATE: 1, d.APPLIES_IN_PLACE: 1, d.IN_SYNC: 1}.get(v, 0)
        for v in d.VERDICTS
    }
    target = {"api_group": GROUP, "kind": "GpuFractioningConfig", "object_namespace": ""}
    target["name"] = "default"
    assert s["fracctl_drift_object_verdict"][lbl(**target, verdict="needs-recreate")] == 1
    assert len(s["fracctl_drift_object_verdict"]) == 3
    assert set(s["fracctl_drift_object_verdict"].values()) == {1}
    fields = s["fracctl_drift_immutable_fields_differing"]
    assert fields[lbl(**target)] == 1
    web = lbl(api_group="apps", kind="Deployment", object_namespace="ml", name="web")
    assert fields[web] == 0
    assert s["fracctl_drift_warnings"] == {(): 1}
    assert s["fracctl_drift_run_timestamp_seconds"] == {(): NOW}
    assert s["fracctl_drift_run_duration_seconds"] == {(): 2.5}


def test_in_sync_has_every_drift_series_at_zero() -> None:
    report = d.DriftReport(objects=[d.ObjectDrift("v1", "ConfigMap", "ml", "a", d.IN_SYNC)])
    _, s = parse(drift_metrics(report, now=NOW))
    drifted = {k: v for k, v in s["fracctl_drift_objects"].items() if k != lbl(verdict="in-sync")}
    assert set(drifted.values()) == {0}
    assert s["fracctl_drift_objects"][lbl(verdict="in-sync")] == 1
    assert "fracctl_drift_run_duration_seconds" not in s  # not measured: not written


def test_argo_cds_claims_are_counted_when_argo_cd_is_configured() -> None:
    report = the_incident()
    assert "argocd" not in drift_metrics(report, now=NOW)
    report.argocd = {"app": "gpu-fractioning", "sync": "Synced", "health": "Healthy"}
    report.objects[0].argocd = {"status": "Synced"}
    _, s = parse(drift_metrics(report, now=NOW))
    assert s["fracctl_drift_argocd_synced_drifted_objects"] == {(): 1}


def test_label_values_are_escaped() -> None:
    odd = 'a"b\\c\nd'
    report = d.DriftReport(objects=[d.ObjectDrift("v1", "ConfigMap", "ml", odd, d.IN_SYNC)])
    text = drift_metrics(report, now=NOW)
    assert 'name="a\\"b\\\\c\\nd"' in text
    _, s = parse(text)
    (key,) = s["fracctl_drift_object_verdict"]
    assert dict(key)["name"] == odd


def test_a_fleet_labels_each_cluster_and_says_which_could_not_be_read() -> None:
    fine = d.DriftReport(objects=[d.ObjectDrift("v1", "ConfigMap", "ml", "a", d.IN_SYNC)])
    text = fleet_drift_metrics(
        [("eu-1", the_incident()), ("us-1", fine), ("ap-1", None)], now=NOW, seconds=4.0
    )
    assert_conventions(text)
    _, s = parse(text)
    assert s["fracctl_drift_cluster_up"] == {
        lbl(cluster="eu-1"): 1,
        lbl(cluster="us-1"): 1,
        lbl(cluster="ap-1"): 0,
    }
    objects = s["fracctl_drift_objects"]
    assert objects[lbl(cluster="eu-1", verdict="needs-recreate")] == 1
    assert objects[lbl(cluster="us-1", verdict="needs-recreate")] == 0
    assert not any(dict(k)["cluster"] == "ap-1" for k in objects)
    assert s["fracctl_drift_run_timestamp_seconds"] == {(): NOW}  # one run, one timestamp


@pytest.mark.parametrize(
    ("name", "kind", "said"),
    [
        ("fracctl-drift", "gauge", "not a Prometheus metric name"),
        ("fracctl_runs", "counter", "must end in _total"),
        ("fracctl_runs_total", "gauge", "_total is for counters only"),
        ("fracctl_x", "histogram", "unknown type"),
    ],
)
def test_families_refuse_what_prometheus_would(name: str, kind: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        Family(name, "help", kind)


def test_no_series_or_family_is_written_twice() -> None:
    fam = Family("fracctl_x", "help")
    fam.add(1, {"a": "1", "b": "2"})
    with pytest.raises(ValueError, match="written twice"):
        fam.add(2, {"b": "2", "a": "1"})
    with pytest.raises(ValueError, match="not a label name"):
        fam.add(1, {"__name__": "x"})
    with pytest.raises(ValueError, match="family fracctl_x written twice"):
        exposition([fam, Family("fracctl_x", "again")])


def test_values_and_help_texts() -> None:
    fam = Family("fracctl_x", "line one\nback\\slash")
    for i, v in enumerate((3.0, 0.1, float("inf"), float("-inf"), float("nan"))):
        fam.add(v, {"i": str(i)})
    text = exposition([fam])
    assert "# HELP fracctl_x line one\\nback\\\\slash\n" in text
    assert [line.split(" ")[1] for line in text.splitlines()[2:]] == [
        "3", "0.1", "+Inf", "-Inf", "NaN",
    ]  # fmt: skip
    (parsed,) = text_string_to_metric_families(text)
    assert parsed.documentation == "line one\nback\\slash"
    assert exposition([Family("fracctl_empty", "no samples")]) == ""
