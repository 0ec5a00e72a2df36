"""Manifest rules for GPU scheduling: the mistakes a reviewer misses, caught before merge.

Pure functions: parsed manifests and settings in, findings out. Each rule has an id,
a name, a severity and a one-line summary; ``runbooks/lint-rules.md`` explains each
(a test keeps the two in step). A manifest may silence a rule for itself with the
annotation ``fracctl.io/ignore: "FL007 runs a root init step, reviewed in #123"``
(one entry a line; ``FL007,FL008 reason`` silences two rules with one reason); a
suppression without a reason is a finding of its own.

Nothing here trusts the shape of a document: a value of an unexpected type reads as
absent, so an unknown kind or a half-written manifest never crashes a rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.fractional import AnnotationMatcher
from fracctl.core.podspec import (
    PodTemplate,
    containers,
    dig,
    gpu_requests,
    items,
    mapping,
    path_string,
    pod_template,
    root_problems,
    tolerates,
    unpinned,
)
from fracctl.core.policy import LabelPolicy, product_matches
from fracctl.core.resources import split_api_version

IGNORE_ANNOTATION = "fracctl.io/ignore"
MULTI_VENDOR_ANNOTATION = "fracctl.io/multi-vendor"
ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class LintRule:
    """One lint rule."""

    id: str
    name: str
    severity: str
    summary: str


RULES: tuple[LintRule, ...] = (
    LintRule("FL000", "suppression-without-reason", ERROR,
         "an fracctl.io/ignore entry names no reason, or no known rule"),
    LintRule("FL001", "optional-gpu-trap", ERROR,
         "preferred GPU node affinity with a hard GPU request: the pod can never fall back"),
    LintRule("FL002", "vendor-gpu-resource", WARNING,
         "a vendor's GPU resource hard-coded in a workload meant for several vendors"),
    LintRule("FL003", "gpu-fraction-range", ERROR, "gpu-fraction is not a number in (0, 1]"),
    LintRule("FL004", "gpu-memory-mib", ERROR, "gpu-memory is not a whole, positive number of MiB"),
    LintRule("FL005", "fraction-and-memory", ERROR, "gpu-fraction and gpu-memory are both set"),
    LintRule("FL006", "fraction-containers", ERROR,
         "fraction annotations on several containers, or on a container the pod lacks"),
    LintRule("FL007", "fractional-root", ERROR,
         "a fractional workload without runAsNonRoot: true, or running as UID 0"),
    LintRule("FL008", "gpu-toleration-missing", ERROR,
         "a GPU workload without a toleration for the GPU taint the policy requires"),
    LintRule("FL009", "fractioning-config-name", ERROR,
         "the fractioning config is not named default"),
    LintRule("FL010", "fractioning-config-denied-class", ERROR,
         "the fractioning config's nodeSelector can select a denied GPU class"),
    LintRule("FL011", "fractioning-config-count", ERROR, "more than one fractioning config"),
    LintRule("FL012", "agent-image-tag", ERROR,
         "a node-agent image with an empty, latest or chart-default (0.0.0) tag"),
)  # fmt: skip
BY_ID: Mapping[str, LintRule] = {r.id: r for r in RULES}
BY_NAME: Mapping[str, LintRule] = {r.name: r for r in RULES}


def rule_named(text: str) -> LintRule | None:
    """A rule by its id (any case) or its name."""
    return BY_ID.get(text.strip().upper()) or BY_NAME.get(text.strip().lower())


@dataclass(frozen=True)
class LintSettings:
    """What the rules need from the configuration."""

    policy: LabelPolicy
    fraction_annotations: Sequence[str]
    target_group: str
    target_kind: str
    target_name: str = "default"
    agent_namespace: str = "gpu-fractioning"
    agent_names: Sequence[str] = ()
    gpu_taint: str = "nvidia.com/gpu"
    gpu_taint_required: bool = True
    gpu_resources: Sequence[str] = ()
    multi_vendor: bool = False
    disabled: Sequence[str] = ()


@dataclass(frozen=True)
class Finding:
    """One rule broken by one manifest."""

    rule: LintRule
    message: str
    index: int  # which manifest
    path: str = ""  # the field, for its line (spec.template.spec.containers[0])
    suppressed: str | None = None  # the reason given in the manifest, when silenced

    def with_reason(self, reason: str) -> Finding:
        """This finding, silenced with ``reason``."""
        return Finding(self.rule, self.message, self.index, self.path, reason)


def object_name(obj: Mapping[str, Any]) -> str:
    """``Deployment/ml/trainer``, ``GpuFractioningConfig/default``, or ``Kind/?``."""
    meta = mapping(obj.get("metadata"))
    kind = str(obj.get("kind") or "?")
    name = str(meta.get("name") or "?")
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"


# --- the rules ---------------------------------------------------------------------------


Emit = Callable[[str, str, str], None]  # (rule id, message, field path)

_FRACTION = "gpu-fraction"
_MEMORY = "gpu-memory"
_CONTAINER_NAME = "gpu-fraction-container-name"
_PER_CONTAINER = re.compile(r"^nvidia\.com/container\.([^/.]+)\.(gpu-memory|gpu-compute)\.")
_MIB = re.compile(r"^[1-9][0-9]*$")


def _gpu_affinity_keys(spec: Mapping[str, Any], s: LintSettings) -> list[str]:
    keys = {s.policy.class_key, s.policy.opt_in_key, *s.policy.product_keys}
    found: list[str] = []
    preferred = dig(
        spec, ("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    )
    for term in items(preferred):
        pref = mapping(mapping(term).get("preference"))
        for expr in items(pref.get("matchExpressions")) + items(pref.get("matchFields")):
            key = str(mapping(expr).get("key") or "")
            if key and (key in keys or "gpu" in key.lower()):
                found.append(key)
    return found


def _pod_rules(
    obj: Mapping[str, Any], t: PodTemplate, s: LintSettings, m: AnnotationMatcher, emit: Emit
) -> None:
    spec = t.spec
    notes = t.annotations
    gpu = gpu_requests(spec, s.gpu_resources) if s.gpu_resources else gpu_requests(spec)
    fractional = bool(m.match(notes))
    ann_path = path_string(t.at("metadata", "annotations"))

    affinity = _gpu_affinity_keys(spec, s)
    if affinity and gpu:
        c, res, value = gpu[0]
        emit(
            "FL001",
            f"prefers GPU nodes ({', '.join(sorted(set(affinity)))}) but container "
            f"{c.name or c.index} requires {res}: {value}; the preference cannot help the pod "
            "fall back, it stays Pending when no GPU is free. Make the GPU node affinity "
            "required, or drop the GPU request for a CPU fallback",
            path_string(t.at("spec", "affinity")),
        )

    meta_notes = {
        str(k): str(v) for k, v in mapping(mapping(obj.get("metadata")).get("annotations")).items()
    }
    multi = s.multi_vendor or "true" in (
        notes.get(MULTI_VENDOR_ANNOTATION, "").lower(),
        meta_notes.get(MULTI_VENDOR_ANNOTATION, "").lower(),
    )
    if multi:
        for c, res, value in gpu:
            emit(
                "FL002",
                f"container {c.name or c.index} hard-codes {res}: {value} in a workload meant "
                "for several GPU vendors; request the GPU through a vendor-neutral resource "
                "(a DRA ResourceClaim or a class-level resource) chosen per cluster",
                path_string(t.at("spec", c.field, c.index, "resources")),
            )

    fraction = notes.get(_FRACTION)
    if fraction is not None:
        try:
            share = float(fraction)
        except ValueError:
            share = math.nan
        if not (0 < share <= 1):
            emit(
                "FL003",
                f'gpu-fraction is {fraction!r}; it must be a number in (0, 1], such as "0.5"',
                ann_path,
            )
    memory_keys = [
        k for k in notes if k == _MEMORY or (_PER_CONTAINER.match(k) and ".gpu-memory." in k)
    ]
    for key in memory_keys:
        if not _MIB.match(notes[key].strip()):
            emit(
                "FL004",
                f"{key} is {notes[key]!r}; it must be a whole, positive number of MiB "
                '("4096", not "4Gi" or "4096.5")',
                ann_path,
            )
    if fraction is not None and _MEMORY in notes:
        emit(
            "FL005",
            "both gpu-fraction and gpu-memory are set; KAI takes one or the other: keep the "
            "one that states what the workload needs",
            ann_path,
        )

    names = [c.name for c in containers(spec, init=False)]
    annotated = sorted({hit.group(1) for k in notes if (hit := _PER_CONTAINER.match(k))})
    if len(annotated) > 1:
        emit(
            "FL006",
            f"fraction annotations name {len(annotated)} containers ({', '.join(annotated)}); "
            "a fraction is given to one container: annotate only that one",
            ann_path,
        )
    missing = [c for c in annotated if names and c not in names]
    target = notes.get(_CONTAINER_NAME)
    if target is not None and names and target not in names:
        missing.append(target)
    if missing:
        emit(
            "FL006",
            f"fraction annotations name container(s) the pod does not have: "
            f"{', '.join(sorted(set(missing)))} (containers: {', '.join(names)})",
            ann_path,
        )

    if fractional:
        problems = root_problems(spec)
        if problems:
            emit(
                "FL007",
                "a fractional workload may run as root ("
                + "; ".join(problems)
                + "): in multi-user MPS a root client can raise its own cap or delete a "
                "neighbour's namespace. Set securityContext.runAsNonRoot: true and a non-zero "
                "runAsUser",
                path_string(t.at("spec", "securityContext")),
            )

    if s.gpu_taint_required and (gpu or fractional) and not tolerates(spec, s.gpu_taint):
        emit(
            "FL008",
            f"a GPU workload without a toleration for the {s.gpu_taint}:NoSchedule taint that "
            "GPU nodes carry; it will never schedule there. Add tolerations: "
            f"[{{key: {s.gpu_taint}, operator: Exists, effect: NoSchedule}}]",
            path_string(t.at("spec")),
        )


def _selector_problem(selector: Mapping[str, Any], s: LintSettings) -> str | None:
    p = s.policy
    sel = {str(k): str(v) for k, v in selector.items()}
    cls = sel.get(p.class_key)
    if cls is not None and cls in p.denied_classes:
        return f"it selects {p.class_key}={cls}, a denied class"
    for key in p.product_keys:
        value = sel.get(key)
        if value is not None and any(product_matches(value, d) for d in p.denied_products):
            return f"it selects {key}={value}, a denied GPU product"
    if sel.get(p.opt_in_key) == p.opt_in_value:
        return None
    if cls is not None and cls in p.allowed_classes:
        return None
    if not sel:
        return "it is empty and selects every node, denied classes included"
    shown = ", ".join(f"{k}={v}" for k, v in sorted(sel.items()))
    return (
        f"it selects {shown}, which a denied-class node ({', '.join(p.denied_classes)}) can "
        "carry too"
    )


def _config_rules(obj: Mapping[str, Any], s: LintSettings, emit: Emit) -> None:
    name = mapping(obj.get("metadata")).get("name")
    if name != s.target_name:
        emit(
            "FL009",
            f"{s.target_kind} is named {name!r}; the CRD admits only {s.target_name!r}, so the "
            "API server rejects this object",
            "metadata.name",
        )
    selector = dig(obj, ("spec", "nodeSelector"))
    if isinstance(selector, Mapping):
        problem = _selector_problem(selector, s)
        if problem:
            p = s.policy
            emit(
                "FL010",
                f"spec.nodeSelector can select a denied GPU class: {problem}. Select by the "
                f"opt-in label ({p.opt_in_key}: {p.opt_in_value}), which denied nodes never carry",
                "spec.nodeSelector",
            )
    _images_in(obj.get("spec"), ("spec",), emit)


def _images_in(value: Any, path: tuple[str | int, ...], emit: Emit) -> None:
    """Every ``image: ref`` and ``{repository, tag}`` below ``value`` (a config's spec)."""
    if isinstance(value, Mapping):
        image = value.get("image")
        if isinstance(image, str) and unpinned(image):
            emit("FL012", _image_message(image), path_string((*path, "image")))
        if isinstance(value.get("repository"), str) and "tag" in value:
            tag = str(value.get("tag") or "").strip()
            if tag in ("", "latest", "0.0.0", "v0.0.0"):
                emit(
                    "FL012",
                    f"image {value['repository']} has tag {tag!r}: " + _IMAGE_FIX,
                    path_string((*path, "tag")),
                )
        for k, v in value.items():
            if k != "image":
                _images_in(v, (*path, str(k)), emit)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _images_in(v, (*path, i), emit)


_IMAGE_FIX = (
    "a forgotten tag override deploys the chart's default build, not yours; pin the tag "
    "(or a digest) of the build you tested"
)


def _image_message(image: str) -> str:
    return f"image {image!r} is not pinned to a release: {_IMAGE_FIX}"


def _is_agent(obj: Mapping[str, Any], s: LintSettings) -> bool:
    meta = mapping(obj.get("metadata"))
    name = str(meta.get("name") or "")
    return (
        meta.get("namespace") == s.agent_namespace
        or name in s.agent_names
        or name.startswith("gpu-fractioning")
    )


def _check_one(
    index: int, obj: Mapping[str, Any], s: LintSettings, matcher: AnnotationMatcher
) -> list[Finding]:
    found: list[Finding] = []

    def emit(rule_id: str, message: str, path: str) -> None:
        found.append(Finding(BY_ID[rule_id], message, index, path))

    if _is_config(obj, s):
        _config_rules(obj, s, emit)
    t = pod_template(obj)
    if t is not None:
        _pod_rules(obj, t, s, matcher, emit)
        if _is_agent(obj, s):
            for c in containers(t.spec):
                image = c.container.get("image")
                if isinstance(image, str) and unpinned(image):
                    emit(
                        "FL012",
                        f"container {c.name or c.index}: " + _image_message(image),
                        path_string(t.at("spec", c.field, c.index, "image")),
                    )
    reasons, bad = suppressions(obj, t)
    out = [Finding(BY_ID["FL000"], message, index, "metadata.annotations") for message in bad]
    for f in found:
        reason = reasons.get(f.rule.id)
        out.append(f.with_reason(reason) if reason else f)
    return out


def _is_config(obj: Mapping[str, Any], s: LintSettings) -> bool:
    group, _ = split_api_version(str(obj.get("apiVersion") or ""))
    return obj.get("kind") == s.target_kind and group == s.target_group


def check(objects: Sequence[Any], settings: LintSettings) -> list[Finding]:
    """Run every rule on every manifest; suppressed findings come back with their reason.

    Args:
        objects: the parsed manifests, in input order (finding indexes refer to it);
            anything that is not a mapping is skipped.
        settings: the policy.

    Returns:
        The findings, in input order, then by rule.
    """
    disabled = {r.id for r in (rule_named(d) for d in settings.disabled) if r is not None}
    matcher = AnnotationMatcher.compile(settings.fraction_annotations)
    out: list[Finding] = []
    configs: list[int] = []
    for index, obj in enumerate(objects):
        if not isinstance(obj, Mapping):
            continue
        if _is_config(obj, settings):
            configs.append(index)
        out.extend(
            f for f in _check_one(index, obj, settings, matcher) if f.rule.id not in disabled
        )
    if "FL011" not in disabled:
        for index in configs[1:]:
            first = object_name(objects[configs[0]])
            out.append(
                Finding(
                    BY_ID["FL011"],
                    f"another {settings.target_kind} besides {first}: the cluster holds exactly "
                    f"one, named {settings.target_name!r}; keep one document",
                    index,
                    "metadata.name",
                )
            )
    return sorted(out, key=lambda f: (f.index, f.rule.id))


def suppressions(
    obj: Mapping[str, Any], template: PodTemplate | None = None
) -> tuple[dict[str, str], list[str]]:
    """The rules a manifest silences (``rule id -> reason``), and malformed entries.

    Read from ``fracctl.io/ignore`` on the object and on its pod template.
    """
    texts = [mapping(mapping(obj.get("metadata")).get("annotations")).get(IGNORE_ANNOTATION)]
    if template is not None and template.path:
        texts.append(template.annotations.get(IGNORE_ANNOTATION))
    reasons: dict[str, str] = {}
    bad: list[str] = []
    for text in texts:
        if text is None:
            continue
        for entry in str(text).splitlines():
            head, _, reason = entry.strip().partition(" ")
            for name in filter(None, head.split(",")):
                rule = rule_named(name)
                if rule is None:
                    bad.append(
                        f"{IGNORE_ANNOTATION}: {name!r} is not a rule id or name "
                        "(see fracctl lint --list-rules)"
                    )
                elif not reason.strip():
                    bad.append(
                        f"{IGNORE_ANNOTATION}: {rule.id} is silenced without a reason; write "
                        f"'{rule.id} <why this is fine>'"
                    )
                else:
                    reasons[rule.id] = reason.strip()
    return reasons, bad


# --- reports -----------------------------------------------------------------------------


@dataclass
class Located:
    """A finding with the place it points at."""

    finding: Finding
    file: str
    line: int
    object: str

    @property
    def rule(self) -> LintRule:
        """The rule broken."""
        return self.finding.rule

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "rule": self.rule.id,
            "name": self.rule.name,
            "severity": self.rule.severity,
            "message": self.finding.message,
            "file": self.file,
            "line": self.line,
            "object": self.object,
            "field": self.finding.path,
            "suppressed": self.finding.suppressed,
        }


@dataclass
class LintReport:
    """Every finding over every input."""

    findings: list[Located] = field(default_factory=list)
    files: int = 0
    objects: int = 0

    @property
    def active(self) -> list[Located]:
        """Findings that are not suppressed."""
        return [f for f in self.findings if f.finding.suppressed is None]

    @property
    def errors(self) -> list[Located]:
        """Active error-level findings (any makes the exit code 1)."""
        return [f for f in self.active if f.rule.severity == ERROR]

    @property
    def ok(self) -> bool:
        """No active error-level finding."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "ok": self.ok,
            "files": self.files,
            "objects": self.objects,
            "errors": len(self.errors),
            "warnings": len(self.active) - len(self.errors),
            "suppressed": len(self.findings) - len(self.active),
            "findings": [f.to_dict() for f in self.findings],
        }


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
RULES_DOC = "runbooks/lint-rules.md"


def to_sarif(
    report: LintReport, *, version: str, rules: Iterable[LintRule] = RULES
) -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (for code-scanning upload)."""
    listed = list(rules)
    index = {r.id: i for i, r in enumerate(listed)}
    results = []
    for f in report.findings:
        result: dict[str, Any] = {
            "ruleId": f.rule.id,
            "ruleIndex": index[f.rule.id],
            "level": f.rule.severity,
            "message": {"text": f"{f.object}: {f.finding.message}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(f.file),
                        "region": {"startLine": max(1, f.line)},
                    },
                    "logicalLocations": [{"name": f.object, "kind": "resource"}],
                }
            ],
        }
        if f.finding.suppressed is not None:
            result["suppressions"] = [{"kind": "inSource", "justification": f.finding.suppressed}]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fracctl",
                        "version": version,
                        "rules": [
                            {
                                "id": r.id,
                                "name": r.name,
                                "shortDescription": {"text": r.summary},
                                "help": {"text": f"{RULES_DOC}, section {r.id} {r.name}"},
                                "defaultConfiguration": {"level": r.severity},
                            }
                            for r in listed
                        ],
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": results,
            }
        ],
    }


def _artifact(file: str) -> dict[str, Any]:
    # A stream (standard input) has no path: it is described, not addressed.
    if _is_stream(file):
        return {"description": {"text": "standard input"}}
    return {"uri": file}


def _is_stream(file: str) -> bool:
    return file.startswith("<") and file.endswith(">")


def to_github(report: LintReport) -> str:
    """One ``::error``/``::warning`` workflow command per active finding, then a notice."""
    from fracctl.core.report import annotation

    lines = [
        annotation(
            f.rule.severity,
            f"{f.object}: {f.finding.message}",
            title=f"fracctl lint {f.rule.id} {f.rule.name}",
            file="" if _is_stream(f.file) else f.file,
            line=f.line,
        )
        for f in report.active
    ]
    lines.append(annotation("notice", summary(report), title="fracctl lint"))
    return "\n".join(lines) + "\n"


def summary(report: LintReport) -> str:
    """``2 error(s), 1 warning(s), 1 suppressed in 5 object(s) from 3 file(s)``."""
    errors = len(report.errors)
    return (
        f"{errors} error(s), {len(report.active) - errors} warning(s), "
        f"{len(report.findings) - len(report.active)} suppressed in {report.objects} "
        f"object(s) from {report.files} input(s)"
    )
