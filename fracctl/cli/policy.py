"""``fracctl policy``: the admission policy that keeps deletes of the config to recreate."""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import typer

from fracctl.cli import _app

app = typer.Typer(
    help="The admission policy that lets only fracctl recreate delete the config.",
    no_args_is_help=True,
)
PolicyFormat = Literal["yaml", "json"]


@app.command("print")
def print_policy(
    ctx: typer.Context,
    output: Annotated[
        PolicyFormat,
        typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(PolicyFormat)),
    ] = "yaml",
) -> None:
    """Print the ValidatingAdmissionPolicy, its binding and its lock Lease.

    The policy refuses every DELETE of the target unless the requester is the identity
    that a running fracctl recreate armed on the lock Lease, after its proofs and
    guards: kubectl delete, Argo CD's Force+Replace or prune and Flux's force are
    refused with a message naming fracctl recreate. Names come from fracctl.yaml;
    deploy/policy/guard.yaml is this output for the defaults.

    Examples:
        fracctl policy print
        fracctl policy print | kubectl apply --server-side -f -
    """
    from fracctl.flows import policy

    c = _app.context(ctx)
    if output == "json":
        _app.emit_json(policy.objects(c))
    else:
        sys.stdout.write(policy.to_yaml(c))


@app.command("apply")
def apply_policy(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Ask the API server to validate; change nothing.")
    ] = False,
) -> None:
    """Install the guard policy and its binding, and the unheld lock Lease.

    A lock Lease that exists (a recreate may hold it) is kept as it is. Needs rights
    on validatingadmissionpolicies and bindings (cluster admin), not the recreate role.

    Examples:
        fracctl policy apply --dry-run
        fracctl policy apply
    """
    from fracctl.flows import policy

    c = _app.context(ctx)
    for line in policy.apply(c, dry_run=dry_run):
        c.out.print(line, markup=False, soft_wrap=True)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="policy")
