"""The GpuFractioningConfig CRD, written from its documented behaviour.

Both CEL rules carry the upstream messages verbatim, so the API server's rejections
read exactly as they do on a real cluster. The fields follow kai-gpu-fractioning's
``api/v1alpha1/gpufractioningconfig_types.go``: the agent's ``annotationPrefix`` (no
schema default: the agents fall back to theirs), ``retroactiveEnforcement`` (defaulted
true by the API server), its retry settings, ``metricsAgent`` and the status's
conditions (``FractiondReady``, ``MpsdReady``, ``Ready``, ``DriverUpgradeInProgress``).
The older ``GpuSharingConfig`` naming is the same schema under another group and kind,
its agent section named ``sharingAgent`` (``gpusharingconfig_types.go``).
"""

from __future__ import annotations

from typing import Any

NAME_RULE_MESSAGE = "{kind} must be named 'default'"
IMMUTABLE_SELECTOR_MESSAGE = (
    "nodeSelector is immutable; delete and recreate the {kind} to change it"
)


# A metav1.Condition, as the status's conditions hold them.
_CONDITION: dict[str, Any] = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"},
        "message": {"type": "string"},
        "observedGeneration": {"type": "integer"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
    },
}


def _metrics_agent(level: dict[str, Any]) -> dict[str, Any]:
    """``spec.metricsAgent`` (MetricsAgentSpec); its volumes are kept as they come."""
    names = ("gpuMemoryUsedBytes", "gpuSmUtilizationPercent", "gpuSmUtilizationPercentNormalized")
    return {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,  # volumes, volumeMounts
        "properties": {
            "enabled": {"type": "boolean"},
            "logLevel": level,
            "address": {"type": "string"},
            "path": {"type": "string"},
            "runtimeClassName": {"type": "string"},
            "metricNames": {"type": "object", "properties": {n: {"type": "string"} for n in names}},
        },
    }


def _agent(level: dict[str, Any], duration: dict[str, Any]) -> dict[str, Any]:
    """The node agent's section (FractioningAgentSpec; SharingAgentSpec under gpu-sharing)."""
    return {
        "type": "object",
        "properties": {
            "annotationPrefix": {"type": "string"},
            "nriSocketPath": {"type": "string", "default": "/var/run/nri/nri.sock"},
            "criSocketPath": {
                "type": "string",
                "default": "/run/containerd/containerd.sock",
            },
            "failOpen": {"type": "boolean", "default": False},
            "retroactiveEnforcement": {"type": "boolean", "default": True},
            "logLevel": level,
            "retryInterval": duration,
            "stableThreshold": duration,
            "maxRetries": {"type": "integer", "minimum": 0},
            "readinessPort": {"type": "integer", "minimum": 1, "maximum": 65535},
        },
    }


def _spec(kind: str, agent: str) -> dict[str, Any]:
    """The config's ``spec``: an immutable node selector, tolerations, the daemons' settings."""
    duration = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"}
    level = {"type": "string", "enum": ["debug", "info", "warn", "error"]}
    spec = {
        "type": "object",
        "required": ["nodeSelector"],
        "properties": {
            "nodeSelector": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-validations": [
                    {
                        "rule": "self == oldSelf",
                        "message": IMMUTABLE_SELECTOR_MESSAGE.format(kind=kind),
                    }
                ],
            },
            "tolerations": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "runtimeClassName": {"type": "string", "default": "nvidia"},
            agent: _agent(level, duration),
            "metricsAgent": _metrics_agent(level),
            "mpsDaemon": {
                "type": "object",
                "properties": {
                    "backoff": duration,
                    "maxRetries": {"type": "integer", "minimum": 0},
                    "stableThreshold": duration,
                    "gracefulStopDelay": {**duration, "default": "60s"},
                },
            },
        },
    }
    return spec


def fractioning_crd(
    *,
    group: str,
    kind: str,
    plural: str,
    version: str = "v1alpha1",
    agent: str = "fractioningAgent",
) -> dict[str, Any]:
    """The CustomResourceDefinition for a cluster-scoped fractioning config.

    ``agent`` is the name of the node agent's section (``sharingAgent`` for the
    gpu-sharing generation).
    """
    spec = _spec(kind, agent)
    schema = {
        "type": "object",
        "required": ["spec"],
        "x-kubernetes-validations": [
            {
                "rule": "self.metadata.name == 'default'",
                "message": NAME_RULE_MESSAGE.format(kind=kind),
            }
        ],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {
                "type": "object",
                "properties": {
                    "observedGeneration": {"type": "integer"},
                    "conditions": {
                        "type": "array",
                        "items": _CONDITION,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"],
                    },
                },
            },
        },
    }
    age = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    return _crd(
        group, kind, plural, scope="Cluster", version=version, schema=schema, printer_columns=[age]
    )


def open_crd(
    group: str,
    kind: str,
    plural: str,
    *,
    scope: str,
    version: str = "v1",
    short_names: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A CRD with another project's real names and an open schema (status subresource).

    Enough for its objects to exist and be read where the project itself cannot run.
    """
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = {"type": "object", "properties": {"spec": open_object, "status": open_object}}
    return _crd(group, kind, plural, scope=scope, version=version, schema=schema,
                short_names=short_names)  # fmt: skip


def _crd(
    group: str,
    kind: str,
    plural: str,
    *,
    scope: str,
    version: str,
    schema: dict[str, Any],
    short_names: tuple[str, ...] = (),
    printer_columns: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A CRD serving and storing one version with ``schema`` and a status subresource."""
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    served: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": schema},
    }
    if printer_columns:
        served["additionalPrinterColumns"] = printer_columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [served]},
    }


def kai_config_crd() -> dict[str, Any]:
    """A minimal CRD for KAI's cluster-scoped ``Config``: the real names, an open schema.

    Enough for a ``kai-config`` object to exist and be read (``spec.global.gpuSharingMode``);
    KAI's own CRD validates far more.
    """
    return open_crd("kai.scheduler", "Config", "configs", scope="Cluster")
