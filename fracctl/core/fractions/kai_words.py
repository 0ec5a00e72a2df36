"""What the KAI scheduler says when it refuses a pod, in its own words.

Read from the KAI scheduler's source (kai-scheduler/KAI-Scheduler):

- ``pkg/scheduler/plugins/gpusharingnodevalidation/gpusharingnodevalidation.go``: in
  NvFractions mode a fractional pod is refused on a node whose readiness condition is
  not True, with :data:`NOT_READY_FORMAT` (condition type, status, reason, message); a
  node without the condition reads ``is Unknown. Reason: ConditionNotFound. Message: ``
  (an empty message).
  Releases before the message was added end at the reason; both forms are read.
- ``pkg/scheduler/api/common_info/errors.go``: the refusals of every node are summed up
  as :data:`RESOURCES_NOT_FOUND` followed by ``": "``, then ``<count> <reason>`` for each
  distinct reason, sorted, joined by a full stop, a space and a newline and ended with ``"."``
  (``TasksFitErrors.Error``). A pool with no node at all says so the same way, with the
  node-filter reasons (``node(s) didn't match Pod's node affinity/selector``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

NOT_READY_FORMAT = (
    "node is not ready for fractional GPU scheduling. Condition %s is %s. Reason: %s. Message: %s"
)
NOT_READY = "node is not ready for fractional GPU scheduling"
MISSING_STATUS = "Unknown"  # v1.ConditionUnknown
MISSING_REASON = "ConditionNotFound"  # fractionalGPUReadyReasonMissing
RESOURCES_NOT_FOUND = "no nodes with enough resources were found"  # ResourcesWereNotFoundMsg
NO_MATCH = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED = "node(s) had untolerated taint(s)"
_JOIN = ". \n"  # between the reasons of TasksFitErrors.Error

_NOT_READY_RE = re.compile(
    r"node is not ready for fractional GPU scheduling\. Condition (?P<condition>\S+) is "
    r"(?P<status>\w+)\. Reason: (?P<reason>[^.]*?)(?:\. Message: (?P<message>.*?))?"
    r"(?:\.?\s*$|\. \n)",
    re.S,
)


def not_ready(condition: str, status: str, reason: str, message: str) -> str:
    """The refusal of one node, as KAI formats it."""
    return NOT_READY_FORMAT % (condition, status, reason, message)


def fit_errors(reasons: Iterable[str]) -> str:
    """The pod's refusal from every node's reason, as ``TasksFitErrors.Error`` sums them."""
    counts = Counter(reasons)
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    if not histogram:
        return RESOURCES_NOT_FOUND
    return f"{RESOURCES_NOT_FOUND}: {_JOIN.join(histogram)}."


@dataclass(frozen=True)
class NotReady:
    """One readiness refusal read back from a message: the condition KAI judged."""

    condition: str
    status: str
    reason: str
    message: str

    @property
    def missing(self) -> bool:
        """The node has no such condition at all."""
        return self.status == MISSING_STATUS and self.reason == MISSING_REASON


def not_ready_in(message: str) -> list[NotReady]:
    """Every readiness refusal in a scheduling message, in order."""
    return [
        NotReady(m["condition"], m["status"], m["reason"], m["message"] or "")
        for m in _NOT_READY_RE.finditer(message)
    ]
