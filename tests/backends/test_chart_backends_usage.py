"""The backends that upgrade a chart need it rendered by helm: a usage error, no I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.helpers import run_cli


@pytest.mark.parametrize(
    ("settings", "who"),
    [
        ("recreate:\n  backend: helm\n", "recreate.backend helm upgrades the chart in git"),
        (
            "recreate:\n  backend: flux\nflux:\n  helmrelease: gpu-fractioning\n",
            "flux.helmrelease upgrades the chart in git",
        ),
    ],
    ids=["helm", "flux-helmrelease"],
)
def test_a_chart_backend_with_another_renderer_is_a_usage_error(
    tmp_path: Path, settings: str, who: str
) -> None:
    config = tmp_path / "fracctl.yaml"
    config.write_text(
        f"kube:\n  kubeconfig: {tmp_path / 'nowhere'}\n"  # never read: no I/O before it
        f"git:\n  repo: {tmp_path}\n  renderer: plain\n" + settings
    )
    r = run_cli("-c", str(config), "recreate", "--dry-run")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert f"{who}, but git.renderer is plain" in r.stderr
    assert "set git.renderer: helm" in r.stderr
    assert "Traceback" not in r.output
