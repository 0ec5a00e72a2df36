"""What a run came to, in the words the output shows, and the exit code each means.

An :class:`Outcome` is a ``str``: it prints, formats and serialises as the word itself
(``refused``, never ``Outcome.REFUSED``), so JSON, tables and audit lines read as
before. A cluster of a fleet run that failed exits with its error's own code; the
:attr:`Outcome.exit_code` of ``failed`` and ``unreachable`` is the code of a failure
outside fracctl, the one such an error carries unless it says otherwise.
"""

from __future__ import annotations

from enum import Enum

from fracctl.errors import ExitCode


class Outcome(str, Enum):
    """What a run (``recreate``, ``restore``, one cluster of a fleet run) came to."""

    PLANNED = "planned"  # planned, nothing run yet: what a confirmation is shown
    NOTHING_TO_DO = "nothing-to-do"  # the live object matches git, every node ready
    APPLIES_IN_PLACE = "applies-in-place"  # a normal sync applies the difference
    DRY_RUN = "dry-run"  # planned and proven, nothing changed
    RECREATED = "recreated"  # deleted and created again from git
    UPDATED = "updated"  # updated in place, guarded: the daemons rolled, the nodes ready
    READY = "ready"  # already recreated: waited for the nodes to be ready
    RESTORED = "restored"  # created again from a backup
    IN_SYNC = "in-sync"  # drift: nothing differs
    DRIFTED = "drifted"  # drift: something differs
    PASSED = "passed"  # preflight: every guard passed
    REFUSED = "refused"  # a guard refused; nothing changed
    NOT_STARTED = "not-started"  # a fleet run stopped before this cluster
    UNREACHABLE = "unreachable"  # the cluster could not be reached
    FAILED = "failed"  # the run failed
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM

    def __str__(self) -> str:
        return str(self.value)

    def __hash__(self) -> int:  # as the word's, so either finds the other in a dict
        return hash(str(self.value))

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def exit_code(self) -> ExitCode:
        """The exit code this outcome means on its own."""
        return _EXIT_CODES.get(self, ExitCode.OK)


_EXIT_CODES: dict[Outcome, ExitCode] = {
    Outcome.DRIFTED: ExitCode.FINDING,
    Outcome.REFUSED: ExitCode.FINDING,
    Outcome.UNREACHABLE: ExitCode.EXTERNAL,
    Outcome.FAILED: ExitCode.EXTERNAL,
    Outcome.INTERRUPTED: ExitCode.INTERRUPTED,
}
