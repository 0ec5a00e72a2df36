"""Benchmark: what the recreate's rehearsal costs, call by call, on the sandbox.

Starts ``fracctl sandbox up --argocd`` (its own kube-apiserver + etcd, the operator
simulation and a real Argo CD v3.2.11; ``--backend flux``: a real Flux; ``--backend
apply``: neither) unless ``--state-dir`` names one already up, labels ``b200-0`` as the
incident wants, then ``--runs`` times times each proof of
:func:`fracctl.flows.engines.prove` on its own, with the requests it sent to the API
server and to Argo CD, and the whole rehearsal (``engines.prove`` for the backend,
deleting plan). The proofs that were all a recreate had before the rehearsal (RBAC, GET
application, can-i) are reported as "before", the first round's as "added", the second
round's (what follows the delete: owners, the wait, the guard again; Flux's controllers
and identity; Argo CD's windows ahead) as "round 2".

Every proof must pass (the sandbox is healthy), or the run stops: a failing proof
measures nothing.

    python benchmarks/bench_rehearsal.py             # 10 runs on a new sandbox
    python benchmarks/bench_rehearsal.py --state-dir /tmp/sb --keep
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl import config as cfg  # noqa: E402
from fracctl.flows import engines  # noqa: E402
from fracctl.flows.context import Context  # noqa: E402
from fracctl.flows.engines import access, delete_rehearsal  # noqa: E402
from fracctl.flows.engines.argocd import application  # noqa: E402
from fracctl.flows.engines.argocd import backend as argocd_backend  # noqa: E402
from fracctl.flows.render import render_desired  # noqa: E402

FRACCTL = str(Path(sys.executable).with_name("fracctl"))


def sandbox(state: str, *args: str) -> str:
    proc = subprocess.run(
        [FRACCTL, "sandbox", *args, "--state-dir", state], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"fracctl sandbox {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout


def context(state: str) -> Context:
    env = dict(os.environ)
    for line in sandbox(state, "env").splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    config = cfg.load(env["FRACCTL_CONFIG"], env=env)
    ctx = Context.build(config)
    ctx.env = env
    return ctx


class Counted:
    """Counts the requests a client sends (Argo CD: by method and path tail)."""

    def __init__(self, ctx: Context) -> None:
        self.argocd: Counter[str] = Counter()
        client = ctx.argocd
        send = client.request

        def request(method: str, path: str, **kwargs: Any) -> Any:
            self.argocd[f"{method} {path.rsplit('/', 1)[-1]}"] += 1
            return send(method, path, **kwargs)

        client.request = request  # type: ignore[method-assign]
        self.kube = ctx.kube.calls

    def snapshot(self) -> tuple[int, int]:
        return sum(self.kube.values()), sum(self.argocd.values())


class KubeCounted(Counted):
    """Counts the API server's requests only (no Argo CD here)."""

    def __init__(self, ctx: Context) -> None:
        self.argocd = Counter()
        self.kube = ctx.kube.calls


def timed(counted: Counted, fn: Callable[[], Any]) -> dict[str, float]:
    k0, a0 = counted.snapshot()
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    k1, a1 = counted.snapshot()
    return {"seconds": took, "kube": k1 - k0, "argocd": a1 - a0}


def round_two(
    ctx: Context, backend: str, desired: dict[str, Any], live: dict[str, Any]
) -> dict[str, Callable[[], Any]]:
    """The second round's proofs, each on its own."""
    from fracctl.flows.engines import rehearse
    from fracctl.flows.engines.flux import proofs as flux_proofs

    steps: dict[str, Callable[[], Any]] = {
        "round 2: finalizers and the operator": lambda: delete_rehearsal.check_delete(ctx, live),
        "round 2: no other GitOps owner": lambda: rehearse.check_owners(ctx, backend, live),
        "round 2: the wait (condition, nodes, agents' tolerations)": lambda: rehearse.check_wait(
            ctx, live, desired
        ),
        "round 2: the fractional-pod guard again": lambda: rehearse.guard_again(ctx, live, desired),
    }
    if backend == "flux":
        from fracctl.flows.engines.flux.backend import configured_kustomization

        flux = configured_kustomization(ctx)
        steps["round 2: Flux handles a request now"] = lambda: flux_proofs.handles_now(
            ctx, flux, flux.get()
        )
        steps["round 2: the identity Flux applies as"] = lambda: flux_proofs.identity_may_create(
            ctx, flux.get()
        )
    if backend == "argocd":
        app = str(ctx.config.argocd.app)
        steps["round 2: no deny window ahead"] = lambda: application.no_window_opens(
            ctx.argocd.sync_windows(app), app, 600.0, ctx.clock.now()
        )
    return steps


def proofs(
    ctx: Context, desired: dict[str, Any], live: dict[str, Any]
) -> dict[str, Callable[[], Any]]:
    """Each proof on its own, in the rehearsal's order."""
    t = ctx.config.target
    app = str(ctx.config.argocd.app)
    b = argocd_backend.ArgoCDBackend()
    client = ctx.argocd
    project = client.get_application(app)["spec"]["project"]

    def dry_delete() -> None:  # the guard policy's refusal is the expected answer
        delete_rehearsal.dry_run_delete(ctx, live["metadata"]["uid"])

    def rendering() -> None:
        doc = client.get_application(app)
        objects, rev = client.rendering(app, application.pinnable(doc))
        application.rendered_target(ctx, objects, app, rev, desired)

    def dry_create() -> None:
        from fracctl.errors import Conflict

        try:
            ctx.kube.create(t.ref, engines.clean_desired(desired), dry_run=True)
        except Conflict:
            pass

    return {
        "before: RBAC get/watch/delete": lambda: [
            access.require(ctx, v, ref=t.ref, name=t.name) for v in ("get", "watch", "delete")
        ],
        "before: GET application": lambda: client.get_application(app),
        "before: can-i sync": lambda: client.can_i("applications", "sync", f"{project}/{app}"),
        "added: dry-run delete (uid)": dry_delete,
        "added: operator Deployment + Lease": lambda: delete_rehearsal.check_operator(ctx),
        "added: sync windows": lambda: client.sync_windows(app),
        "added: Argo CD rendering": rendering,
        "added: dry-run create": dry_create,
        "added: Argo CD dry-run sync": lambda: b._dry_run_sync(ctx, app),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--state-dir", help="a sandbox already up (sandbox up --argocd)")
    parser.add_argument("--keep", action="store_true", help="leave the sandbox running")
    parser.add_argument("--out", default=str(report.OUT / "rehearsal.json"))
    parser.add_argument("--quick", action="store_true", help="3 runs")
    parser.add_argument("--backend", choices=("argocd", "flux", "apply"), default="argocd")
    args, _ = parser.parse_known_args(argv)
    if args.quick:
        args.runs = 3
    if args.backend != "argocd" and args.out == str(report.OUT / "rehearsal.json"):
        args.out = str(report.OUT / f"rehearsal-{args.backend}.json")

    state = args.state_dir or tempfile.mkdtemp(prefix="fracctl-bench-rehearsal-")
    started = not args.state_dir
    if started:
        flag = {"argocd": ["--argocd"], "flux": ["--flux"], "apply": []}[args.backend]
        sandbox(state, "up", *flag)
    try:
        ctx = context(state)
        subprocess.run([FRACCTL, "nodes", "label", "b200-0"], env=ctx.env, capture_output=True)
        t = ctx.config.target
        desired = next(o for o in render_desired(ctx) if t.matches(o))
        live = ctx.kube.get(t.ref, t.name)
        counted = Counted(ctx) if args.backend == "argocd" else KubeCounted(ctx)
        steps = proofs(ctx, desired, live) if args.backend == "argocd" else {}
        steps.update(round_two(ctx, args.backend, desired, live))
        backend = engines.get(args.backend)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in steps}
        runs["whole rehearsal (engines.prove)"] = []
        for _ in range(args.runs):
            for name, fn in steps.items():
                runs[name].append(timed(counted, fn))
            whole = lambda: engines.prove(ctx, backend, desired, deletes=True, live=live)  # noqa: E731
            runs["whole rehearsal (engines.prove)"].append(timed(counted, whole))
    finally:
        if started and not args.keep:
            sandbox(state, "down")

    rows = []
    for name, xs in runs.items():
        secs = [x["seconds"] for x in xs]
        rows.append(
            {
                "proof": name,
                "median_s": statistics.median(secs),
                "min_s": min(secs),
                "max_s": max(secs),
                "kube_requests": xs[0]["kube"],
                "argocd_requests": xs[0]["argocd"],
            }
        )
    before = sum(r["median_s"] for r in rows if r["proof"].startswith("before"))
    added = sum(r["median_s"] for r in rows if r["proof"].startswith("added"))
    second = sum(r["median_s"] for r in rows if r["proof"].startswith("round 2"))
    lines = ["| proof | median | range | API server | Argo CD |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['proof']} | {report.secs(r['median_s'])} | "
            f"{report.secs(r['min_s'])}-{report.secs(r['max_s'])} | "
            f"{r['kube_requests']} | {r['argocd_requests']} |"
        )
    lines.append(
        f"\n{args.backend}: before: {report.secs(before)}; added: {report.secs(added)}; "
        f"round 2: {report.secs(second)} ({args.runs} runs)"
    )
    report.save(args.out, {"runs": args.runs, "backend": args.backend, "rows": rows},
                "\n".join(lines))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
