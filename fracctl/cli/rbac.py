"""``fracctl rbac``: the Kubernetes permissions each fracctl command needs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from fracctl.cli import _app
from fracctl.core.gitops.backends import NAMES as BACKEND_NAMES
from fracctl.core.gitops.backends import names as backend_names
from fracctl.core.rbac import ROLES

app = typer.Typer(
    help="The least-privilege RBAC of each fracctl role, to review and apply.",
    no_args_is_help=True,
)

if TYPE_CHECKING:
    RoleName = str
    BackendName = str
else:  # the names from core, so that typer lists them in --help
    RoleName = _app.literal(ROLES)
    BackendName = _app.literal(BACKEND_NAMES)
RoleFormat = Literal["yaml", "json"]


@app.command("print")
def print_role(
    ctx: typer.Context,
    role: Annotated[
        RoleName,
        typer.Option("--role", "-r", help="The role to print.", parser=_app.one_of(RoleName)),
    ],
    backend: Annotated[
        BackendName | None,
        typer.Option(
            help="The recreate backend (default: recreate.backend).",
            show_default=False,
            parser=_app.one_of(backend_names),
        ),
    ] = None,
    output: Annotated[
        RoleFormat,
        typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(RoleFormat)),
    ] = "yaml",
) -> None:
    """Print a role's ClusterRole (and Roles) for this configuration.

    Roles: drift (reads; create and patch as dry runs only), preflight
    and doctor (reads), recreate (the target object, the lock Lease, an Event, and
    the guards' reads), recreate-objects (recreate KIND/NAME: the built-in kinds'
    objects, their pods, claims and ReplicaSets, access reviews, the lock Lease),
    gate-pre-sync and gate-post-sync (the two hooks of fracctl gate; bound to
    their service accounts by deploy/components/argocd-gate), fleet-status (an
    ApplicationSet and its Applications, where Argo CD runs), node-agent (no API
    access). The names of the
    target, the lock Lease, the Flux Kustomization and the agents come from
    fracctl.yaml, so the output fits this cluster; the files under
    deploy/rbac are this output for the defaults.

    Examples:
        fracctl rbac print --role recreate | kubectl apply -f -
        fracctl rbac print --role recreate --backend flux
        fracctl rbac print --role drift -o json
    """
    from fracctl.flows import rbac as flow

    c = _app.context(ctx)
    found, text = flow.roles(c, role=role, backend=backend)
    if output == "json":
        _app.emit_json([r.to_dict() for r in found])
    else:
        sys.stdout.write(text)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="rbac")
