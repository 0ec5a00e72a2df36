"""The Kubernetes client itself: :class:`Kube`, assembled from the adapter's concerns.

Each concern is a mixin in its own module (requests and their errors, typed helpers, the
pod pager, watching, discovery); this module joins them and adds the way to build a
client from a kubeconfig.
"""

from __future__ import annotations

from collections.abc import Mapping

from fracctl.adapters.kube.discovery import Discovery
from fracctl.adapters.kube.evictions import Evictions
from fracctl.adapters.kube.kubeconfig import load_configuration
from fracctl.adapters.kube.pods import PodPager
from fracctl.adapters.kube.watch import Watcher


class Kube(Discovery, Watcher, PodPager, Evictions):
    """A small, typed-by-convention Kubernetes client returning plain dicts."""

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> Kube:
        """Load credentials from a kubeconfig (or the in-cluster service account).

        The kubeconfig is found as kubectl finds it: ``kubeconfig``, else the files
        listed in ``$KUBECONFIG`` (read from ``env``, default ``os.environ``, at call
        time), else ``~/.kube/config``.

        Raises:
            ConfigError: one line naming the file (or the context): missing, not YAML,
                not a kubeconfig, no such context. Never its contents.
        """
        configuration = load_configuration(
            kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, env=env
        )
        return cls(configuration, timeout=timeout)
