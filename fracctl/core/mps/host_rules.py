"""Host rules for the MPS daemon: what the preflight requires and how it judges.

Driver and containerd versions read from their output, the facts the host adapter
found, and the checks (driver, control binary, NRI socket, containerd, host memory,
compute mode, denied GPU products), each failing one with what to do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fracctl.core.fractions.policy import product_matches

PROTOCOL3_DRIVER = 615  # first driver branch with MPS protocol 3 (namespaces)
CONTAINERD_MIN = (2, 0)
HOST_MIB_PER_GPU = 50  # host memory the MPS server context needs per GPU

# --- versions ---------------------------------------------------------------------------


def parse_driver_version(text: str) -> str | None:
    """The driver version in ``nvidia-smi`` output or ``/proc/driver/nvidia/version``."""
    m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    if m:
        return m.group(1)
    m = re.search(r"^\s*(\d{3,}\.\d+(?:\.\d+)?)\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


def parse_containerd_version(text: str) -> str | None:
    """``containerd github.com/containerd/containerd/v2 v2.0.5 abc`` -> ``2.0.5``."""
    for token in text.split():
        m = re.match(r"^v?(\d+\.\d+(?:\.\d+)?)(?:[-+~].*)?$", token)
        if m:
            return m.group(1)
    return None


def version_tuple(version: str) -> tuple[int, ...]:
    """``615.12.3`` -> ``(615, 12, 3)``."""
    return tuple(int(p) for p in re.findall(r"\d+", version))


# --- preflight --------------------------------------------------------------------------


@dataclass(frozen=True)
class HostFacts:
    """What the host adapter found; ``None`` means it could not be determined."""

    driver_version: str | None = None
    driver_source: str = ""
    control_binary: str | None = None  # resolved path
    control_help: str | None = None
    nri_socket: str = ""
    nri_socket_present: bool = False
    containerd_version: str | None = None
    containerd_socket: str = ""
    containerd_socket_present: bool = False
    mem_available_mib: int | None = None
    gpus: list[tuple[int, str, str]] | None = None  # (index, name, compute mode)


@dataclass(frozen=True)
class HostCheck:
    """One preflight line."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class PreflightSettings:
    """The configuration preflight judges against."""

    protocol: int
    control_binary: str
    pinned_limits: Mapping[int, int] = field(default_factory=dict)
    denied_products: Sequence[str] = ()  # labels.denied_products: never MPS on these GPUs


def evaluate_preflight(facts: HostFacts, settings: PreflightSettings) -> list[HostCheck]:
    """Judge the host facts; every failing check says what to do."""
    checks = [_driver(facts, settings), _control(facts, settings)]
    checks.append(
        HostCheck("nri-socket", "ok", f"{facts.nri_socket} is a socket")
        if facts.nri_socket_present
        else HostCheck(
            "nri-socket",
            "fail",
            f"{facts.nri_socket} is not a socket",
            "enable NRI in containerd ([plugins.'io.containerd.nri.v1.nri'] disable = false) "
            "and restart containerd, or set mps.nri_socket",
        )
    )
    checks.append(_containerd(facts))
    checks.append(_memory(facts))
    checks.append(_compute_mode(facts, settings))
    if settings.denied_products and facts.gpus:
        checks.append(_product(facts, settings))
    return checks


def _product(facts: HostFacts, s: PreflightSettings) -> HostCheck:
    """The driver's own GPU names against the denied products: no node label is trusted.

    A wrong class label, or an opt-in label on the wrong node, can bring the daemon to a
    host the policy denies; the driver cannot be mislabelled.
    """
    gpus = facts.gpus or []
    denied = [
        (i, name) for i, name, _ in gpus if any(product_matches(name, p) for p in s.denied_products)
    ]
    if denied:
        return HostCheck(
            "gpu-product",
            "fail",
            "denied GPU product on this host: "
            + ", ".join(f"GPU {i}: {name}" for i, name in denied)
            + f" (labels.denied_products: {', '.join(s.denied_products)})",
            "do not run the MPS daemon here; take the opt-in label off this node "
            "(fracctl nodes unlabel NODE) and correct its class label",
        )
    return HostCheck("gpu-product", "ok", "no GPU of a denied product (labels.denied_products)")


def _driver(facts: HostFacts, s: PreflightSettings) -> HostCheck:
    if facts.driver_version is None:
        return HostCheck(
            "driver",
            "fail",
            "no NVIDIA driver found (nvidia-smi and /proc/driver/nvidia/version absent)",
            "install the NVIDIA driver (r615 or newer for protocol 3), or run on a GPU host",
        )
    major = version_tuple(facts.driver_version)[0]
    where = f" (from {facts.driver_source})" if facts.driver_source else ""
    if s.protocol == 3 and major < PROTOCOL3_DRIVER:
        return HostCheck(
            "driver",
            "fail",
            f"driver {facts.driver_version}{where} predates r{PROTOCOL3_DRIVER}, "
            "which MPS protocol 3 (namespaces) needs",
            f"upgrade the driver to r{PROTOCOL3_DRIVER}+ or set mps.protocol: 2 (no namespaces)",
        )
    return HostCheck("driver", "ok", f"driver {facts.driver_version}{where}")


def _control(facts: HostFacts, s: PreflightSettings) -> HostCheck:
    if facts.control_binary is None:
        return HostCheck(
            "mps-control",
            "fail",
            f"{s.control_binary} not found",
            "install the driver's compute utilities (nvidia-compute-utils) or set "
            "mps.control_binary to its path",
        )
    if s.protocol != 3:
        return HostCheck("mps-control", "ok", f"{facts.control_binary} (protocol {s.protocol})")
    text = (facts.control_help or "").lower()
    if "protocol" in text or "namespace" in text:
        return HostCheck("mps-control", "ok", f"{facts.control_binary} supports -p 3 (namespaces)")
    return HostCheck(
        "mps-control",
        "fail",
        f"{facts.control_binary} does not offer -p/--protocol 3 in its help",
        "upgrade the driver's compute utilities to r615+ or set mps.protocol: 2",
    )


def _containerd(facts: HostFacts) -> HostCheck:
    if facts.containerd_version is None:
        if facts.containerd_socket_present:
            return HostCheck(
                "containerd",
                "warn",
                f"{facts.containerd_socket} present but the version is unknown "
                "(no containerd binary on PATH)",
                "check `containerd --version` on the host: NRI needs containerd 2.0 or newer",
            )
        return HostCheck(
            "containerd",
            "fail",
            "containerd not found (no binary, no socket)",
            "install containerd 2.0+ or set mps.containerd_socket",
        )
    if version_tuple(facts.containerd_version)[:2] < CONTAINERD_MIN:
        return HostCheck(
            "containerd",
            "fail",
            f"containerd {facts.containerd_version} is older than 2.0",
            "upgrade containerd to 2.0+ (NRI is on by default there)",
        )
    return HostCheck("containerd", "ok", f"containerd {facts.containerd_version}")


def _memory(facts: HostFacts) -> HostCheck:
    gpus = len(facts.gpus) if facts.gpus else 1
    need = HOST_MIB_PER_GPU * gpus
    if facts.mem_available_mib is None:
        return HostCheck(
            "host-memory",
            "warn",
            "MemAvailable unknown (no /proc/meminfo)",
            f"make sure about {need} MiB are free for the MPS server contexts",
        )
    if facts.mem_available_mib < need:
        return HostCheck(
            "host-memory",
            "fail",
            f"{facts.mem_available_mib} MiB available, the MPS servers need about {need} MiB "
            f"({HOST_MIB_PER_GPU} MiB x {gpus} GPU)",
            "free host memory or lower the pods' memory requests on this node",
        )
    return HostCheck(
        "host-memory",
        "ok",
        f"{facts.mem_available_mib} MiB available, about {need} MiB needed for {gpus} GPU",
    )


def _compute_mode(facts: HostFacts, s: PreflightSettings) -> HostCheck:
    if facts.gpus is None:
        return HostCheck(
            "compute-mode",
            "fail",
            "no GPU listed (nvidia-smi missing or failing)",
            "check `nvidia-smi` on the host; the driver must see the GPUs",
        )
    if not facts.gpus:
        return HostCheck("compute-mode", "fail", "the driver lists no GPU", "check `nvidia-smi -L`")
    bad = [(i, m) for i, _, m in facts.gpus if m.lower().replace(" ", "_") == "prohibited"]
    missing = [d for d in s.pinned_limits if d not in {i for i, _, _ in facts.gpus}]
    modes = ", ".join(f"{i}: {m}" for i, _, m in facts.gpus)
    if bad:
        return HostCheck(
            "compute-mode",
            "fail",
            f"compute mode Prohibited on GPU {', '.join(str(i) for i, _ in bad)}",
            "nvidia-smi -i <gpu> -c EXCLUSIVE_PROCESS (or DEFAULT)",
        )
    if missing:
        return HostCheck(
            "compute-mode",
            "fail",
            f"pinned limits name device(s) {', '.join(map(str, missing))}, not on this host "
            f"({modes})",
            "fix mps.pinned_mem_limits",
        )
    return HostCheck("compute-mode", "ok", modes)
