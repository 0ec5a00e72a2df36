"""Pure decisions for the node agent.

MPS daemon arguments and environment, parsing of control-daemon output, the restart
backoff policy, systemd unit rendering, preflight evaluation and the memory-probe
arithmetic.

Nothing here touches the host: facts come in as plain values, decisions go out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fracctl.core.clock import Backoff
from fracctl.core.policy import product_matches

MIB = 1024 * 1024

CONTROL_SOCKET = "control"
PID_FILE = "nvidia-cuda-mps-control.pid"

# Variables that change how the control daemon and its clients behave; the daemon's
# environment is built from scratch for these so a stray value cannot override config.
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"
PROTOCOL_ENV = "CUDA_MPS_PROTOCOL_VERSION"
THREAD_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
PINNED_ENV = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"

HEALTH_COMMAND = "get_default_active_thread_percentage"
PROTOCOL3_DRIVER = 615  # first driver branch with MPS protocol 3 (namespaces)
CONTAINERD_MIN = (2, 0)
HOST_MIB_PER_GPU = 50  # host memory the MPS server context needs per GPU

# --- sizes -----------------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)


def parse_mib(value: str | int) -> int:
    """Parse ``4096M``, ``4G``, ``4096MiB`` or a bare number (MiB) into whole MiB.

    Raises:
        ValueError: not a size, or not a whole, positive number of MiB.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 4096M or 4G, got {value!r}")
    if isinstance(value, int):
        mib = float(value)
    else:
        m = _SIZE.match(value)
        if not m:
            raise ValueError(f"expected a size like 4096M or 4G, got {value!r}")
        scale = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024}
        mib = float(m.group(1)) * scale[m.group(2).upper()]
    if mib <= 0 or mib != int(mib):
        raise ValueError(f"expected a positive whole number of MiB, got {value!r}")
    return int(mib)


def parse_pinned_limits(items: Iterable[str]) -> dict[int, int]:
    """``["0=4096M", "1=8G"]`` -> ``{0: 4096, 1: 8192}`` (device -> MiB).

    Raises:
        ValueError: an item is not ``<device>=<size>`` or a device repeats.
    """
    out: dict[int, int] = {}
    for item in items:
        dev, sep, size = item.partition("=")
        if not sep or not dev.strip().isdigit():
            raise ValueError(f"expected <device>=<size> like 0=4096M, got {item!r}")
        index = int(dev)
        if index in out:
            raise ValueError(f"device {index} has two pinned memory limits")
        out[index] = parse_mib(size.strip())
    return out


def pinned_limit_value(limits: Mapping[int, int]) -> str:
    """The client variable's form: ``{0: 4096, 1: 4096}`` -> ``0=4096M,1=4096M``."""
    return ",".join(f"{d}={mib}M" for d, mib in sorted(limits.items()))


# --- daemon command line and environment -----------------------------------------------


def daemon_argv(binary: str, *, protocol: int, multi_user: bool) -> list[str]:
    """The foreground control daemon's argument list.

    ``-p 3`` and ``-m`` exist only from driver r615; with protocol 2 neither is passed,
    so an older driver still starts.
    """
    argv = [binary, "-f"]
    if protocol == 3:
        argv += ["-p", "3"]
        if multi_user:
            argv.append("-m")
    return argv


def daemon_env(base: Mapping[str, str], *, pipe_dir: str, log_dir: str) -> dict[str, str]:
    """The environment for the daemon and for control clients.

    The protocol variable is dropped: the variable beats the ``-p`` flag, so a stray
    value on the host would silently change the protocol.
    """
    env = {k: v for k, v in base.items() if k not in (PROTOCOL_ENV, THREAD_ENV, PINNED_ENV)}
    env[PIPE_ENV] = pipe_dir
    env[LOG_ENV] = log_dir
    return env


def default_commands(
    *, active_thread_percentage: int | None, pinned_limits: Mapping[int, int]
) -> list[str]:
    """The control commands that apply the configured server defaults."""
    cmds = []
    if active_thread_percentage is not None:
        cmds.append(f"set_default_active_thread_percentage {active_thread_percentage}")
    for dev, mib in sorted(pinned_limits.items()):
        cmds.append(f"set_default_device_pinned_mem_limit {dev} {mib}M")
    return cmds


# --- parsing control-daemon output ------------------------------------------------------

_ERROR_WORDS = re.compile(
    r"\b(error|invalid|unknown|unrecognized|cannot|can't|failed|failure|not supported|"
    r"refused|denied)\b",
    re.IGNORECASE,
)


def command_failed(returncode: int, output: str) -> bool:
    """Whether a control command failed (the client does not always exit non-zero)."""
    return returncode != 0 or bool(_ERROR_WORDS.search(output))


def parse_pids(output: str) -> list[int]:
    """PIDs listed one per line (``get_server_list``, ``get_client_list``)."""
    pids = []
    for line in output.splitlines():
        token = line.strip().split()[0] if line.strip() else ""
        if token.isdigit():
            pids.append(int(token))
    return pids


def parse_percentage(output: str) -> float | None:
    """``100.0`` -> 100.0; ``None`` when the output holds no number."""
    m = re.search(r"(\d+(?:\.\d+)?)", output)
    return float(m.group(1)) if m else None


def parse_namespaces(output: str) -> list[dict[str, str]]:
    """Rows of ``namespace list``, leniently.

    A header line (one holding ``NAME`` or ``NAMESPACE``) names the columns; without
    one, the first word of a line is the namespace name and the rest is kept as text.
    """
    lines = [ln for ln in output.splitlines() if ln.strip()]
    if not lines:
        return []
    head = lines[0].split()
    if any(h.upper() in ("NAME", "NAMESPACE") for h in head):
        keys = [h.lower() for h in head]
        rows = []
        for ln in lines[1:]:
            cells = ln.split(None, len(keys) - 1)
            rows.append(dict(zip(keys, cells, strict=False)))
        return rows
    return [
        {"name": ln.split()[0], "detail": ln.strip()[len(ln.split()[0]) :].strip()} for ln in lines
    ]


# --- restart policy ---------------------------------------------------------------------


@dataclass(frozen=True)
class RestartDecision:
    """What to do after the daemon stopped on its own."""

    restart: bool
    attempt: int  # consecutive failures so far, this one included
    delay: float
    reset: bool  # the run was stable, so earlier failures were forgotten


@dataclass
class RestartPolicy:
    """Exponential backoff with a reset after a stable run and a maximum of retries.

    ``backoff.delay(n)`` is the wait before restart number ``n``.
    """

    backoff: Backoff
    max_retries: int
    stable_threshold: float
    failures: int = 0

    def stable(self, ran_for: float) -> bool:
        """Whether a run this long counts as stable."""
        return ran_for >= self.stable_threshold

    def reset_if_stable(self, ran_for: float) -> bool:
        """Forget earlier failures once the current run is stable; True when it did."""
        if self.failures and self.stable(ran_for):
            self.failures = 0
            return True
        return False

    def failed(self, ran_for: float) -> RestartDecision:
        """Record a failure of a run that lasted ``ran_for`` seconds."""
        reset = self.reset_if_stable(ran_for)
        self.failures += 1
        if self.failures > self.max_retries:
            return RestartDecision(False, self.failures, 0.0, reset)
        delay = self.backoff.delay(self.failures)
        return RestartDecision(True, self.failures, delay, reset)


# --- systemd ----------------------------------------------------------------------------

_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def _no_control_chars(value: str, what: str) -> str:
    if any(ord(c) < 32 for c in value):
        raise ValueError(f"{what} must not contain control characters or newlines")
    return value


def systemd_quote(word: str) -> str:
    """Quote one word of an ``Exec*=`` line (systemd's own quoting, not a shell's).

    ``%`` and ``$`` are escaped so systemd expands neither specifiers nor variables.
    """
    _no_control_chars(word, "a unit argument")
    escaped = word.replace("%", "%%").replace("$", "$$")
    if _SAFE.match(word) and "%" not in word:
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_env_file(values: Mapping[str, str], *, header: str) -> str:
    """An ``EnvironmentFile=`` body: one ``KEY="value"`` a line, quoted for systemd."""
    lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    for key, value in values.items():
        if not re.match(r"^[A-Z_][A-Z0-9_]*$", key):
            raise ValueError(f"bad environment variable name {key!r}")
        _no_control_chars(value, key)
        lines.append(f'{key}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "\n".join(lines) + "\n"


def render_unit(
    *,
    description: str,
    exec_start: Sequence[str],
    env_file: str,
    stop_timeout: float,
) -> str:
    """The unit that runs the fracctl supervisor (which runs the control daemon).

    ``KillMode=mixed``: systemd sends SIGTERM to the supervisor only, which sends
    ``quit`` and waits; only after ``TimeoutStopSec`` does systemd kill what is left.
    """
    _no_control_chars(description, "the description")
    exec_line = " ".join(systemd_quote(w) for w in exec_start)
    return (
        "[Unit]\n"
        f"Description={description}\n"
        "Documentation=man:nvidia-cuda-mps-control(1)\n"
        "After=nvidia-persistenced.service\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"EnvironmentFile={systemd_quote(env_file)}\n"
        f"ExecStart={exec_line}\n"
        "KillMode=mixed\n"
        "KillSignal=SIGTERM\n"
        f"TimeoutStopSec={int(stop_timeout)}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


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


# --- memory probe -----------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryProbeResult:
    """What the memory probe found."""

    device: int
    limit_mib: int
    step_mib: int
    usable_mib: int  # the last successful total
    failed_at_mib: int | None  # the total the failing step would have reached
    failed_step: int | None  # 1-based number of the failing step
    error: str | None  # the driver's error name for the failing step
    enforced: bool  # the limit stopped an allocation at or below it

    @property
    def overhead_mib(self) -> int:
        """Limit minus usable: memory the context itself holds against the limit."""
        return self.limit_mib - self.usable_mib

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON output."""
        return {
            "device": self.device,
            "limit_mib": self.limit_mib,
            "step_mib": self.step_mib,
            "usable_mib": self.usable_mib,
            "failed_at_mib": self.failed_at_mib,
            "failed_step": self.failed_step,
            "error": self.error,
            "overhead_mib": self.overhead_mib if self.enforced else None,
            "enforced": self.enforced,
        }


def probe_steps(limit_mib: int, step_mib: int) -> int:
    """How many steps to try: enough to pass the limit by one step.

    The extra step proves enforcement: if it also succeeds, the limit is not applied.
    """
    if step_mib <= 0 or limit_mib <= 0:
        raise ValueError("limit and step must be positive")
    return -(-limit_mib // step_mib) + 1


def probe_result(
    *, device: int, limit_mib: int, step_mib: int, successes: int, error: str | None
) -> MemoryProbeResult:
    """Summarise a probe run.

    ``successes`` steps succeeded, then one failed with ``error`` (``None``: none failed).
    """
    usable = successes * step_mib
    if error is None:
        return MemoryProbeResult(device, limit_mib, step_mib, usable, None, None, None, False)
    failed_at = usable + step_mib
    enforced = usable <= limit_mib
    return MemoryProbeResult(
        device, limit_mib, step_mib, usable, failed_at, successes + 1, error, enforced
    )
