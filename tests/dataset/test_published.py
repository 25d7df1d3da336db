"""Records written from the published schema load as they are: warnings, never rejections."""

from __future__ import annotations

from pathlib import Path

import pytest
from published import SIZE, build_published_set

from iwr_bench.cli import main
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.models import Resolution
from iwr_bench.dataset.validate import validate


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("published")
    build_published_set(root)
    return root


def test_published_records_load_with_warnings_and_no_errors(published: Path) -> None:
    task_set = load_tasks(published)
    assert [t.id for t in task_set.tasks] == [301, 302, 303]
    assert task_set.problems == []
    problems = validate(task_set)
    assert [p.format() for p in problems if p.severity == "error"] == []
    warnings = {(p.task_id, p.field): p.message for p in problems}
    assert "'tablet'" in warnings[(303, "recording_details.environment")]
    assert "never read it" in warnings[(301, "action_sequence[1].parameters.description")]
    assert "metadata.json" in warnings[(302, "recording_details.resolution")]
    assert "never sent" in warnings[(301, "stitched_assets/preview.png")]
    # Empty strings are "not given", never a field of their own: no unknown-field warnings.
    assert not [p for p in problems if "not part of the IWR-Bench format" in p.message]


def test_published_fields_are_read_as_the_official_scripts_read_them(published: Path) -> None:
    tasks = {t.id: t for t in load_tasks(published).tasks}
    size = Resolution(width=SIZE[0], height=SIZE[1])
    assert tasks[302].resolution == size and tasks[302].resolution_source[1] == "metadata.json"
    assert tasks[301].resolution == size and tasks[301].resolution_source[1] == "record"
    assert tasks[303].record.recording_details.environment == "tablet"
    assert not tasks[303].record.is_mobile and tasks[302].record.is_mobile
    scroll = tasks[301].record.action_sequence[1]
    assert (scroll.parameters.description, scroll.parameters.key, scroll.parameters.scroll_page) == (
        "",
        None,
        None,
    )
    # The official generator sends stitched_image* files in plain sorted order: _10 before _2.
    names = [p.name for p in tasks[301].sheet_files]
    assert names[:5] == [
        "stitched_image_1.png",
        "stitched_image_10.png",
        "stitched_image_11.png",
        "stitched_image_12.png",
        "stitched_image_2.png",
    ]
    assert len(names) == 12 and "preview.png" not in names


def test_validate_command_accepts_the_published_set(
    published: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "validate", str(published)]) == 0
    out = capsys.readouterr().out
    assert "3 task(s) read, 3 valid; 0 error(s)" in out
    assert main(["tasks", "validate", "--strict", str(published)]) == 1
