"""Benchmark: fracctl as Argo CD's sync gate, and a gated fleet rollout against the wave runner.

Starts ``fracctl sandbox up --argocd --clusters 3``: three member clusters, each seeded
with the incident, guarded, with its operator simulation and the pod runner that runs the
gate's hook pods as local fracctl processes; the real Argo CD v3.2.11 and its
applicationset-controller roll the fleet's ApplicationSet out (RollingSync over the
example's steps: member-1 is the canary, member-2 early, member-3 the rest). b200-0 is
labelled in every member first, so that no gate refuses. Then, on that one sandbox:

* **gated rollout**: one commit changes the selector (from the GPU class to the opt-in
  label and ``nvidia.com/gpu.present``); the time from the commit (and a refresh, as a
  git webhook sends) until every member runs git's selector and the ApplicationSet
  reports every Application Healthy;
* **no immutable change**: a commit that only adds an annotation, the same;
* each hook's own time: the wall time of its fracctl process, as the pod runner logs it;
* **wave runner**: the ApplicationSet deleted (its resources preserved), the selector
  changed again (to the opt-in label alone, the members' own git) by ``fracctl recreate
  --yes`` over the same three clusters, one wave each in the same order, from a fleet
  fracctl.yaml. (The way back to the class selector is not
  measured: the gate refuses it, since it would miss the opted-in b200-0.)

    python benchmarks/bench_gate.py
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.sandbox import argocd_local, fleet_box, fleet_wiring  # noqa: E402
from fracctl.sandbox.layout import Sandbox  # noqa: E402

OLD = "example.org/gpu-class: rtx-pro-6000"
NEW = "example.org/gpu-fractions: enabled"
RAN = re.compile(r"pod-runner: fracctl/(fracctl-gate-[a-z-]+) exit (\d+) after ([\d.]+)s")
Obj = dict[str, Any]


def fracctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "fracctl", *args], capture_output=True,
                          text=True, cwd=REPO, check=False)  # fmt: skip
    if check and proc.returncode != 0:
        raise SystemExit(f"fracctl {' '.join(args)}: exit {proc.returncode}: {proc.stderr}")
    return proc


class Fleet:
    """The sandbox's fleet: its git, its members, and where the rollout stands."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.box = Sandbox(Path(state))
        self.repo = self.box.root / "fleet-git"
        self.members = fleet_box.members_of(self.box)

    def status(self) -> Obj:
        where = ["--kubeconfig", str(self.box.kubeconfig), "fleet", "status"]
        r = fracctl(*where, "--appset", fleet_wiring.APPSET, "-n", argocd_local.NAMESPACE,
                    "-o", "json", check=False)  # fmt: skip
        return json.loads(r.stdout) if r.stdout.strip() else {}

    def selectors(self) -> list[Any]:
        st = json.loads(
            fracctl("sandbox", "status", "-o", "json", "--state-dir", self.state).stdout
        )
        return [m.get("nodeSelector") for m in st["members"]]

    def wait(self, want: dict[str, str], timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while not (self.status().get("done") and all(s == want for s in self.selectors())):
            if time.monotonic() > deadline:
                raise SystemExit(f"bench_gate: the rollout did not finish: {self.status()}")
            time.sleep(0.5)

    def logs(self) -> dict[str, int]:
        return {n: (m.root / "operator-sim.log").stat().st_size for n, m in self.members.items()}

    def hooks_since(self, offsets: dict[str, int]) -> list[tuple[str, int, float]]:
        out = []
        for name, member in self.members.items():
            with open(member.root / "operator-sim.log", "rb") as f:
                f.seek(offsets[name])
                text = f.read().decode(errors="replace")
            out += [(h, int(c), float(s)) for h, c, s in RAN.findall(text)]
        return out

    def rollout(self, text: str, message: str, want: dict[str, str]) -> Obj:
        """Commit ``text`` as the config, refresh, wait; the wall time and the hooks' times."""
        offsets = self.logs()
        began = time.monotonic()
        fleet_wiring.commit_config(self.repo, text, message)
        self.refresh()
        self.wait(want)
        wall = time.monotonic() - began
        return {"wall": wall, "hooks": self.hooks_since(offsets)}

    def refresh(self) -> None:
        kube = Kube.connect(kubeconfig=str(self.box.kubeconfig))
        try:
            for app in kube.list(argocd_local.APPLICATIONS, namespace=argocd_local.NAMESPACE):
                kube.patch(argocd_local.APPLICATIONS, app["metadata"]["name"],
                           {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}},
                           namespace=argocd_local.NAMESPACE)  # fmt: skip
        finally:
            kube.close()


def wave_runner(fleet: Fleet, tmp: Path) -> float:
    """Delete the ApplicationSet (resources kept); time ``recreate --yes`` over the members."""
    kube = Kube.connect(kubeconfig=str(fleet.box.kubeconfig))
    try:
        kube.delete(fleet_wiring.APPSETS, fleet_wiring.APPSET, argocd_local.NAMESPACE)
        ours = {f"gpu-fractioning-{name}" for name in fleet.members}  # not the sandbox's own
        while ours & {a["metadata"]["name"] for a in kube.list(
                argocd_local.APPLICATIONS, namespace=argocd_local.NAMESPACE)}:  # fmt: skip
            time.sleep(0.2)
    finally:
        kube.close()
    contexts, clusters, users = [], [], []
    for name, member in fleet.members.items():
        doc = yaml.safe_load(member.kubeconfig.read_text())
        clusters.append({"name": name, "cluster": doc["clusters"][0]["cluster"]})
        users.append({"name": name, "user": doc["users"][0]["user"]})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    kubeconfig = tmp / "fleet-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config",
                                          "clusters": clusters, "users": users,
                                          "contexts": contexts,
                                          "current-context": contexts[0]["name"]}))  # fmt: skip
    config = yaml.safe_load(next(iter(fleet.members.values())).config_file.read_text())
    config["kube"] = {"kubeconfig": str(kubeconfig)}
    config.setdefault("recreate", {}).update(backend="apply", state_dir=str(tmp / "state"))
    config["fleet"] = {"clusters": [{"context": n, "name": n, "wave": i}
                                    for i, n in enumerate(fleet.members)]}  # fmt: skip
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(config))
    began = time.monotonic()
    fracctl("-c", str(path), "recreate", "--yes", "-o", "json")
    return time.monotonic() - began


def opt_in_b200(fleet: Fleet) -> None:
    """``fracctl nodes label b200-0`` in every member."""
    for member in fleet.members.values():
        fracctl("-c", str(member.config_file), "nodes", "label", "b200-0")


def run(tmp: Path) -> Obj:
    state = str(tmp / "sbx")
    fracctl("sandbox", "up", "--argocd", "--clusters", "3", "--state-dir", state)
    try:
        fleet = Fleet(state)
        fleet.wait({"example.org/gpu-class": "rtx-pro-6000"})
        opt_in_b200(fleet)
        live = (fleet.repo / "app" / "gpufractioningconfig.yaml").read_text()
        # The label and the GPU's presence: the wave runner then goes on to git's selector
        # of the members' own repositories (the label alone), one more immutable change.
        both = f'{NEW}\n    nvidia.com/gpu.present: "true"'
        want = {**yaml.safe_load(NEW), "nvidia.com/gpu.present": "true"}
        gated = [fleet.rollout(live.replace(OLD, both), "select by label", want)]
        note = "  name: default\n  annotations:\n    example.org/owner: platform\n"
        noop = fleet.rollout(live.replace(OLD, both).replace("  name: default\n", note),
                             "an annotation only", want)  # fmt: skip
        wave = wave_runner(fleet, tmp)
    finally:
        fracctl("sandbox", "down", "--state-dir", state, check=False)
    return {"gated": gated, "noop": noop, "wave": wave, "clusters": 3}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", default=str(report.OUT / "gate.json"))
    ap.add_argument("--quick", action="store_true", help="(the same: one sandbox, one run)")
    args, _ = ap.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        results = run(Path(tmp))
    text = "\n".join(report.gate_section(results))
    report.save(args.out, results, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
