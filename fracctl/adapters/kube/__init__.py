"""The Kubernetes API adapter: raw JSON over the client library's connection pool.

The ``kubernetes`` package loads kubeconfig (contexts, exec plugins, in-cluster tokens)
and builds the TLS connection pool; requests and responses stay plain dicts, which is
much faster than the generated models and lets lists be requested as metadata only.
Every failure becomes a :mod:`fracctl.errors` exception; credentials never reach a
message. The client, :class:`Kube`, is assembled from one module per concern:
:mod:`.kubeconfig`, :mod:`.transport`, :mod:`.crud`, :mod:`.pods`, :mod:`.watch` and
:mod:`.discovery`.
"""

from fracctl.adapters.kube.client import Kube
from fracctl.adapters.kube.kubeconfig import (
    check_kubeconfig,
    kubeconfig_contexts,
    kubeconfig_files,
    register_credentials,
)
from fracctl.adapters.kube.transport import (
    APPLY_PATCH,
    JSON,
    JSON_PATCH,
    MERGE_PATCH,
    METADATA_LIST,
    POD_LIST,
    Obj,
)

__all__ = [
    "APPLY_PATCH",
    "JSON",
    "JSON_PATCH",
    "MERGE_PATCH",
    "METADATA_LIST",
    "POD_LIST",
    "Kube",
    "Obj",
    "check_kubeconfig",
    "kubeconfig_contexts",
    "kubeconfig_files",
    "register_credentials",
]
