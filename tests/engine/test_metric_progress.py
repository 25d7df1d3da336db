"""The metric stage shows the wait: images done and left, their rate and ETA, as events and lines."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from PIL import Image

from iwr_bench.cli import main
from iwr_bench.engine.batching import BatchingMetric
from iwr_bench.engine.deadlines import Background, StepTimeout
from iwr_bench.engine.events import DesignProgress, Event, MetricProgress, RunFinished, RunStarted
from iwr_bench.engine.limits import NamedLimit
from iwr_bench.engine.metric_progress import LoadTimer, MetricProgressReporter, combined_eta
from iwr_bench.engine.metric_text import summary
from iwr_bench.engine.progress import PlainProgress
from iwr_bench.engine.rate import RateMeter, busy_seconds
from iwr_bench.engine.run_state import RunState
from iwr_bench.engine.store import RunStore
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.hashing import pixel_digest
from iwr_bench.metrics.pair import CachedMetric, Pair, ThreadedMetric

LINE = re.compile(r"\[metrics\] (\d+)/(\d+) images done.*, (\d+) left")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the rate and the ETA ----------------------------------------------------------------------------


def test_rate_meter_measures_finished_work_over_its_busy_time() -> None:
    clock = FakeClock()
    meter = RateMeter(window_s=60.0, keep=2, clock=clock)
    assert meter.rate() is None and meter.eta(10) is None  # nothing finished: unknown, not invented
    assert meter.eta(0) == 0.0
    clock.now = 4.0
    meter.record(2, started=0.0)  # 2 images in 4 s
    assert meter.rate() == pytest.approx(0.5) and meter.eta(10) == pytest.approx(20.0)
    clock.now = 108.0  # 100 s idle, waiting for replays: not held against the rate
    meter.record(4, started=104.0)
    assert meter.rate() == pytest.approx(6 / 8)
    clock.now = 112.0  # two workers side by side: their batches overlap, the busy time is the union
    meter.record(4, started=108.0)
    meter.record(4, started=108.0)
    # the first batch left the window (ended 108 s ago, more than the 2 kept)
    assert meter.rate() == pytest.approx(12 / 8) and meter.eta(3) == pytest.approx(2.0)
    meter.record(0, started=0.0)  # a batch of cached values measured nothing
    assert meter.rate() == pytest.approx(12 / 8)


def test_load_timer_counts_overlapping_loads_once() -> None:
    clock = FakeClock()
    loads = LoadTimer(clock)
    loads.loading("ocr", True)
    clock.now = 10.0
    loads.loading("dino", True)
    clock.now = 15.0
    loads.loading("ocr", False)
    assert loads.seconds() == pytest.approx(15.0)  # a load under way counts so far
    clock.now = 20.0
    loads.loading("dino", False)
    clock.now = 50.0
    assert loads.seconds() == pytest.approx(20.0)


@pytest.mark.anyio
async def test_model_loading_is_not_held_against_the_rate() -> None:
    """The first batch of a design loads its model: 30 s that no later image pays."""
    clock = FakeClock()
    reporter = MetricProgressReporter(lambda event: None, clock=clock)
    tally = reporter.tally("ocr", _design("ocr", per_pair_s=0.0))
    work = await tally.submitted([(_image(1), _image(2))])
    start = tally.started([work])
    reporter.loads.loading("easyocr", True)
    clock.now = 30.0
    reporter.loads.loading("easyocr", False)
    clock.now = 38.0  # then two images in 8 s
    tally.finished([work], ok=True, started=start)
    assert tally.progress().rate == pytest.approx(0.25) and tally.progress().left == 0


def test_busy_time_is_the_union_of_spans() -> None:
    assert busy_seconds([]) == 0.0
    assert busy_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == pytest.approx(4.0)
    assert busy_seconds([(0.0, 10.0), (2.0, 3.0)]) == pytest.approx(10.0)


def test_the_eta_of_the_stage_waits_for_every_design_with_images_left() -> None:
    ocr = DesignProgress(metric="ocr", done=4, left=6, rate=0.25, eta_s=24.0)
    dino = DesignProgress(metric="dino", done=0, left=2, rate=None, eta_s=None)
    idle = DesignProgress(metric="dino", done=8, left=0, rate=None, eta_s=0.0)
    assert combined_eta([ocr, dino]) is None
    assert combined_eta([ocr, idle]) == pytest.approx(24.0)
    assert combined_eta([ocr, dino.model_copy(update={"rate": 10.0, "eta_s": 0.2})]) == pytest.approx(24.2)
    assert combined_eta([]) == 0.0


def test_events_are_at_most_one_a_second_and_the_last_state_always_goes_out() -> None:
    clock = FakeClock(100.0)
    events: list[Event] = []
    reporter = MetricProgressReporter(events.append, every_s=1.0, clock=clock)
    reporter.tally("ocr", _design("ocr"))
    for _ in range(50):  # a burst of changes in the same instant
        reporter.changed()
    assert len(events) == 1
    reporter.flush_due()
    assert len(events) == 1  # not due yet
    clock.now += 1.0
    reporter.flush_due()
    assert len(events) == 2
    reporter.flush_due()
    reporter.flush()
    assert len(events) == 2  # nothing changed since


# -- the counts, through the batching metric ---------------------------------------------------------


def _image(shade: int) -> Image.Image:
    return Image.new("RGB", (32, 18), (shade, 255 - shade, 7))


class _Design(ThreadedMetric):
    """A metric that takes a little time per pair. With ``reads_text`` it reads each image's text
    once (an OCR design); with ``features`` it keeps a value per image in that store (as the text
    and embedding designs do)."""

    def __init__(
        self,
        metric: str,
        *,
        reads_text: bool = False,
        features: MetricCache | None = None,
        per_pair_s: float = 0.05,
    ) -> None:
        def batch(pairs: Sequence[Pair]) -> list[float]:
            time.sleep(per_pair_s * len(pairs))
            return [0.5] * len(pairs)

        super().__init__(Backend(metric=metric, engine=f"test {metric}"), batch)
        if reads_text:
            self.read_text = lambda image: ""
        if features is not None:
            self.features = SimpleNamespace(store=features, namespace=f"{metric}|embedding")


def _design(
    metric: str,
    *,
    reads_text: bool = False,
    features: MetricCache | None = None,
    store: MetricCache | None = None,
    per_pair_s: float = 0.05,
) -> CachedMetric:
    inner = _Design(metric, reads_text=reads_text, features=features, per_pair_s=per_pair_s)
    return CachedMetric(inner, store)


@pytest.mark.anyio
async def test_images_are_counted_once_and_cached_or_identical_ones_as_skipped(tmp_path: Path) -> None:
    events: list[Event] = []
    reporter = MetricProgressReporter(events.append, every_s=0.0)
    limit = NamedLimit("metric workers", 1)
    checkpoint, same, shot_a, shot_b = _image(1), _image(2), _image(3), _image(4)
    prepared = MetricCache(tmp_path / "features.sqlite")  # the checkpoint's embedding is known
    prepared.put("emb|embedding", pixel_digest(checkpoint), {"dim": 1, "b64": "AACAPw=="})
    metrics = {
        "ocr": _design("ocr", reads_text=True, store=MetricCache(tmp_path / "run.sqlite")),
        "emb": _design("emb", features=prepared),
        "plain": _design("plain"),
    }
    batched = {name: BatchingMetric(metric, limit) for name, metric in metrics.items()}
    for name, metric in batched.items():
        metric.progress = reporter.tally(name, metric.inner)
    requests = [
        [(checkpoint, shot_a), (same, same)],  # the second pair is pixel-identical: no work
        [(checkpoint, shot_b)],  # another model against the same checkpoint
        [(checkpoint, shot_a)],  # a pair already measured: its value is known
    ]
    for pairs in requests:
        for metric in batched.values():
            assert await metric(pairs) == [1.0 if a is b else 0.5 for a, b in pairs]
    last = events[-1]
    assert isinstance(last, MetricProgress)
    by = {d.metric: (d.done, d.skipped, d.left) for d in last.designs}
    # A design with per-image values computes each distinct image once: the checkpoint and two
    # screenshots; none for the checkpoint whose value is stored.
    assert by["ocr"] == (3, 5, 0) and by["emb"] == (2, 6, 0)
    # A design without computes both images of each pair it computes.
    assert by["plain"] == (4, 4, 0)
    assert last.total == last.done == 24 and last.eta_s == 0.0
    assert all(d.rate is not None and d.rate > 0 for d in last.designs)
    progress = [e for e in events if isinstance(e, MetricProgress)]
    assert [e.done for e in progress] == sorted(e.done for e in progress)  # done only rises
    first = progress[0]
    assert first.left == 2 and first.eta_s is None  # before any image finished: no ETA
    for e in progress:  # an ETA exactly when every design with images left has a rate
        rated = all(d.rate is not None for d in e.designs if d.left)
        assert (e.eta_s is not None) == rated


@pytest.mark.anyio
async def test_failed_and_withdrawn_images_leave_the_count() -> None:
    events: list[Event] = []
    reporter = MetricProgressReporter(events.append, every_s=0.0)
    async with Background() as background:
        stuck = BatchingMetric(
            _design("ocr", per_pair_s=0.8), NamedLimit("a", 1), timeout=0.2, background=background
        )
        stuck.progress = reporter.tally("ocr", stuck.inner)
        with pytest.raises(StepTimeout):
            await stuck([(_image(10), _image(11))])
        state = reporter.event()
        assert (state.failed, state.left, state.done) == (2, 0, 0)

        slow = BatchingMetric(_design("dino", per_pair_s=0.5), NamedLimit("b", 1), background=background)
        slow.progress = reporter.tally("dino", slow.inner)
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow, [(_image(20), _image(21))])
            await anyio.sleep(0.15)  # that batch holds the one worker
            with anyio.move_on_after(0.1):  # a job cancelled while its pair waits for the worker
                await slow([(_image(22), _image(23))])
            assert reporter.event().designs[1].left == 2  # only the running batch's images
    dino = reporter.event().designs[1]
    assert (dino.done, dino.left, dino.failed) == (2, 0, 0)


# -- the plain lines ---------------------------------------------------------------------------------


def _progress(done: int, left: int, rate: float | None, **fields: object) -> MetricProgress:
    eta = None if rate is None else (left / rate if left else 0.0)
    design = DesignProgress(metric="ocr", done=done, left=left, rate=rate, eta_s=eta)
    return MetricProgress(designs=[design], eta_s=eta, **fields)  # type: ignore[arg-type]


def test_plain_lines_say_the_first_state_the_first_eta_and_the_last() -> None:
    out = io.StringIO()
    progress = PlainProgress(out)
    progress(_progress(0, 16, None))
    progress(_progress(0, 16, None))  # the same again: not repeated
    progress(_progress(4, 12, 0.25))  # the first with an ETA
    progress(_progress(8, 8, 0.25))  # within 10 s: not said
    progress(_progress(16, 0, 0.25))
    progress(RunFinished(status="completed", wall_s=1.0))  # the last state, at the end
    assert out.getvalue().splitlines() == [
        "[metrics] 0/16 images done, 16 left; ocr rate unknown; ETA unknown until a batch finishes",
        "[metrics] 4/16 images done, 12 left; ocr 4.0 s/image; ETA 0:00:48",
        "[metrics] 16/16 images done, 0 left; ocr 4.0 s/image",
    ]


def test_the_summary_counts_skipped_running_and_failed_images() -> None:
    ocr = DesignProgress(metric="ocr", done=14, skipped=9, left=29, running=8, rate=0.256, eta_s=113.3)
    dino = DesignProgress(metric="dino", done=20, left=0, failed=2, rate=11.2, eta_s=0.0)
    event = MetricProgress(designs=[ocr, dino], eta_s=113.3, time=1000.0)
    assert summary(event) == (
        "43/74 images done (9 cached or identical), 29 left (8 running), 2 failed; "
        "ocr 3.9 s/image, dino 11.2 images/s; ETA 0:01:54"
    )
    assert summary(event, now=1100.0).endswith("ETA 0:00:14")  # counted down since the event
    assert summary(event, now=1200.0).endswith("ETA soon")
    state = RunState()
    state.apply(RunStarted(run_id="r", models=["m"], tasks=[1], time=1000.0))
    state.apply(event)
    assert state.activity(1000.0).startswith("metrics 43/74 images, ETA 0:01:54")


# -- a real run ----------------------------------------------------------------------------------------


@pytest.mark.browser
def test_a_run_reports_its_metric_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``iwr run`` (plain lines) with a cold metric cache: progress events whose done counts rise to
    the total, with an ETA once every design has a rate; ``[metrics]`` lines on stderr."""
    monkeypatch.setenv("IWR_BENCH_CACHE_DIR", str(tmp_path / "cold-cache"))
    run = tmp_path / "run"
    assert main(["run", "--only", "102", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    lines = [m for m in map(LINE.match, err.splitlines()) if m]
    assert lines, err
    done, total, left = map(int, lines[-1].groups())
    assert done == total > 0 and left == 0
    with RunStore.open_run(run, readonly=True) as store:
        events = [e for e in store.iter_events() if isinstance(e, MetricProgress)]
    assert events
    assert [e.done for e in events] == sorted(e.done for e in events)
    last = events[-1]
    assert last.left == 0 and last.done == last.total == total and last.failed == 0
    assert sum(d.done for d in last.designs) > 0  # a cold cache: images were really measured
    assert all(d.rate is not None for d in last.designs if d.done)
    for e in events:
        rated = all(d.rate is not None for d in e.designs if d.left)
        assert (e.eta_s is not None) == rated
