"""An engine as a newcomer adds one: this package, and one line in the registry.

``backend`` recreates the fractioning config (with its own fracctl.yaml section and RBAC),
``objects`` any ``KIND/NAME``; the registry line, a ``BackendEntry`` in
``fracctl/core/gitops/backends.py``, names the four (the tests apply it).
"""
