"""The config-hook check on snapshots: the release named from Helm's records, Argo CD's
tracking, what could not be read; and the release records decoded as Helm writes them."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.core.doctor import Snapshot, diagnose
from fracctl.core.gitops import helm_release as hr
from fracctl.flows.doctor import settings
from tests.support.helpers import unit_context

HOOKED = {
    "helm.sh/hook": "post-install,post-upgrade",
    "helm.sh/hook-weight": "0",
}


def doctor_settings() -> Any:
    return settings(unit_context(cfg.Config()))


def config(annotations: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "default", "annotations": annotations or {}, **meta},
        "spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def record(name: str, ns: str, version: int, status: str, *, gzipped: bool = True) -> dict:
    """A Secret as Helm's secrets driver writes it (pkg/storage/driver/util.go)."""
    release = {
        "name": name,
        "namespace": ns,
        "version": version,
        "info": {"status": status, "description": "Upgrade complete"},
        "chart": {"metadata": {"name": "gpu-fractioning", "version": "0.1.0"}},
        "config": {"password": "s3cr3t-value"},  # values a user gave: never shown
        "manifest": "---\nkind: ConfigMap\n",
        "hooks": [
            {
                "name": "default",
                "kind": "GpuFractioningConfig",
                "path": "gpu-fractioning/templates/default-cr.yaml",
                "events": ["post-install", "post-upgrade"],
                "manifest": "kind: GpuFractioningConfig",
            }
        ],
    }
    payload = json.dumps(release).encode()
    if gzipped:
        payload = gzip.compress(payload)
    data = base64.b64encode(base64.b64encode(payload)).decode()
    return {
        "metadata": {"name": f"sh.helm.release.v1.{name}.v{version}", "namespace": ns},
        "data": {"release": data},
    }


def hook_findings(snap: Snapshot) -> list[Any]:
    return [f for f in diagnose(snap, doctor_settings()).findings if f.check == "config-hook"]


def test_a_plain_config_is_no_finding() -> None:
    assert hook_findings(Snapshot(target=config())) == []
    result = next(
        r for r in diagnose(Snapshot(), doctor_settings()).results if r.check.id == "config-hook"
    )
    assert result.status == "skipped"


def test_the_release_is_named_from_its_newest_record_and_a_failed_one_is_said() -> None:
    releases = hr.latest(
        [
            record("gpu-fractioning", "gpu-fractioning", 1, "superseded", gzipped=False),
            record("gpu-fractioning", "gpu-fractioning", 2, "failed"),
        ]
    )
    snap = Snapshot(
        target=config(HOOKED), helm_releases=list(releases.values()), helm_read="every namespace"
    )
    (f,) = hook_findings(snap)
    assert "every `helm upgrade` of release gpu-fractioning/gpu-fractioning" in f.symptom
    assert "template gpu-fractioning/templates/default-cr.yaml" in f.symptom
    assert "release gpu-fractioning/gpu-fractioning is failed at revision 2 (Upgrade complete)" in (
        f.evidence
    )
    assert any("helm.sh/hook=post-install,post-upgrade" in e for e in f.evidence)
    assert "fracctl recreate --backend helm" in f.fix
    assert "disableHooks" in f.fix
    assert "s3cr3t" not in json.dumps(f.to_dict())


def guarded_settings(release: str = "gpu-fractioning") -> Any:
    """``recreate.backend: helm`` on the operator's chart, as runbooks/operator-upgrades.md
    configures it."""
    git = cfg.GitConfig(path="charts/gpu-fractioning", renderer="helm", helm_release=release,
                        helm_namespace="gpu-fractioning")  # fmt: skip
    c = cfg.Config(git=git, recreate=dataclasses.replace(cfg.Config().recreate, backend="helm"))
    return settings(unit_context(c))


def hook_result(snap: Snapshot, s: Any) -> tuple[Any, list[Any]]:
    report = diagnose(snap, s)
    result = next(r for r in report.results if r.check.id == "config-hook")
    return result, [f for f in report.findings if f.check == "config-hook"]


@pytest.mark.parametrize("status", ["deployed", "superseded"])
def test_under_the_guarded_helm_backend_the_configured_releases_hook_passes_with_a_note(
    status: str,
) -> None:
    # After the guarded upgrade doctor itself recommends, a CI doctor check can pass.
    releases = hr.latest([record("gpu-fractioning", "gpu-fractioning", 3, status)])
    snap = Snapshot(target=config(HOOKED), helm_releases=list(releases.values()))
    result, findings = hook_result(snap, guarded_settings())
    assert findings == [] and result.status == "ok"
    assert result.note == (
        "carried: the config is release gpu-fractioning/gpu-fractioning's hook (revision 3, "
        f"{status}), and fracctl recreate (recreate.backend: helm) runs its upgrade guarded"
    )


@pytest.mark.parametrize(
    ("records", "release", "why"),
    [
        ([record("gpu-fractioning", "gpu-fractioning", 2, "failed")], "gpu-fractioning",
         "is failed at revision 2"),
        ([record("gpu-fractioning", "gpu-fractioning", 2, "pending-upgrade")], "gpu-fractioning",
         "is stuck pending-upgrade"),
        ([record("gpu-fractioning", "gpu-fractioning", 1, "deployed")], "gpu-fractionng",
         "every `helm upgrade` of release gpu-fractioning/gpu-fractioning"),
        ([], "gpu-fractioning", "no Helm release record found"),
    ],
)  # fmt: skip
def test_under_the_guarded_helm_backend_a_stuck_or_other_release_is_still_a_finding(
    records: list[dict[str, Any]], release: str, why: str
) -> None:
    releases = hr.latest(records)
    snap = Snapshot(target=config(HOOKED), helm_releases=list(releases.values()),
                    helm_read="every namespace")  # fmt: skip
    result, (f,) = hook_result(snap, guarded_settings(release))
    assert result.status == "finding"
    assert why in f.symptom + " ".join(f.evidence)


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ("failed", "upgrades it guarded from the failed revision)"),
        ("pending-upgrade", "a pending revision that a stopped fracctl run on this machine "
                            "left is marked failed first"),
    ],
)  # fmt: skip
def test_under_the_guarded_helm_backend_a_stuck_release_is_finished_by_the_recreate(
    status: str, said: str
) -> None:
    # A revision an interrupted guarded upgrade left: the way on is the same recreate,
    # as drift and the error say, not a manual recovery or a bare helm upgrade.
    releases = hr.latest([record("gpu-fractioning", "gpu-fractioning", 2, status)])
    snap = Snapshot(target=config(HOOKED), helm_releases=list(releases.values()),
                    recreate_command="fracctl -c f.yaml recreate --yes")  # fmt: skip
    _, (f,) = hook_result(snap, guarded_settings())
    assert f.fix.startswith("finish it: fracctl -c f.yaml recreate --yes (recreate.backend: helm")
    assert said in f.fix, f.fix
    assert "`helm upgrade" not in f.fix and "--no-hooks" not in f.fix, f.fix
    assert " ; " not in f.fix, f.fix  # that one way alone


def test_under_the_flux_backend_the_advice_names_the_helmrelease_not_helm() -> None:
    # helm-controller owns the release: a bare `helm upgrade --no-hooks` of it is undone
    # at its next reconcile, so the advice is the HelmRelease's guarded upgrade.
    flux = cfg.FluxConfig(helmrelease="gpu-fractioning")
    c = cfg.Config(flux=flux, recreate=dataclasses.replace(cfg.Config().recreate, backend="flux"))
    releases = hr.latest([record("gpu-fractioning", "gpu-fractioning", 2, "failed")])
    snap = Snapshot(target=config(HOOKED), helm_releases=list(releases.values()))
    _, (f,) = hook_result(snap, settings(unit_context(c)))
    assert (
        "Flux HelmRelease flux-system/gpu-fractioning's: run its upgrade guarded, fracctl "
        "recreate --backend flux --yes" in f.fix
    )
    assert "A release left failed" not in f.fix and "--backend helm" not in f.fix


def test_argocd_tracking_names_the_application() -> None:
    target = config(
        {**HOOKED, "argocd.argoproj.io/tracking-id": "gpu-op:gpu-fractioning.kai.scheduler/x"},
        finalizers=["argocd.argoproj.io/hook-finalizer"],
    )
    (f,) = hook_findings(Snapshot(target=target, helm_read="every namespace"))
    assert "every sync of Argo CD application gpu-op (a PostSync hook)" in f.symptom
    assert "no Helm release record" not in f.symptom


def test_records_that_cannot_be_read_are_said_not_taken_for_none() -> None:
    snap = Snapshot(target=config(HOOKED), helm_unreadable='secrets is forbidden: User "x"')
    (f,) = hook_findings(snap)
    assert "Helm's release records could not be read: secrets is forbidden" in " ".join(f.evidence)
    assert "fracctl rbac print --role doctor" in f.fix


def test_no_record_has_the_hook() -> None:
    (f,) = hook_findings(Snapshot(target=config(HOOKED), helm_read="namespace gpu-fractioning"))
    assert "no Helm release record found" in f.symptom
    assert "no sh.helm.release.v1.* record in namespace gpu-fractioning" in " ".join(f.evidence)


@pytest.mark.parametrize(
    ("annotations", "recreated"),
    [
        (HOOKED, ("post-install", "post-upgrade")),
        (
            {**HOOKED, "helm.sh/hook-delete-policy": "before-hook-creation"},
            ("post-install", "post-upgrade"),
        ),
        ({**HOOKED, "helm.sh/hook-delete-policy": "hook-succeeded"}, ()),
        ({"argocd.argoproj.io/hook": "PostSync"}, ()),
    ],
)
def test_hook_use(annotations: dict[str, str], recreated: tuple[str, ...]) -> None:
    use = hr.hook_use({"metadata": {"annotations": annotations}})
    assert use is not None and use.recreated_on == recreated
    assert hr.hook_use({"metadata": {"annotations": {"a": "b"}}}) is None


def test_foreign_secrets_are_skipped() -> None:
    bad = {"metadata": {"name": "sh.helm.release.v1.x.v1"}, "data": {"release": "!!"}}
    other = {"metadata": {"name": "token"}, "data": {"release": "x"}}
    good = record("r", "ns", 3, "deployed")
    assert list(hr.latest([bad, other, good])) == [("ns", "r")]
    with pytest.raises(hr.NotARelease):
        hr.decode(bad)
