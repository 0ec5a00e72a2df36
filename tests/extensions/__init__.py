"""One example of each extension point, as a newcomer would add it, kept out of the product.

Each module here is the whole of one extension; the one line that would register it in
``fracctl/`` is applied by the test that uses it (``test_extensions.py``):

- ``stamped``: an engine (a package: its config backend with its own fracctl.yaml section
  and RBAC, and its KIND/NAME creator);
  registered by one ``BackendEntry`` in ``fracctl/core/gitops/backends.py``.
- ``doctor_check``: a doctor check; registered by one entry in ``CHECKS``
  (``fracctl/core/doctor/registry.py``) and its import.
- ``lint_rule``: a lint rule; registered by importing its module in
  ``fracctl/core/lint/__init__.py``.
- ``command``: a command; registered by one entry in ``COMMANDS`` (``fracctl/cli/main.py``).
"""
