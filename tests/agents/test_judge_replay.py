"""``iwr judges replay``: the judge calls a run logged, asked again of other designs without a browser."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from iwr_bench.agents.judge.request_log import LOG_NAME, read_log
from iwr_bench.cli import main

HERE = Path(__file__).parent


def _replay(capsys: pytest.CaptureFixture[str], run: Path, *args: str) -> dict[str, object]:
    capsys.readouterr()
    assert main(["judges", "replay", str(run), *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Task 101 judged on its reference page and on a mutant whose story button does nothing."""
    run = tmp_path_factory.mktemp("replay") / "run"
    argv = ["run", "--only", "101", "--model", "oracle", "--model", "mutants:story-handler-removed"]
    assert main([*argv, "--out", str(run), "--quiet"]) == 0
    return run


@pytest.mark.browser
@pytest.mark.slow
def test_a_run_logs_its_judge_calls_and_other_designs_answer_them_in_seconds(
    judged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finished_run = judged
    logs = {p.parent.parent.name: p for p in finished_run.rglob(LOG_NAME)}
    assert sorted(logs) == ["mutants_story-handler-removed", "oracle"]
    oracle = list(read_log(logs["oracle"].parent))
    assert {c.role for c in oracle} == {"grounder", "assertions"}
    first = next(c for c in oracle if c.role == "assertions")
    assert first.before == f"step_{first.index}.png" and first.after == f"step_{first.index + 1}.png"

    # The run's own design answers every logged call as it did.
    start = time.perf_counter()
    same = _replay(capsys, finished_run, "--design", "heuristic")
    assert time.perf_counter() - start < 60
    (design,) = same["designs"]  # type: ignore[misc]
    assert design["groundings"] > 0 and design["groundings_same"] == design["groundings"]
    assert design["assertions"] > 0 and design["assertions_same"] == design["assertions"]
    assert design["errors"] == 0 and design["changed"] == []

    # A judge that says yes to everything differs exactly where the run's judge did not say yes.
    said_no = sum(
        1
        for log in logs.values()
        for c in read_log(log.parent)
        if c.role == "assertions" and c.answer["verdict"] != "yes"
    )
    plugin = str(HERE / "always_yes_judge.py")
    weak = _replay(capsys, finished_run, "--plugin", plugin, "--design", "assertions=always-yes,label=weak")
    (design,) = weak["designs"]  # type: ignore[misc]
    changed = design["changed"]
    assert said_no > 0 and len(changed) == said_no
    assert all(c["role"] == "assertions" and c["now"] == "yes" for c in changed)
    assert design["groundings_same"] == design["groundings"]

    # Only some tasks; a step judge (it acts on a page) is refused in one line.
    assert _replay(capsys, finished_run, "--only", "101")["jobs"] == 2
    assert main(["judges", "replay", str(finished_run), "--only", "999"]) == 2
    assert "no judge request log" in capsys.readouterr().err
    assert main(["judges", "replay", str(finished_run), "--design", "step=agent,model=test:"]) == 2
    assert "a step judge acts on the page itself" in capsys.readouterr().err


def test_a_folder_without_logs_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judges", "replay", str(tmp_path)]) == 2
    assert "no judge request log" in capsys.readouterr().err
    assert main(["judges", "replay", str(tmp_path / "missing")]) == 2
    assert "is not a run folder" in capsys.readouterr().err
