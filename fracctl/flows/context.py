"""The I/O context: configuration, consoles, clients and clock, built once per run.

Commands reach the outside world only through this object; tests build it with
stand-ins (another kube client, a fake clock, captured consoles).
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from fracctl.config import Config
from fracctl.core.clock import Clock, SystemClock
from fracctl.redact import redact

if TYPE_CHECKING:
    from rich.console import Console

    from fracctl.adapters.argocd import ArgoCD
    from fracctl.adapters.host import Host
    from fracctl.adapters.kube import Kube
    from fracctl.adapters.render.revision import Export


class NodeProgress(Protocol):
    """Shows how the nodes stand while fracctl waits for them."""

    def show(self, nodes: dict[str, Any]) -> None:
        """The nodes as they are now (``name -> Node``)."""

    def stop(self) -> None:
        """The wait ended."""


class DrainProgress(Protocol):
    """Shows how the drain's evictions stand while they run."""

    def show(self, rows: list[tuple[str, int, int]], more: int, totals: str) -> None:
        """The PodGroups not yet gone (label, pods, evicted), how many more, the totals."""

    def stop(self) -> None:
        """The evictions ended."""


@dataclass
class Context:
    """Everything a flow needs from the outside."""

    config: Config
    kube_factory: Callable[[], Kube]
    clock: Clock = field(default_factory=SystemClock)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    interactive: bool = False
    argocd_factory: Callable[[], ArgoCD] | None = None
    # Shows nodes' readiness while waiting: (context, condition type) -> progress.
    node_progress: Callable[[Context, str], NodeProgress] | None = None
    # Shows the drain's evictions while they run: (context) -> progress.
    drain_progress: Callable[[Context], DrainProgress] | None = None
    # The flags that named git's source on this command line (``--path shop``): a command
    # printed for the user to run next repeats them, so that it reads the same objects.
    source_flags: tuple[str, ...] = ()
    # The global options (``--config``, ``--kubeconfig``, ``--context``) and the command's
    # own choices (``--backend helm``, ``--yes``) a printed rerun of this command repeats,
    # so that it runs as printed: the same cluster, configuration, objects and backend.
    global_flags: tuple[str, ...] = ()
    run_flags: tuple[str, ...] = ()
    # The commit each git source (repository, revision) resolved to first in this run:
    # every later export of it takes that commit, so that what a run proves is what it
    # runs (a branch that moves mid-run is never mixed in).
    pins: dict[tuple[str, str], str] = field(default_factory=dict)
    # The backend this run recreates through: ``--backend``, "" for ``recreate.backend``.
    # :func:`fracctl.flows.engines.select` resolves it once per run, and every flow of the
    # run (the plan, drift's judge, doctor, the rehearsal, the run, verify) asks it.
    backend: str = ""
    # Each engine this run asked for, by name: built once, so that what it reads (a
    # release's state, helm's dry run) is read once per run.
    engines: dict[str, Any] = field(default_factory=dict)
    # The one export of each git source this run reads (:meth:`tree`), until it closes.
    _trees: dict[tuple[str, str], Export] = field(default_factory=dict)
    # Each rendering of git this run made (source, revision, path, renderer): rendered once.
    renders: dict[tuple[str, str, str, str], Any] = field(default_factory=dict)
    _exits: ExitStack = field(default_factory=ExitStack)
    _kube: Kube | None = None
    _argocd: ArgoCD | None = None
    _host: Host | None = None
    _out: Console | None = None
    _err: Console | None = None

    @classmethod
    def build(cls, config: Config) -> Context:
        """The production context for ``config``."""

        def kube() -> Kube:
            from fracctl.adapters.kube import Kube

            return Kube.connect(
                kubeconfig=config.kube.kubeconfig,
                context=config.kube.context,
                in_cluster=config.kube.in_cluster,
                timeout=config.timeouts.request,
            )

        return cls(config=config, kube_factory=kube, interactive=sys.stdin.isatty())

    def source_args(self) -> str:
        """:attr:`source_flags` as they are typed after a command (`` --path shop``), or ""."""
        return _typed(self.source_flags)

    def pinned(self, repo: str, revision: str, commit: str = "") -> str:
        """The commit this run pinned ``revision`` of ``repo`` to; ``commit`` pins it first.

        "" while nothing is pinned (the first export resolves the revision).
        """
        if commit:
            self.pins.setdefault((repo, revision), commit)
        return self.pins.get((repo, revision), "")

    def tree(self, repo: str, revision: str) -> Export:
        """``repo`` at ``revision``, exported once for this run at its pinned commit.

        The plan, the rehearsal, the run and its verification each read this tree: what
        a run proves is what it runs, and a URL is cloned once. Removed when the context
        closes.

        Raises:
            ExternalError: git or the revision failed.
        """
        found = self._trees.get((repo, revision)) or next(  # a commit exported already
            (t for (r, _), t in self._trees.items() if r == repo and t.commit == revision), None
        )
        if found is None:
            from fracctl.adapters.render.revision import export_whole

            pinned = self.pinned(repo, revision)
            if not self._trees:  # removed when the run closes, or when nothing holds it
                weakref.finalize(self, self._exits.close)
            found = self._exits.enter_context(export_whole(repo, revision, pinned))
            self.pinned(repo, revision, found.commit)
            self._trees[(repo, revision)] = found
        return found

    def rerun(self, command: str, *more: str) -> str:
        """``fracctl COMMAND`` as this run was given it.

        Its global options, git's source flags and its own choices, then ``more`` (each
        once).
        """
        words = [*self.source_flags, *self.run_flags]
        words += [w for w in more if w not in words]
        return f"fracctl{_typed(self.global_flags)} {command}{_typed(words)}"

    @property
    def kube(self) -> Kube:
        """The Kubernetes client, connected on first use."""
        if self._kube is None:
            self._kube = self.kube_factory()
        return self._kube

    @property
    def argocd(self) -> ArgoCD:
        """The Argo CD client, built on first use from ``argocd:`` and the environment.

        Raises:
            ConfigError: the server or the token is missing or malformed.
        """
        if self._argocd is None:
            if self.argocd_factory is not None:
                self._argocd = self.argocd_factory()
            else:
                from fracctl.adapters.argocd import ArgoCD

                self._argocd = ArgoCD.from_config(
                    self.config.argocd, self.env, timeout=float(self.config.timeouts.request)
                )
        return self._argocd

    @property
    def host(self) -> Host:
        """This machine from ``/`` (PATH, processes, sockets), built on first use from ``env``.

        The host's own files under ``mps.host_root`` are a separate ``Host``; a test that
        needs another machine passes ``_host``.
        """
        if self._host is None:
            from fracctl.adapters.host import Host

            self._host = Host("/", env=self.env)
        return self._host

    def close(self) -> None:
        """Close the clients this context opened, and remove its exports."""
        self._exits.close()
        self._trees.clear()
        self.renders.clear()
        self.engines.clear()
        if self._argocd is not None:
            self._argocd.close()
            self._argocd = None
        if self._kube is not None:
            self._kube.close()
            self._kube = None

    @property
    def out(self) -> Console:
        """Console for results (stdout)."""
        if self._out is None:
            self._out = redacting_console(highlight=False, soft_wrap=False)
        return self._out

    @property
    def err(self) -> Console:
        """Console for progress and warnings (stderr)."""
        if self._err is None:
            self._err = redacting_console(stderr=True, highlight=False)
        return self._err

    def warn(self, message: str) -> None:
        """A one-line warning on stderr (never markup: messages hold brackets)."""
        self.err.print(f"warning: {message}", markup=False, style="yellow", soft_wrap=True)

    def info(self, message: str) -> None:
        """A one-line progress note on stderr (never broken over lines: logs keep it whole)."""
        self.err.print(message, markup=False, soft_wrap=True)

    def expand(self, path: str) -> str:
        """Expand ``~`` and variables in a configured path."""
        return os.path.expandvars(os.path.expanduser(path))


def redacting_console(**options: Any) -> Console:
    """A rich ``Console`` that masks every registered secret in what it prints.

    Text is redacted before rich lays it out: a long token in a table cell or a wrapped
    line would otherwise be cut over several lines and no longer be recognised whole.
    """
    return _redacting_console_class()(**options)


@lru_cache(maxsize=1)
def _redacting_console_class() -> type[Console]:
    from collections.abc import Iterable

    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment
    from rich.text import Text

    class RedactingConsole(Console):
        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            if isinstance(renderable, str):
                renderable = redact(renderable)
            elif isinstance(renderable, Text):
                masked = redact(renderable.plain)
                if masked != renderable.plain:  # the styles inside are lost with the secret
                    renderable = Text(
                        masked,
                        style=renderable.style,
                        justify=renderable.justify,
                        overflow=renderable.overflow,
                        no_wrap=renderable.no_wrap,
                        end=renderable.end,
                    )
            return super().render(renderable, options)

    return RedactingConsole


def _typed(words: Sequence[str]) -> str:
    """``words`` as typed after a command: each after a space, quoted for the shell."""
    import shlex

    return "".join(f" {shlex.quote(word)}" for word in words)
