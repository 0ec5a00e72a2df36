"""A fleet's rollout on a Flux hub: each member's three gate Kustomizations, waves by ``dependsOn``.

Pure: from the fleet's members (``fleet.clusters`` of fracctl.yaml) to the objects a hub
applies, for ``fracctl fleet render --flux``. Each member gets three Kustomizations on one
GitRepository, applied to the member through ``spec.kubeConfig.secretRef`` (the hub's
Secret with its kubeconfig, key ``value``):

- ``<fleet>-<cluster>-pre``: ``<path>/pre``, the gate's pre-half Job
  (deploy/components/flux-gate/pre), ``wait: true`` and ``force: true`` (a Job's template is
  immutable: each new config hash recreates it);
- ``<fleet>-<cluster>``: ``<path>/config``, the config, ``dependsOn`` the pre-half; never
  ``force`` (Flux's force deletes with no guard), ``deletionPolicy: Orphan``;
- ``<fleet>-<cluster>-post``: ``<path>/post``, the post-half Job, ``dependsOn`` the config's.

The waves (``wave``, 0 the canary) are chained: each pre-half ``dependsOn`` every post-half
of the wave before (a wave no member has is passed over). kustomize-controller v1.9.6
judges a dependency from the hub (``checkDependencies``, internal/controller/
kustomization_controller.go l.575-647): Ready at its generation and, on the same source,
its ``lastAppliedRevision`` the source's revision, which it writes only after the health
check passed (l.529-558). So the next wave waits until the wave before ran the gate's
post-half at this very commit; a failed gate stops the chain there (``DependencyNotReady``).
One source for all is what makes that revision check hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fracctl.errors import UsageError

Obj = dict[str, Any]

KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
SOURCE_API = "source.toolkit.fluxcd.io/v1"
SOURCE_KIND = "GitRepository"
#: The key of the kubeconfig in each member's Secret (Flux reads ``value`` first).
SECRET_KEY = "value"
#: The labels ``fleet status --flux`` selects and groups by.
LABEL_FLEET = "fracctl.io/fleet"
LABEL_CLUSTER = "fracctl.io/cluster"
LABEL_WAVE = "fracctl.io/wave"
LABEL_HALF = "fracctl.io/half"
HALVES = ("pre", "config", "post")
#: Each half's Kustomization timeout: above its Job's activeDeadlineSeconds (900 s, 1800 s)
#: with the job controller's retries; the config's apply alone is quick.
TIMEOUTS = {"pre": "20m", "config": "5m", "post": "35m"}

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: Flux's duration (the CRDs' pattern for interval, retryInterval, timeout).
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
#: The GitRepository CRD's pattern for spec.url.
_URL = re.compile(r"^(http|https|ssh)://.*$")
#: A password in the URL's user part (it belongs in the GitRepository's secretRef).
_PASSWORD = re.compile(r"^[a-z]+://[^/@:]*:[^/@]*@")


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet, as the hub addresses it."""

    name: str
    wave: int = 0
    path: str = "."  # the folder in git holding pre/, config/ and post/
    secret: str | None = None  # the hub's Secret with its kubeconfig

    @property
    def secret_name(self) -> str:
        """The Secret's name: the one given, else :func:`default_secret`."""
        return self.secret or default_secret(self.name)


@dataclass(frozen=True)
class RenderOptions:
    """What every member's Kustomizations share."""

    fleet: str = "gpu-fractioning"  # the names' prefix and the fracctl.io/fleet label
    namespace: str = "flux-system"  # on the hub: Kustomizations, GitRepository, Secrets
    source: str = ""  # the GitRepository's name (default: the fleet's)
    url: str | None = None  # with it, the GitRepository is rendered too
    branch: str = "main"
    interval: str = "10m"
    retry_interval: str = "1m"
    source_interval: str = "1m"

    @property
    def source_name(self) -> str:
        """The GitRepository's name: the one given, else the fleet's."""
        return self.source or self.fleet


@dataclass(frozen=True)
class Names:
    """One member's three Kustomizations."""

    pre: str
    config: str
    post: str

    def of(self, half: str) -> str:
        """The name of ``half`` (pre, config, post)."""
        return str(getattr(self, half))


def default_secret(cluster: str) -> str:
    """The hub's Secret with ``cluster``'s kubeconfig when ``kubeconfig_secret`` names none."""
    return f"fracctl-fleet-{cluster}"


def names(fleet: str, cluster: str) -> Names:
    """The Kustomizations of ``cluster`` in ``fleet``."""
    base = f"{fleet}-{cluster}"
    return Names(pre=f"{base}-pre", config=base, post=f"{base}-post")


def waves(members: Sequence[Member]) -> list[list[Member]]:
    """The members wave by wave, lowest first; a wave no member has is not there."""
    return [[m for m in members if m.wave == w] for w in sorted({m.wave for m in members})]


def is_git_url(text: str) -> bool:
    """Whether ``text`` is a URL a GitRepository takes (http, https, ssh)."""
    return bool(_URL.match(text.strip()))


def flux_path(path: str) -> str:
    """``path`` as a Kustomization's ``spec.path``: relative to the source's root, ``./``-led."""
    parts = [p for p in path.strip().split("/") if p not in ("", ".")]
    if path.strip().startswith("/") or ".." in parts:
        raise UsageError(
            f"path {path!r} is not inside the repository",
            hint="give it relative to the repository's root, e.g. gate or clusters/eu-1",
        )
    return "./" + "/".join(parts) if parts else "."


def _half_path(path: str, half: str) -> str:
    base = flux_path(path)
    return f"./{half}" if base == "." else f"{base}/{half}"


def check(members: Sequence[Member], opts: RenderOptions) -> None:
    """Refuse what the hub would refuse, or what would break the chain, before rendering."""
    if not members:
        raise UsageError(
            "the fleet has no clusters: nothing to render",
            hint="list them under fleet.clusters in fracctl.yaml, each with its wave",
        )
    _check_options(opts)
    for m in members:
        _check_member(m, opts)


def _check_options(opts: RenderOptions) -> None:
    _name("--fleet", opts.fleet, _LABEL, 63)
    _name("--namespace", opts.namespace, _LABEL, 63)
    _name("--source", opts.source_name, _SUBDOMAIN, 253)
    for flag, value in (
        ("--interval", opts.interval),
        ("--retry-interval", opts.retry_interval),
        ("--source-interval", opts.source_interval),
    ):
        if not _DURATION.match(value):
            raise UsageError(f"{flag} {value!r} is not a Flux duration", hint="e.g. 90s, 10m, 1h")
    if opts.url is not None and _PASSWORD.match(opts.url):
        raise UsageError(
            "the git URL holds a password",
            hint="give the URL without it; the GitRepository's spec.secretRef names credentials",
        )
    if opts.url is not None and not is_git_url(opts.url):
        raise UsageError(
            f"the git URL {opts.url!r} is not one a GitRepository takes",
            hint="http://, https:// or ssh:// (ssh://git@host/org/repo, not git@host:org/repo)",
        )
    if not opts.branch.strip():
        raise UsageError("--branch cannot be empty")


def _check_member(m: Member, opts: RenderOptions) -> None:
    where = f"cluster {m.name!r} of fleet.clusters"
    if not _LABEL.match(m.name) or len(m.name) > 63:
        raise UsageError(
            f"{where}: its name is not a DNS label (lowercase letters, digits, '-')",
            hint="give it a name: in fleet.clusters (its context is the default name)",
        )
    longest = names(opts.fleet, m.name).post
    if len(longest) > 63:
        raise UsageError(
            f"{where}: the Kustomization {longest!r} is longer than 63 characters",
            hint="Flux labels what it applies with the name; give a shorter name: or --fleet",
        )
    if not _SUBDOMAIN.match(m.secret_name) or len(m.secret_name) > 253:
        raise UsageError(f"{where}: kubeconfig_secret {m.secret_name!r} is not a Secret's name")
    flux_path(m.path)


def _name(flag: str, value: str, pattern: re.Pattern[str], most: int) -> None:
    if not pattern.match(value) or len(value) > most:
        raise UsageError(f"{flag} {value!r} is not a valid name (lowercase, digits, '-')")


def render(members: Sequence[Member], opts: RenderOptions) -> list[Obj]:
    """The GitRepository (with ``opts.url``), then each wave's members' three Kustomizations."""
    check(members, opts)
    out = [git_repository(opts)] if opts.url is not None else []
    before: list[str] = []
    for wave in waves(members):
        for m in wave:
            out += member_kustomizations(m, opts, after=before)
        before = [names(opts.fleet, m.name).post for m in wave]
    return out


def git_repository(opts: RenderOptions) -> Obj:
    """The one source every member's Kustomizations read."""
    return {
        "apiVersion": SOURCE_API,
        "kind": SOURCE_KIND,
        "metadata": {
            "name": opts.source_name,
            "namespace": opts.namespace,
            "labels": {LABEL_FLEET: opts.fleet},
        },
        "spec": {
            "interval": opts.source_interval,
            "url": opts.url,
            "ref": {"branch": opts.branch},
        },
    }


def member_kustomizations(m: Member, opts: RenderOptions, *, after: Sequence[str]) -> list[Obj]:
    """``m``'s pre-half (after ``after``: the previous wave's post-halves), config, post-half."""
    n = names(opts.fleet, m.name)
    depends = {"pre": list(after), "config": [n.pre], "post": [n.config]}
    out = []
    for half in HALVES:
        spec: Obj = {}
        if depends[half]:
            spec["dependsOn"] = [{"name": d} for d in depends[half]]
        spec |= {
            "sourceRef": {"kind": SOURCE_KIND, "name": opts.source_name},
            "path": _half_path(m.path, half),
            "kubeConfig": {"secretRef": {"name": m.secret_name, "key": SECRET_KEY}},
            "interval": opts.interval,
            "retryInterval": opts.retry_interval,
            "timeout": TIMEOUTS[half],
            "prune": True,
        }
        if half == "config":
            # Never force: Flux's force is a delete with no guard; the gate recreates.
            spec |= {"wait": False, "force": False, "deletionPolicy": "Orphan"}
        else:
            spec |= {"wait": True, "force": True}
        out.append(_kustomization(n.of(half), m, half, spec, opts))
    return out


def _kustomization(name: str, m: Member, half: str, spec: Obj, opts: RenderOptions) -> Obj:
    labels = {
        LABEL_FLEET: opts.fleet,
        LABEL_CLUSTER: m.name,
        LABEL_WAVE: str(m.wave),
        LABEL_HALF: half,
    }
    return {
        "apiVersion": KUSTOMIZE_API,
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": opts.namespace, "labels": labels},
        "spec": spec,
    }
