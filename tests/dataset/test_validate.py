"""One test per kind of problem the validator reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.problems import Problem
from iwr_bench.dataset.validate import validate


def _problems(root: Path) -> list[Problem]:
    return validate(load_tasks(root))


def _only(root: Path, severity: str = "error") -> list[tuple[int | None, str, str]]:
    return [(p.task_id, p.field, p.message) for p in _problems(root) if p.severity == severity]


def _edit(root: Path, task_id: int, change: Any) -> None:
    jsonl = root / "data.jsonl"
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    for r in records:
        if r["id"] == task_id:
            change(r)
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_fixture_is_valid(tasks_root: Path) -> None:
    assert _problems(tasks_root) == []


def test_missing_video(tasks_root: Path) -> None:
    (tasks_root / "data/1/video.mp4").unlink()
    [(tid, field, msg)] = _only(tasks_root)
    assert (tid, field) == (1, "video.mp4") and "does not exist" in msg


def test_unreadable_video(tasks_root: Path) -> None:
    (tasks_root / "data/2/video.mp4").write_bytes(b"\x00not a video" * 100)
    [(tid, field, msg)] = _only(tasks_root)
    assert (tid, field) == (2, "video.mp4") and "cannot be decoded" in msg


def test_bad_resolution_string(tasks_root: Path) -> None:
    _edit(tasks_root, 1, lambda r: r["recording_details"].update(resolution="wide"))
    [(tid, field, msg)] = _only(tasks_root)
    assert (tid, field) == (1, "recording_details.resolution") and "WIDTHxHEIGHT" in msg


def test_unknown_action_type_is_kept_with_a_warning(tasks_root: Path) -> None:
    _edit(tasks_root, 2, lambda r: r["action_sequence"][1].update(type="Hover"))
    assert _only(tasks_root) == []
    [(tid, field, msg)] = _only(tasks_root, "warning")
    assert (tid, field) == (2, "action_sequence[1].type") and "'Hover'" in msg and "fails" in msg


def test_missing_description_is_a_warning_naming_task_action_and_field(tasks_root: Path) -> None:
    _edit(tasks_root, 2, lambda r: r["action_sequence"][0]["parameters"].pop("description"))
    assert _only(tasks_root) == []
    [(tid, field, msg)] = _only(tasks_root, "warning")
    assert (tid, field) == (2, "action_sequence[0].parameters.description")
    assert "cannot ground it" in msg


def test_checkpoint_count_mismatch(tasks_root: Path) -> None:
    _edit(tasks_root, 1, lambda r: r["action_sequence"].append(dict(r["action_sequence"][0])))
    [(tid, field, msg)] = _only(tasks_root)
    assert (tid, field) == (1, "checkpoints")
    assert msg == "3 checkpoints fit neither 1 + 3 flagged actions nor 1 + 3 actions"


def test_an_extra_checkpoint_is_a_warning_and_goes_unused(tasks_root: Path) -> None:
    # the official scripts pair the k-th scored state with step_k.png and never look further
    folder = tasks_root / "data/1/checkpoints"
    n = len(list(folder.glob("step_*.png")))
    (folder / f"step_{n}.png").write_bytes((folder / "step_0.png").read_bytes())
    assert _only(tasks_root) == []
    warned = [(tid, field, msg) for tid, field, msg in _only(tasks_root, "warning") if field == "checkpoints"]
    assert warned and "go unused" in warned[0][2]


def test_checkpoint_gap_and_missing_initial(tasks_root: Path) -> None:
    (tasks_root / "data/2/checkpoints/step_0.png").rename(tasks_root / "data/2/checkpoints/step_4.png")
    errors = _only(tasks_root)
    assert (2, "checkpoints/step_0.png", "initial-state checkpoint is missing") in errors
    assert (2, "checkpoints", "checkpoint numbering has gaps: missing step 0") in errors


def test_unreadable_and_wrong_size_checkpoint(tasks_root: Path) -> None:
    (tasks_root / "data/1/checkpoints/step_1.png").write_text("png? no")
    assert _only(tasks_root) == [(1, "checkpoints/step_1.png", "checkpoint step 1 is not a readable image")]
    _edit(tasks_root, 2, lambda r: r["recording_details"].update(resolution="1280x720"))
    warnings = _only(tasks_root, "warning")
    assert (2, "checkpoints/step_0.png", "image is 640x360 but the task resolution is 1280x720") in warnings


def test_asset_referenced_by_nothing(tasks_root: Path) -> None:
    (tasks_root / "data/1/assets/003.png").write_bytes((tasks_root / "data/1/assets/001.png").read_bytes())
    assert _only(tasks_root, "warning") == [
        (1, "assets/003.png", "asset is referenced by nothing (no sheet, no page)")
    ]


def test_asset_used_by_reference_page_is_referenced(tasks_root: Path) -> None:
    (tasks_root / "data/1/assets/003.png").write_bytes((tasks_root / "data/1/assets/001.png").read_bytes())
    (tasks_root / "data/1/reference").mkdir()
    (tasks_root / "data/1/reference/index.html").write_text('<img src="assets/003.png">')
    assert _problems(tasks_root) == []


def test_sheet_manifest_lists_missing_asset_and_malformed_manifest(tasks_root: Path) -> None:
    (tasks_root / "data/2/assets/002.png").unlink()
    assert _only(tasks_root) == [(2, "stitched_assets/sheets.json", "lists 002.png, which is not in assets/")]
    (tasks_root / "data/2/stitched_assets/sheets.json").write_text("[1, 2]")
    [(tid, field, msg)] = _only(tasks_root)
    assert (tid, field) == (2, "stitched_assets/sheets.json") and "must map each sheet" in msg


def test_assets_without_sheets(tasks_root: Path) -> None:
    for p in (tasks_root / "data/1/stitched_assets").iterdir():
        p.unlink()
    assert (
        1,
        "stitched_assets",
        "2 assets but no contact sheet (files named stitched_image*) to show them",
    ) in _only(tasks_root)


def test_missing_task_folder_and_duplicate_id(tasks_root: Path) -> None:
    jsonl = tasks_root / "data.jsonl"
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join([*lines, lines[0].replace('"id": 1', '"id": 44'), lines[1]]) + "\n")
    errors = _only(tasks_root)
    assert (44, "folder", f"task folder {tasks_root / 'data' / '44'} does not exist") in errors
    assert (2, "id", "duplicate id 2 (first on line 2); line not used") in errors


def test_malformed_json_line(tasks_root: Path) -> None:
    jsonl = tasks_root / "data.jsonl"
    jsonl.write_text(jsonl.read_text() + "[1, 2]\n")
    problems = [p for p in _problems(tasks_root) if p.severity == "error"]
    assert [(p.line, p.field, p.message) for p in problems] == [
        (3, "json", "expected a JSON object, found list")
    ]
    assert problems[0].format() == "error   task ? (line 3) json: expected a JSON object, found list"


def test_action_parameter_problems(tasks_root: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["action_sequence"][0].update(
            type="Scroll", parameters={"description": "scroll", "direction": "sideways"}
        )
        r["action_sequence"][1].update(type="Type", parameters={"description": "type into the box"})

    _edit(tasks_root, 2, change)
    assert _only(tasks_root) == []
    assert (
        2,
        "action_sequence[0].parameters.direction",
        "direction 'sideways' is neither 'up' nor 'down' (scrolls down, as the official judge always does)",
    ) in _only(tasks_root, "warning")
    assert (
        2,
        "action_sequence[1].parameters",
        "Type action gives no text (no 'text' and nothing quoted)",
    ) in (_only(tasks_root, "warning"))


def test_empty_action_sequence_and_unknown_field(tasks_root: Path) -> None:
    _edit(tasks_root, 1, lambda r: r.update(action_sequence=[], notes="hi"))
    warnings = _only(tasks_root, "warning")
    assert (
        1,
        "action_sequence",
        "the task has no actions (kept; it scores IFS 0, as officially)",
    ) in warnings
    assert (1, "notes", "field is not part of the IWR-Bench format (kept, but unused)") in warnings
