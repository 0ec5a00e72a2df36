"""Drift reports as text for CI: JUnit XML, GitHub workflow commands, JSON-ready data.

Pure functions from a :class:`~fracctl.core.drift.DriftReport` to strings.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from fracctl.core import drift as d
from fracctl.core.drift import rejection

_VALUE_LIMIT = 300

NEXT_STEP = {
    d.NEEDS_RECREATE: "only delete + recreate can change it",
    d.APPLIES_IN_PLACE: "a sync would apply it in place; the live object is behind git",
    d.RESTARTS_DAEMONS: "carry it guarded (fracctl recreate --yes), not by a plain sync",
    d.MISSING_LIVE: "create it (sync), or check the namespace and the CRD",
    d.MISSING_DESIRED: "git no longer renders it; prune it or add it back to git",
    d.REJECTED: "fix the manifest in git: the API server rejects it",
    d.HOOK: "do not prune it: the tool that runs the chart recreates it (see the hook line)",
}
HOOK_STEP = (
    "run the chart's upgrade guarded (helm: fracctl recreate --backend helm; a Flux "
    "HelmRelease: recreate.backend flux with flux.helmrelease), or keep the config in git "
    "as a plain object and stop the chart's hook (Argo CD: an Argo CD hook in the "
    "application; Flux: disableHooks): runbooks/operator-upgrades.md"
)


def value_text(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """A value as compact JSON (``<absent>`` for None), cut to ``limit`` characters."""
    if value is None:
        return "<absent>"
    text = json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(o: d.ObjectDrift) -> str:
    """One paragraph saying what differs, what the API server said, and what to do."""
    where = f" ({o.location.file}:{o.location.line})" if o.location else ""
    lines = [f"{o.key}: {o.verdict}{where}"]
    for f in o.fields:
        what = f.constraint or "guarded"
        lines.append(
            f"{f.path} is {what}: live {value_text(f.live)}, desired {value_text(f.desired)}"
        )
    for f in o.changes[:5]:
        lines.append(f"{f.path}: live {value_text(f.live)}, desired {value_text(f.desired)}")
    if len(o.changes) > 5:
        lines.append(f"… and {len(o.changes) - 5} more changed fields")
    if o.restarts:
        lines.append(restarts_line(o.restarts))
    if o.message:
        lines.append(f"API server: {rejection.short_message(o.message)}")
    if o.note:
        lines.append(o.note)
    carried = bool(o.hook and o.hook.get("carried_by"))
    if o.hook:
        lines.append(
            f"a hook ({o.hook['annotations']}, {o.hook['source']}): {o.hook['recreated_by']} "
            "deletes it and creates it again"
        )
        if carried:
            lines.append(f"carried: {o.hook['carried_by']}")
        elif o.hook.get("not_carried"):
            lines.append(f"not carried: {o.hook['not_carried']}")
    if o.unfinished:
        lines.append(f"unfinished: {o.unfinished}")
    if o.argocd_claims_synced:
        lines.append("Argo CD reports Synced but the live object differs")
    hook_step = HOOK_STEP if o.hook and not carried else None
    step = o.next_step or hook_step or NEXT_STEP.get(o.verdict)
    if step:
        lines.append(f"Next: {step}")
    return "\n".join(lines)


def restarts_line(r: dict[str, Any]) -> str:
    """Which daemons a change rolls, where, and the fractional pods there."""
    if r.get("unread"):
        return (
            f"restarts the {', '.join(r['daemons'])} daemons on every selected node; {r['unread']}"
        )
    nodes = r["nodes"]
    where = f"{len(nodes)} node(s) ({', '.join(nodes[:5])}{' +more' * (len(nodes) > 5)})"
    pods = r["pods"]
    hit = (
        f"{len(pods)} fractional pod(s) there lose their GPU daemon: {', '.join(pods[:5])}"
        if pods
        else "no fractional pod runs there"
    )
    return f"restarts the {', '.join(r['daemons'])} daemons on {where}; {hit}"


def headline(o: d.ObjectDrift) -> str:
    """A short title: ``needs-recreate: GpuFractioningConfig/default spec.nodeSelector``."""
    paths = ", ".join(f.path for f in o.fields) or ", ".join(f.path for f in o.changes[:3])
    return f"{o.verdict}: {o.key}" + (f" ({paths})" if paths else "")


# --- JUnit ---------------------------------------------------------------------------------


def to_junit(report: d.DriftReport, suite: str = "fracctl drift") -> str:
    """One test case per object; drifted objects fail with the evidence as the body."""
    failures = sum(1 for o in report.objects if o.drifted)
    root = ET.Element(
        "testsuites",
        {"name": suite, "tests": str(len(report.objects)), "failures": str(failures)},
    )
    _suite(root, report, suite)
    return _xml(root)


def fleet_junit(
    clusters: list[tuple[str, d.DriftReport | None, str | None]], suite: str = "fracctl drift"
) -> str:
    """One test suite per cluster; a cluster that could not be checked is one error.

    ``clusters`` holds (cluster name, its report or None, the error when there is none).
    """
    tests = failures = errors = 0
    root = ET.Element("testsuites", {"name": suite})
    for name, report, error in clusters:
        if report is not None:
            _suite(root, report, f"{suite}: {name}", cluster=name)
            tests += len(report.objects)
            failures += sum(1 for o in report.objects if o.drifted)
            continue
        ts = ET.SubElement(
            root,
            "testsuite",
            {"name": f"{suite}: {name}", "tests": "1", "failures": "0", "errors": "1",
             "skipped": "0", "time": "0"},
        )  # fmt: skip
        props = ET.SubElement(ts, "properties")
        ET.SubElement(props, "property", {"name": "cluster", "value": name})
        case = ET.SubElement(ts, "testcase", {"classname": "cluster", "name": name, "time": "0"})
        err = ET.SubElement(case, "error", {"message": (error or "not checked")[:300]})
        err.text = error or "not checked"
        tests += 1
        errors += 1
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    return _xml(root)


def _suite(root: ET.Element, report: d.DriftReport, name: str, *, cluster: str = "") -> None:
    failures = sum(1 for o in report.objects if o.drifted)
    ts = ET.SubElement(
        root,
        "testsuite",
        {
            "name": name,
            "tests": str(len(report.objects)),
            "failures": str(failures),
            "errors": "0",
            "skipped": "0",
            "time": "0",
        },
    )
    props = ET.SubElement(ts, "properties")
    if cluster:
        ET.SubElement(props, "property", {"name": "cluster", "value": cluster})
    for k, v in sorted(report.source.items()):
        ET.SubElement(props, "property", {"name": str(k), "value": str(v)})
    if report.argocd:
        ET.SubElement(
            props, "property", {"name": "argocd.sync", "value": str(report.argocd.get("sync"))}
        )
    for o in report.objects:
        attrs = {"classname": f"{o.kind}", "name": o.key, "time": "0"}
        if o.location is not None:
            attrs["file"] = o.location.file
            attrs["line"] = str(o.location.line)
        case = ET.SubElement(ts, "testcase", attrs)
        if o.drifted:
            fail = ET.SubElement(case, "failure", {"message": headline(o), "type": o.verdict})
            fail.text = describe(o)
    if report.warnings:
        out = ET.SubElement(ts, "system-err")
        out.text = "\n".join(report.warnings)


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- GitHub Actions workflow commands ---------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, title: str = "", file: str = "", line: int = 0) -> str:
    """One ``::error file=…,line=…,title=…::message`` workflow command."""
    props = []
    if file:
        props.append(f"file={_escape_property(file)}")
        if line:
            props.append(f"line={line}")
    if title:
        props.append(f"title={_escape_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{_escape_data(message)}"


def to_github(report: d.DriftReport, summary: str, *, cluster: str = "") -> str:
    """An ``::error`` per drifted object, a ``::warning`` per Argo CD claim, a notice.

    With ``cluster`` (a fleet), every title names it: ``fracctl drift [eu-1]: …``.
    """
    tag = f"fracctl drift [{cluster}]" if cluster else "fracctl drift"
    lines = []
    for o in report.objects:
        if not o.drifted:
            continue
        lines.append(
            annotation(
                "error",
                describe(o),
                title=f"{tag}: {headline(o)}",
                file=o.location.file if o.location else "",
                line=o.location.line if o.location else 0,
            )
        )
    for w in report.warnings:
        lines.append(annotation("warning", w, title=f"{tag}: Argo CD"))
    lines.append(annotation("notice", summary, title=tag))
    return "\n".join(lines) + "\n"
