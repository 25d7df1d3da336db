"""The Ray backend: the same scores as in-process, a replay worker killed mid-run, a driver killed
mid-run and resumed. Each run starts (and stops) a local Ray instance with real Chromium workers.

`make test` runs the local run and the one-line refusal; the kills and the two-node cluster are
marked ``long`` (`make test-long`): each is minutes of Ray start-up and serial replays on 2 cores."""

from __future__ import annotations

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
from suite_pages import reference_answer

from iwr_bench.agents.events import ActionExecuted
from iwr_bench.cli import main
from iwr_bench.engine.backends.ray_backend import RayBackend
from iwr_bench.engine.config import load_run_config
from iwr_bench.engine.events import EngineStatus, Event, FromAgent, JobFinished
from iwr_bench.engine.run import Engine
from iwr_bench.engine.status import METRICS_QUEUE
from iwr_bench.engine.store import RunStore

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]

TASKS = [102, 104]
"""Two tasks of the built-in suite, a phone-sized one and a desktop one."""

CHEAP_METRICS = """
[metrics]
ocr_design = "phash"          # quick designs, computed for real on the metric workers
image_design = "effnet-lite0"
cache = false                 # every run computes its own values
"""


def _run_file(path: Path, *, backend: str, pages: int = 2, models: str = "", only: list[int] = TASKS) -> Path:
    models = models or '[[models]]\nname = "oracle"\n\n[[models]]\nname = "blank"\n'
    path.write_text(
        f'tasks = "builtin"\nonly = {only}\n\n{models}\n{CHEAP_METRICS}\n'
        f"[limits]\nbrowser_pages = {pages}\n\n[backend]\nkind = {backend!r}\n",
        encoding="utf-8",
    )
    return path


def _manifest(run_dir: Path) -> dict[str, object]:
    store = RunStore.open_run(run_dir, readonly=True)
    try:
        return store.manifest()
    finally:
        store.close()


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[float, ...]]:
    """The reference: the tasks' oracle and blank pages judged in-process."""
    folder = tmp_path_factory.mktemp("in-process")
    config = _run_file(folder / "run.toml", backend="in-process")
    assert main(["run", "-c", str(config), "--out", str(folder / "run"), "--quiet"]) == 0
    scores = reported_scores(folder / "run")
    assert len(scores) == 2 * len(TASKS)
    return scores


def test_a_local_ray_run_scores_as_in_process(
    tmp_path: Path, in_process: dict[str, tuple[float, ...]]
) -> None:
    """--backend ray on a local instance: every pair's scores equal the in-process run's; the
    manifest names the backend, Ray's version and the cluster; no Ray is left running."""
    config = _run_file(tmp_path / "run.toml", backend="in-process")  # the flag picks Ray
    run = tmp_path / "run"
    assert main(["run", "-c", str(config), "--backend", "ray", "--out", str(run), "--quiet"]) == 0
    assert reported_scores(run) == in_process
    assert reported_scores(run)["judge/104/oracle"][1:] == (100.0, 100.0, 100.0, 100.0)
    backend = _manifest(run)["backend"]
    assert isinstance(backend, dict)
    assert backend["kind"] == "ray" and backend["ray_version"] == ray.__version__
    assert backend["address"] == "local" and backend["cluster_resources"]["CPU"] >= 1  # type: ignore[index]
    assert not ray.is_initialized()
    store = RunStore.open_run(run, readonly=True)  # what `iwr watch` and the reports read
    try:
        kinds = [e.event.kind if isinstance(e, FromAgent) else e.kind for e in store.iter_events()]
        ran = [a for j in store.jobs("judge") for a in store.actions(j.id) if a["status"] != "not_run"]
        assert kinds.count("action_executed") == len(ran) > 0 and kinds.count("run_finished") == 1
        assert sum(isinstance(e, JobFinished) and e.stage == "judge" for e in store.iter_events()) == 2 * len(
            TASKS
        )
    finally:
        store.close()


@pytest.mark.long
def test_joining_a_cluster_of_two_nodes_places_browsers_on_the_chromium_node(
    tmp_path: Path, in_process: dict[str, tuple[float, ...]]
) -> None:
    """--address joins a running two-node cluster (Ray's own cluster_utils starts the two raylets
    on this machine, as `ray start --head` and `ray start --address` would on two): the head has one
    CPU, one GPU slot and no Chromium, the second node one CPU and the `chromium` resource. So the
    replay worker can only run on the second node and the metric worker, which claims the GPU, only
    on the head; pages and screenshots cross between nodes through the object store. Scores equal
    the in-process run's, the manifest counts both nodes, and the cluster outlives the run (the
    driver only disconnects). The GPU is declared, not real: the claim and the placement are
    tested, and the metric models fall back to the CPU (device "auto")."""
    from ray.cluster_utils import Cluster

    head = {"num_cpus": 1, "num_gpus": 1, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        cluster.add_node(num_cpus=1, resources={"chromium": 1})
        cluster.wait_for_nodes()
        config = _run_file(tmp_path / "run.toml", backend="ray", pages=1)
        run = tmp_path / "run"
        args = ["run", "-c", str(config), "--address", cluster.address, "--out", str(run), "--quiet"]
        assert main(args) == 0
        assert reported_scores(run) == in_process
        backend = _manifest(run)["backend"]
        assert isinstance(backend, dict) and backend["address"] == cluster.address and backend["nodes"] == 2
        assert backend["cluster_resources"]["chromium"] == 1  # type: ignore[index]
        assert backend["metrics_on_gpu"] is True and backend["cluster_resources"]["GPU"] == 1  # type: ignore[index]
        assert not ray.is_initialized()
        ray.init(address=cluster.address)  # still up: the run did not stop somebody else's cluster
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        ray.shutdown()
    finally:
        cluster.shutdown()


@pytest.mark.long
async def test_a_killed_replay_worker_loses_only_its_pair(
    tmp_path: Path, in_process: dict[str, tuple[float, ...]]
) -> None:
    """ray.kill of the replay worker in the middle of a replay: that pair is replayed again on a
    fresh worker, the run completes, and the scores equal the in-process run's."""
    config = load_run_config(_run_file(tmp_path / "run.toml", backend="ray", pages=1))
    killed: list[str] = []

    def kill_mid_replay(event: Event) -> None:
        if (
            isinstance(event, FromAgent)
            and isinstance(event.event, ActionExecuted)
            and event.event.index == 2
            and not killed
        ):
            ray.kill(ray.get_actor("replay-1"))  # the only replay worker: it is replaying this pair
            killed.append(str(event.job))

    engine = Engine(config, tmp_path / "run", subscribers=[kill_mid_replay])
    outcome = await engine.run()
    assert outcome.status == "completed"
    assert killed
    backend = engine.prepared.backend
    assert isinstance(backend, RayBackend) and backend.lost == 1  # one pair's replay, tried again
    assert reported_scores(tmp_path / "run") == in_process
    store = RunStore.open_run(tmp_path / "run", readonly=True)
    try:
        assert all(j.status == "done" for j in store.jobs("judge"))
        assert store.count("actions") == sum(len(store.actions(j.id)) for j in store.jobs("judge"))
    finally:
        store.close()


@pytest.mark.long
async def test_a_killed_metric_worker_loses_only_its_batch(
    tmp_path: Path, in_process: dict[str, tuple[float, ...]]
) -> None:
    """ray.kill of the metric worker as the first pair enters the metrics stage: its batch goes to
    a fresh worker, the run completes, and the scores equal the in-process run's."""
    config = load_run_config(_run_file(tmp_path / "run.toml", backend="ray", pages=1))
    killed: list[str] = []

    def kill_at_metrics(event: Event) -> None:
        if isinstance(event, EngineStatus) and event.key == METRICS_QUEUE and not event.done and not killed:
            killed.append(event.text)
            backend = engine.prepared.backend
            assert isinstance(backend, RayBackend)
            ray.kill(backend._workers.actors[0])  # the only metric worker  # pyright: ignore[reportPrivateUsage]

    engine = Engine(config, tmp_path / "run", subscribers=[kill_at_metrics])
    outcome = await engine.run()
    assert outcome.status == "completed" and killed
    backend = engine.prepared.backend
    assert isinstance(backend, RayBackend) and backend.lost == 0
    assert backend.metrics_lost == 1  # one batch lost its worker and was computed on a fresh one
    assert reported_scores(tmp_path / "run") == in_process


@pytest.mark.long
async def test_killing_the_driver_then_resume_on_ray_pays_nothing_twice(
    tmp_path: Path, allow_requests: None
) -> None:
    """kill -9 of a Ray run's driver: its Ray processes and browsers die with it; --resume on Ray
    repeats no generation call and gives the scores of a run that was never stopped."""
    model = (
        '[[models]]\nname = "vllm:fake-vlm"\nbase_url = "{url}"\nretries = 0\n\n[[models]]\nname = "blank"\n'
    )
    async with serve(FakeOpenAI(replies=[Reply(text=reference_answer(102))])) as fake:
        models = model.format(url=fake.url)
        whole = tmp_path / "whole"
        config = _run_file(tmp_path / "a.toml", backend="in-process", pages=1, models=models, only=[102])
        rc = await anyio.to_thread.run_sync(
            lambda: main(["run", "-c", str(config), "--out", str(whole), "--quiet"])
        )
        assert rc == 0 and len(fake.requests) == 1
        fake.requests.clear()

        broken = tmp_path / "broken"
        config = _run_file(tmp_path / "b.toml", backend="ray", pages=1, models=models, only=[102])
        marker = tmp_path / "tmp-killed"  # inherited by the driver's Ray processes and their Chromium
        marker.mkdir()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(marker)}
        with (tmp_path / "broken.log").open("wb") as sink:
            proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child process we kill -9 ourselves
                [
                    sys.executable,
                    "-m",
                    "iwr_bench",
                    "run",
                    "-c",
                    str(config),
                    "--out",
                    str(broken),
                    "--quiet",
                ],
                env=env,
                stdout=sink,
                stderr=sink,
            )
        deadline = time.monotonic() + 240
        while done_jobs(broken, "judge") < 1 or done_jobs(broken, "gen") < 2:
            assert proc.poll() is None, (tmp_path / "broken.log").read_text()
            assert time.monotonic() < deadline, "the run never judged a page"
            await anyio.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
        left = survivors(str(marker), wait=30)
        # Raylet, GCS, workers and Chromium die with the driver; Ray's two agents notice their
        # raylet is gone and exit after a GCS timeout of their own.
        assert [p for p in left if "ray::DashboardA" not in p and "ray::RuntimeEnv" not in p] == []
        assert survivors(str(marker), wait=150) == []
        assert done_jobs(broken, "judge") == 1

        rc = await anyio.to_thread.run_sync(lambda: main(["run", "--resume", str(broken), "--quiet"]))
        assert rc == 0
        assert len(fake.requests) == 1  # the answer paid before the kill is not paid again
    got, want = reported_scores(broken), reported_scores(whole)
    assert got.keys() == want.keys()
    for job, values in want.items():
        # Exactly, visual scores of the model's page (not pixel-identical to the reference) included:
        # replays render the same bytes whatever the backend (see STEADY_RASTER_FLAGS).
        assert got[job] == values
    manifest = _manifest(broken)
    assert isinstance(manifest["backend"], dict) and manifest["backend"]["kind"] == "ray"
    # A third session on the other backend (the run is finished: it opens nothing) is recorded too.
    rc = await anyio.to_thread.run_sync(
        lambda: main(["run", "--resume", str(broken), "--backend", "in-process", "--quiet"])
    )
    assert rc == 0
    sessions = _manifest(broken)["sessions"]
    assert isinstance(sessions, list)
    assert [(s["session"], s["backend"]["kind"]) for s in sessions] == [  # pyright: ignore[reportUnknownVariableType]
        (1, "ray"),
        (2, "ray"),
        (3, "in-process"),
    ]


def test_an_unreachable_cluster_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--address of a cluster that is not there: exit 2, one line naming it, no run folder."""
    config = _run_file(tmp_path / "run.toml", backend="in-process")
    out = tmp_path / "run"
    args = ["run", "-c", str(config), "--backend", "ray", "--address", "127.0.0.1:1", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in err and "Traceback" not in err
    assert not (out / "run.sqlite").exists()
    assert main(["run", "--address", "127.0.0.1:1", "--out", str(out)]) == 2
    assert "--address joins a Ray cluster: add --backend ray" in capsys.readouterr().err
