"""``iwr generate`` (and ``iwr judge``) run through the engine: a store, events, resume, one folder each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iwr_bench.agents.generation.pages import mutant_tasks
from iwr_bench.cli import main
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.events import JobFinished
from iwr_bench.engine.store import RunStore
from iwr_bench.report.data import RunData
from iwr_bench.report.tables import leaderboard


def _gen_jobs(out: Path) -> dict[tuple[int, str], tuple[str, int]]:
    with RunStore.open_run(out, readonly=True) as store:
        return {(j.task_id, j.model): (j.status, j.attempts) for j in store.jobs("gen")}


def test_generate_records_its_jobs_and_events_and_resumes(
    tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pages"
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(out), "--model", "blank", "--quiet"]
    assert main(argv) == 0
    assert "blank: 2 task(s), 2 ok" in capsys.readouterr().out
    assert _gen_jobs(out) == {(1, "blank"): ("done", 1), (2, "blank"): ("done", 1)}
    with RunStore.open_run(out, readonly=True) as store:
        kinds = {e.kind for e in store.iter_events()}
        assert {"run_started", "job_finished", "run_finished"} <= kinds
        assert store.manifest()["front"] == "generate" and not store.jobs("judge")
    assert sorted(p.name for p in out.glob("*/*")) == ["blank", "blank"]  # the results tree only

    assert main([*argv, "--resume"]) == 0  # continued: nothing is generated again
    assert _gen_jobs(out) == {(1, "blank"): ("done", 1), (2, "blank"): ("done", 1)}
    assert _session(out) == (2, 2)  # a second session, both jobs skipped in it
    assert main(argv) == 0  # without --resume the command starts over (its own store only)
    assert _gen_jobs(out) == {(1, "blank"): ("done", 1), (2, "blank"): ("done", 1)}
    assert _session(out) == (1, 0)


def _session(out: Path) -> tuple[int, int]:
    """The store's session count and its jobs reported as skipped (finished in an earlier session)."""
    with RunStore.open_run(out, readonly=True) as store:
        skipped = sum(isinstance(e, JobFinished) and e.status == "skipped" for e in store.iter_events())
        return int(store.meta("sessions")), skipped


def test_a_front_does_not_take_over_a_run_of_another_command(
    tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert (
        main(["generate", "--tasks", str(tasks_root), "--out", str(out), "--model", "blank", "--quiet"]) == 0
    )
    capsys.readouterr()
    judge = ["judge", "--tasks", str(tasks_root), "--pages", str(out), "--out", str(out)]
    assert main(judge) == 2  # the folder holds the generate session's store
    assert "holds a run of `iwr generate`" in capsys.readouterr().err
    assert _gen_jobs(out) == {(1, "blank"): ("done", 1), (2, "blank"): ("done", 1)}
    assert main(["run", "--resume", str(out)]) == 2  # nor does `iwr run`
    assert "holds a run of `iwr generate`" in capsys.readouterr().err


def test_judge_takes_only_the_models_named(
    tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = tmp_path / "pages"
    for model in ("blank", "screenshot"):
        argv = ["generate", "--tasks", str(tasks_root), "--out", str(pages), "--model", model, "--quiet"]
        assert main(argv) == 0
    out = tmp_path / "judged"
    judge = ["judge", "--tasks", str(tasks_root), "--pages", str(pages), "--out", str(out), "--quiet"]
    assert main([*judge, "--models", "nope,BLANK"]) == 2  # one line naming what is not there
    assert "--models: no folder 'nope'" in capsys.readouterr().err
    # a mutant folder (it holds mutant.json) belongs to its own task: no "no page" row elsewhere
    mutant = pages / "1" / "broken"
    shutil.copytree(pages / "1" / "blank", mutant)
    (mutant / "mutant.json").write_text('{"expected_first_failure": 0, "expected_reason": null}')
    assert main([*judge, "--models", "BLANK,broken"]) == 0  # any spelling of the folder's name
    with RunStore.open_run(out, readonly=True) as store:
        assert {(j.task_id, j.model) for j in store.jobs("judge")} == {
            (1, "blank"),
            (2, "blank"),
            (1, "broken"),
        }
        assert store.manifest()["model_tasks"] == {"blank": [1, 2], "broken": [1]}
    assert sorted(p.parent.name for p in out.glob("*/*/eval.json")) == ["blank", "blank", "broken"]
    board = {row["model"]: row for row in leaderboard(RunData.load(out))}
    assert board["broken"]["tasks"] == 1 and board["broken"]["pages missing"] == 0
    assert board["blank"]["tasks"] == 2


def test_a_builtin_mutant_is_a_model_of_its_own_tasks_only() -> None:
    config = parse_run_config(
        {"models": [{"name": "mutants:hours-label-changed"}, {"name": "blank"}]}, "test"
    )
    own = config.model_tasks([101, 102, 103, 104])
    assert own["blank"] == [101, 102, 103, 104]
    assert own["mutants_hours-label-changed"] == mutant_tasks("hours-label-changed") != []


@pytest.mark.parametrize("protocol", ["default", "official"])
def test_judge_treats_a_failed_generation_as_the_run_does(
    tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], protocol: str
) -> None:
    # `iwr generate` leaves an empty page and a generation.json saying it failed: `iwr judge` must
    # not judge that empty page as a model's work, but count it as `iwr run` does (scored 0 under
    # the default protocol, left out under the official one).
    pages = tmp_path / "pages"
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(pages), "--model", "blank", "--quiet"]
    assert main(argv) == 0
    record = pages / "2" / "blank" / "generation.json"
    data = json.loads(record.read_text())
    data |= {"status": "failed", "error": {"kind": "empty_page", "type": "ValueError", "message": "no page"}}
    record.write_text(json.dumps(data))
    out = tmp_path / "judged"
    judge = ["judge", "--tasks", str(tasks_root), "--pages", str(pages), "--out", str(out), "--quiet"]
    assert main([*judge, "--protocol", protocol]) == 0
    capsys.readouterr()
    with RunStore.open_run(out, readonly=True) as store:
        jobs = {j.task_id: j for j in store.jobs("judge")}
    evaluation = json.loads((out / "2" / "blank" / "eval.json").read_text())
    assert evaluation["success_step"] == 0 and evaluation["no_page"] is True
    assert json.loads((out / "1" / "blank" / "eval.json").read_text())["no_page"] is False
    assert "generation failed (generation_error:empty_page): no page" in json.dumps(evaluation)
    board = {row["model"]: row for row in leaderboard(RunData.load(out))}["blank"]
    assert board["left out"] == (1 if protocol == "official" else 0), board
    assert jobs[1].status == "done" and jobs[2].status == "failed"  # as `iwr run` records it
