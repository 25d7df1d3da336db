"""The recorded built-in suite as committed: it validates, meets the counts, and ships its mutants."""

from __future__ import annotations

import json
from collections import Counter

from iwr_bench.cli.demo import builtin_suite
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.validate import validate
from iwr_bench.suites.build import MUTANTS, SAMPLE


def test_committed_suite_validates_and_meets_the_counts() -> None:
    assert builtin_suite() == SAMPLE / "data.jsonl"
    task_set = load_tasks(SAMPLE)
    assert validate(task_set) == []
    tasks = task_set.tasks
    actions = [a for t in tasks for a in t.record.action_sequence]
    assert len(tasks) >= 12 and len(actions) >= 100
    assert {a.type for a in actions} == {"Click", "Type", "Scroll", "Press"}
    assert sum(a.visual_evaluation_flag for a in actions) >= 0.4 * len(actions)
    assert sum(a.has_assertion for a in actions) >= 0.3 * len(actions)
    levels = Counter(t.record.classification.level for t in tasks)
    assert levels["L1"] >= 2 and levels["L2"] >= 4 and levels["L3"] >= 4 and levels["L4"] >= 2
    assert sum(t.record.is_mobile for t in tasks) == 2
    assert all(t.reference_page is not None for t in tasks)
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 30 * 2**20


def test_every_task_has_at_least_two_mutants_with_manifests() -> None:
    task_set = load_tasks(SAMPLE)
    for task in task_set.tasks:
        folders = sorted((MUTANTS / str(task.id)).iterdir())
        assert len(folders) >= 2, task.id
        for folder in folders:
            manifest = json.loads((folder / "mutant.json").read_text())
            assert manifest["task_id"] == task.id
            first = manifest["expected_first_failure"]
            assert first is None or 0 <= first < len(task.record.action_sequence)
            # Only the edited files are kept; the page is the reference bundle with them over it.
            kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
            assert kept == sorted([*manifest["files"], "mutant.json"])
            for name in manifest["files"]:
                assert (folder / name).read_text() != (task.folder / "reference" / name).read_text()
