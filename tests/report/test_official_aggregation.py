"""Our report against our own implementation of the official reporting aggregation.

``official_reporting`` below is written from protocol.md section 6, independently of the engine:
per task IFS = success_step / total_step; each score list cut to its first success_step + 1
entries; OCR, DINO and MLLM means (0 for an empty list); LFS = (OCR + DINO) / 2; HFS = MLLM mean;
VFS = 0.5 LFS + 0.5 HFS; Final = 0.7 IFS + 0.3 VFS; plain means over the evaluated tasks. It reads
only the official fields of the ``eval.json`` files a real run wrote (built-in suite, offline judges,
and a rubric judge on a pydantic-ai FunctionModel), and its numbers are compared with
``iwr report``'s leaderboard to 0.01.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, serve
from official_data import cut_builtin_tasks
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo
from rich.console import Console
from scripted_model import Scripted

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.rubric import RubricJudge
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.judges import JudgeSet
from iwr_bench.engine.run import Engine
from iwr_bench.report import RunData, build_report, compare_runs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TASKS = [102, 109]
MODELS = ["oracle", "screenshot"]
COLUMNS = ("IFS", "LVS", "HVS", "VFS", "Final")


def official_reporting(evals: list[dict[str, Any]]) -> dict[str, float]:
    """The official reporting's per-model numbers (x100) from official eval.json fields only."""

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    per_task: list[dict[str, float]] = []
    for ev in evals:
        keep = ev["success_step"] + 1
        ocr = mean(ev["all_ocr_scores"][:keep])
        dino = mean(ev["all_dino_scores"][:keep])
        hfs = mean(ev["all_mllm_scores"][:keep])
        lfs = (ocr + dino) / 2
        ifs = ev["success_step"] / ev["total_step"]
        vfs = 0.5 * lfs + 0.5 * hfs
        per_task.append({"IFS": ifs, "LVS": lfs, "HVS": hfs, "VFS": vfs, "Final": 0.7 * ifs + 0.3 * vfs})
    return {col: 100 * mean([t[col] for t in per_task]) for col in COLUMNS}


def _rubric() -> RubricJudge:
    points = itertools.cycle([(8, 12, 30, 10, 15), (5, 9, 20, 8, 10), (10, 15, 38, 14, 19)])

    def answer(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del messages, info
        layout, elements, content, style, overall = next(points)
        return {
            "reasoning": "compared",
            "layout": layout,
            "elements": elements,
            "content": content,
            "style": style,
            "overall": overall,
        }

    return RubricJudge(Scripted(answer).model(), retries=0, name="llm:scripted")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built-in tasks 102 and 109, first three actions, at 320x180 (see ``official_data``)."""
    root = tmp_path_factory.mktemp("tasks")
    cut_builtin_tasks(root, tuple(TASKS), actions=3, size=(320, 180))
    return root


_RUNS: dict[tuple[str, bool], Path] = {}


async def _run(tasks: Path, root: Path, protocol: str, rubric: bool) -> Path:
    """A finished run of the cut tasks (each setting runs once per module)."""
    if (protocol, rubric) in _RUNS:
        return _RUNS[(protocol, rubric)]
    config = parse_run_config(
        {"tasks": str(tasks), "models": [{"name": m} for m in MODELS], "protocol": protocol}
    )
    judges = JudgeSet(HeuristicGrounder(), HeuristicAssertionJudge(), _rubric() if rubric else None)
    run_dir = root / f"run-{protocol}-{'hvs' if rubric else 'no-hvs'}"
    engine = Engine(config, run_dir, judges=judges)
    engine.prepare()
    outcome = await engine.run()
    assert outcome.status == "completed"
    _RUNS[(protocol, rubric)] = run_dir
    return run_dir


def _evals(run: Path, model: str) -> list[dict[str, Any]]:
    return [json.loads((run / "judged" / str(t) / model / "eval.json").read_text()) for t in TASKS]


def _board(run: Path, out: Path) -> dict[str, dict[str, Any]]:
    build_report(run, out, html=False)
    return {row["model"]: row for row in json.loads((out / "leaderboard.json").read_text())}


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.anyio
@pytest.mark.parametrize("rubric", [False, True], ids=["without-hvs", "with-hvs"])
async def test_official_protocol_report_equals_the_official_aggregation(
    tasks: Path, runs_root: Path, tmp_path: Path, rubric: bool
) -> None:
    run = await _run(tasks, runs_root, "official", rubric)
    board = _board(run, tmp_path / "report")
    cut = 0
    for model in MODELS:
        evals = _evals(run, model)
        assert all(ev["protocol"] == "official" and ev["hvs_available"] is rubric for ev in evals)
        cut += sum(len(ev["all_ocr_scores"]) > ev["success_step"] + 1 for ev in evals)
        want = official_reporting(evals)
        row = board[model]
        assert row["protocol"] == "official"
        for col in COLUMNS:
            assert row[col] == pytest.approx(want[col], abs=0.01), (model, col, row[col], want[col])
        if rubric:
            assert all(len(ev["all_mllm_res"]) == len(ev["all_mllm_scores"]) for ev in evals)
            assert row["HVS note"] == ""
        else:
            assert row["HVS"] == 0.0 and all(ev["all_mllm_scores"] == [] for ev in evals)
            assert row["HVS note"] == "HVS missing, counted 0 as the official aggregation does"
    # the screenshot baseline fails its first (flagged) action on task 102: its list holds state 0
    # twice (initial, and the pre-state of the failing action), and the aggregation keeps one
    assert cut >= 1
    title = (tmp_path / "report" / "leaderboard.md").read_text().splitlines()[0]
    assert "protocol official" in title
    manifest = RunData.load(run).manifest  # the run records its protocol, and fixed waits come with it
    assert manifest["config"]["protocol"] == "official" and manifest["browser"]["settle"]["mode"] == "fixed"


@pytest.mark.anyio
@pytest.mark.parametrize("rubric", [False, True], ids=["without-hvs", "with-hvs"])
async def test_default_protocol_report_against_the_official_aggregation(
    tasks: Path, runs_root: Path, tmp_path: Path, rubric: bool
) -> None:
    """With HVS the default run's eval.json gives the same numbers through the official aggregation;
    without HVS our report shows VFS = LVS (labelled), where the official aggregation counts HVS 0."""
    run = await _run(tasks, runs_root, "default", rubric)
    board = _board(run, tmp_path / "report")
    for model in MODELS:
        want = official_reporting(_evals(run, model))
        row = board[model]
        assert row["protocol"] == "default"
        assert RunData.load(run).manifest["browser"]["settle"]["mode"] == "stable"
        same = COLUMNS if rubric else ("IFS", "LVS")
        for col in same:
            assert row[col] == pytest.approx(want[col], abs=0.01), (model, col)
        if not rubric:
            assert row["HVS"] is None and row["VFS"] == row["LVS"]
            assert row["Final"] == pytest.approx(0.7 * row["IFS"] + 0.3 * row["LVS"], abs=0.01)
            assert row["VFS"] > want["VFS"] + 1  # the official reading (HVS 0) would halve it
            assert row["HVS note"] == "HVS missing: VFS = LVS alone (not paper-comparable)"


@pytest.mark.anyio
async def test_runs_of_different_protocols_are_never_subtracted(
    tasks: Path, runs_root: Path, tmp_path: Path
) -> None:
    a = await _run(tasks, runs_root, "default", True)
    b = await _run(tasks, runs_root, "official", True)
    rows = json.loads((compare_runs(a, b, tmp_path / "cmp") / "comparison.json").read_text())
    assert rows and all(not r["comparable"] and "protocol" in r["differs"] for r in rows)
    assert all(r[f"{c} delta"] is None for r in rows for c in ("IFS", "VFS", "Final"))
    same = json.loads((compare_runs(b, b, tmp_path / "cmp2") / "comparison.json").read_text())
    assert all(r["comparable"] for r in same)


@pytest.mark.anyio
async def test_failed_generations_are_left_out_only_under_the_official_protocol(
    tasks: Path, tmp_path: Path, allow_requests: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A provider that always fails: our engine writes an empty page and scores it 0 (default); the
    official generator writes no page, so the official protocol leaves those tasks out and says so."""
    down = FakeOpenAI(replies=[Reply(status=500, text=None)])
    rows: dict[str, dict[str, Any]] = {}
    async with serve(down) as server:
        for protocol in ("default", "official"):
            config = parse_run_config(
                {
                    "tasks": str(tasks),
                    "only": [109],
                    "models": [{"name": "vllm:down", "base_url": server.url, "retries": 0}],
                    "protocol": protocol,
                }
            )
            judges = JudgeSet(HeuristicGrounder(), HeuristicAssertionJudge())
            engine = Engine(config, tmp_path / protocol, judges=judges)
            engine.prepare()
            assert (await engine.run()).status == "completed"
            build_report(
                tmp_path / protocol, tmp_path / f"report-{protocol}", console=Console(width=200), html=False
            )
            rows[protocol] = json.loads((tmp_path / f"report-{protocol}" / "leaderboard.json").read_text())[0]
    printed = capsys.readouterr().out
    assert rows["default"]["left out"] == 0 and rows["default"]["Final"] is not None
    assert rows["official"]["left out"] == 1 and rows["official"]["Final"] is None
    assert "1 task(s) without index.html left out of the means" in printed


OFFICIAL_FIELDS = (
    "total_step",
    "success_step",
    "screenshot_paths_to_eval",
    "all_mllm_scores",
    "all_dino_scores",
    "all_ocr_scores",
    "all_avg_scores",
    "mllm_score",
    "dino_score",
    "ocr_score",
    "avg_score",
    "all_mllm_res",
    "all_ocr_texts",
    "assertion_results",
)
"""The keys of an eval.json the official evaluation writes (its evaluate.py, commit 891ca67)."""


@pytest.mark.anyio
async def test_an_official_results_tree_reads_back_as_our_run_scored_it(
    tasks: Path, runs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our official run, then a results tree as the official scripts lay it out (their field list
    only, model folders lower-cased), read back by ``iwr report``: the per-model tables give the
    official aggregation's numbers, and beside the run every delta is 0."""
    from iwr_bench.cli import main

    run = await _run(tasks, runs_root, "official", True)
    tree = tmp_path / "results"
    for model in MODELS:
        for t, ev in zip(TASKS, _evals(run, model), strict=True):
            folder = tree / str(t) / model.lower()
            folder.mkdir(parents=True)
            (folder / "eval.json").write_text(
                json.dumps({k: ev[k] for k in OFFICIAL_FIELDS}), encoding="utf-8"
            )
            (folder / "evalpoints").mkdir()  # what else such a folder holds
    assert main(["report", str(tree), "--tasks", str(tasks)]) == 0
    printed = capsys.readouterr().out
    assert "model: oracle result" in printed and "avg" in printed
    for model in MODELS:
        table = json.loads((tree / "report" / f"{model}_metrics.json").read_text())
        assert [row["task"] for row in table] == [*map(str, TASKS), "avg"]
        want = official_reporting(_evals(run, model))
        avg = table[-1]
        for ours, theirs in (
            ("IFS", "IFS"),
            ("LFS", "LVS"),
            ("HFS", "HVS"),
            ("VFS", "VFS"),
            ("Final", "Final"),
        ):
            assert avg[ours] == pytest.approx(want[theirs], abs=0.005), (model, ours)
    breakdowns = json.loads((tree / "report" / "breakdowns.json").read_text())
    assert {row["breakdown"] for row in breakdowns} == {"interaction level", "visual level", "domain"}
    assert main(["report", str(tree), str(run), "--out", str(tmp_path / "cmp")]) == 0
    rows = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert sorted(row["model"] for row in rows) == sorted(m.lower() for m in MODELS)
    assert all(abs(row["Final delta"]) <= 0.01 and abs(row["IFS delta"]) <= 0.01 for row in rows), rows
