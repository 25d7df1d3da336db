"""Hostile pages, deadlines and the watchdog, failed generations, the run-folder lock, a full or
read-only disk, and signals: a run always ends, in one clear line, and stays resumable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from fake_openai import FakeOpenAI, Reply, serve
from leftovers import survivors
from run_store import done_jobs, reported_scores

from iwr_bench.agents.grounding import Grounder, Grounding, GroundingRequest
from iwr_bench.cli import main
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.deadlines import Background, StepTimeout
from iwr_bench.engine.events import JobFinished, JobStarted
from iwr_bench.engine.judges import JudgeSet
from iwr_bench.engine.limits import NamedLimit
from iwr_bench.engine.lock import LOCK_NAME, RunLock
from iwr_bench.engine.run import Engine, run_summary
from iwr_bench.engine.store import RunStore
from iwr_bench.errors import UserError
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.pair import Pair
from iwr_bench.registry import create

COUNTER = """<!DOCTYPE html><html><head><title>{title}</title></head>
<body style="margin:0;background:#f6f7fb;font-family:sans-serif">
<div style="background:#283c78;color:white;padding:12px;text-align:center">Counter demo</div>
<p id="n" style="font-size:72px;text-align:center;margin:40px">0</p>
<div style="text-align:center"><button style="background:#1e8250;color:white;font-size:24px;width:128px"
 onclick="{onclick}">+</button></div></body></html>"""

WORKS = "document.getElementById('n').textContent = +document.getElementById('n').textContent + 1"


def _page(onclick: str = WORKS, title: str = "counter") -> str:
    return "```html\n" + COUNTER.format(onclick=onclick, title=title) + "\n```"


# -- deadlines without a browser ------------------------------------------------------------------


class _ThreadMetric:
    """A metric whose first batch is stuck in a worker thread (a thread cannot be cancelled)."""

    def __init__(self, stuck_s: float) -> None:
        self.stuck_s = stuck_s
        self.calls = 0

    @property
    def backend(self) -> Backend:
        return Backend(metric="ocr", engine="test")

    async def __call__(self, pairs: list[Pair]) -> list[float]:
        self.calls += 1
        if self.calls == 1:
            await anyio.to_thread.run_sync(time.sleep, self.stuck_s)
        return [0.5] * len(pairs)


@pytest.mark.anyio
async def test_a_metric_batch_stuck_in_a_thread_frees_its_callers_at_the_deadline() -> None:
    from PIL import Image

    image = Image.new("RGB", (8, 8))
    metric = _ThreadMetric(stuck_s=4.0)
    async with Background() as background:
        from iwr_bench.engine.batching import BatchingMetric

        batching = BatchingMetric(metric, NamedLimit("metric workers", 1), timeout=0.5, background=background)
        started = time.monotonic()
        with pytest.raises(StepTimeout, match=r"ocr metric batch took over 0\.5 s"):
            await batching([(image, image)])
        assert time.monotonic() - started < 2.5  # not the thread's 4 s
        # the metric-worker slot is free again: the next batch runs while the thread still sleeps
        assert await batching([(image, image), (image, image)]) == [0.5, 0.5]
        assert time.monotonic() - started < 3.5
    assert batching.timeouts == 1


class _SlowPerPair:
    """A metric that takes a fixed time per pair (OCR on a busy machine)."""

    def __init__(self, per_pair_s: float) -> None:
        self.per_pair_s = per_pair_s

    @property
    def backend(self) -> Backend:
        return Backend(metric="ocr", engine="test")

    async def __call__(self, pairs: list[Pair]) -> list[float]:
        await anyio.to_thread.run_sync(time.sleep, self.per_pair_s * len(pairs))
        return [0.5] * len(pairs)


@pytest.mark.anyio
async def test_a_metric_batch_deadline_grows_with_the_pairs_it_holds() -> None:
    # Six pairs at 0.2 s each take 1.2 s: past a flat 0.5 s deadline, inside 0.5 s + 0.3 s per pair.
    from PIL import Image

    from iwr_bench.engine.batching import BatchingMetric

    image = Image.new("RGB", (8, 8))
    pairs = [(image, image)] * 6
    async with Background() as background:
        flat = BatchingMetric(_SlowPerPair(0.2), NamedLimit("a", 1), timeout=0.5, background=background)
        with pytest.raises(StepTimeout, match=r"took over 0\.5 s"):
            await flat(pairs)
        scaled = BatchingMetric(
            _SlowPerPair(0.2), NamedLimit("b", 1), timeout=0.5, pair_timeout=0.3, background=background
        )
        assert await scaled(pairs) == [0.5] * 6
        assert scaled.timeouts == 0


# -- hostile pages in one run -----------------------------------------------------------------------


class _StuckOnTitle:
    """A grounder that wedges in a worker thread on pages with one title (like a hung OCR call)."""

    name = "stuck-on-title"

    def __init__(self, inner: Grounder, title: str, seconds: float) -> None:
        self.inner = inner
        self.title = title
        self.seconds = seconds

    async def __call__(self, request: GroundingRequest) -> Grounding:
        if request.observation.title == self.title:
            await anyio.to_thread.run_sync(time.sleep, self.seconds)
        return await self.inner(request)


def _judges() -> JudgeSet:
    grounder, _ = create("grounder", "heuristic")
    assertions, _ = create("assertions", "heuristic")
    return JudgeSet(_StuckOnTitle(grounder, "slow-grounding", 30.0), assertions)


@pytest.mark.browser
@pytest.mark.anyio
@pytest.mark.timeout(900)
async def test_hostile_pages_never_stop_the_others(
    tasks_root: Path, tmp_path: Path, allow_requests: None
) -> None:
    """A page that hangs its renderer is failed as ``stalled`` and its browser page freed; a judge
    stuck in a thread fails its job as ``timeout`` at the call's deadline; a failed generation
    scores 0 without being judged; the ordinary page is judged; the run ends."""
    hang = FakeOpenAI(replies=[Reply(text=_page("for (;;) {}", "hang"))])
    stuck = FakeOpenAI(replies=[Reply(text=_page(title="slow-grounding"), delay=3.0)])
    async with serve(hang) as a, serve(stuck) as b:
        config = parse_run_config(
            {
                "tasks": str(tasks_root),
                "only": [1],
                "models": [
                    {"name": "vllm:hang", "base_url": a.url, "retries": 0},
                    {"name": "vllm:stuck", "base_url": b.url, "retries": 0},
                    {"name": "oracle"},  # the synthetic tasks have no reference page
                    {"name": "blank"},
                ],
                "limits": {"browser_pages": 1, "stall_after_s": 20, "judge_call_timeout_s": 10},
                "browser": {"action_timeout_s": 600},  # the browser tools would not stop the hang
            }
        )
        engine = Engine(config, tmp_path / "run", judges=_judges())
        engine.prepare()
        outcome = await engine.run()

        assert outcome.status == "completed"
        assert engine.prepared is not None
        jobs = {j.id: j for j in engine.prepared.store.jobs("judge")}
        hung, wedged = jobs["judge/1/vllm_hang"], jobs["judge/1/vllm_stuck"]
        assert (hung.status, hung.failure) == ("failed", "stalled"), [
            (j.id, j.failure, j.message) for j in jobs.values()
        ]
        assert "no progress for 20 s" in hung.message and "action 1/2" in hung.message
        assert (wedged.status, wedged.failure) == ("failed", "timeout")
        assert "grounder call took over 10 s" in wedged.message, wedged.message
        assert wedged.started is not None and wedged.finished is not None
        assert wedged.finished - wedged.started < 25  # at the call's deadline, not after the thread's 30 s
        assert jobs["judge/1/blank"].status == "done"
        events = list(engine.prepared.store.iter_events())
        hang_end = next(e.seq for e in events if isinstance(e, JobFinished) and e.job == hung.id)
        stuck_start = next(e.seq for e in events if isinstance(e, JobStarted) and e.job == wedged.id)
        assert stuck_start > hang_end  # one browser page: the stalled job gave it back

        # The oracle has no page to build: scored 0 without a replay, counted as a missing page.
        oracle = jobs["judge/1/oracle"]
        assert (oracle.status, oracle.failure) == ("failed", "generation_error")
        assert engine.prepared.store.metrics(oracle.id) == []
        assert engine.prepared.store.actions(oracle.id) and all(
            a["status"] == "not_run" for a in engine.prepared.store.actions(oracle.id)
        )
        summary = run_summary(engine.prepared.store)["models"]
        assert summary["oracle"]["final"] == 0.0 and summary["oracle"]["lvs"] == 0.0
        assert summary["oracle"]["failures"] == {"generation_error": 1}
        assert summary["blank"]["final"] > 0.0  # the blank page still earns visual points
        from iwr_bench.report.data import RunData
        from iwr_bench.report.tables import leaderboard

        rows = {r["model"]: r for r in leaderboard(RunData.load(tmp_path / "run"))}
        assert rows["oracle"]["pages missing"] == 1 and rows["oracle"]["Final"] == 0.0

        # The job's own deadline: the same hanging page, no watchdog, a 10 s budget.
        config = config.model_copy(
            update={
                "models": config.models[:1],
                "limits": config.limits.model_copy(update={"stall_after_s": 600, "judge_timeout_s": 10}),
            }
        )
        engine = Engine(config, tmp_path / "deadline", judges=_judges())
        engine.prepare()
        outcome = await engine.run()
    assert outcome.status == "completed"
    assert engine.prepared is not None
    job = engine.prepared.store.job("judge/1/vllm_hang")
    assert job is not None and (job.status, job.failure) == ("failed", "timeout")
    assert "replay took over 10 s" in job.message


# -- the run-folder lock -----------------------------------------------------------------------------


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


HOLD = """
import sys, time
from pathlib import Path
from iwr_bench.engine.lock import RunLock
RunLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(120)
"""


def test_the_lock_names_its_live_holder_and_a_dead_one_is_taken_over(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = _python(HOLD, str(run))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=rf"run folder {run} is in use by pid {holder.pid} \(started 20"):
            RunLock(run).acquire()
        refused = subprocess.run(
            [sys.executable, "-m", "iwr_bench", "run", "--only", "1", "--out", str(run)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr
        assert lines[0].startswith(f"iwr: error: run folder {run} is in use by pid {holder.pid} (started ")
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    # killed: its lock file is left behind, naming a dead pid, and is taken over
    assert json.loads((run / LOCK_NAME).read_text())["pid"] == holder.pid
    lock = RunLock(run).acquire()
    assert json.loads((run / LOCK_NAME).read_text())["pid"] == os.getpid()
    lock.release()
    assert not (run / LOCK_NAME).exists()


# -- signals -------------------------------------------------------------------------------------------


def _run_file(path: Path, tasks: Path, url: str) -> Path:
    path.write_text(
        f"""
tasks = "{tasks}"
only = [1]

[[models]]
name = "vllm:counter"
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


THEN_SIGNAL = """
import os, sys, time
signum, args = int(sys.argv[1]), sys.argv[2:]
sys.argv = ["iwr", *args]
from iwr_bench.cli import main
code = main(args)
print(f"main returned {code}", file=sys.stderr, flush=True)
os.kill(os.getpid(), signum)
time.sleep(30)
sys.exit(99)
"""
"""``iwr <args>`` in a process that signals itself once ``main`` returned."""


def _then_signal(signum: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", THEN_SIGNAL, str(signum), *args], capture_output=True, text=True, timeout=600
    )


async def _stop_mid_run(config: Path, run_dir: Path, signum: int) -> None:
    """Start ``iwr run``, check a second process is refused, stop the first with ``signum``."""
    log = run_dir.parent / f"{run_dir.name}.log"
    marker = run_dir.parent / f"{run_dir.name}-tmp"  # every Chromium process of the run inherits it
    marker.mkdir()
    with log.open("w") as sink:
        proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child process we signal ourselves
            [sys.executable, "-m", "iwr_bench", "run", "-c", str(config), "--out", str(run_dir), "--quiet"],
            stdout=sink,
            stderr=sink,
            env={**os.environ, "TMPDIR": str(marker)},
        )
    try:
        deadline = time.monotonic() + 400
        while not (run_dir / "run.sqlite").exists():  # it holds the lock from before this point
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the run never started"
            await anyio.sleep(0.1)
        second = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys.executable, "-m", "iwr_bench", "run", "--resume", str(run_dir)],
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            line for line in second.stderr.strip().splitlines() if f"is in use by pid {proc.pid}" in line
        ]
        assert len(second.stderr.strip().splitlines()) == 1
        while done_jobs(run_dir) < 1 or done_jobs(run_dir, "gen") < 2:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the run never judged a page"
            await anyio.sleep(0.1)
        proc.send_signal(signum)
        assert await anyio.to_thread.run_sync(lambda: proc.wait(400)) == 130  # after the OCR thread ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)
    assert await anyio.to_thread.run_sync(survivors, str(marker)) == []
    text = log.read_text()
    assert "Traceback" not in text and f"iwr run --resume {run_dir}" in text
    assert done_jobs(run_dir) == 1  # stopped in the middle
    assert not (run_dir / LOCK_NAME).exists()


@pytest.mark.browser
@pytest.mark.anyio
@pytest.mark.timeout(1500)
@pytest.mark.parametrize(
    ("signum", "after_end"),
    [  # (SIGINT takes the same path: `make test-long` runs it)
        (signal.SIGTERM, signal.SIGINT),
        pytest.param(signal.SIGINT, signal.SIGTERM, marks=pytest.mark.long),
    ],
    ids=["SIGTERM", "SIGINT"],
)
async def test_a_signal_stops_resumably_and_after_the_end_exits_0(
    pristine_tasks: Path, tmp_path: Path, allow_requests: None, signum: int, after_end: int
) -> None:
    """SIGTERM or SIGINT mid-run: exit 130, and --resume gives the scores of an uninterrupted run;
    a second process on the folder is refused naming the first; after the run completed, the other
    signal ends the process with 0."""
    async with serve(FakeOpenAI(replies=[Reply(text=_page())])) as fake:
        config = _run_file(tmp_path / "run.toml", pristine_tasks, fake.url)
        whole = tmp_path / "whole"
        done = await anyio.to_thread.run_sync(
            lambda: _then_signal(signum, "run", "-c", str(config), "--out", str(whole), "--quiet")
        )
        assert done.returncode == 0 and "main returned 0" in done.stderr, done.stderr
        broken = tmp_path / signal.Signals(signum).name
        await _stop_mid_run(config, broken, signum)
        resumed = await anyio.to_thread.run_sync(
            lambda: _then_signal(after_end, "run", "--resume", str(broken), "--quiet")
        )
        assert resumed.returncode == 0 and "main returned 0" in resumed.stderr, resumed.stderr
        assert reported_scores(broken) == reported_scores(whole)
        store = RunStore.open_run(broken, readonly=True)
        try:
            assert store.meta("status") == "completed" and store.meta("sessions") == 2
            assert store.count("jobs") == 4
        finally:
            store.close()


def test_sigterm_before_the_store_exists_leaves_nothing(tmp_path: Path) -> None:
    """Stopped while it reads its run file: one line, exit 130, no run folder."""
    fifo = tmp_path / "run.toml"
    os.mkfifo(fifo)  # reading it blocks until someone writes: the process waits there
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "iwr_bench", "run", "-c", str(fifo), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while Path(f"/proc/{proc.pid}/wchan").read_text() not in ("wait_for_partner", "fifo_open"):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip().splitlines() == ["iwr: interrupted"]
    assert not out.exists()


# -- a full disk, a read-only folder --------------------------------------------------------------------

FULL_DISK = """
import json, os, sqlite3, subprocess, sys, time, shutil
mnt, config, copy = sys.argv[1:4]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt], check=True)
run = os.path.join(mnt, "run")
iwr = [sys.executable, "-m", "iwr_bench", "run"]
proc = subprocess.Popen([*iwr, "-c", config, "--out", run, "--quiet"], stderr=subprocess.PIPE, text=True)

def judged():
    try:
        db = sqlite3.connect(f"file:{run}/run.sqlite?mode=ro", uri=True)
        n = db.execute("SELECT COUNT(*) FROM jobs WHERE stage = 'judge' AND status = 'done'").fetchone()[0]
        db.close()
        return n
    except sqlite3.Error:
        return 0

while judged() < 1 and proc.poll() is None:
    time.sleep(0.1)
with open(os.path.join(mnt, "filler"), "wb", buffering=0) as f:  # the disk fills up
    try:
        while True:
            f.write(b"x" * (1 << 20))
    except OSError:
        pass
err = proc.communicate(timeout=600)[1]
subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
ro = subprocess.run([*iwr, "--resume", run, "--quiet"], capture_output=True, text=True, timeout=300)
new = subprocess.run([*iwr, "--out", os.path.join(mnt, "new")], capture_output=True, text=True, timeout=300)
shutil.copytree(run, copy)
print(json.dumps({"rc": proc.returncode, "err": err, "ro_rc": ro.returncode, "ro_err": ro.stderr,
                  "new_rc": new.returncode, "new_err": new.stderr}))
"""


UNSHARE = ["unshare", "-m", "--propagation", "private"]
"""A private mount namespace, where the test mounts its own small filesystem."""


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if line.startswith("iwr:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.browser
@pytest.mark.anyio
@pytest.mark.timeout(900)
async def test_a_full_disk_stops_the_run_in_one_line_and_it_resumes(
    pristine_tasks: Path, tmp_path: Path, allow_requests: None
) -> None:
    """The disk fills mid-run (a real 64 MB tmpfs): one line, exit 2, nothing recorded as failed;
    a read-only folder is refused in one line; the copied run resumes and completes."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    copy = tmp_path / "copy"
    async with serve(FakeOpenAI(replies=[Reply(text=_page())])) as fake:
        config = _run_file(tmp_path / "run.toml", pristine_tasks, fake.url)
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [*UNSHARE, sys.executable, "-c", FULL_DISK, str(mnt), str(config), str(copy)],
                capture_output=True,
                text=True,
                timeout=800,
            )
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["rc"] == 2
        line = _one_error_line(seen["err"])
        assert "cannot write to the run folder" in line and "the disk is full" in line
        assert f"iwr run --resume {mnt}/run" in line
        assert seen["ro_rc"] == 2 and seen["new_rc"] == 2
        assert "read-only" in _one_error_line(seen["new_err"])
        _one_error_line(seen["ro_err"])

        store = RunStore.open_run(copy, readonly=True)
        try:
            assert not [j.id for j in store.jobs() if j.status == "failed"]  # the disk is nobody's failure
        finally:
            store.close()
        rc = await anyio.to_thread.run_sync(lambda: main(["run", "--resume", str(copy), "--quiet"]))
    assert rc == 0
    store = RunStore.open_run(copy, readonly=True)
    try:
        assert store.meta("status") == "completed"
        assert [j.status for j in store.jobs()] == ["done"] * 4
    finally:
        store.close()
