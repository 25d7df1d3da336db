from __future__ import annotations

import pytest

from iwr_bench.errors import UserError
from iwr_bench.registry import create, names, rebuild, register


class _Thing:
    def __init__(self, size: int) -> None:
        self.size = size


@register("test-role", "thing")
def _thing(size: int = 3) -> _Thing:
    return _Thing(size)


def test_create_records_a_spec_that_rebuilds() -> None:
    obj, spec = create("test-role", "thing", size=5)
    assert obj.size == 5
    assert spec.model_dump() == {"role": "test-role", "name": "thing", "args": {"size": 5}}
    assert rebuild(spec).size == 5
    assert names("test-role") == ["thing"]


def test_unknown_name_and_bad_args_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"unknown test-role 'nope' \(known: thing\)"):
        create("test-role", "nope")
    with pytest.raises(UserError, match=r"bad options for test-role 'thing'"):
        create("test-role", "thing", colour="red")


def test_name_clash_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):

        @register("test-role", "thing")
        def _other() -> None:
            return None
