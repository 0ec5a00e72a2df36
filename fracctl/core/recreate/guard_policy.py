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

An UPDATE that changes the spec is refused too, outside a guarded run: every spec field
reaches a daemon's pod template, so its change rolls the MPS node daemons
(:data:`fracctl.core.fractions.daemons.FIELDS`), and a plain ``kubectl apply`` or an Argo
CD or Flux sync of it restarts them under the fractional pods running there. What passes:
a dry run (it changes nothing; ``fracctl drift`` and Argo CD's diff send them), a change
of metadata alone (labels, annotations, the operator removing its finalizer), the status
(its own subresource, not matched), and any update while the Lease is armed for this
object (annotation :data:`UPDATE_ARMED`, the object's uid). ``nodeSelector`` is immutable
by the CRD's own rule. The limit: the policy cannot know which engine's identity applies
the update (fracctl itself, Argo CD, Flux's kustomize-controller), so an armed update is
allowed for any requester while the run holds the Lease armed, from its guards until it
releases the lock.
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
# On the lock Lease: the uid of the target object that a guarded run may update now (an
# update that rolls the MPS daemons is refused otherwise).
UPDATE_ARMED = "fracctl.io/update-armed"
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


def update_message(t: Target) -> str:
    """What the API server answers an update that rolls the daemons, outside a guarded run."""
    return (
        f"this change of {t.kind}/{t.name}'s spec restarts the MPS daemons on every node "
        "it selects (the operator rolls them under the fractional pods running there), so "
        "only a guarded run may make it; run: fracctl recreate. Break glass: "
        "runbooks/guard-policy.md"
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


OPERATIONS = ("DELETE", "UPDATE")  # the requests the guard policy judges


def _policy(t: Target, lock: Lock, name: str) -> Obj:
    """The ValidatingAdmissionPolicy: deletes and daemon-rolling updates only when armed.

    A delete of the target passes only for the identity armed for it; an update that
    rolls the daemons only while the Lease is armed for this object.
    """
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
                        "operations": list(OPERATIONS),
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
            "validations": [_delete_rule(t, lock), _update_rule(t)],
        },
    }


def _delete_rule(t: Target, lock: Lock) -> Obj:
    """A DELETE passes only for the requester (or delegate) armed on the Lease.

    The operation's test comes first, as a conditional: the armed test keeps its own
    form, ``has(...) && ((requester) || (delegate))``.
    """
    armed = " || ".join(
        f"({_cel_string(key)} in params.metadata.annotations && "
        f"params.metadata.annotations[{_cel_string(key)}] == request.userInfo.username)"
        for key in (REQUESTER, DELEGATE)
    )
    return {
        "expression": "request.operation != 'DELETE' ? true : "
        f"has(params.metadata.annotations) && ({armed})",
        "messageExpression": _refusal(t, lock),
        "reason": "Forbidden",
    }


def _update_rule(t: Target) -> Obj:
    """An UPDATE passes as a dry run, when the spec is unchanged, or when armed.

    Armed: the Lease's :data:`UPDATE_ARMED` names this object's uid.
    """
    key = _cel_string(UPDATE_ARMED)
    armed = (
        f"(has(params.metadata.annotations) && {key} in params.metadata.annotations && "
        f"params.metadata.annotations[{key}] == oldObject.metadata.uid)"
    )
    return {
        "expression": "request.operation != 'UPDATE' || request.dryRun || "
        f"({SPEC_UNCHANGED}) || {armed}",
        "messageExpression": f"{_cel_string(update_message(t) + ' (refused: ')} + "
        "request.userInfo.username + ')'",
        "reason": "Forbidden",
    }


#: CEL: ``object``'s spec equals ``oldObject``'s.
#:
#: Every spec field the operator reads reaches a daemon's pod template
#: (:data:`fracctl.core.fractions.daemons.FIELDS`; a field fracctl does not know is taken
#: to reach both), and ``nodeSelector`` cannot change by the CRD's own rule, so any change
#: of the spec restarts daemons. The whole spec is compared, not field by field: a field a
#: release's schema lacks would be an undefined field to the API server's type check, and
#: metadata and status pass untouched.
SPEC_UNCHANGED = (
    "(has(object.spec) == has(oldObject.spec) && "
    "(!has(object.spec) || object.spec == oldObject.spec))"
)


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
    problems = _policy_problems(policy.get("spec") or {}, t, lock)
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


def _policy_problems(have: Obj, t: Target, lock: Lock) -> list[str]:
    """What the installed policy's spec lacks of fracctl's: its match, its two rules.

    A policy applied before the update rule (DELETE alone) is reported as such.
    """
    want = objects(t, lock)[0]["spec"]
    (rule,) = want["matchConstraints"]["resourceRules"]
    rules = (have.get("matchConstraints") or {}).get("resourceRules") or []
    keys = ("expression", "messageExpression")
    found = [{k: v.get(k) for k in keys} for v in have.get("validations") or []]
    deleting, updating = ({k: v.get(k) for k in keys} for v in want["validations"])
    problems = []
    if not _within({**rule, "operations": ["DELETE"]}, rules):
        problems.append(f"the policy does not match DELETE of {t.plural}.{t.group}")
    if deleting not in found:
        problems.append("the policy's rule is not fracctl's")
    if updating not in found or not _within({**rule, "operations": ["UPDATE"]}, rules):
        problems.append(
            f"the policy does not refuse daemon-restarting updates of {t.plural}.{t.group}"
        )
    if not problems and found != [deleting, updating]:
        problems.append("the policy's rule is not fracctl's")
    return problems


def _within(rule: Obj, rules: list[Obj]) -> bool:
    """Whether one of ``rules`` holds every value ``rule`` sets (the server adds defaults).

    Its operations may be more than ``rule``'s, or ``*``.
    """
    return any(
        all(
            set(v) <= set(have.get(k) or []) or "*" in (have.get(k) or [])
            if k == "operations"
            else have.get(k) == v
            for k, v in rule.items()
        )
        for have in rules
    )
