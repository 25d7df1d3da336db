from __future__ import annotations

import re

import pytest

from iwr_bench.errors import UserError
from iwr_bench.registry import ROLES, create, names, rebuild, register, roles


class _Thing:
    """A stand-in grounder (any callable can ground)."""

    def __init__(self, size: int) -> None:
        self.size = size

    async def __call__(self, request: object) -> None:
        return None


@register("grounder", "test-thing")
def _thing(size: int = 3) -> _Thing:
    return _Thing(size)


@register("rubric", "test-nameless")
def _nameless() -> _Thing:
    """A rubric judge must have a ``name``: this one has none."""
    return _Thing(1)


@register("grounder", "test-not-callable")
def _not_callable() -> str:
    return "a grounder"


def test_create_records_a_spec_that_rebuilds() -> None:
    obj, spec = create("grounder", "test-thing", size=5)
    assert obj.size == 5
    assert spec.model_dump() == {"role": "grounder", "name": "test-thing", "args": {"size": 5}}
    assert rebuild(spec).size == 5
    assert "test-thing" in names("grounder")


def test_unknown_name_and_bad_args_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"unknown grounder 'nope' \(known: .*test-thing"):
        create("grounder", "nope")
    with pytest.raises(UserError, match=r"bad options for grounder 'test-thing'"):
        create("grounder", "test-thing", colour="red")


def test_name_clash_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):

        @register("grounder", "test-thing")
        def _other() -> None:
            return None


def test_roles_are_a_closed_set() -> None:
    assert (
        roles()
        == sorted(ROLES)
        == ["assertions", "backend", "display", "generator", "grounder", "metric", "replay", "rubric", "step"]
    )
    with pytest.raises(ValueError, match="unknown role 'grounderr'"):
        register("grounderr", "typo")


def test_a_product_that_cannot_play_its_role_is_one_line_naming_it() -> None:
    with pytest.raises(UserError) as info:
        create("rubric", "test-nameless")
    assert re.fullmatch(
        r"rubric 'test-nameless' \(module [\w.]*test_registry\): its factory returned _Thing, "
        r"which cannot play the rubric role: it has no name",
        str(info.value),
    )
    with pytest.raises(
        UserError, match=r"returned str, which cannot play the grounder role: it has no __call__$"
    ):
        create("grounder", "test-not-callable")
