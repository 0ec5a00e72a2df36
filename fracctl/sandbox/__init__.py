"""The sandbox: a local real control plane seeded with the incident, and what runs beside it.

Not part of the product: nothing in ``fracctl.flows``, ``fracctl.adapters``,
``fracctl.core``, ``fracctl.config``, ``fracctl.errors`` or ``fracctl.redact`` imports it,
and of the commands only ``fracctl sandbox`` does (import contracts in pyproject.toml).
It holds the control plane (:mod:`.controlplane`), a real Argo CD run as local processes
(:mod:`.argocd_local`), the SIMULATION of the gpu-fractioning operator
(:mod:`.operator_sim`) and the sandbox's life cycle (:mod:`.flow`).
"""
