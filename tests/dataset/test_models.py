from __future__ import annotations

import pytest
from pydantic import ValidationError

from iwr_bench.dataset.models import (
    Action,
    Resolution,
    TaskRecord,
    pressed_key,
    scroll_direction,
    typed_text,
)


def _action(**kw: object) -> Action:
    base: dict[str, object] = {"type": "Click", "parameters": {"description": "the blue button"}}
    base.update(kw)
    return Action.model_validate(base)


def test_resolution_parses_and_rejects() -> None:
    assert Resolution.parse("1920x1080") == Resolution(width=1920, height=1080)
    assert Resolution.parse(" 390 X 844 ") == Resolution(width=390, height=844)
    assert str(Resolution.parse("1280*720")) == "1280x720"
    for bad in ("1920", "axb", "1920x", "0x0x0", ""):
        with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
            Resolution.parse(bad)


def test_minimal_record_takes_documented_defaults() -> None:
    rec = TaskRecord.model_validate({"id": 7, "action_sequence": []})
    assert rec.recording_details.resolution is None
    assert rec.resolution == Resolution(width=1920, height=1080)
    assert not rec.is_mobile
    assert rec.classification.level == ""
    assert rec.flagged_indices == []


def test_only_the_id_is_required_as_officially() -> None:
    with pytest.raises(ValidationError, match="id"):
        TaskRecord.model_validate({"action_sequence": []})
    assert TaskRecord.model_validate({"id": 1}).action_sequence == []
    assert Action.model_validate({"type": "Click", "parameters": {}}).parameters.description == ""
    with pytest.raises(ValidationError, match="type"):
        Action.model_validate({"parameters": {"description": "x"}})


def test_action_type_is_case_insensitive_and_unknown_types_are_kept() -> None:
    assert _action(type="click").type == "Click"
    assert _action(type=" SCROLL ").type == "Scroll"
    hover = _action(type="Hover")
    assert hover.type == "Hover" and not hover.known_type


def test_published_parameter_strings_empty_means_not_given() -> None:
    action = _action(
        type="Scroll",
        parameters={"description": "", "key": "", "direction": "", "scroll_page": "", "element_index": ""},
    )
    p = action.parameters
    assert (p.key, p.direction, p.scroll_page, p.text, p.element_index) == (None, None, None, None, None)
    assert scroll_direction(action) == "down"
    press = _action(type="Press", parameters={"description": "press enter", "key": "", "text": ""})
    assert pressed_key(press) == "Enter"
    typed = _action(type="Type", parameters={"description": "type 'abc' in the box", "text": ""})
    assert typed_text(typed) == "abc"
    assert _action(
        type="Scroll", parameters={"description": "x", "scroll_page": "1.5"}
    ).parameters.scroll_page


def test_null_assertion_means_none_and_levels_are_extracted() -> None:
    action = _action(logical_assertion=None)
    assert action.logical_assertion == "" and not action.has_assertion
    rec = TaskRecord.model_validate(
        {
            "id": 3,
            "classification": {"interaction_complexity": "L3: multi-step", "visual_complexity": "v2"},
            "recording_details": {"resolution": "390x844", "environment": "Mobile"},
            "action_sequence": [],
        }
    )
    assert (rec.classification.level, rec.classification.visual_level) == ("L3", "V2")
    assert rec.is_mobile


def test_unknown_fields_are_kept_and_listed() -> None:
    rec = TaskRecord.model_validate(
        {
            "id": 1,
            "extra_top": 1,
            "action_sequence": [{"type": "Click", "parameters": {"description": "x", "selector": "#a"}}],
        }
    )
    assert rec.model_extra == {"extra_top": 1}
    assert rec.unknown_fields() == ["extra_top", "action_sequence[0].parameters.selector"]


def test_parameter_helpers() -> None:
    assert typed_text(_action(type="Type", parameters={"description": "type 'hello world' in search"})) == (
        "hello world"
    )
    assert typed_text(_action(type="Type", parameters={"description": "x", "text": "abc"})) == "abc"
    assert typed_text(_action(type="Type", parameters={"description": "type in the box"})) is None
    assert pressed_key(_action(type="Press", parameters={"description": "press the Enter key"})) == "Enter"
    assert pressed_key(_action(type="Press", parameters={"description": "x", "key": "escape"})) == "Escape"
    assert pressed_key(_action(type="Press", parameters={"description": "hit the up arrow"})) == "ArrowUp"
    assert pressed_key(_action(type="Press", parameters={"description": "press it"})) is None
    assert scroll_direction(_action(type="Scroll", parameters={"description": "scroll the page"})) == "down"
    assert scroll_direction(_action(type="Scroll", parameters={"description": "scroll back up"})) == "up"
    assert (
        scroll_direction(_action(type="Scroll", parameters={"description": "x", "direction": "Up"})) == "up"
    )
    assert (
        scroll_direction(_action(type="Scroll", parameters={"description": "x", "direction": "left"})) is None
    )
