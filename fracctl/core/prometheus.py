"""Drift and doctor reports as Prometheus metrics, in the text exposition format (0.0.4).

Pure functions from a report to the text that ``-o prometheus`` prints, for the
node-exporter textfile collector or a Pushgateway. Every family has its ``# HELP`` and
``# TYPE`` lines once, label values are escaped, and a series is never written twice.

Names follow the Prometheus conventions: the ``fracctl_`` prefix, then the command,
snake_case, base units with their suffix (``_seconds``), and no ``_total`` (nothing here
is a counter: each run reports a state). The metrics:

``fracctl_drift_objects{verdict}``
    objects judged, one series per verdict (zero included), so an alert can be
    ``fracctl_drift_objects{verdict!="in-sync"} > 0``.
``fracctl_drift_object_verdict{api_group,kind,object_namespace,name,verdict}``
    1 for each object judged, labelled with its verdict. ``object_namespace``, not
    ``namespace``: the scrape of a Pushgateway or a node exporter sets ``namespace``
    to its own, and would fill in the empty one of a cluster-scoped object.
``fracctl_drift_immutable_fields_differing{api_group,kind,object_namespace,name}``
    per object, how many immutable fields live and git disagree on (only a
    delete + recreate can change them).
``fracctl_drift_argocd_synced_drifted_objects``
    with Argo CD configured: drifted objects that Argo CD reports Synced.
``fracctl_drift_warnings``
    the report's warnings.
``fracctl_drift_cluster_up{cluster}``
    over a fleet: 1 when the cluster was judged, 0 when it could not be read (every
    other per-cluster series then carries ``cluster``).
``fracctl_drift_run_timestamp_seconds``, ``fracctl_drift_run_duration_seconds``
    when the run ended (Unix time) and how long it took; an alert on a stale
    timestamp catches a check that stopped running.
``fracctl_doctor_check_status{check,status}``
    per check, 1 for its status (``ok``, ``finding``, ``skipped``) and 0 for the others.
``fracctl_doctor_findings{check}``
    per check, its findings (zero included).
``fracctl_doctor_run_timestamp_seconds``
    when the run ended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fracctl.core import drift as d
from fracctl.core.doctor.model import DoctorReport

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DOCTOR_STATUSES = ("ok", "finding", "skipped")

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_TYPES = ("gauge", "counter", "untyped")

Labels = Mapping[str, str]


@dataclass
class Family:
    """One metric family: its name, help, type and samples (labels, value)."""

    name: str
    help: str
    type: str = "gauge"
    samples: list[tuple[tuple[tuple[str, str], ...], float]] = field(default_factory=list)
    _series: set[tuple[tuple[str, str], ...]] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"not a Prometheus metric name: {self.name!r}")
        if self.type not in _TYPES:
            raise ValueError(f"metric {self.name}: unknown type {self.type!r}")
        if self.type == "counter" and not self.name.endswith("_total"):
            raise ValueError(f"counter {self.name} must end in _total")
        if self.type != "counter" and self.name.endswith("_total"):
            raise ValueError(f"{self.name}: _total is for counters only")

    def add(self, value: float, labels: Labels | None = None) -> None:
        """Add one sample; a series already present is refused."""
        pairs = tuple((labels or {}).items())
        for name, _ in pairs:
            if not _LABEL.match(name) or name.startswith("__"):
                raise ValueError(f"metric {self.name}: not a label name: {name!r}")
        if len({n for n, _ in pairs}) != len(pairs):
            raise ValueError(f"metric {self.name}: a label repeats in {pairs}")
        key = tuple(sorted(pairs))
        if key in self._series:
            raise ValueError(f"metric {self.name}: series {dict(pairs)} written twice")
        self._series.add(key)
        self.samples.append((pairs, float(value)))


def escape_label(value: str) -> str:
    """A label value as the text format quotes it: backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A ``# HELP`` text: backslash and newline escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value: integers without a fraction, ``NaN`` and ``±Inf`` as spelled."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def exposition(families: Iterable[Family]) -> str:
    """The families as text exposition format; families without samples are left out."""
    lines: list[str] = []
    seen: set[str] = set()
    for fam in families:
        if fam.name in seen:
            raise ValueError(f"metric family {fam.name} written twice")
        seen.add(fam.name)
        if not fam.samples:
            continue
        lines.append(f"# HELP {fam.name} {escape_help(fam.help)}")
        lines.append(f"# TYPE {fam.name} {fam.type}")
        for pairs, value in fam.samples:
            labels = ",".join(f'{n}="{escape_label(v)}"' for n, v in pairs)
            series = f"{fam.name}{{{labels}}}" if labels else fam.name
            lines.append(f"{series} {format_value(value)}")
    return "\n".join(lines) + "\n" if lines else ""


# --- drift ---------------------------------------------------------------------------------


def _drift_families(argocd: bool) -> dict[str, Family]:
    fams = [
        Family("fracctl_drift_objects", "Objects fracctl drift judged, by verdict."),
        Family(
            "fracctl_drift_object_verdict",
            "1 for each object judged, labelled with its verdict (in-sync is not drift).",
        ),
        Family(
            "fracctl_drift_immutable_fields_differing",
            "Immutable fields whose live value differs from git, per object: "
            "only a delete and recreate can change them.",
        ),
    ]
    if argocd:
        fams.append(
            Family(
                "fracctl_drift_argocd_synced_drifted_objects",
                "Drifted objects that Argo CD reports Synced.",
            )
        )
    fams.append(Family("fracctl_drift_warnings", "Warnings in the drift report."))
    return {f.name: f for f in fams}


def _add_drift(fams: Mapping[str, Family], report: d.DriftReport, base: Labels) -> None:
    for verdict, n in report.counts().items():
        fams["fracctl_drift_objects"].add(n, {**base, "verdict": verdict})
    for o in report.objects:
        who = {**base, "api_group": o.group, "kind": o.kind}
        who.update(object_namespace=o.namespace, name=o.name)
        fams["fracctl_drift_object_verdict"].add(1, {**who, "verdict": o.verdict})
        fams["fracctl_drift_immutable_fields_differing"].add(len(o.fields), who)
    claims = fams.get("fracctl_drift_argocd_synced_drifted_objects")
    if claims is not None and report.argocd is not None:
        claims.add(sum(1 for o in report.objects if o.argocd_claims_synced), base)
    fams["fracctl_drift_warnings"].add(len(report.warnings), base)


def _run_families(command: str, now: float, seconds: float | None) -> list[Family]:
    stamp = Family(
        f"fracctl_{command}_run_timestamp_seconds",
        f"When fracctl {command} last finished a run, in seconds since the Unix epoch.",
    )
    stamp.add(now)
    out = [stamp]
    if seconds is not None:
        took = Family(
            f"fracctl_{command}_run_duration_seconds",
            f"How long the fracctl {command} run took, in seconds.",
        )
        took.add(seconds)
        out.append(took)
    return out


def drift_metrics(report: d.DriftReport, *, now: float, seconds: float | None = None) -> str:
    """``fracctl drift -o prometheus`` for one cluster; ``now`` is the Unix time."""
    fams = _drift_families(report.argocd is not None)
    _add_drift(fams, report, {})
    return exposition([*fams.values(), *_run_families("drift", now, seconds)])


def fleet_drift_metrics(
    clusters: Sequence[tuple[str, d.DriftReport | None]],
    *,
    now: float,
    seconds: float | None = None,
) -> str:
    """``fracctl drift -o prometheus`` over a fleet: (name, report or ``None``) per cluster.

    A cluster without a report (unreachable, an error) has ``fracctl_drift_cluster_up``
    0 and no other series.
    """
    up = Family(
        "fracctl_drift_cluster_up",
        "1 when fracctl drift judged the cluster, 0 when it could not.",
    )
    argocd = any(r is not None and r.argocd is not None for _, r in clusters)
    fams = _drift_families(argocd)
    for name, report in clusters:
        up.add(0 if report is None else 1, {"cluster": name})
        if report is not None:
            _add_drift(fams, report, {"cluster": name})
    return exposition([up, *fams.values(), *_run_families("drift", now, seconds)])


# --- doctor --------------------------------------------------------------------------------


def doctor_metrics(report: DoctorReport, *, now: float, seconds: float | None = None) -> str:
    """``fracctl doctor -o prometheus``; ``now`` is the Unix time."""
    status = Family(
        "fracctl_doctor_check_status",
        "1 for the status each doctor check ended in (ok, finding, skipped), 0 for the others.",
    )
    findings = Family("fracctl_doctor_findings", "Findings of each doctor check.")
    per_check: dict[str, int] = {r.check.id: 0 for r in report.results}
    for f in report.findings:
        per_check[f.check] = per_check.get(f.check, 0) + 1
    for r in report.results:
        for s in DOCTOR_STATUSES:
            status.add(1 if r.status == s else 0, {"check": r.check.id, "status": s})
    for check_id, n in per_check.items():
        findings.add(n, {"check": check_id})
    return exposition([status, findings, *_run_families("doctor", now, seconds)])
