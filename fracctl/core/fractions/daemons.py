"""Which changes of the fractioning config restart the MPS node daemons, from upstream.

The gpu-fractioning operator rebuilds its two DaemonSets from the config on every
reconcile and overwrites their whole spec (kai-scheduler/kai-gpu-fractioning
``operator/internal/common/daemonmgr/reconciler.go`` @6be4ae93, ``CreateOrUpdate`` with
``existing.Spec = desired.Spec``), both with ``updateStrategy: RollingUpdate``
(``daemonset_helpers.go`` ``BaseDaemonSet``). So any field that lands in a pod template
replaces that daemon's pod on every selected node, under the fractional pods running
there: ``gpu-fractioning-mpsd`` (the MPS control daemon) and
``gpu-fractioning-fractiond`` (the NRI agent, with the metrics agent as its second
container; there is no metrics DaemonSet of its own).

Read in kai-scheduler/gpu-fractioning: ``components/mpsd/mpsd.go`` and
``components/fractiond/fractiond.go`` (``BuildDaemonSet``, ``buildArgs``) @340d7e56 (the
line with ``spec.tolerations``) and @db0ba2ec (the line with the MPS drain fields and
per-daemon ``resources``), ``api/v1alpha1/gpufractioningconfig_types.go`` at both, the
chart's ``operator/charts/templates/deployment.yaml`` @97130aba and ``operator/cmd/main.go``
@23ad945b. Every spec field reaches at least one template; none is read by the operator
alone. Why a roll matters as much as the recreate: an MPS client killed with GPU work in
flight makes every other client on that GPU fail and later ones hang in CUDA init until
MPS restarts (``fractioning-manager/mpsd/internal/drain/drain.go`` @74410dec).

A spec field this table does not know is taken to roll both daemons: upstream adds
fields to the templates, never to the operator alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

MPSD = "mpsd"
FRACTIOND = "fractiond"
DAEMONS = (MPSD, FRACTIOND)

# What a change of a field does to the daemons.
NO_EFFECT = "no-effect"
ROLLS = "rolls"
IMMUTABLE = "immutable"


@dataclass(frozen=True)
class FieldEffect:
    """What changing one field of the config (or one chart value) does to the daemons."""

    path: str  # dotted, under the object (``spec.mpsDaemon.gracefulStopDelay``)
    effect: str  # NO_EFFECT | ROLLS | IMMUTABLE (immutable fields also roll, by recreate)
    daemons: tuple[str, ...]  # the components whose pods are replaced
    lands: str  # how it reaches the pod template
    source: str  # where upstream says so

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {**asdict(self), "daemons": list(self.daemons)}


_MPSD_GO = "components/mpsd/mpsd.go buildArgs"
_FD_GO = "components/fractiond/fractiond.go buildArgs"
_BOTH = (MPSD, FRACTIOND)


def _agent(key: str, flag: str) -> FieldEffect:
    return FieldEffect(f"spec.fractioningAgent.{key}", ROLLS, (FRACTIOND,), flag, _FD_GO)


def _mpsd(key: str, flag: str) -> FieldEffect:
    return FieldEffect(f"spec.mpsDaemon.{key}", ROLLS, (MPSD,), flag, _MPSD_GO)


def _metrics(key: str, flag: str) -> FieldEffect:
    where = "components/fractiond/fractiond.go buildMetricsdArgs, applyMetricsSidecar"
    return FieldEffect(f"spec.metricsAgent.{key}", ROLLS, (FRACTIOND,), flag, where)


#: Every field of the config's spec, and what a change of it does.
FIELDS: tuple[FieldEffect, ...] = (
    FieldEffect(
        "spec.nodeSelector",
        IMMUTABLE,
        _BOTH,
        "both pods' nodeSelector",
        "CRD rule self == oldSelf; BuildDaemonSet DaemonNodeSelector",
    ),
    FieldEffect(
        "spec.tolerations",
        ROLLS,
        _BOTH,
        "both pods' tolerations",
        "buildOptions: podSpec.Tolerations = opts.Tolerations",
    ),
    FieldEffect(
        "spec.runtimeClassName",
        ROLLS,
        _BOTH,
        "mpsd's runtimeClassName; fractiond's while metricsAgent.enabled",
        "daemonset_helpers.go ResolveRuntimeClassName",
    ),
    _agent("annotationPrefix", "--annotation-prefix"),
    _agent("nriSocketPath", "--socket-path and the nri-socket hostPath volume"),
    _agent("criSocketPath", "--cri-socket and the cri-socket hostPath volume"),
    _agent("failOpen", "--fail-open"),
    _agent("retroactiveEnforcement", "--retroactive-enforcement and the CRI socket mount"),
    _agent("logLevel", "--log-level"),
    _agent("retryInterval", "--retry-interval"),
    _agent("stableThreshold", "--stable-threshold"),
    _agent("maxRetries", "--max-retries"),
    _agent("readinessPort", "--readiness-port, the container port and both probes"),
    _agent("mpsDrainSocketPath", "--mps-drain-socket and the mps-drain hostPath volume"),
    _agent("mpsDrainTimeout", "--mps-drain-timeout"),
    _agent("resources", "the fractiond container's resources"),
    _metrics("enabled", "the metricsd container, its volumes and runtime class"),
    _metrics("logLevel", "metricsd --log-level"),
    _metrics("address", "metricsd --metrics-address, its port and probes"),
    _metrics("path", "metricsd --metrics-path and the prometheus.io/path annotation"),
    _metrics("metricNames", "metricsd --metric-name-* flags"),
    _metrics("volumes", "the pod's volumes"),
    _metrics("volumeMounts", "metricsd's volume mounts"),
    _metrics("resources", "the metricsd container's resources"),
    _metrics("runtimeClassName", "fractiond's runtimeClassName (older releases)"),
    _mpsd("logLevel", "--log-level"),
    _mpsd("backoff", "--backoff"),
    _mpsd("maxRetries", "--max-retries"),
    _mpsd("stableThreshold", "--stable-threshold"),
    _mpsd("gracefulStopDelay", "--graceful-stop-delay and terminationGracePeriodSeconds"),
    _mpsd("drainSocketPath", "--drain-socket and the mps-drain hostPath volume"),
    _mpsd("recycleWhenIdle", "--recycle-when-idle"),
    _mpsd("clientDrainTimeout", "--client-drain-timeout"),
    _mpsd("resources", "the mpsd container's resources"),
)

#: The operator chart's values that reach the daemons through the operator's environment
#: (``deployment.yaml``, ``main.go``); a change restarts the operator, whose next
#: reconcile rolls them.
CHART_VALUES: tuple[FieldEffect, ...] = (
    FieldEffect(
        "images.mpsd",
        ROLLS,
        (MPSD,),
        "the mpsd container's image",
        "MPSD_IMAGE_{REPOSITORY,TAG,PULL_POLICY}",
    ),
    FieldEffect(
        "images.fractiond",
        ROLLS,
        (FRACTIOND,),
        "the fractiond container's image",
        "FRACTIOND_IMAGE_{REPOSITORY,TAG,PULL_POLICY}",
    ),
    FieldEffect(
        "images.metricsd",
        ROLLS,
        (FRACTIOND,),
        "the metricsd container's image",
        "METRICSD_IMAGE_{REPOSITORY,TAG,PULL_POLICY}",
    ),
    FieldEffect(
        "mpsd.auditLog", ROLLS, (MPSD,), "mpsd env MPS_MEMACCT_AUDIT_LOG", "MPSD_AUDIT_LOG"
    ),
    FieldEffect(
        "supportSmSharing",
        ROLLS,
        _BOTH,
        "mpsd env MPS_SUPPORT_SM_SHARING, fractiond --support-sm-sharing",
        "SUPPORT_SM_SHARING",
    ),
    FieldEffect(
        "global.fipsMode", ROLLS, _BOTH, "image tag suffix -fips, env GODEBUG", "FIPS_MODE"
    ),
    FieldEffect(
        "daemonServiceAccount",
        ROLLS,
        (MPSD,),
        "mpsd's serviceAccountName",
        "DAEMON_SERVICE_ACCOUNT_NAME",
    ),
    FieldEffect(
        "skipGpuStackVersionChecks",
        NO_EFFECT,
        (),
        "the operator only",
        "SKIP_GPU_STACK_VERSION_CHECKS",
    ),
)

#: The older generation (GpuSharingConfig) names the agent's section ``sharingAgent``.
_ALIASES = {"spec.sharingAgent": "spec.fractioningAgent"}
_BY_PATH = {f.path: f for f in FIELDS}
_SECTIONS = ("spec.fractioningAgent", "spec.metricsAgent", "spec.mpsDaemon")


def _canonical(path: str) -> str:
    path = path.split("[", 1)[0]  # a list entry is its list's field
    for alias, name in _ALIASES.items():
        if path == alias or path.startswith(alias + "."):
            return name + path[len(alias) :]
    return path


def effect_of(path: str) -> FieldEffect:
    """What a change at ``path`` (dotted, ``spec.tolerations[1].key`` too) does.

    A path inside a known field is that field's; a path outside ``spec`` (labels,
    annotations, status) has no effect; a spec field this table does not know rolls
    both daemons.
    """
    path = _canonical(path)
    if path != "spec" and not path.startswith("spec."):
        return FieldEffect(path, NO_EFFECT, (), "not in the pod templates", "outside spec")
    parts = path.split(".")
    for n in range(len(parts), 1, -1):
        found = _BY_PATH.get(".".join(parts[:n]))
        if found is not None:
            return found
    for section in _SECTIONS:
        if path == section:  # the whole section: each of its fields, so every daemon of it
            daemons = next(f.daemons for f in FIELDS if f.path.startswith(section + "."))
            return FieldEffect(path, ROLLS, daemons, "a whole section", "see its fields")
    assumed = "unknown to fracctl: assumed to reach both"
    return FieldEffect(path, ROLLS, _BOTH, assumed, "every spec field upstream reaches a template")


@dataclass(frozen=True)
class Restart:
    """A change of one field that restarts daemons, and which."""

    path: str
    live: Any
    desired: Any
    daemons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {**asdict(self), "daemons": list(self.daemons)}


def restarts(changes: Iterable[tuple[str, Any, Any]]) -> list[Restart]:
    """The changes (path, live, desired) that roll daemons; the selector's is the recreate's."""
    out = []
    for path, live, desired in changes:
        effect = effect_of(path)
        if effect.effect == ROLLS:
            out.append(Restart(path, live, desired, effect.daemons))
    return out


def daemons_of(found: Iterable[Restart]) -> tuple[str, ...]:
    """Every daemon the restarts roll, in :data:`DAEMONS` order."""
    named = {d for r in found for d in r.daemons}
    return tuple(d for d in DAEMONS if d in named)


def rolled_fields(daemon: str) -> tuple[str, ...]:
    """The spec fields whose change rolls ``daemon`` (the simulation renders exactly these)."""
    return tuple(f.path for f in FIELDS if daemon in f.daemons)
