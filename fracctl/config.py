"""fracctl.yaml + environment + flags, validated with clear messages.

Precedence: flags > environment > file > defaults. The file is found from ``--config``,
``FRACCTL_CONFIG``, or ``./fracctl.yaml`` (optional unless named explicitly). Every key
can also come from the environment as ``FRACCTL_<SECTION>_<KEY>`` (upper case), for
example ``FRACCTL_ARGOCD_APP`` or ``FRACCTL_TIMEOUTS_READY=15m``.

A bad file raises :class:`~fracctl.errors.ConfigError` naming the file, line and field.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from fracctl.core import backends as backend_registry
from fracctl.core.mps.limits import parse_pinned_limits
from fracctl.core.podspec import DEFAULT_GPU_RESOURCES
from fracctl.core.policy import product_words
from fracctl.core.resources import ResourceRef, split_api_version, target_ref
from fracctl.errors import ConfigError

# --- target naming presets -------------------------------------------------------------

NAMINGS: dict[str, dict[str, str]] = {
    "gpu-fractioning": {
        "group": "gpu-fractioning.kai.scheduler",
        "kind": "GpuFractioningConfig",
        "plural": "gpufractioningconfigs",
        "finalizer": "gpu-fractioning.nvidia.com/cleanup-node-conditions",
        "condition": "gpu-fractioning.nvidia.com/Ready",
    },
    "gpu-sharing": {
        "group": "gpu-sharing.kai.scheduler",
        "kind": "GpuSharingConfig",
        "plural": "gpusharingconfigs",
        "finalizer": "gpu-sharing.nvidia.com/cleanup-node-conditions",
        "condition": "gpu-sharing.nvidia.com/Ready",
    },
}

DEFAULT_FRACTION_ANNOTATIONS = [
    "gpu-fraction",
    "gpu-memory",
    "gpu-fraction-num-devices",
    "gpu-fraction-container-name",
    "nvidia.com/container.*.gpu-memory.request",
    "nvidia.com/container.*.gpu-memory.limit",
    "nvidia.com/container.*.gpu-compute.mode",
    "nvidia.com/container.*.gpu-compute.portion",
    "nvidia.com/container.*.gpus.devices",
    "received-resource-type=Fraction",
]


class Duration(float):
    """Seconds, written in config as ``90``, ``90s``, ``10m`` or ``1h``."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration(value: object) -> Duration:
    """Parse a duration; raise ValueError with a readable message."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10m or 600s, got {value!r}")
    if isinstance(value, (int, float)):
        return Duration(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"expected a duration like 10m or 600s, got {value!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    return Duration(float(m.group(1)) * scale)


# --- the schema ------------------------------------------------------------------------


def _names_given(section: object, *keys: str) -> None:
    """Object names cannot be blank: a blank name would address the whole collection."""
    for key in keys:
        if not str(getattr(section, key)).strip():
            raise ValueError(f"{key} cannot be empty")


@dataclass(frozen=True)
class KubeConfig:
    """How to reach the cluster."""

    kubeconfig: str | None = None  # None: $KUBECONFIG or ~/.kube/config
    context: str | None = None
    in_cluster: bool = False


@dataclass(frozen=True)
class TargetConfig:
    """The cluster-scoped object whose immutable selector fracctl guards."""

    naming: str = "gpu-fractioning"
    group: str = ""
    version: str = "v1alpha1"
    kind: str = ""
    plural: str = ""
    name: str = "default"
    finalizer: str = ""
    selector_field: str = "spec.nodeSelector"

    def __post_init__(self) -> None:
        _names_given(self, "name")
        preset = NAMINGS.get(self.naming)
        if preset is None:
            raise ValueError(f"naming must be one of {', '.join(NAMINGS)}, got {self.naming!r}")
        for key in ("group", "kind", "plural", "finalizer"):
            if not getattr(self, key):
                object.__setattr__(self, key, preset[key])

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def ref(self) -> ResourceRef:
        """The cluster-scoped resource the target lives in."""
        return target_ref(self.group, self.version, self.plural, self.kind)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether a manifest is the target object (group, kind and name)."""
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        return (
            group == self.group
            and obj.get("kind") == self.kind
            and (obj.get("metadata") or {}).get("name") == self.name
        )


@dataclass(frozen=True)
class ReadinessConfig:
    """The node condition that says a node's fraction daemons run."""

    condition: str = ""
    reason: str = "AllDaemonsReady"


@dataclass(frozen=True)
class LabelsConfig:
    """The node opt-in policy."""

    opt_in: str = "example.org/gpu-fractions=enabled"
    class_key: str = "example.org/gpu-class"
    allowed_classes: list[str] = field(default_factory=lambda: ["rtx-pro-6000", "b200"])
    denied_classes: list[str] = field(default_factory=lambda: ["h200"])
    # Set by GPU feature discovery from the hardware; checked as well as the class label.
    product_keys: list[str] = field(default_factory=lambda: ["nvidia.com/gpu.product"])
    denied_products: list[str] = field(default_factory=lambda: ["H200"])

    def __post_init__(self) -> None:
        if "=" not in self.opt_in or self.opt_in.startswith("="):
            raise ValueError(f"opt_in must look like key=value, got {self.opt_in!r}")
        both = set(self.allowed_classes) & set(self.denied_classes)
        if both:
            raise ValueError(f"classes both allowed and denied: {', '.join(sorted(both))}")
        if any(not k.strip() for k in self.product_keys):
            raise ValueError("product_keys: a label key cannot be empty")
        for pattern in self.denied_products:
            if not product_words(pattern):
                raise ValueError(f"denied_products: {pattern!r} names no product")

    @property
    def opt_in_key(self) -> str:
        """The opt-in label's key."""
        return self.opt_in.split("=", 1)[0]

    @property
    def opt_in_value(self) -> str:
        """The opt-in label's value."""
        return self.opt_in.split("=", 1)[1]


@dataclass(frozen=True)
class PodsConfig:
    """How fractional pods are recognised."""

    fraction_annotations: list[str] = field(
        default_factory=lambda: list(DEFAULT_FRACTION_ANNOTATIONS)
    )
    reservation_namespace: str = "kai-resource-reservation"
    page_size: int = 500


@dataclass(frozen=True)
class GitConfig:
    """Where the desired manifests live."""

    repo: str = "."
    path: str = "."
    revision: str = "HEAD"
    renderer: str = "auto"  # auto | plain | kustomize | helm
    namespace: str = "default"  # for rendered objects that name none
    helm_release: str = ""  # default: the chart folder's name
    helm_namespace: str = ""
    helm_values: list[str] = field(default_factory=list)  # relative to the chart

    def __post_init__(self) -> None:
        if self.renderer not in ("auto", "plain", "kustomize", "helm"):
            raise ValueError(
                f"renderer must be auto, plain, kustomize or helm, got {self.renderer!r}"
            )


@dataclass(frozen=True)
class ArgoCDConfig:
    """The Argo CD server and application that own the target."""

    server: str | None = None  # else $ARGOCD_SERVER
    app: str | None = None
    token_file: str | None = None  # else $ARGOCD_AUTH_TOKEN
    insecure: bool = False
    plaintext: bool = False


@dataclass(frozen=True)
class FluxConfig:
    """The Flux Kustomization that owns the target."""

    kustomization: str = "gpu-fractioning"
    namespace: str = "flux-system"

    def __post_init__(self) -> None:
        _names_given(self, "kustomization", "namespace")


@dataclass(frozen=True)
class RecreateConfig:
    """How ``fracctl recreate`` locks, recreates and records."""

    backend: str = "argocd"  # a name from fracctl.core.backends.REGISTRY
    lock_namespace: str = "default"
    lock_name: str = "fracctl-recreate"
    state_dir: str = "~/.local/state/fracctl"

    def __post_init__(self) -> None:
        _names_given(self, "lock_namespace", "lock_name")
        if self.backend not in backend_registry.names():
            raise ValueError(f"backend must be {backend_registry.choices()}, got {self.backend!r}")


_TOLERATION = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]*)(?:=(?P<value>[A-Za-z0-9._-]*))?"
    r"(?::(?P<effect>NoSchedule|PreferNoSchedule|NoExecute))?$"
)


@dataclass(frozen=True)
class ProbeConfig:
    """The probe pod ``fracctl probe`` sends at a pool."""

    namespace: str = "default"
    image: str = "busybox:1.36"
    scheduler_name: str = "kai-scheduler"
    queue_label: str = "kai.scheduler/queue"
    queue: str = "default-queue"
    # key[=value][:effect]; no value tolerates any value, no effect every effect
    tolerations: list[str] = field(default_factory=lambda: ["nvidia.com/gpu:NoSchedule"])
    run_as_user: int = 65534

    def __post_init__(self) -> None:
        _names_given(self, "namespace")
        for item in self.tolerations:
            m = _TOLERATION.match(item.strip())
            if (
                not m
                or not (m.group("key") or m.group("effect"))
                or (m.group("value") is not None and not m.group("key"))
            ):
                raise ValueError(
                    f"tolerations: expected key[=value][:NoSchedule|PreferNoSchedule|NoExecute], "
                    f"got {item!r}"
                )
        if self.run_as_user <= 0:
            raise ValueError("run_as_user must be a non-root user id (> 0)")


@dataclass(frozen=True)
class TimeoutsConfig:
    """Bounds for every wait."""

    request: Duration = Duration(30)
    delete: Duration = Duration(120)
    sync: Duration = Duration(300)
    ready: Duration = Duration(600)
    probe: Duration = Duration(120)
    lock_lease: Duration = Duration(60)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value <= 0:
                raise ValueError(f"{f.name} must be a positive duration, got {value:g}s")


@dataclass(frozen=True)
class MPSConfig:
    """MPS daemon settings for ``fracctl node``."""

    pipe_dir: str = "/run/nvidia-mps"
    log_dir: str = "/var/log/nvidia-mps"
    control_binary: str = "nvidia-cuda-mps-control"
    protocol: int = 3
    multi_user: bool = True
    default_active_thread_percentage: int | None = None
    pinned_mem_limits: list[str] = field(default_factory=list)  # e.g. ["0=4096M"]
    health_interval: Duration = Duration(10)
    start_timeout: Duration = Duration(30)
    stable_threshold: Duration = Duration(60)
    max_retries: int = 5
    backoff: Duration = Duration(1)
    graceful_stop: Duration = Duration(60)
    max_backoff: Duration = Duration(60)
    health_failures: int = 3
    command_timeout: Duration = Duration(10)
    host_root: str = "/"
    state_dir: str = "/var/lib/fracctl"
    unit_name: str = "fracctl-mps.service"
    nri_socket: str = "/var/run/nri/nri.sock"
    containerd_socket: str = "/run/containerd/containerd.sock"

    def __post_init__(self) -> None:
        if self.protocol not in (2, 3):
            raise ValueError(f"protocol must be 2 or 3, got {self.protocol}")
        pct = self.default_active_thread_percentage
        if pct is not None and not 1 <= pct <= 100:
            raise ValueError(f"default_active_thread_percentage must be 1..100, got {pct}")
        try:
            parse_pinned_limits(self.pinned_mem_limits)
        except ValueError as e:
            raise ValueError(f"pinned_mem_limits: {e}") from None
        if self.max_retries < 0 or self.health_failures < 1:
            raise ValueError("max_retries must be >= 0 and health_failures >= 1")
        if not re.match(r"^[A-Za-z0-9_.@-]+\.service$", self.unit_name):
            raise ValueError(f"unit_name must look like name.service, got {self.unit_name!r}")
        for name in ("health_interval", "start_timeout", "backoff", "command_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


@dataclass(frozen=True)
class ClusterConfig:
    """Where KAI and the node agents live, for ``fracctl doctor`` and ``fracctl lint``."""

    agent_namespace: str = "gpu-fractioning"
    agent_daemonsets: list[str] = field(
        default_factory=lambda: ["gpu-fractioning-mpsd", "gpu-fractioning-fractiond"]
    )
    # The gpu-fractioning operator, in agent_namespace (upstream chart defaults): it
    # releases the config's finalizer on delete. Its leader-election Lease shows it runs
    # now; "" when leader election is off (then only the Deployment is read).
    operator_deployment: str = "gpu-fractioning"
    operator_lease: str = "gpu-fractioning.kai.scheduler"
    scheduler_namespace: str = "kai-scheduler"
    scheduler_config: str = "kai-config"  # the cluster-scoped Config (kai.scheduler/v1)
    runtime_class: str = "nvidia"
    gpu_taint: str = "nvidia.com/gpu"  # the NoSchedule taint key that keeps GPU nodes apart
    gpu_taint_required: bool = True
    gpu_resources: list[str] = field(default_factory=lambda: list(DEFAULT_GPU_RESOURCES))

    def __post_init__(self) -> None:
        _names_given(
            self,
            "agent_namespace",
            "operator_deployment",
            "scheduler_namespace",
            "scheduler_config",
        )
        if not self.gpu_taint.strip():
            raise ValueError("gpu_taint cannot be empty")


@dataclass(frozen=True)
class LintConfig:
    """Policy for ``fracctl lint``."""

    multi_vendor: bool = False  # workloads must not hard-code one vendor's GPU resource
    disable: list[str] = field(default_factory=list)  # rule ids (FL003) or names to skip


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of a fleet: its kubeconfig context and what differs there."""

    context: str
    name: str = ""  # how reports name it (default: the context)
    wave: int = 0  # recreate rolls out wave by wave; 0 is the canary
    app: str | None = None  # this cluster's Argo CD application (else argocd.app)
    path: str | None = None  # this cluster's path or overlay in git (else git.path)

    def __post_init__(self) -> None:
        _names_given(self, "context")
        if not self.name:
            object.__setattr__(self, "name", self.context)
        if self.wave < 0:
            raise ValueError(f"wave must be 0 or more, got {self.wave}")
        for key in ("app", "path"):
            value = getattr(self, key)
            if value is not None and not value.strip():
                raise ValueError(f"{key} cannot be empty")


@dataclass(frozen=True)
class FleetConfig:
    """Several clusters addressed at once (drift, preflight, recreate in waves)."""

    clusters: list[FleetCluster] = field(default_factory=list)
    parallel: int = 4  # clusters checked at once; recreate runs one at a time unless told

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError(f"parallel must be 1 or more, got {self.parallel}")
        seen: set[str] = set()
        for c in self.clusters:
            if c.name in seen:
                raise ValueError(f"clusters: {c.name!r} is listed twice")
            seen.add(c.name)


@dataclass(frozen=True)
class Config:
    """Everything fracctl is configured with."""

    kube: KubeConfig = field(default_factory=KubeConfig)
    target: TargetConfig = field(default_factory=TargetConfig)
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)
    pods: PodsConfig = field(default_factory=PodsConfig)
    git: GitConfig = field(default_factory=GitConfig)
    argocd: ArgoCDConfig = field(default_factory=ArgoCDConfig)
    flux: FluxConfig = field(default_factory=FluxConfig)
    recreate: RecreateConfig = field(default_factory=RecreateConfig)
    timeouts: TimeoutsConfig = field(default_factory=TimeoutsConfig)
    mps: MPSConfig = field(default_factory=MPSConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    lint: LintConfig = field(default_factory=LintConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    source: str | None = None  # the file this came from, if any

    @property
    def condition(self) -> str:
        """The readiness condition type, from the naming preset unless set."""
        return self.readiness.condition or NAMINGS[self.target.naming]["condition"]


# --- loading ---------------------------------------------------------------------------


class _Located:
    """A value with where it came from, so an error can name that place.

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


def _section_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(values: Mapping[str, Mapping[str, _Located]], file: str | None) -> Config:
    sections: dict[str, Any] = {}
    hints = _section_types(Config)
    for section, items in values.items():
        cls = hints[section]
        fields = _section_types(cls)
        kwargs: dict[str, Any] = {}
        for key, loc in items.items():
            where = f"{section}.{key}"
            try:
                kwargs[key] = _coerce(fields[key], loc.value, where)
            except ValueError as e:
                raise ConfigError(_locate(file, loc, where, str(e))) from None
        try:
            sections[section] = cls(**kwargs)
        except ValueError as e:
            raise ConfigError(_locate(file, _blame(items, str(e)), section, str(e))) from None
    return Config(**sections, source=file)


def _blame(items: Mapping[str, _Located], message: str) -> _Located | None:
    """The value a section's complaint is about: the first of its keys the message names."""
    hits = []
    for key in items:
        m = re.search(rf"\b{re.escape(key)}\b", message)
        if m:
            hits.append((m.start(), key))
    if hits:
        return items[min(hits)[1]]
    if all(not loc.origin for loc in items.values()):  # all from the file: its first line
        line = min((loc.line for loc in items.values() if loc.line), default=0)
        return _Located(None, line)
    return None


def _locate(file: str | None, loc: _Located | None, where: str, message: str) -> str:
    """``message`` prefixed with where the value came from: a flag, a variable, file:line."""
    if loc is not None and loc.origin:
        return f"{loc.origin}: {where}: {message}"
    if loc is None:  # values from several places, none named by the message
        return f"{where}: {message}"
    if file and loc.line:
        return f"{file}:{loc.line}: {where}: {message}"
    if file:
        return f"{file}: {where}: {message}"
    return f"{where}: {message}"


def _read_file(path: Path) -> dict[str, dict[str, _Located]]:
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
    hints = _section_types(Config)
    out: dict[str, dict[str, _Located]] = {}
    for section, body in doc.items():
        sline = _line_of(doc, section)
        if section not in hints or section == "source":
            known = ", ".join(k for k in hints if k != "source")
            raise ConfigError(f"{name}:{sline}: unknown section {section!r} (known: {known})")
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{name}:{sline}: {section}: expected a mapping")
        fields = _section_types(hints[section])
        for key, value in body.items():
            line = _line_of(body, key)
            if key not in fields:
                raise ConfigError(
                    f"{name}:{line}: {section}.{key}: unknown key (known: {', '.join(fields)})"
                )
            out.setdefault(section, {})[key] = _Located(_plain(value), line)
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


def _from_env(env: Mapping[str, str]) -> dict[str, dict[str, _Located]]:
    out: dict[str, dict[str, _Located]] = {}
    hints = _section_types(Config)
    for section, cls in hints.items():
        if section == "source":
            continue
        for key in _section_types(cls):
            name = f"FRACCTL_{section}_{key}".upper()
            if name in env:
                out.setdefault(section, {})[key] = _Located(
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

    merged: dict[str, dict[str, _Located]] = {}
    layers = [_read_file(file) if file else {}, _from_env(env)]
    flag_layer: dict[str, dict[str, _Located]] = {}
    hints = _section_types(Config)
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, key = dotted.split(".", 1)
        if section not in hints or key not in _section_types(hints[section]):
            raise ConfigError(f"unknown setting {dotted!r}")  # pragma: no cover - code bug
        flag = (flags or {}).get(dotted) or "a command-line flag"
        flag_layer.setdefault(section, {})[key] = _Located(value, 0, flag)
    layers.append(flag_layer)
    for layer in layers:
        for section, items in layer.items():
            merged.setdefault(section, {}).update(items)
    return _build(merged, str(file) if file else None)


def check_value(dotted: str, raw: Any) -> Any:
    """Parse one setting's value as the configuration would (``"timeouts.ready"``, ``"10m"``).

    For command-line flags that set a configuration key: checked where the flag is
    parsed, a bad value is reported as that flag's. The section's own checks run too,
    with every other key at its default; a complaint that does not name this key (one
    about a combination of keys) is left to :func:`load`, which sees them all.

    Raises:
        ValueError: the value does not parse (a duration, integer, boolean…) or is out
            of range; the message does not repeat the key.
    """
    section, key = dotted.split(".", 1)
    cls = _section_types(Config)[section]
    value = _coerce(_section_types(cls)[key], raw, dotted)
    try:
        cls(**{key: value})
    except ValueError as e:
        m = re.match(rf"^{re.escape(key)}\b:?\s*(.*)$", str(e), re.S)
        if m:
            raise ValueError(m.group(1)) from None
    return value
