"""The Flux engine: the Kustomization that applies the object, or a HelmRelease's upgrade.

:mod:`.backend` recreates the fractioning config through its Kustomization, and hands
the run to :mod:`.helmrelease` when ``flux.helmrelease`` names the operator chart's
HelmRelease; :mod:`.objects` routes a ``KIND/NAME`` by its owner labels, to its
Kustomization or to :mod:`.helmrelease_objects`; :mod:`.proofs` holds the rehearsal's
reads of Flux.
"""
