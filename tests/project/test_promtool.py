"""Prometheus's own promtool on deploy/alerts/ and on what ``-o prometheus`` prints.

promtool is built from its Go module by ``make promtool`` (scripts/build-promtool.sh)
unless one is on PATH. Without it these tests skip, naming the command, except under
``CI=true``, where they fail: CI builds it first, so a missing promtool there is a
broken build, not a reason to skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from fracctl.core import drift as d
from fracctl.core.prometheus import fleet_drift_metrics
from fracctl.errors import ExitCode
from tests.support.helpers import Cluster, run_cli
from tests.support.metrics import RTX, plain_config
from tests.support.real_parts import unavailable

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "deploy" / "alerts"
RULES = ALERTS / "fracctl-drift.rules.yaml"
SCRIPT = REPO / "scripts" / "build-promtool.sh"
# Read at import: the autouse clean_env fixture resets the environment of each test.
CACHE = Path(os.environ.get("FRACCTL_CACHE") or Path.home() / ".cache" / "fracctl")
ON_PATH = shutil.which("promtool")


def version() -> str:
    """The version scripts/build-promtool.sh builds (its one source)."""
    found = re.search(
        r'PROMTOOL_VERSION="\$\{FRACCTL_PROMTOOL_VERSION:-(v[^}]+)\}"', SCRIPT.read_text()
    )
    assert found, "scripts/build-promtool.sh names no PROMTOOL_VERSION"
    return found.group(1)


def promtool_path() -> str:
    """promtool: from PATH, else from the build cache; skip (locally) or fail (CI) without."""
    if ON_PATH:
        return ON_PATH
    built = CACHE / "tools" / f"promtool-{version()}" / "promtool"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    message = f"promtool {version()} is not built: run make promtool (scripts/build-promtool.sh)"
    unavailable(message)


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool_path(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ALERTS,
    )


def test_the_alert_rules_pass_promtool_check_rules() -> None:
    p = promtool("check", "rules", "--lint=all", "--lint-fatal", RULES.name)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS: 3 rules found" in p.stdout + p.stderr


def test_the_alert_rules_fire_as_their_unit_tests_say() -> None:
    p = promtool("test", "rules", "fracctl-drift.rules.test.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout + p.stderr


def check_metrics(text: str) -> None:
    """``promtool check metrics`` reads the text from stdin: no error, no lint problem."""
    p = promtool("check", "metrics", stdin=text)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout + p.stderr == "", p.stdout + p.stderr


def test_real_drift_output_passes_promtool_check_metrics(tmp_path: Path, cluster: Cluster) -> None:
    cluster.target(RTX)
    config = plain_config(tmp_path, cluster.kubeconfig)
    r = run_cli("-c", config, "drift", "-o", "prometheus")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert 'verdict="needs-recreate"} 1' in r.stdout
    check_metrics(r.stdout)


def test_real_doctor_output_passes_promtool_check_metrics(cluster: Cluster) -> None:
    r = run_cli("--kubeconfig", cluster.kubeconfig, "doctor", "-o", "prometheus")
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    check_metrics(r.stdout)


def test_fleet_drift_output_passes_promtool_check_metrics() -> None:
    report = d.DriftReport(
        objects=[d.ObjectDrift("v1", "ConfigMap", "ml", 'odd "name"\\', d.NEEDS_RECREATE)],
        argocd={"app": "gpu-fractioning"},
    )
    check_metrics(fleet_drift_metrics([("eu-1", report), ("us-1", None)], now=1.5e9, seconds=3))
