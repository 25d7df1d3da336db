"""The pipeline's stages overlap: a page's metrics never keep a browser page from the next replay."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.events import Event, StageFinished
from iwr_bench.engine.run import Engine, run_summary
from iwr_bench.metrics import models
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.hashing import phash_similarity
from iwr_bench.metrics.pair import Pair, ThreadedMetric
from iwr_bench.registry import register

SLOW_S = 3.0
THREADS_SEEN: list[int] = []
"""The metric threads each slow-phash batch was allowed (see :func:`models.metric_threads`)."""
IDENTICAL_SEEN: list[bool] = []
"""Whether each slow-phash batch held a pair of identical screenshots."""


@register("metric", "slow-phash")
def slow_phash() -> ThreadedMetric:
    """Perceptual-hash similarity that takes ``SLOW_S`` seconds per batch (a slow OCR stand-in)."""

    def batch(pairs: Sequence[Pair]) -> list[float]:
        THREADS_SEEN.append(models.metric_threads())
        IDENTICAL_SEEN.append(any(a == b for a, b in pairs))
        time.sleep(SLOW_S)
        return [phash_similarity(a, b, 16) for a, b in pairs]

    return ThreadedMetric(Backend(metric="ocr", engine="test", model="slow-phash"), batch)


@pytest.mark.browser
@pytest.mark.anyio
async def test_replay_goes_on_while_another_pair_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One browser page, slow metrics: the next pair replays while the previous one's metrics run.
    Metrics get half the cores while replays are left, and every core for the batches after them."""
    monkeypatch.delenv("IWR_METRIC_THREADS", raising=False)
    THREADS_SEEN.clear()
    IDENTICAL_SEEN.clear()
    config = parse_run_config(
        {
            "only": [102],
            "limits": {"browser_pages": 1, "metric_workers": 1},
            "metrics": {"cache": False, "ocr_design": "slow-phash", "image_design": "phash"},
        }
    )
    spans: list[StageFinished] = []

    def keep(event: Event) -> None:
        if isinstance(event, StageFinished):
            spans.append(event)

    engine = Engine(config, tmp_path / "run", subscribers=[keep])
    engine.prepare()
    outcome = await engine.run()
    assert outcome.status == "completed"
    assert engine.prepared is not None and engine.prepared.limits.browser.max_in_use == 1
    replays = [s for s in spans if s.stage == "replay"]
    measured = [s for s in spans if s.stage == "metrics"]
    assert len(replays) == 3 and len(measured) == 3
    # The oracle page renders its recording's pixels, so every pair of it is pixel-identical and
    # scores 1.0 without the slow metric; the two baselines' pairs go through it.
    oracle = [m for m in measured if m.job is not None and m.job.endswith("/oracle")]
    others = [m for m in measured if m not in oracle]
    assert all(m.seconds >= SLOW_S for m in others)
    # (not an absolute bound: on a loaded machine the oracle's quick stage alone took 4.8 s)
    assert len(oracle) == 1 and oracle[0].seconds < min(m.seconds for m in others)
    assert not any(IDENTICAL_SEEN)  # no pixel-identical pair reached the slow metric
    overlapping = [
        (m.job, r.job)
        for m in measured
        for r in replays
        if r.job != m.job and m.started < r.started < m.started + m.seconds
    ]
    assert overlapping, "no replay started while another pair's metrics ran"
    # the work clock books the stages apart; metrics overlapped replay, so their sum beats the wall
    work = outcome.work_s
    assert {"generate", "replay", "metrics", "record"} <= set(work)
    assert work["metrics"] >= 2 * SLOW_S
    assert sum(work.values()) > outcome.wall_s - outcome.overhead_s
    assert set(outcome.limit_idle_s) >= {"browser pages", "metric workers"}
    cores = len(os.sched_getaffinity(0))
    assert len(THREADS_SEEN) >= 2
    assert THREADS_SEEN[0] == max(1, cores // 2)  # the first batch ran beside the next replay
    assert THREADS_SEEN[-1] == cores  # the last ran after every replay
    assert models.metric_threads() == max(1, cores // 2)  # the run's end gives the browsers theirs back


@pytest.mark.browser
@pytest.mark.anyio
async def test_a_fully_cached_run_loads_no_metric_model(tmp_path: Path) -> None:
    """Run twice over the same metric cache: the second run (models dropped) loads none."""
    config = parse_run_config({"only": [102], "limits": {"browser_pages": 1}})
    first = Engine(config, tmp_path / "first")
    first.prepare()
    assert (await first.run()).status == "completed"
    models.forget()  # as if in a new process
    before = models.load_count()
    second = Engine(config, tmp_path / "second")
    second.prepare()
    outcome = await second.run()
    assert outcome.status == "completed"
    assert models.load_count() == before, models.loaded()[before:]
    assert first.prepared is not None and second.prepared is not None
    # the same scores at the precision they are reported in (x100, two decimals)
    finals = [
        {m: round(v["final"], 2) for m, v in run_summary(store)["models"].items()}
        for store in (first.prepared.store, second.prepared.store)
    ]
    assert finals[0] == finals[1]
