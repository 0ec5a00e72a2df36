"""The kinds tests' shop, for an extension backend's objects."""

from tests.kinds.conftest import shop  # noqa: F401  (the fixture, shared)
