"""The node-side sections of fracctl.yaml: ``mps`` and ``probe``.

``mps`` holds the MPS daemon settings ``fracctl node`` runs with on a GPU node;
``probe`` describes the pod ``fracctl probe`` sends at a pool. Each is validated as it
is built; a bad value raises :class:`~fracctl.config.values.InvalidValue` naming its
key, and the loader adds where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fracctl.config.values import Duration, InvalidValue, names_given
from fracctl.core.mps.limits import parse_pinned_limits

_TOLERATION = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]*)(?:=(?P<value>[A-Za-z0-9._-]*))?"
    r"(?::(?P<effect>NoSchedule|PreferNoSchedule|NoExecute))?$"
)


@dataclass(frozen=True)
class ProbeConfig:
    """The probe pod ``fracctl probe`` sends at a pool."""

    namespace: str = "default"
    image: str = "busybox:1.36"
    scheduler_name: str = "kai-scheduler"
    queue_label: str = "kai.scheduler/queue"
    queue: str = "default-queue"
    # key[=value][:effect]; no value tolerates any value, no effect every effect
    tolerations: list[str] = field(default_factory=lambda: ["nvidia.com/gpu:NoSchedule"])
    run_as_user: int = 65534

    def __post_init__(self) -> None:
        names_given(self, "namespace")
        for item in self.tolerations:
            m = _TOLERATION.match(item.strip())
            if (
                not m
                or not (m.group("key") or m.group("effect"))
                or (m.group("value") is not None and not m.group("key"))
            ):
                raise InvalidValue(
                    "tolerations",
                    f"expected key[=value][:NoSchedule|PreferNoSchedule|NoExecute], got {item!r}",
                    sep=": ",
                )
        if self.run_as_user <= 0:
            raise InvalidValue("run_as_user", "must be a non-root user id (> 0)")


@dataclass(frozen=True)
class MPSConfig:
    """MPS daemon settings for ``fracctl node``."""

    pipe_dir: str = "/run/nvidia-mps"
    log_dir: str = "/var/log/nvidia-mps"
    control_binary: str = "nvidia-cuda-mps-control"
    protocol: int = 3
    multi_user: bool = True
    default_active_thread_percentage: int | None = None
    pinned_mem_limits: list[str] = field(default_factory=list)  # e.g. ["0=4096M"]
    health_interval: Duration = Duration(10)
    start_timeout: Duration = Duration(30)
    stable_threshold: Duration = Duration(60)
    max_retries: int = 5
    backoff: Duration = Duration(1)
    graceful_stop: Duration = Duration(60)
    max_backoff: Duration = Duration(60)
    health_failures: int = 3
    command_timeout: Duration = Duration(10)
    host_root: str = "/"
    state_dir: str = "/var/lib/fracctl"
    unit_name: str = "fracctl-mps.service"
    nri_socket: str = "/var/run/nri/nri.sock"
    containerd_socket: str = "/run/containerd/containerd.sock"

    def __post_init__(self) -> None:
        if self.protocol not in (2, 3):
            raise InvalidValue("protocol", f"must be 2 or 3, got {self.protocol}")
        pct = self.default_active_thread_percentage
        if pct is not None and not 1 <= pct <= 100:
            raise InvalidValue("default_active_thread_percentage", f"must be 1..100, got {pct}")
        try:
            parse_pinned_limits(self.pinned_mem_limits)
        except ValueError as e:
            raise InvalidValue("pinned_mem_limits", str(e), sep=": ") from None
        if self.max_retries < 0:
            raise InvalidValue("max_retries", "must be >= 0 and health_failures >= 1")
        if self.health_failures < 1:
            raise InvalidValue(
                "health_failures",
                "must be >= 1",
                message="max_retries must be >= 0 and health_failures >= 1",
            )
        if not re.match(r"^[A-Za-z0-9_.@-]+\.service$", self.unit_name):
            raise InvalidValue("unit_name", f"must look like name.service, got {self.unit_name!r}")
        for name in ("health_interval", "start_timeout", "backoff", "command_timeout"):
            if getattr(self, name) <= 0:
                raise InvalidValue(name, "must be positive")
