"""The executor and scoring end to end: record a small task, then judge pages against it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio.to_thread
import pytest
from judge_site import MUTANTS, SITE, write_page

from iwr_bench.agents.judge.assertions import decide, evidence_tokens
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.cli import main
from iwr_bench.dataset.layout import Task
from iwr_bench.registry import create
from iwr_bench.scoring.evaluation import VisualMetrics, evaluate

pytestmark = [pytest.mark.browser, pytest.mark.anyio]


async def test_reference_page_passes_everything(task: Task, executor: Executor, tmp_path: Path) -> None:
    assert task.reference_page is not None
    replay = await executor.replay(task, task.reference_page.parent, tmp_path / "ev")
    assert (replay.success_steps, replay.total_steps) == (5, 5), replay.actions
    assert [a.assertion.verdict for a in replay.actions if a.assertion] == ["yes", "yes"]
    assert sorted(replay.screenshots) == [0, 1, 2, 4, 5]
    assert all((tmp_path / "ev" / name).is_file() for name in replay.screenshots.values())


@pytest.mark.parametrize("name", sorted(MUTANTS))
async def test_each_mutant_fails_where_expected(
    task: Task, executor: Executor, tmp_path: Path, name: str
) -> None:
    old, new, first_failure, reason = MUTANTS[name]
    assert SITE.count(old) == 1
    page = write_page(tmp_path / name, SITE.replace(old, new))
    replay = await executor.replay(task, page, tmp_path / "ev")
    failed = [a for a in replay.actions if a.status == "failed"]
    if first_failure is None:
        assert failed == [] and replay.success_steps == 5
    else:
        assert [(a.index, a.failure) for a in failed] == [(first_failure, reason)]
        assert replay.success_steps == first_failure
        assert all(a.status == "not_run" for a in replay.actions[first_failure + 1 :])


async def test_missing_and_blank_pages_score_zero(task: Task, executor: Executor, tmp_path: Path) -> None:
    missing = await executor.replay(task, None, tmp_path / "ev0")
    assert (missing.failure, missing.success_steps) == ("no_page", 0)
    blank = await executor.replay(task, write_page(tmp_path / "blank", ""), tmp_path / "ev1")
    assert blank.success_steps == 0 and blank.actions[0].failure == "element_not_found"


async def test_judging_twice_gives_identical_scores(task: Task, executor: Executor, tmp_path: Path) -> None:
    ocr, _ = create("metric", "phash")  # cheap stand-ins: identical inputs must give identical numbers
    dino, _ = create("metric", "effnet-lite0", device="cpu")
    metrics = VisualMetrics(ocr=ocr, dino=dino)
    page = write_page(tmp_path / "recoloured", SITE.replace("#234", "#a33"))
    runs = []
    for k in range(2):
        replay = await executor.replay(task, page, tmp_path / f"ev{k}")
        runs.append(await evaluate(task, "m", replay, tmp_path / f"ev{k}", tmp_path / f"out{k}", metrics))
    a, b = runs
    assert (a.ifs, a.all_ocr_scores, a.all_dino_scores, a.final) == (
        b.ifs,
        b.all_ocr_scores,
        b.all_dino_scores,
        b.final,
    )
    assert a.ifs == 1.0 and a.vfs < 1.0 and a.lvs_only
    saved = json.loads((tmp_path / "out0" / "eval.json").read_text())
    assert saved["total_step"] == 5 and saved["success_step"] == 5
    assert saved["screenshot_paths_to_eval"] == [f"evalpoints/{k}.png" for k in (0, 1, 2, 4, 5)]
    assert all((tmp_path / "out0" / p).is_file() for p in saved["screenshot_paths_to_eval"])
    # no rubric judge: the official aggregation's representation (empty list, mean 0), flagged as ours
    assert saved["all_mllm_scores"] == [] and saved["mllm_score"] == 0 and saved["all_avg_scores"] == []
    assert saved["hvs_available"] is False and saved["hvs"] is None


@pytest.mark.slow
async def test_cli_judges_a_results_tree(task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert task.reference_page is not None
    pages = tmp_path / "pages" / "3"
    write_page(pages / "oracle", task.reference_page.read_text())
    write_page(pages / "blank", "")
    root = task.folder.parent.parent
    argv = ["judge", "--tasks", str(root), "--pages", str(tmp_path / "pages"), "--out", str(tmp_path / "o")]
    assert await anyio.to_thread.run_sync(main, argv) == 0  # the CLI runs its own event loop
    oracle = json.loads((tmp_path / "o" / "3" / "oracle" / "eval.json").read_text())
    blank = json.loads((tmp_path / "o" / "3" / "blank" / "eval.json").read_text())
    assert oracle["ifs"] == 1.0 and blank["ifs"] == 0.0
    assert oracle["final"] > blank["final"]
    assert any(b["substitute"] for b in oracle["backends"])


def test_assertion_rules() -> None:
    assert evidence_tokens("the total changes to '$23.50' for 2 items") == ["$23.50"]  # quotes win
    assert evidence_tokens("its count goes from 12 to 13 likes") == ["13"]  # "from" names the old state
    assert evidence_tokens("the button changes from 'Cart (0)' to 'Cart (1)'") == ["Cart (1)"]
    mixed = "the name error disappears and the summary reads 'Fix 1 error'"
    # the error's going away names no text to check: the quoted part holds, the rest cannot be told
    assert decide(mixed, "Name needed. Fix 2 errors", "Fix 1 error", changed=True).verdict == "undetermined"
    assert (
        decide("the summary reads 'Fix 1 error'", "Fix 2 errors", "Fix 1 error", changed=True).verdict
        == "yes"
    )
    assert decide("a message 'Saved' appears", "x", "Saved!", changed=True).verdict == "yes"
    assert decide("a message 'Saved' appears", "x", "nothing", changed=True).verdict == "no"
    assert (
        decide("the counter shows 1", "Count 0 of $1.50", "Count 0 of $1.50", changed=False).verdict == "no"
    )
    assert decide("the counter shows 1", "Count 0", "Count 1", changed=True).verdict == "yes"
    assert decide("the banner 'Sale' disappears", "Sale now", "now", changed=True).verdict == "yes"
    assert decide("the banner 'Sale' disappears", "Sale now", "Sale now", changed=True).verdict == "no"
    assert decide("the menu opens", "a", "b", changed=True).verdict == "undetermined"
    assert decide("the menu opens", "a", "a", changed=False).verdict == "no"


def test_wording_the_judge_must_read_as_a_person_does() -> None:
    # "hidden" as an adjective names a thing; only "is hidden" says something went away.
    assert decide("the hidden word shows 'C _ L D'", "_ _ _ _", "C _ L D", changed=True).verdict == "yes"
    assert decide("the panel 'Help' is hidden", "Help", "Other", changed=True).verdict == "yes"
    assert decide("the panel 'Help' is hidden", "Help", "Help", changed=True).verdict == "no"
    # A word inside quotes says nothing about the clause ("Hidden gems" is a title).
    assert decide("the title says 'Hidden gems'", "x", "Hidden gems", changed=True).verdict == "yes"
    # "replaces X", "X is replaced by Y", "replace X with Y": X is the old state, Y the new one.
    for wording in (
        "'cold' replaces 'steer' in the list",
        "the word 'steer' is replaced by 'cold'",
        "replace 'steer' with 'cold'",
        "'cold' is shown instead of 'steer'",
    ):
        assert decide(wording, "steer", "cold", changed=True).verdict == "yes", wording
        assert decide(wording, "steer", "steer cold", changed=True).verdict == "no", wording
    # "has gone" says it went; "the first 'X'" is one copy of several, so other copies may stay
    # (which copy went is told from how they are drawn: tests/agents/test_looks.py, one-copy-gone).
    assert decide("the 'Saved' notice has gone", "Saved", "Saved", changed=True).verdict == "no"
    assert decide("the 'Saved' notice has gone", "Saved", "Other", changed=True).verdict == "yes"
    first = "the first 'Saved' notice has gone"
    assert decide(first, "Saved\nSaved", "Other", changed=True).verdict == "yes"
    assert decide(first, "Saved\nSaved", "Saved", changed=True).verdict == "undetermined"
    # "step 1" says which step: 1 is not a value the step must show.
    assert evidence_tokens("step 1 is struck through and the footer reads 3") == ["3"]
    # A quoted landmark ("under 'Buy milk'") must be shown but is not what changed.
    landmark = "'Call the plumber' appears under 'Buy milk'"
    assert decide(landmark, "Buy milk", "Buy milk\nCall the plumber", changed=True).verdict == "yes"
    assert decide(landmark, "Buy milk", "Buy milk", changed=True).verdict == "no"
    assert decide(landmark, "Buy milk", "Call the plumber", changed=True).verdict == "no"
