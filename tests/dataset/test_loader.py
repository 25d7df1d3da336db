from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iwr_bench.dataset.layout import Alignment, load_tasks
from iwr_bench.errors import UserError


def test_loads_root_jsonl_and_single_task_folder(tasks_root: Path) -> None:
    by_root = load_tasks(tasks_root)
    assert [t.id for t in by_root.tasks] == [1, 2]
    assert by_root.problems == []
    task = by_root.tasks[0]
    assert task.folder == tasks_root / "data" / "1"
    assert task.video.is_file()
    assert [p.name for p in task.asset_files] == ["001.png", "002.png"]
    assert [p.name for p in task.sheet_files] == ["stitched_image_01.png"]
    assert sorted(task.checkpoints) == [0, 1, 2]
    assert task.line == 1

    assert [t.id for t in load_tasks(tasks_root / "data.jsonl").tasks] == [1, 2]
    single = load_tasks(tasks_root / "data" / "2")
    assert [t.id for t in single.tasks] == [2]


def test_task_folder_with_own_record(tasks_root: Path, tmp_path: Path) -> None:
    record = json.loads((tasks_root / "data.jsonl").read_text().splitlines()[0])
    folder = tmp_path / "lone"
    shutil.copytree(tasks_root / "data" / "1", folder)
    (folder / "task.json").write_text(json.dumps(record))
    loaded = load_tasks(folder)
    assert [t.id for t in loaded.tasks] == [1]
    assert loaded.tasks[0].folder == folder


def test_other_stem_names_the_task_folder(tmp_path: Path, pristine_tasks: Path) -> None:
    shutil.copytree(pristine_tasks / "data", tmp_path / "subset")
    shutil.copy(pristine_tasks / "data.jsonl", tmp_path / "subset.jsonl")
    loaded = load_tasks(tmp_path)
    assert loaded.tasks[0].folder == tmp_path / "subset" / "1"


def test_bad_paths_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_tasks(tmp_path / "nope")
    with pytest.raises(UserError, match="not a task dataset"):
        load_tasks(tmp_path)
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(UserError, match="no task records"):
        load_tasks(tmp_path / "empty.jsonl")
    (tmp_path / "x.txt").write_text("{}")
    with pytest.raises(UserError, match=r"not a \.jsonl"):
        load_tasks(tmp_path / "x.txt")


def test_malformed_lines_become_problems_with_line_numbers(tasks_root: Path) -> None:
    jsonl = tasks_root / "data.jsonl"
    lines = jsonl.read_text().splitlines()
    lines.insert(1, "{not json")
    lines.append('{"id": 9, "action_sequence": [{"type": 3, "parameters": {"description": "x"}}]}')
    jsonl.write_text("\n".join(lines) + "\n")
    loaded = load_tasks(tasks_root)
    assert [t.id for t in loaded.tasks] == [1, 2]
    assert [(p.line, p.task_id, p.field) for p in loaded.problems] == [
        (2, None, "json"),
        (4, 9, "action_sequence[0].type"),
    ]
    assert "string" in loaded.problems[1].message


def test_alignment_flagged_every_action_and_invalid(tasks_root: Path) -> None:
    jsonl = tasks_root / "data.jsonl"
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    # Task 2 has 3 actions and 4 checkpoints: unflag the middle action.
    records[1]["action_sequence"][1]["visual_evaluation_flag"] = False
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    task = load_tasks(tasks_root).by_id(2)
    assert task.alignment is Alignment.every_action
    assert task.checkpoint_after(0) == task.checkpoints[1]
    assert task.checkpoint_after(1) is None
    assert task.checkpoint_after(2) == task.checkpoints[3]

    (task.checkpoints_dir / "step_3.png").unlink()
    task = load_tasks(tasks_root).by_id(2)
    assert task.alignment is Alignment.flagged  # 3 files = 1 + 2 flagged actions
    assert task.checkpoint_after(2) == task.checkpoints[2]

    (task.checkpoints_dir / "step_2.png").unlink()
    task = load_tasks(tasks_root).by_id(2)
    assert task.alignment is Alignment.invalid
    assert task.checkpoint_after(0) is None
    with pytest.raises(UserError, match="no task with id 5"):
        load_tasks(tasks_root).by_id(5)
