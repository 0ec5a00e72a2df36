"""The suite's order and its report: a random order with its seed printed, the same in every
xdist worker, and where the time went.

Modules are shuffled, then the tests inside each module, so a module's fixtures are still
set up once per worker. ``--order-seed N`` replays an order; ``--order-seed file`` keeps
the files' own order. Every worker receives the controller's seed (xdist requires every
worker to collect the same list in the same order).
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from typing import Any

import pytest

_SEED = "fracctl_order_seed"
_KEY = pytest.StashKey[str]()
_STARTED = pytest.StashKey[float]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--order-seed",
        default=None,
        help="shuffle the tests with this seed (default: a new one, printed); "
        "'file' keeps the files' order",
    )


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        seed = workerinput[_SEED]
    else:
        seed = config.getoption("--order-seed") or str(random.SystemRandom().randrange(10**6))
    config.stash[_KEY] = seed
    config.stash[_STARTED] = time.monotonic()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the controller's seed to each worker."""
    node.workerinput[_SEED] = node.config.stash[_KEY]


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[_KEY]
    if seed == "file":
        return "test order: the files' own (--order-seed file)"
    return f"test order: shuffled with seed {seed} (replay with --order-seed {seed})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.stash[_KEY]
    if seed == "file":
        return
    rng = random.Random(seed)
    modules: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        modules[item.nodeid.split("::", 1)[0]].append(item)
    names = sorted(modules)
    rng.shuffle(names)
    items[:] = []
    for name in names:
        tests = modules[name]
        rng.shuffle(tests)
        items.extend(tests)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Where the time went: building the real parts (``make test`` passes it on in
    ``FRACCTL_BUILD_SECONDS``) and the tests themselves."""
    if getattr(config, "workerinput", None) is not None:
        return
    tested = time.monotonic() - config.stash[_STARTED]
    built = os.environ.get("FRACCTL_BUILD_SECONDS")
    parts = [f"tests {_minutes(tested)}"]
    if built:
        parts.insert(0, f"building the real parts {_minutes(float(built))}")
    workers = getattr(config.option, "numprocesses", None)
    if workers:
        parts.append(f"{workers} workers")
    terminalreporter.write_sep("=", "time: " + ", ".join(parts))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"
