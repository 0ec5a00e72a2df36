"""What the Argo CD and Flux creators share: the engine's rendering, proven first.

A held object is created from the engine's own rendering (its tracking marks included, so
that the engine sees its own object) and released to it; an unheld one is the engine's
own create, waited for until the new incarnation is visible.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import TimedOut
from fracctl.flows.engines import clean_desired, steps

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.steps import Work

Obj = dict[str, Any]


class GitOpsCreator:
    """What the Argo CD and Flux creators share.

    The backend's rendering, proven first, is what a held object is created from and
    released to; the backend does the rest.
    """

    name = ""
    verifies = True
    engine = ""  # the GitOps engine, in messages
    backend: Any

    def __init__(self, target: SyncTarget) -> None:
        self.target = target
        self.creates: Obj | None = None  # the backend's rendering of the object, once proven

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """The backend's own rehearsal (see the module)."""
        proof = self.backend.check(ctx, desired)
        self.creates = proof.creates
        return list(proof.evidence)

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Held: from the backend's rendering, by fracctl; else the backend's own create."""
        done = w.recreated()
        if done is not None:
            return done
        if held:
            made = steps.create(w, steps.held(w, rendering_copy(self.creates)))
            w.say(f"created from {self.engine}'s rendering, held, so that {self.engine} tracks it")
            return made
        w.say(self.backend.recreate(w.ctx, w.desired))
        return wait_recreated(w)

    def release(self, w: Work) -> None:
        """Apply the backend's rendering (the hold goes), then the backend applies it."""
        w.ctx.kube.apply(w.ref, clean_desired(rendering_copy(self.creates)))
        w.say(f"applied {self.engine}'s rendering of {w.journal.key}: the hold is gone")
        self._released(w)
        w.say(self.backend.recreate(w.ctx, w.desired))

    def _released(self, w: Work) -> None:
        """What follows the release before the backend applies (nothing by default)."""

    def finish(self, w: Work) -> None:
        """Nothing: the backend's own sync brought the object back."""


def rendering_copy(obj: Obj | None) -> Obj:
    """A copy of the rendering ``prove()`` read (an error if it has not run)."""
    if obj is None:
        raise AssertionError("the backend's rendering is read by prove() before any step")
    return copy.deepcopy(obj)


def wait_recreated(w: Work) -> Obj:
    """The recreated object, once the backend's create is visible."""
    timeout = w.ctx.config.timeouts.sync
    found: list[Obj] = []

    def there(view: dict[str, Obj]) -> bool:
        found[:] = [o for o in view.values() if o["metadata"].get("uid") != w.journal.uid]
        return bool(found)

    if not steps.watch_object(w, there, timeout):
        raise TimedOut(
            f"the backend reported its sync done, but {w.journal.key} was not created "
            f"within {timeout:.0f}s",
            hint="see the application's sync result; rerun to resume",
        )
    return found[0]
