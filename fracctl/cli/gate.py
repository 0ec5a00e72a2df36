"""``fracctl gate``: recreate as a GitOps engine's PreSync and PostSync hooks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fracctl.cli import _app

if TYPE_CHECKING:
    from fracctl.flows.gate import GateResult

app = typer.Typer(
    help="Recreate as Argo CD's PreSync and PostSync hooks: the gate of a progressive sync.",
    no_args_is_help=True,
)

#: Where a kubelet reads a container's termination message (its terminationMessagePath).
TERMINATION_LOG = "/dev/termination-log"
#: The most of it a kubelet keeps.
TERMINATION_LIMIT = 4096

Desired = Annotated[
    Path,
    typer.Option(
        "--desired",
        help="The revision's manifests: a YAML file, or a folder of them (the hook "
        "mounts the ConfigMap the synced revision generates).",
        show_default=False,
    ),
]
TerminationLog = Annotated[
    str,
    typer.Option(
        "--termination-log",
        envvar="FRACCTL_TERMINATION_LOG",
        help="Write the outcome, or the refusal, here for the pod's status (only if the "
        "file exists, as a kubelet makes it).",
    ),
]


def write_termination(path: str, text: str) -> None:
    """The pod's termination message, where the kubelet made the file (else nothing)."""
    if not path or not os.path.isfile(path):
        return
    data = text.encode("utf-8")[:TERMINATION_LIMIT]
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError:
        pass  # the exit code still says it; the message is a courtesy


def _run(ctx: typer.Context, half: str, desired: Path, log: str, output: str, **kw: Any) -> None:
    from fracctl.errors import FracctlError
    from fracctl.flows import gate
    from fracctl.redact import redact

    try:
        c = _app.context(ctx)
        objects = gate.read_desired(desired)
        run = gate.pre_sync if half == gate.PRE_SYNC else gate.post_sync
        result: GateResult = run(c, objects, **kw)
    except FracctlError as e:
        write_termination(log, redact(f"fracctl gate {half}: {e}"))
        raise
    write_termination(log, result.summary())
    if output == "json":
        _app.emit_json(result.to_dict())
        return
    for line in result.lines:
        c.out.print(line, markup=False, soft_wrap=True)


@app.command("pre-sync")
def pre_sync(
    ctx: typer.Context,
    desired: Desired,
    drain: Annotated[
        bool, typer.Option("--drain", help="Fence and evict the fractional pods first.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="With --drain: evict bare pods too.")
    ] = False,
    fleet: Annotated[
        Path | None,
        typer.Option(
            "--fleet",
            help="The folder of the fleet hub's kubeconfig (the Secret fracctl-gate-fleet): "
            "refuse until every earlier step's cluster runs the revision.",
            show_default=False,
        ),
    ] = None,
    tracking: Annotated[
        str,
        typer.Option(
            "--tracking-id",
            envvar="FRACCTL_GATE_TRACKING_ID",
            help="With --fleet: the hook pod's Argo CD tracking id (its Application).",
            show_default=False,
        ),
    ] = "",
    termination_log: TerminationLog = TERMINATION_LOG,
    output: _app.Output = "table",
) -> None:
    """The PreSync hook: the guarded first half of recreate, only when needed.

    When the revision being synced changes an immutable field of the
    fractioning config, take the lock, prove and guard (or drain with
    --drain), back the object up (a ConfigMap beside the lock), arm the
    admission policy for this delete, delete it and wait until it is gone;
    the sync then creates the revision's object. Otherwise end at once,
    without the lock. A refusal exits non-zero and is the pod's termination
    message, which Argo CD shows as the hook's message.

    In a fleet (--fleet: the hub's kubeconfig), it refuses until every
    cluster of the earlier steps runs the revision, whatever order Argo CD
    syncs in (deploy/components/argocd-gate, runbooks/fleet-rollout.md).

    Examples:
        fracctl gate pre-sync --desired /etc/fracctl/desired
        fracctl gate pre-sync --desired /etc/fracctl/desired --drain
        fracctl gate pre-sync --desired desired/ --fleet /etc/fracctl/fleet
    """
    _run(
        ctx,
        "pre-sync",
        desired,
        termination_log,
        output,
        drain=drain,
        force=force,
        fleet=fleet,
        tracking=tracking,
    )


@app.command("post-sync")
def post_sync(
    ctx: typer.Context,
    desired: Desired,
    termination_log: TerminationLog = TERMINATION_LOG,
    output: _app.Output = "table",
) -> None:
    """The PostSync hook: verify the sync, wait for the nodes, release the lock.

    Verify that the live config is the revision's object (the live object,
    never the sync status), wait until every node it selects is ready, lift
    the fence of a drain and release the lock the PreSync hook kept. A
    failure exits non-zero and leaves the lock held for the retry.

    Installed by deploy/components/argocd-gate (roles: fracctl rbac print
    --role gate-pre-sync, --role gate-post-sync); runbooks/fleet-rollout.md.

    Examples:
        fracctl gate post-sync --desired /etc/fracctl/desired
    """
    _run(ctx, "post-sync", desired, termination_log, output)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="gate")
