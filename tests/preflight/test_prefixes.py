"""The annotation prefixes the agents read: from the live config, from git, the defaults."""

from __future__ import annotations

import pytest

from fracctl.core.fractions.fractional import (
    AGENT_FORMATS,
    Fractions,
    PrefixError,
    agent_prefixes,
)
from fracctl.core.fractions.memory import unread_memory_keys


def config(prefix: str | None = None, agent: str = "fractioningAgent") -> dict[str, object]:
    spec: dict[str, object] = {"nodeSelector": {"a": "b"}}
    if prefix is not None:
        spec[agent] = {"annotationPrefix": prefix}
    return {"spec": spec}


def test_without_a_config_the_defaults_of_both_generations() -> None:
    got = agent_prefixes("gpu-fractioning")
    assert [(p.value, p.naming) for p in got] == [
        ("nvidia.com/container.", "gpu-fractioning"),
        ("nvidia.com/gpu-memory.container.", "gpu-sharing"),
    ]
    assert got[0].origins == ("the gpu-fractioning agents' documented default",)


def test_the_live_prefix_comes_first_and_says_where_it_was_read() -> None:
    got = agent_prefixes("gpu-fractioning", live=config("example.org/frac."), kind="G/default")
    assert got[0].value == "example.org/frac."
    assert got[0].origins == ("the live G/default, spec.fractioningAgent.annotationPrefix",)
    assert [p.value for p in got[1:]] == [
        "nvidia.com/container.",
        "nvidia.com/gpu-memory.container.",
    ]


def test_a_config_without_a_prefix_is_the_default_with_both_origins() -> None:
    got = agent_prefixes("gpu-fractioning", live=config())
    assert got[0].value == "nvidia.com/container."
    assert got[0].origins == (
        "the live config, spec.fractioningAgent.annotationPrefix unset: the agents' default",
        "the gpu-fractioning agents' documented default",
    )


def test_live_and_git_differ_both_count() -> None:
    got = agent_prefixes(
        "gpu-fractioning", live=config("old.example/"), desired=config("new.example/")
    )
    assert [p.value for p in got[:2]] == ["old.example/", "new.example/"]
    m = Fractions.of([], "gpu-fractioning", live=config("old.example/"),
                     desired=config("new.example/")).matcher  # fmt: skip
    assert m.match({"old.example/c.gpu-memory.limit": "1Gi"})
    assert m.match({"new.example/c.gpu-memory.limit": "1Gi"})


def test_the_gpu_sharing_naming_reads_its_own_agent_section() -> None:
    live = config("team.example/mem.", agent="sharingAgent")
    got = agent_prefixes("gpu-sharing", live=live)
    assert (got[0].value, got[0].naming) == ("team.example/mem.", "gpu-sharing")
    m = Fractions.of([], "gpu-sharing", live=live).matcher
    assert m.match({"team.example/mem.trainer.limit": "6Gi"}) == ["team.example/mem.trainer.limit"]
    # a fractioningAgent section is not what the gpu-sharing agents read
    assert agent_prefixes("gpu-sharing", live=config("x.example/"))[0].value == (
        "nvidia.com/gpu-memory.container."
    )


def test_a_custom_prefix_set_on_the_live_config_is_recognised() -> None:
    m = Fractions.of([], "gpu-fractioning", live=config("example.org/frac.")).matcher
    assert m.match({"example.org/frac.trainer.gpu-memory.limit": "6Gi"}) == [
        "example.org/frac.trainer.gpu-memory.limit"
    ]
    # the prefix is literal: its dots are no wildcards
    assert m.match({"exampleXorg/fracXtrainer.gpu-memory.limit": "6Gi"}) == []


def test_additions_are_added_not_the_whole_truth() -> None:
    m = Fractions.of(["example.com/share"], "gpu-fractioning").matcher
    assert m.match({"example.com/share": ""}) == ["example.com/share"]
    assert m.match({"gpu-fraction": "0.5"}) == ["gpu-fraction"]


@pytest.mark.parametrize("bad", ["nvidia.com/c*.", "a=b.", " spaced.", "-lead."])
def test_a_prefix_no_key_can_start_with_is_refused(bad: str) -> None:
    with pytest.raises(PrefixError, match=r"spec.fractioningAgent.annotationPrefix"):
        agent_prefixes("gpu-fractioning", live=config(bad))


def test_describe_names_each_prefix_and_origin() -> None:
    text = Fractions.of([], "gpu-fractioning", live=config("example.org/frac.")).describe()
    assert text.startswith("annotation prefixes example.org/frac. (the live config, ")
    assert "nvidia.com/gpu-memory.container. (the gpu-sharing agents' documented default)" in text


def test_unread_memory_keys_name_the_key_the_agents_read_instead() -> None:
    read = agent_prefixes("gpu-fractioning", live=config())[0]
    notes = {
        "nvidia.com/gpu-memory.container.trainer.limit": "6Gi",
        "nvidia.com/gpu-memory.container.trainer.request": "6Gi",
    }
    assert unread_memory_keys(notes, read) == [
        (
            "nvidia.com/gpu-memory.container.trainer.limit",
            "nvidia.com/container.trainer.gpu-memory.limit",
        ),
        (
            "nvidia.com/gpu-memory.container.trainer.request",
            "nvidia.com/container.trainer.gpu-memory.request",
        ),
    ]


def test_keys_the_agents_read_are_not_reported() -> None:
    read = agent_prefixes("gpu-fractioning", live=config("example.org/frac."))[0]
    good = {"example.org/frac.trainer.gpu-memory.limit": "6Gi", "gpu-fraction": "0.5"}
    assert unread_memory_keys(good, read) == []
    # the default prefix is not read once the config sets its own
    stale = {"nvidia.com/container.trainer.gpu-memory.limit": "6Gi"}
    assert unread_memory_keys(stale, read) == [
        (
            "nvidia.com/container.trainer.gpu-memory.limit",
            "example.org/frac.trainer.gpu-memory.limit",
        )
    ]
    # a pod that writes both keys has its limit
    both = {**stale, "example.org/frac.trainer.gpu-memory.limit": "6Gi"}
    assert unread_memory_keys(both, read) == []


def test_every_naming_has_a_format() -> None:
    from fracctl.config import NAMINGS

    assert set(AGENT_FORMATS) == set(NAMINGS)
