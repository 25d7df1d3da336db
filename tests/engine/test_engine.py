"""The engine end to end: the offline demo, kill -9 and resume, limits, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from fake_openai import FakeOpenAI, Reply, serve
from leftovers import survivors
from patience import patient
from run_store import done_jobs
from suite_pages import reference_answer

from iwr_bench.cli import main
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.events import FromAgent, JobFinished, LimitOccupancy, parse_event
from iwr_bench.engine.run import Engine, run_summary
from iwr_bench.engine.store import RunStore
from iwr_bench.scoring.formulas import Scores

pytestmark = [pytest.mark.browser, pytest.mark.anyio]


def _scores(run_dir: Path) -> dict[str, tuple[float, ...]]:
    store = RunStore.open_run(run_dir, readonly=True)
    try:
        return {s.job: (s.success_steps, s.total_steps, s.ifs, s.lvs, s.vfs, s.final) for s in store.scores()}
    finally:
        store.close()


@pytest.mark.real_metrics
@pytest.mark.timeout(900)  # real OCR on a slower CI machine: about 300 s there before OpenVINO
def test_offline_demo_orders_the_baselines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``iwr run`` with no model: oracle > screenshot > blank on Final; screenshot looks right, works not.

    With the demo's own metrics: EasyOCR and the labelled substitute for DINOv2."""
    run = tmp_path / "demo"
    assert main(["run", "--only", "102", "--out", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    models = summary["models"]
    assert list(models) == ["oracle", "screenshot", "blank"]
    assert models["oracle"]["final"] > models["screenshot"]["final"] > models["blank"]["final"]
    assert models["screenshot"]["vfs"] > models["screenshot"]["ifs"]
    assert models["oracle"]["ifs"] == 100.0
    assert all(m["lvs_only"] for m in models.values())  # no rubric judge offline: HVS unavailable

    store = RunStore.open_run(run, readonly=True)
    try:
        assert store.meta("status") == "completed"
        manifest = store.manifest()
        assert manifest["models"] == ["oracle", "screenshot", "blank"]
        assert manifest["chromium"].startswith("Chromium")
        ocr, image = manifest["metric_backends"]
        assert ocr["engine"].startswith("easyocr") and ocr["substitute"] is False
        assert image["substitute"] is True  # effnet-lite0 stands in for DINOv2
        assert manifest["policies"] == {"judge_error": "fail", "undetermined": "pass"}
        events = list(store.iter_events())
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        kinds = {e.event.kind if isinstance(e, FromAgent) else e.kind for e in events}
        assert {"run_started", "job_finished", "action_executed", "metric_computed", "run_finished"} <= kinds
        assert any(isinstance(e, LimitOccupancy) and e.name == "browser pages" for e in events)
        finished = [e for e in events if isinstance(e, JobFinished) and e.stage == "judge"]
        assert len(finished) == 3 and all(e.scores for e in finished)
        # every action row's evidence file exists (files are written before the rows naming them)
        for job in store.jobs("judge"):
            for action in store.actions(job.id):
                if action.get("after"):
                    assert (run / "judged" / "102" / job.model / "evidence" / action["after"]).is_file()
        assert store.count("actions") == 3 * 8
    finally:
        store.close()
    assert (run / "pages" / "102" / "oracle" / "index.html").is_file()
    assert json.loads((run / "judged" / "102" / "oracle" / "eval.json").read_text())["success_step"] == 8
    assert main(["runs", "show", str(run)]) == 0
    assert "oracle" in capsys.readouterr().out


def test_demo_runs_then_continues(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "demo"
    assert main(["demo", "--only", "102", "--out", str(run)]) == 0
    first = capsys.readouterr()
    assert "oracle" in first.out and "Final" in first.out and "run completed" in first.err
    scores = _scores(run)
    assert len(scores) == 3
    # The tests' text metric ($IWR_OCR_DESIGN=phash) is recorded, and labelled a substitute.
    store = RunStore.open_run(run, readonly=True)
    try:
        ocr = store.manifest()["metric_backends"][0]
    finally:
        store.close()
    assert (ocr["metric"], ocr["substitute"]) == ("phash", True)
    assert "stands in for 'ocr'" in ocr["note"]
    started = time.perf_counter()
    assert main(["demo", "--out", str(run)]) == 0  # again: the same run, nothing redone
    again = capsys.readouterr()
    assert "continuing the demo run" in again.out and "run completed" in again.err
    assert time.perf_counter() - started < patient(30)
    assert _scores(run) == scores
    # Continuing a finished run starts no browser and imports no torch (no metric model either).
    probe = (
        "import json, sys; from iwr_bench.cli import main; "
        f"rc = main(['run', '--resume', {str(run)!r}, '--json']); "
        "print(json.dumps({'rc': rc, 'torch': 'torch' in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    *summary, last = done.stdout.strip().splitlines()
    assert json.loads(last) == {"rc": 0, "torch": False}, done.stderr
    work = json.loads("\n".join(summary))["work"]["busy_s"]
    assert work.get("replay", 0.0) == 0.0 and work.get("metrics", 0.0) == 0.0
    assert _scores(run) == scores


def _run_file(path: Path, url: str, out: Path) -> Path:
    path.write_text(
        f"""
tasks = "builtin"
only = [102]
out = "{out}"

[[models]]
name = "vllm:fake-vlm"
base_url = "{url}"
retries = 0

[[models]]
name = "blank"

[limits]
browser_pages = 1
""",
        encoding="utf-8",
    )
    return path


def _reported(scores: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]]:
    return {job: tuple(round(100 * v, 2) for v in values) for job, values in scores.items()}


async def test_kill_9_then_resume_gives_the_same_scores(tmp_path: Path, allow_requests: None) -> None:
    """kill -9 mid-run, then --resume: no Chromium survives the killed run, same scores, no duplicate
    rows, no generation call paid twice."""
    async with serve(FakeOpenAI(replies=[Reply(text=reference_answer(102))])) as fake:
        whole = tmp_path / "whole"
        rc = await anyio.to_thread.run_sync(
            lambda: main(["run", "-c", str(_run_file(tmp_path / "a.toml", fake.url, whole)), "--quiet"])
        )
        assert rc == 0
        assert len(fake.requests) == 1
        fake.requests.clear()

        broken = tmp_path / "broken"
        config = _run_file(tmp_path / "b.toml", fake.url, broken)
        marker = tmp_path / "tmp-killed"  # every Chromium process of the run inherits it as TMPDIR
        marker.mkdir()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(marker)}
        log = tmp_path / "broken.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child process we kill -9 ourselves
                [sys.executable, "-m", "iwr_bench", "run", "-c", str(config), "--quiet"],
                env=env,
                stdout=sink,
                stderr=sink,
            )
        deadline = time.monotonic() + 240
        # Kill once one page is judged and the paid generation has finished (a blank page may be
        # judged before the model has even answered).
        while done_jobs(broken) < 1 or done_jobs(broken, "gen") < 2:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the run never judged a page"
            await anyio.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)  # the run only: its Chromium must die with it
        assert proc.wait(30) == -signal.SIGKILL
        assert survivors(str(marker)) == []
        assert done_jobs(broken) == 1  # killed in the middle: one of two pages judged
        assert len(fake.requests) == 1

        rc = await anyio.to_thread.run_sync(lambda: main(["run", "--resume", str(broken), "--quiet"]))
        assert rc == 0
        assert len(fake.requests) == 1  # the generation finished before the kill is not paid again

    # Equal at the precision results are reported in (x100, two decimals): an embedding's last
    # float digits depend on which images share its batch, and a resumed run batches differently.
    assert _reported(_scores(broken)) == _reported(_scores(whole))
    store = RunStore.open_run(broken, readonly=True)
    try:
        assert store.meta("status") == "completed"
        assert store.meta("sessions") == 2
        assert store.count("jobs") == 4
        assert store.count("actions") == 2 * 8
        assert len({(j.stage, j.task_id, j.model) for j in store.jobs()}) == 4
        summary = run_summary(store)
        assert summary["models"]["vllm_fake-vlm"]["ifs"] == 100.0
    finally:
        store.close()


async def test_limits_hold_and_adapt_to_429(tmp_path: Path, allow_requests: None) -> None:
    """Per-provider call limits hold; 429s shrink only that provider's limit; browser pages stay bounded."""
    page = "```html\n<html><body><p>nothing here</p></body></html>\n```"
    # Answers are held until two requests overlap (at most 60 s): on a loaded machine preparing a
    # request (frame sampling) can take longer than any fixed delay, and they arrived one by one.
    steady = FakeOpenAI(replies=[Reply(text=page, delay=60.0, gather=2)])
    throttled = FakeOpenAI(
        replies=[
            Reply(status=429, headers={"Retry-After": "0"}),
            Reply(status=429, headers={"Retry-After": "0"}),
            Reply(text=page),
        ]
    )
    async with serve(steady) as a, serve(throttled) as b:
        host_a = a.url.split("/")[2]
        host_b = b.url.split("/")[2]
        config = parse_run_config(
            {
                "tasks": "builtin",
                "only": [101, 102, 109, 112],
                "models": [
                    {"name": "vllm:steady", "base_url": a.url, "retries": 0},
                    {"name": "vllm:throttled", "base_url": b.url, "retries": 4},
                ],
                "limits": {
                    "browser_pages": 2,
                    "model_calls": 4,
                    "providers": {host_a: 2},
                    "recover_after_s": 600,
                },
            }
        )
        engine = Engine(config, tmp_path / "run")
        engine.prepare()
        outcome = await engine.run()
    assert outcome.status == "completed"
    assert engine.prepared is not None
    assert steady.max_in_flight == 2  # the limit was reached and never exceeded
    limit_a = engine.prepared.limits.provider(host_a)
    limit_b = engine.prepared.limits.provider(host_b)
    assert limit_a.max_in_use == 2 and limit_a.rate_limited == 0 and limit_a.capacity == 2
    assert limit_b.rate_limited == 2 and limit_b.capacity == 1  # 4 -> 2 -> 1 after two 429s
    assert throttled.max_in_flight <= 4
    assert 1 <= engine.prepared.limits.browser.max_in_use <= 2
    assert len(steady.requests) == 4 and len(throttled.requests) == 6
    assert engine.prepared is not None
    occupancy = engine.prepared.store.events(kinds=("limit_occupancy",))
    assert {e.name for e in occupancy if isinstance(e, LimitOccupancy)} >= {
        "browser pages",
        f"model calls: {host_a}",
        f"model calls: {host_b}",
    }


@pytest.mark.parametrize(
    ("args", "toml", "message"),
    [
        (["--tasks", "/nope/tasks"], None, "does not exist"),
        (["--only", "999"], None, "not in"),
        (["--only", "x,y"], None, "comma-separated"),
        (["--model", "openai:gpt-4o"], None, "OPENAI_API_KEY"),
        ([], "x = [", "not valid TOML"),
        ([], "[limits]\nbrowser_pages = 0\n", "limits.browser_pages"),
        ([], "colour = 'red'\n", "colour"),
        ([], "[judge]\ngrounder = 'psychic'\n", "unknown grounder"),
        ([], "[judge]\nassertions = 'llm'\n", "needs a judge model"),
        (["--pages-at-once", "0"], None, "at least 1"),
    ],
)
def test_bad_input_fails_before_any_work(
    args: list[str],
    toml: str | None,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad run files, options and paths: one clear line, exit 2, no run folder left behind."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if toml is not None:
        (tmp_path / "run.toml").write_text(toml, encoding="utf-8")
        args = [*args, "-c", str(tmp_path / "run.toml")]
    out = tmp_path / "run"
    assert main(["run", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (out / "run.sqlite").exists()


def test_resume_needs_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--resume on something that is not a run folder is a one-line error."""
    assert main(["run", "--resume", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_event_round_trip() -> None:
    """Events serialise and parse back to the same typed object."""
    event = JobFinished(
        job="judge/1/m",
        stage="judge",
        task_id=1,
        model="m",
        status="done",
        scores=Scores(
            ifs=1.0, lvs=0.5, hvs=None, vfs=0.5, final=0.85, lvs_only=True, total_steps=2, success_steps=2
        ),
    )
    assert parse_event(event.model_dump_json()) == event
