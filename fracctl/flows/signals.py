"""Signal handling shared by flows that must clean up when they are stopped."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def main_thread() -> bool:
    """Whether we run on the main thread (the only one that may set signal handlers)."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Treat SIGTERM (a cancelled CI job) like Ctrl-C, so cleanup and audit still run."""
    if not main_thread():
        yield
        return

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    handler: Callable[[int, Any], None] = raise_interrupt
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
