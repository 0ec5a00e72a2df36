"""The guards: what must hold before fractions change anywhere, each a command's flow.

:mod:`~fracctl.flows.guards.preflight` (``fracctl preflight``, and the checks every
recreate runs again right before its delete), :mod:`~fracctl.flows.guards.nodes`
(``fracctl nodes``: the opt-in policy and the node-join step),
:mod:`~fracctl.flows.guards.probe` (``fracctl probe``: what KAI does with a probe pod)
and :mod:`~fracctl.flows.guards.node_checks` (``fracctl node preflight``, on the GPU
host). Each is imported on its own: importing one guard loads no other.
"""
