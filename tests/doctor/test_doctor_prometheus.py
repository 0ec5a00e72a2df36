"""``fracctl doctor -o prometheus``: each check's status and findings as metrics."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from fracctl.core.doctor import CHECK_IDS, Snapshot, diagnose
from fracctl.core.prometheus import doctor_metrics
from fracctl.flows.doctor import settings
from tests.support.helpers import Cluster, run_cli, unit_context
from tests.support.metrics import NOW, assert_conventions, lbl, parse


def test_doctor_metrics_give_every_check_its_status_and_findings() -> None:
    report = diagnose(Snapshot(), settings(unit_context()))
    assert not report.ok
    text = doctor_metrics(report, now=NOW, seconds=0.5)
    assert_conventions(text)
    _, s = parse(text)
    status = s["fracctl_doctor_check_status"]
    assert len(status) == 3 * len(CHECK_IDS)
    for r in report.results:
        for st in ("ok", "finding", "skipped"):
            assert status[lbl(check=r.check.id, status=st)] == (1 if r.status == st else 0)
    findings = s["fracctl_doctor_findings"]
    assert {dict(k)["check"] for k in findings} == set(CHECK_IDS)
    assert sum(findings.values()) == len(report.findings)
    for f in report.findings:
        assert findings[lbl(check=f.check)] >= 1
    assert s["fracctl_doctor_run_timestamp_seconds"] == {(): NOW}
    assert s["fracctl_doctor_run_duration_seconds"] == {(): 0.5}


def test_doctor_metrics_say_what_json_says_with_the_same_exit_code(cluster: Cluster) -> None:
    as_json = run_cli("--kubeconfig", cluster.kubeconfig, "doctor", "-o", "json")
    r = run_cli("--kubeconfig", cluster.kubeconfig, "doctor", "-o", "prometheus")
    assert r.exit_code == as_json.exit_code, r.output
    assert r.stderr == ""
    families = {f.name: f for f in text_string_to_metric_families(r.stdout)}
    assert set(families) == {
        "fracctl_doctor_check_status",
        "fracctl_doctor_findings",
        "fracctl_doctor_run_timestamp_seconds",
        "fracctl_doctor_run_duration_seconds",
    }
    status = {
        s.labels["check"]: s.labels["status"]
        for s in families["fracctl_doctor_check_status"].samples
        if s.value == 1
    }
    assert status == {c["id"]: c["status"] for c in as_json.json["checks"]}
    assert list(status) == list(CHECK_IDS)
    findings = {s.labels["check"]: s.value for s in families["fracctl_doctor_findings"].samples}
    for check in CHECK_IDS:
        expected = sum(1 for f in as_json.json["findings"] if f["check"] == check)
        assert findings[check] == expected, check
