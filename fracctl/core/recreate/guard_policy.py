"""The admission policy that makes the recreate's guards unavoidable, as plain data.

A ``ValidatingAdmissionPolicy`` (GA since Kubernetes 1.30, enforced by the API server
itself: no webhook to run) refuses every DELETE of the target object unless the
requester is, at that moment, the identity that the recreate lock Lease names as armed.
``fracctl recreate`` arms the Lease (annotation :data:`REQUESTER`, the username the API
server knows it by; :data:`DELEGATE`, when a controller's own run deletes on its behalf)
only after its read-only proofs and guards, right before the delete, and disarms it when
it releases the lock. So ``kubectl delete``, Argo CD's
Force+Replace or prune, Flux's ``force`` and anything else are refused, with a message
that names the one supported road.

The Lease is the binding's parameter (``parameterNotFoundAction: Deny``): with no Lease
at all every delete is refused too. ``fracctl policy apply`` creates the Lease unheld
beside the policy, so the refusal carries this policy's message. CEL in admission has
no clock: a Lease left armed by a run that crashed still names its requester until
fracctl takes the lock over (after ``timeouts.lock_lease``) or someone disarms it (see
``runbooks/guard-policy.md``).

UPDATE is not held to the lock: Argo CD and Flux apply the object's mutable fields, the
operator writes its status and removes its finalizer, and ``nodeSelector`` is already
immutable by the CRD's own rule.
"""

from __future__ import annotations

import json
from typing import Any

from fracctl.core.gitops.helm_release import HOOK as HELM_HOOK
from fracctl.core.settings import LockSettings as Lock
from fracctl.core.settings import TargetSettings as Target

Obj = dict[str, Any]

API_VERSION = "admissionregistration.k8s.io/v1"
REQUESTER = "fracctl.io/delete-requester"  # on the lock Lease: who may delete, now
# On the lock Lease, beside the requester: the controller whose own run deletes the target
# for the armed recreate (helm-controller running the operator chart's hook), if any.
DELEGATE = "fracctl.io/delete-delegate"
PARAM_LABEL = "fracctl.io/guard-parameter"  # on the lock Lease: the policy reads it
LABELS = {"app.kubernetes.io/part-of": "fracctl", "app.kubernetes.io/component": "guard"}


def policy_name(t: Target) -> str:
    """``fracctl-guard-<plural>``: the policy's and the binding's name."""
    return f"fracctl-guard-{t.plural}"


def refused_by_guard(t: Target, error_message: str) -> bool:
    """Whether an API error is this guard policy's refusal (the API server names it)."""
    return f"ValidatingAdmissionPolicy '{policy_name(t)}'" in error_message


def message(t: Target, lock: Lock) -> str:
    """What the API server answers a delete outside ``fracctl recreate``."""
    return (
        f"{t.kind}/{t.name} may be deleted only by fracctl recreate, once its proofs and "
        f"guards passed (it then arms the lock Lease {lock.lock_namespace}/{lock.lock_name} "
        "for its own identity); run: fracctl recreate. Break glass: runbooks/guard-policy.md"
    )


HOOK_RUNBOOK = "runbooks/operator-upgrades.md"


#: The end of the user name Flux's helm-controller deletes a hook as (its service account,
#: ``system:serviceaccount:<namespace>:helm-controller``, fluxcd/flux2 manifests).
HELM_CONTROLLER = ":helm-controller"


def hook_message(t: Target, *, flux: bool = False) -> str:
    """What the API server answers a delete of the target when it is a chart's hook.

    The operator's chart creates the config as a ``post-install,post-upgrade`` hook with
    no delete policy, so every ``helm upgrade`` (and every Argo CD sync of the chart)
    deletes it first (helm/helm ``pkg/action/hooks.go``, before-hook-creation). The API
    server cannot know the caller is helm, but the object says it is a hook: the refusal
    names what was refused and the guarded way to run that upgrade, through the tool that
    owns the release (``flux``: the caller is Flux's helm-controller). Short: helm's error
    and the API server's frame it with some 350 characters of their own.
    """
    way = "flux" if flux else "helm"
    return (
        f"{t.kind}/{t.name} is a chart's hook: run its release's upgrade guarded, "
        f"fracctl recreate --backend {way}; see {HOOK_RUNBOOK}"
    )


def _cel_string(text: str) -> str:
    return json.dumps(text)  # a CEL string literal: JSON's quoting is CEL's


def objects(t: Target, lock: Lock) -> list[Obj]:
    """The policy, its binding, and the unheld lock Lease that is its parameter."""
    name = policy_name(t)
    return [
        _policy(t, lock, name),
        {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": dict(LABELS)},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "paramRef": {
                    "name": lock.lock_name,
                    "namespace": lock.lock_namespace,
                    "parameterNotFoundAction": "Deny",
                },
            },
        },
        *keepalive(),
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": lock.lock_name,
                "namespace": lock.lock_namespace,
                "labels": {**LABELS, PARAM_LABEL: "true"},
            },
            "spec": {},
        },
    ]


def _policy(t: Target, lock: Lock, name: str) -> Obj:
    """The ValidatingAdmissionPolicy: a delete of the target passes only when armed for it."""
    armed = " || ".join(
        f"({_cel_string(key)} in params.metadata.annotations && "
        f"params.metadata.annotations[{_cel_string(key)}] == request.userInfo.username)"
        for key in (REQUESTER, DELEGATE)
    )
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"},
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [t.group],
                        "apiVersions": ["*"],
                        "operations": ["DELETE"],
                        "resources": [t.plural],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "the-target",
                    "expression": f"oldObject.metadata.name == {_cel_string(t.name)}",
                }
            ],
            "validations": [
                {
                    "expression": f"has(params.metadata.annotations) && ({armed})",
                    "messageExpression": _refusal(t, lock),
                    "reason": "Forbidden",
                }
            ],
        },
    }


def _refusal(t: Target, lock: Lock) -> str:
    """The refusal as a CEL message expression, naming the user who was refused.

    A hook's delete is helm (or Argo CD) running the chart, so it names the guarded
    upgrade; any other delete names the recreate.
    """
    return (
        f"(has(oldObject.metadata.annotations) && "
        f"{_cel_string(HELM_HOOK)} in oldObject.metadata.annotations ? "
        + f"(request.userInfo.username.endsWith({_cel_string(HELM_CONTROLLER)})"
        + f" ? {_cel_string(hook_message(t, flux=True))}"
        + f" : {_cel_string(hook_message(t))}) + "
        + "' (refused: ' : "
        + _cel_string(message(t, lock) + " (refused: ")
        + ") + request.userInfo.username + ')'"
    )


KEEPALIVE = "fracctl-lease-parameters"


def keepalive() -> list[Obj]:
    """A policy and binding that match nothing and keep Lease parameters resolvable.

    The API server stops its parameter informer for a built-in kind for good once no
    binding uses that kind (kubernetes/kubernetes#130887, #133827, open in 1.34): a guard
    binding removed and applied again would then judge with the Lease as it was, or find
    none, until the API server restarts. This pair keeps a binding on Leases at all times,
    so lifting and restoring the guard (the runbook's break glass) works.
    """
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": KEEPALIVE, "labels": dict(LABELS)},
            "spec": {
                "failurePolicy": "Ignore",
                "paramKind": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"},
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["fracctl.io"],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["nothing"],
                        }
                    ]
                },
                "validations": [{"expression": "true"}],
            },
        },
        {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": KEEPALIVE, "labels": dict(LABELS)},
            "spec": {
                "policyName": KEEPALIVE,
                "validationActions": ["Deny"],
                "paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"},
            },
        },
    ]


def binding_problems(policy: Obj | None, binding: Obj | None, t: Target, lock: Lock) -> list[str]:
    """What keeps the installed policy from guarding the target (empty: it guards it)."""
    name = policy_name(t)
    if policy is None:
        return [f"no ValidatingAdmissionPolicy {name}"]
    if binding is None:
        return [f"no ValidatingAdmissionPolicyBinding {name}"]
    want = objects(t, lock)[0]["spec"]
    have = policy.get("spec") or {}
    problems = []
    rules = (have.get("matchConstraints") or {}).get("resourceRules") or []
    if not all(_within(r, rules) for r in want["matchConstraints"]["resourceRules"]):
        problems.append(f"the policy does not match DELETE of {t.plural}.{t.group}")
    keys = ("expression", "messageExpression")
    if [{k: v.get(k) for k in keys} for v in have.get("validations") or []] != [
        {k: v.get(k) for k in keys} for v in want["validations"]
    ]:
        problems.append("the policy's rule is not fracctl's")
    spec = binding.get("spec") or {}
    if spec.get("policyName") != name:
        problems.append(f"the binding binds {spec.get('policyName')!r}, not {name}")
    if "Deny" not in (spec.get("validationActions") or []):
        problems.append("the binding does not deny (validationActions lacks Deny)")
    ref = spec.get("paramRef") or {}
    where = f"{ref.get('namespace')}/{ref.get('name')}"
    if (ref.get("namespace"), ref.get("name")) != (lock.lock_namespace, lock.lock_name):
        problems.append(
            f"the binding's parameter is Lease {where}, not the lock Lease "
            f"{lock.lock_namespace}/{lock.lock_name}"
        )
    return problems


def _within(rule: Obj, rules: list[Obj]) -> bool:
    """Whether one of ``rules`` holds every value ``rule`` sets (the server adds defaults)."""
    return any(all(have.get(k) == v for k, v in rule.items()) for have in rules)
