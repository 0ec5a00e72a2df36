"""One ``fracctl recreate``'s flags, gathered once and handed to each of its paths."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Request:
    """The flags of one ``fracctl recreate``, as given.

    The command builds it once; the config's path, the fleet's, ``KIND/NAME``'s and
    ``--all``'s each read what they take from it.
    """

    obj: str | None = None
    namespace: str | None = None
    all_objects: bool = False
    allow_active: bool = False
    allow_new_ip: bool = False
    yes: bool = False
    dry_run: bool = False
    backend: str | None = None
    source: dict[str, str | None] = field(default_factory=dict)
    restore_from: str | None = None
    output: str = "table"
    parallel: int = 1
    continue_on_failure: bool = False
    drain: bool = False
    force: bool = False
    abort: bool = False

    @property
    def config_flags(self) -> bool:
        """Whether a flag only the config's recreate takes was given."""
        return self.drain or self.force or self.abort or self.restore_from is not None

    @property
    def source_given(self) -> bool:
        """Whether any git source flag was given."""
        return any(v is not None for v in self.source.values())
