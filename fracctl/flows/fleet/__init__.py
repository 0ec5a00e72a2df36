"""Fleets: the single-cluster flows, run once per cluster, concurrently or in waves.

A fleet is a list of clusters addressed by kubeconfig context, each optionally with its
own Argo CD application, git path (an overlay) and wave (``fleet:`` in fracctl.yaml,
``--context`` given more than once, or ``--all-contexts``). For every cluster this
package builds a :class:`~fracctl.flows.context.Context` of its own (that cluster's
client, overrides and state folder) and runs the existing flow with it; nothing here
decides anything about one cluster that the single-cluster flow does not.

Results are keyed by cluster. A failure in one cluster (unreachable, refused, timed
out) becomes that cluster's result with its exit code, never an exception that hides
the others. ``drift`` and ``preflight`` look at every cluster at once (bounded by
``parallel``); ``recreate`` goes wave by wave, lowest first (wave 0 is the canary), and
stops before the next cluster and the next wave once one fails.
"""

from __future__ import annotations

from fracctl.flows.fleet.checks import drift, preflight
from fracctl.flows.fleet.contexts import member_config, member_context
from fracctl.flows.fleet.membership import Member, members
from fracctl.flows.fleet.progress import FleetProgress, PlainFleetProgress
from fracctl.flows.fleet.results import ClusterResult, FleetResult
from fracctl.flows.fleet.rollout import recreate, resume_command, waves
from fracctl.flows.fleet.runner import Job, MemberRunner

__all__ = [
    "ClusterResult",
    "FleetProgress",
    "FleetResult",
    "Job",
    "Member",
    "PlainFleetProgress",
    "MemberRunner",
    "drift",
    "member_config",
    "member_context",
    "members",
    "preflight",
    "recreate",
    "resume_command",
    "waves",
]
