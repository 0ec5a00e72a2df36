"""A plan's creator is the run's engine's: none is assumed before the engine chose one."""

from __future__ import annotations

import pytest

from fracctl.core import drift as d
from fracctl.core.kube.resources import DEPLOYMENTS
from fracctl.core.outcome import Outcome
from fracctl.flows.engines.apply.objects import ApplyCreator
from fracctl.flows.kinds.plan import Planned


def planned() -> Planned:
    o = d.ObjectDrift("apps/v1", "Deployment", "shop", "web", d.NEEDS_RECREATE)
    return Planned("deploy/web", o, DEPLOYMENTS, Outcome.PLANNED)


def test_a_plan_has_no_creator_until_the_engine_chooses_one() -> None:
    with pytest.raises(RuntimeError, match=r"Deployment/shop/web: no engine's creator"):
        _ = planned().creator


def test_the_chosen_creator_is_the_plans() -> None:
    p = planned()
    p.chosen = chosen = ApplyCreator()
    assert p.creator is chosen
