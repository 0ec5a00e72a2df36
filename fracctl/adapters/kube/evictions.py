"""Evicting a pod through the Eviction API (``pods/eviction``, policy/v1).

The API server answers 201 when the pod may go (it is then deleted with its own grace
period), 429 while a PodDisruptionBudget forbids it, 500 when more than one budget
selects the pod, and 404 (or 409 on the uid precondition) when the pod is gone already
(Kubernetes ``pkg/registry/core/pod/storage/eviction.go``). Each answer is an outcome
here, not an error: the caller decides whether to wait, refuse or go on.
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.adapters.kube.crud import Crud
from fracctl.core.kube.resources import PODS
from fracctl.errors import ApiError, Conflict, NotFound

EVICTED = "evicted"
BLOCKED = "blocked"  # a budget forbids it now (429)
GONE = "gone"  # the pod (this incarnation of it) no longer exists
MULTIPLE_BUDGETS = "multiple-budgets"  # the API server will never evict it (500)


@dataclass(frozen=True)
class Eviction:
    """What the API server said to one eviction."""

    outcome: str
    message: str = ""
    retry_after: float = 0.0  # seconds, with ``BLOCKED``


class Evictions(Crud):
    """``evict``: one eviction, its answer as an :class:`Eviction`."""

    def evict(self, namespace: str, name: str, *, uid: str) -> Eviction:
        """Ask the API server to evict this incarnation of a pod.

        No grace-period override: the pod's own ``terminationGracePeriodSeconds`` applies
        (an MPS client killed mid-kernel can wedge the daemon for every tenant).
        """
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        path = PODS.path(namespace=namespace, name=name, subresource="eviction")
        try:
            self.request("POST", path, body=body, label="POST pods/eviction")
        except (NotFound, Conflict) as e:
            return Eviction(GONE, e.status.message)
        except ApiError as e:
            if e.status.code == 429:
                return Eviction(BLOCKED, e.status.message, float(e.status.retry_after or 5))
            if e.status.code == 500 and "more than one" in e.status.message:
                return Eviction(MULTIPLE_BUDGETS, e.status.message)
            raise
        return Eviction(EVICTED)
