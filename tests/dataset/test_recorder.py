"""``iwr record`` end to end on a small site, in the real sandboxed Chromium."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread
import pytest
import yaml
from fontTools import subset
from fontTools.ttLib import TTFont
from PIL import Image, ImageDraw

from iwr_bench.agents.generation.baselines import OracleGenerator
from iwr_bench.agents.generation.output import write_result
from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.proof import OracleProver
from iwr_bench.cli import main
from iwr_bench.dataset.features import load_features
from iwr_bench.dataset.frames import probe_video, sample_frames
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.recorder import (
    OracleProof,
    Recorded,
    RecordError,
    _known_missing,
    record,
    upsert_record,
)
from iwr_bench.dataset.script import load_script
from iwr_bench.dataset.validate import validate
from iwr_bench.dataset.vendor import VendorSources
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.hashing import pixel_digest
from iwr_bench.metrics.pair import CachedMetric, Pair, ThreadedMetric
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig, html_seed

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

SITE = """<!doctype html><html><head><link rel="stylesheet" href="css/site.css"></head><body>
<header><img src="img/logo.png" width="40" height="40"> Counter shop</header>
<p id="count">Count: 0</p><button class="btn" id="inc">Add one</button>
<p id="dice">Dice: -</p><img id="face" width="30" height="30" alt="">
<input id="name" placeholder="Your name"><p id="hello"></p><div class="tall"></div>
<script src="js/state.js"></script><script src="js/app.js"></script></body></html>"""

CSS = """@font-face { font-family: "Shop"; src: url("../fonts/shop.woff") format("woff"),
  url("../fonts/shop.ttf") format("truetype"); }
body { font-family: "Shop", sans-serif; margin: 0 }
header { background: #234; color: #fff; padding: 10px }
.tall { height: 900px; background: url(../img/bg.png) no-repeat 20px 20px }
"""

STATE_JS = "window.shop = { n: 0, roll: () => 1 + Math.floor(Math.random() * 6) };"

APP_JS = """const count = document.getElementById('count');
document.getElementById('inc').onclick = () => {
  shop.n++; count.textContent = 'Count: ' + shop.n;
  const d = shop.roll();
  document.getElementById('dice').textContent = 'Dice: ' + d;
  document.getElementById('face').src = 'img/face-' + (d % 2 ? 'odd' : 'even') + '.png';
};
document.getElementById('name').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') document.getElementById('hello').textContent = 'Hello, ' + e.target.value + '!';
});
"""

SCRIPT = {
    "id": 7,
    "source_website": "iwr-suite://test",
    "classification": {
        "interaction_complexity": "L2",
        "visual_complexity": "V1",
        "domain": "Demo",
        "sub_domain": "x",
    },
    "recording_details": {"resolution": "640x400", "environment": "desktop"},
    "actions": [
        {
            "type": "Click",
            "parameters": {"description": "the 'Add one' button"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the count shows 1",
            "record": {"selector": "#inc", "expect_text": "Count: 1"},
        },
        {
            "type": "Type",
            "parameters": {"description": "the name box", "text": "Ada"},
            "record": {"selector": "#name"},
        },
        {
            "type": "Press",
            "parameters": {"description": "press Enter", "key": "Enter"},
            "visual_evaluation_flag": True,
            "logical_assertion": "a greeting appears under the name box",
        },
        {
            "type": "Scroll",
            "parameters": {"description": "scroll down the page"},
            "visual_evaluation_flag": True,
        },
    ],
}


@pytest.fixture(scope="module")
async def pool() -> PagePool:  # type: ignore[misc]
    async with PagePool(PoolConfig(size=1)) as p:
        yield p  # type: ignore[misc]


def _font(dest: Path) -> None:
    """A small subset of DejaVu Sans Bold as TTF and WOFF (renamed, as its licence asks)."""
    font = TTFont("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
    options = subset.Options()
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(chr(c) for c in range(32, 127)))
    subsetter.subset(font)
    for name in font["name"].names:
        if name.nameID in (1, 3, 4, 6, 16):
            name.string = "ShopTest"
    dest.mkdir(parents=True)
    font.save(dest / "shop.ttf")
    font.flavor = "woff"
    font.save(dest / "shop.woff")


def _site(root: Path) -> Path:
    (root / "img").mkdir(parents=True)
    logo = Image.new("RGB", (80, 80), "orange")
    ImageDraw.Draw(logo).ellipse((10, 10, 70, 70), fill="purple")
    logo.save(root / "img" / "logo.png")
    Image.new("RGB", (120, 60), "teal").save(root / "img" / "bg.png")
    Image.new("RGB", (30, 30), "navy").save(root / "img" / "face-odd.png")
    Image.new("RGB", (30, 30), "gold").save(root / "img" / "face-even.png")
    Image.new("RGB", (10, 10), "red").save(root / "img" / "unused.png")
    (root / "notes.txt").write_text("not part of the site")
    _font(root / "fonts")
    (root / "css").mkdir()
    (root / "css" / "site.css").write_text(CSS)
    (root / "js").mkdir()
    (root / "js" / "state.js").write_text(STATE_JS)
    (root / "js" / "app.js").write_text(APP_JS)
    (root / "index.html").write_text(SITE)
    return root


def _script(path: Path, change: dict[str, object] | None = None) -> Path:
    data = json.loads(json.dumps(SCRIPT))
    if change:
        data["actions"][int(change["index"])].update(change["update"])  # type: ignore[arg-type]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def prover() -> OracleProver:
    return OracleProver()


@pytest.fixture(scope="module")
async def recorded_result(
    pool: PagePool, prover: OracleProver, tmp_path_factory: pytest.TempPathFactory
) -> Recorded:
    root = tmp_path_factory.mktemp("rec")
    site = _site(root / "site")
    return await record(
        site, load_script(_script(root / "script.yaml")), root / "out", pool=pool, prove=prover
    )


@pytest.fixture(scope="module")
def recorded(recorded_result: Recorded) -> Path:
    return recorded_result.folder.parent.parent


async def test_recording_is_a_valid_official_task(recorded: Path) -> None:
    task_set = load_tasks(recorded)
    assert validate(task_set) == []
    [task] = task_set.tasks
    record_line = json.loads((recorded / "data.jsonl").read_text())
    assert all(
        set(a) == {"type", "parameters", "visual_evaluation_flag", "logical_assertion"}
        for a in record_line["action_sequence"]
    )
    assert "selector" not in json.dumps(record_line)
    assert [a["type"] for a in record_line["action_sequence"]] == ["Click", "Type", "Press", "Scroll"]
    assert sorted(task.checkpoints) == [0, 1, 2, 3]  # initial + 3 flagged actions


async def test_seed_and_clock_are_stored_with_the_task(recorded: Path) -> None:
    details = json.loads((recorded / "data.jsonl").read_text())["recording_details"]
    site_index = (recorded.parent / "site" / "index.html").read_bytes()
    assert details["random_seed"] == html_seed(site_index)  # derived from the entry page, as before
    assert details["clock_start_ms"] == 1_704_067_200_000


async def test_video_decodes_with_plausible_length(recorded: Path) -> None:
    video = recorded / "data" / "7" / "video.mp4"
    info = probe_video(video)
    assert (info.width, info.height, info.average_fps) == (640, 400, 10.0)
    # 2 s initial hold + 4 actions x (0.6 s lead-in + 1.6 s hold) plus settling
    assert 10.0 < info.duration < 25.0
    assert info.frame_count == pytest.approx(info.duration * 10, abs=1)
    sampled = sample_frames(video)
    assert len(sampled.frames) == int(info.duration) + (0 if info.duration.is_integer() else 1)


async def test_reference_is_the_whole_site_as_loaded_and_assets_are_pictures_only(recorded: Path) -> None:
    task = recorded / "data" / "7"
    reference = sorted(p.relative_to(task / "reference").as_posix() for p in (task / "reference").rglob("*"))
    files = [p for p in reference if "." in p]
    faces = [p for p in files if "face-" in p]  # its path is built at run time from the dice roll
    assert len(faces) == 1 and [p for p in files if p not in faces] == [
        "css/site.css",
        "fonts/shop.ttf",  # named by the @font-face rule though the browser took the woff
        "fonts/shop.woff",
        "img/bg.png",
        "img/logo.png",
        "index.html",
        "js/app.js",
        "js/state.js",
    ]
    assert (task / "reference" / "js" / "app.js").read_text() == APP_JS  # unchanged, original paths
    mapping = json.loads((recorded / "asset_maps" / "7.json").read_text())
    assert list(mapping)[:2] == ["img/logo.png", "img/bg.png"] and len(mapping) == 3
    assert all(rel.startswith("img/") for rel in mapping)  # no font, script or stylesheet
    assert sorted(p.name for p in (task / "assets").iterdir()) == ["001.png", "002.png", "003.png"]
    assert json.loads((task / "stitched_assets" / "sheets.json").read_text()) == {
        "stitched_image_01.png": ["001.png", "002.png", "003.png"]
    }


async def test_oracle_proves_itself_with_pixel_identical_pairs(
    recorded_result: Recorded, prover: OracleProver
) -> None:
    proof = recorded_result.proof
    assert proof is not None and proof.problems == [] and proof.failed_requests == []
    assert proof.ifs == 1.0 and proof.checkpoint_scores == {0: 1.0, 1: 1.0, 3: 1.0, 4: 1.0}
    assert prover.ocr.identical == prover.embed.identical == 4  # no model ran


async def test_unchecked_assertion_is_kept_with_a_warning(recorded_result: Recorded, recorded: Path) -> None:
    assert recorded_result.warnings == [
        "step 3 (Press 'press Enter'): the recorder could not check the assertion "
        "'a greeting appears under the name box' (no record.expect_text)"
    ]
    actions = json.loads((recorded / "data.jsonl").read_text())["action_sequence"]
    assert actions[2]["logical_assertion"] == "a greeting appears under the name box"


async def test_judged_pages_replay_the_recorded_random_states(recorded: Path, pool: PagePool) -> None:
    task = load_tasks(recorded).by_id(7)
    seed = task.record.recording_details.random_seed
    assert seed is not None
    shots: dict[int | None, bytes] = {}
    for page_seed in (seed, seed + 1):
        spec = PageSpec(
            page=str(task.folder / "reference"),
            viewport=Viewport(width=640, height=400),
            random_seed=page_seed,
        )
        async with pool.page(spec) as tools:
            obs = await tools.observe()
            [button] = [e for e in obs.elements if e.text == "Add one"]
            await tools.click(button.index)
            shots[page_seed] = await tools.screenshot()

    def digest(data: bytes) -> str:
        return pixel_digest(Image.open(io.BytesIO(data)))

    assert digest(shots[seed]) == digest(task.checkpoints[1].read_bytes())
    # a page whose seed is not the recorded one rolls other dice (the seeds were picked to differ)
    assert digest(shots[seed + 1]) != digest(task.checkpoints[1].read_bytes())


async def test_written_oracle_serves_the_bundle_without_a_failed_request(
    recorded: Path, pool: PagePool
) -> None:
    task = load_tasks(recorded).by_id(7)
    result = await OracleGenerator()(task)
    folder = write_result(recorded.parent / "gen", result)
    assert (folder / "js" / "app.js").is_file() and (folder / "fonts" / "shop.woff").is_file()
    replay = await Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge()).replay(
        task, folder, recorded.parent / "evidence"
    )
    assert replay.success_steps == replay.total_steps == 4
    assert replay.console_errors == [] and replay.blocked_requests == 0


async def test_failing_step_is_named_and_nothing_is_left(pool: PagePool, tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    bad = _script(
        tmp_path / "bad.yaml",
        {"index": 0, "update": {"record": {"selector": "#inc", "expect_text": "Count: 2"}}},
    )
    with pytest.raises(
        RecordError, match=r"step 1 \(Click .the 'Add one' button.\): expected text 'Count: 2' is not visible"
    ):
        await record(site, load_script(bad), tmp_path / "out", pool=pool)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


async def test_a_request_the_site_cannot_answer_is_named_in_a_warning(pool: PagePool, tmp_path: Path) -> None:
    # A real app may ask for what it can do without (AngularJS's TodoMVC tries /api, then keeps
    # its todos in localStorage): the page is recorded as it ran, and the warning names the files.
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<link rel="stylesheet" href="style/main.css"><button id=b>Go</button>'
        '<script src="js/gone.js"></script>'
    )
    press = {"type": "Press", "parameters": {"description": "press Tab", "key": "Tab"}}
    data = {"id": 9, "recording_details": {"resolution": "320x240"}, "actions": [press]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    done = await record(site, load_script(tmp_path / "s.yaml"), tmp_path / "out", pool=pool)
    assert any(
        "does not have (404): /style/main.css, /js/gone.js; it was recorded as it ran" in w
        for w in done.warnings
    ), done.warnings
    assert (done.folder / "reference" / "index.html").is_file()


def _tiny(tmp_path: Path, head: str = "") -> tuple[Path, Path]:
    """A one-button site and a one-step script with a checkpoint."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(f"<html><head>{head}</head><body><button id=b>Go</button></body></html>")
    press = {
        "type": "Press",
        "parameters": {"description": "press Tab", "key": "Tab"},
        "visual_evaluation_flag": True,
    }
    data = {"id": 9, "recording_details": {"resolution": "320x240"}, "actions": [press]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    return site, tmp_path / "s.yaml"


async def test_a_failed_proof_keeps_its_evidence_and_says_where(pool: PagePool, tmp_path: Path) -> None:
    site, script = _tiny(tmp_path)
    lines: list[str] = []
    strict = OracleProver(min_visual=1.01)  # no checkpoint can reach it: the proof fails
    with pytest.raises(RecordError, match=r"does not prove itself.*are in .*\.failed/9") as failed:
        await record(
            site, load_script(script), tmp_path / "out", pool=pool, prove=strict, progress=lines.append
        )
    kept = tmp_path / "out" / ".failed" / "9"
    assert str(kept) in str(failed.value)
    assert (kept / "task" / "reference" / "index.html").is_file()  # the recording as staged
    assert (kept / "proof" / "step_1.png").is_file()  # the proof's screenshot of the checkpoint
    report = json.loads((kept / "proof" / "replay.json").read_text())
    assert report["success_steps"] == 1 and report["actions"][0]["status"] == "ok"
    assert not list((tmp_path / "out").glob(".staging-*"))  # nothing else left behind
    assert lines[0].startswith("step 1/1: Press 'press Tab' (") and lines[1].startswith("proving task 9")


async def test_a_page_that_needs_another_origin_lists_what_to_vendor(pool: PagePool, tmp_path: Path) -> None:
    head = (
        '<link rel="stylesheet" href="https://fonts.example.com/css2?family=Inter">'
        '<script src="https://cdn.example.org/icons@1.0/dist/icons.js"></script>'
    )
    site, script = _tiny(tmp_path, head)
    with pytest.raises(RecordError) as refused:
        await record(site, load_script(script), tmp_path / "out", pool=pool)
    message = str(refused.value)
    assert "Record again with `--vendor network`" in message and "--vendor DIR" in message
    assert "  https://fonts.example.com/css2?family=Inter" in message
    assert "  https://cdn.example.org/icons@1.0/dist/icons.js" in message


async def test_a_cdn_icon_font_is_brought_in_from_an_npm_folder(pool: PagePool, tmp_path: Path) -> None:
    # The page links an icon font's stylesheet on jsdelivr; the stylesheet names its font file
    # with a query and a fragment, as icon sets do. The package is on disk (npm install / npm pack).
    package = tmp_path / "node_modules" / "shop-icons"
    _font(package / "font" / "fonts")
    (package / "font" / "icons.css").write_text(
        '@font-face { font-family: "ShopIcons"; src: url("./fonts/shop.woff?v=2#iefix") format("woff"); }\n'
        ".icon { font-family: ShopIcons; font-size: 40px }\n"
    )
    (package / "package.json").write_text('{"name": "shop-icons", "version": "1.2.0"}')
    site = tmp_path / "site"
    site.mkdir()
    page = (
        '<html><head><link rel="stylesheet" '
        'href="https://cdn.jsdelivr.net/npm/shop-icons@1.2.0/font/icons.css"></head>'
        '<body><span class="icon">Wg</span><button id="b">Go</button><p id="font">waiting</p><script>'
        "document.fonts.load('40px ShopIcons').then((f) => { "
        "document.getElementById('font').textContent = f.length ? 'font loaded' : 'no font'; });"
        "</script></body></html>"
    )
    (site / "index.html").write_text(page)
    press = {
        "type": "Press",
        "parameters": {"description": "press Tab", "key": "Tab"},
        "visual_evaluation_flag": True,
        "record": {"expect_text": "font loaded"},
    }
    data = {"id": 12, "recording_details": {"resolution": "320x240"}, "actions": [press]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    lines: list[str] = []
    done = await record(
        site,
        load_script(tmp_path / "s.yaml"),
        tmp_path / "out",
        pool=pool,
        prove=OracleProver(),
        progress=lines.append,
        vendor=VendorSources(folders=(tmp_path / "node_modules",)),
    )
    assert done.proof is not None and done.proof.problems == [] and done.proof.failed_requests == []
    reference = done.folder / "reference"
    css = reference / "vendor" / "cdn.jsdelivr.net" / "npm" / "shop-icons@1.2.0" / "font" / "icons.css"
    assert css.is_file() and (reference / "vendor").is_dir()
    fonts = list((css.parent / "fonts").glob("shop_*.woff"))
    assert len(fonts) == 1 and f"url(fonts/{fonts[0].name}#iefix)" in css.read_text().replace('"', "")
    linked = '"vendor/cdn.jsdelivr.net/npm/shop-icons@1.2.0/font/icons.css"'
    assert linked in (reference / "index.html").read_text()
    assert (site / "index.html").read_text() == page  # the user's site is left as it was
    assert any(line.startswith("brought 2 file(s) from other origins into vendor/") for line in lines)
    assert not list((tmp_path / "out").glob(".vendoring-*"))


def test_script_errors_are_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(json.dumps(SCRIPT))
    del data["actions"][0]["record"]["selector"]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["record", str(tmp_path), str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "a Click action needs record.selector" in capsys.readouterr().err


@pytest.mark.slow
async def test_record_stores_the_checkpoints_features_with_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``iwr record`` computes each checkpoint's features with a run's default designs (here, as in
    every test, the pHash stand-in for OCR, which keeps none, and the image design's substitute)."""
    site, script = _site(tmp_path / "site"), _script(tmp_path / "script.yaml")
    argv = ["record", str(site), str(script), "--out", str(tmp_path / "out")]
    assert await anyio.to_thread.run_sync(main, argv) == 0  # its own event loop, on a thread
    assert "for 4 checkpoint(s) of 1 task(s)" in capsys.readouterr().out
    task = load_tasks(tmp_path / "out").by_id(7)
    stored = load_features(task, tmp_path / "cache")
    [entry] = stored.backends.values()
    assert entry.backend.metric == "dino" and set(entry.values) == {"embedding"}
    assert set(entry.values["embedding"]) == {c.digest for c in stored.checkpoints.values()}
    assert len(stored.checkpoints) == 4


def test_upsert_replaces_by_id_and_keeps_others(tmp_path: Path) -> None:
    jsonl = tmp_path / "data.jsonl"
    upsert_record(jsonl, {"id": 1, "v": "a"})
    upsert_record(jsonl, {"id": 2, "v": "b"})
    upsert_record(jsonl, {"id": 1, "v": "c"})
    assert [json.loads(line) for line in jsonl.read_text().splitlines()] == [
        {"id": 1, "v": "c"},
        {"id": 2, "v": "b"},
    ]


async def test_identical_pairs_score_one_without_the_model_and_are_cached(tmp_path: Path) -> None:
    calls: list[int] = []

    def batch(pairs: Sequence[Pair]) -> list[float]:
        calls.append(len(pairs))
        return [0.5 for _ in pairs]

    backend = Backend(metric="ocr", engine="counting", model="fake")
    store = MetricCache(tmp_path / "cache.sqlite")
    metric = CachedMetric(ThreadedMetric(backend, batch), store)
    red, blue = Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "blue")
    assert await metric([(red, red.copy()), (red, blue), (blue, blue.copy())]) == [1.0, 0.5, 1.0]
    assert calls == [1] and metric.identical == 2  # only the differing pair reached the model
    key = f"{pixel_digest(red)}:{pixel_digest(red)}"
    assert store.get(namespace(backend) + "|pair", key) == 1.0


async def test_validate_replay_names_the_request_a_broken_reference_fails(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(recorded, copy)
    (copy / "data" / "7" / "reference" / "js" / "state.js").unlink()
    argv = ["tasks", "validate", str(copy), "--replay"]
    assert await anyio.to_thread.run_sync(main, argv) == 1  # the CLI runs its own event loop
    out = capsys.readouterr().out
    assert "task 7: error: oracle: request failed: Failed to load resource" in out and "js/state.js" in out


GAME = """<!doctype html><html><head><meta charset="utf-8"></head><body style="font:16px sans-serif">
<button id=start>Start</button> <button id=hit>Hit</button> <p id=state>Press Start</p>
<script>
let left = 4, score = 0, timer = null;
const show = () => {
  document.getElementById('state').textContent =
    left > 0 ? `Score: ${score} · ${left} s left` : `Time's up: ${score}`;
};
const tick = () => { left -= 1; show(); if (!left) clearInterval(timer); };
document.getElementById('start').onclick = () => {
  if (timer === null) { show(); timer = setInterval(tick, 1000); }
};
document.getElementById('hit').onclick = () => { if (left > 0) { score += 1; show(); } };
</script></body></html>"""


async def test_a_timed_game_records_on_a_stepped_clock_and_judges_the_same(
    pool: PagePool, prover: OracleProver, tmp_path: Path
) -> None:
    # A 4 s game, recorded at the recorder's pace (seconds per action): on the real clock it would
    # be over before the second hit. On a stepped clock each action is one second of game time.
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(GAME)

    def click(what: str, expect: str) -> dict[str, object]:
        return {
            "type": "Click",
            "parameters": {"description": f"the '{what}' button"},
            "visual_evaluation_flag": True,
            "logical_assertion": f"the line reads '{expect}'",
            "record": {"selector": f"#{what.lower()}", "expect_text": expect},
        }

    actions = [click("Start", "Score: 0 · 3 s left"), click("Hit", "Score: 1 · 2 s left")]
    actions.append(click("Hit", "Score: 2 · 1 s left"))
    data = {
        "id": 11,
        "recording_details": {"resolution": "480x240", "clock_step_ms": 1000},
        "actions": actions,
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    done = await record(site, load_script(tmp_path / "s.yaml"), tmp_path / "out", pool=pool, prove=prover)
    assert done.proof is not None and done.proof.problems == [] and done.proof.ifs == 1.0
    details = json.loads((tmp_path / "out" / "data.jsonl").read_text())["recording_details"]
    assert details["clock_step_ms"] == 1000  # and the proof above replayed with it


def test_the_proof_does_not_count_requests_the_site_itself_could_not_answer() -> None:
    # The reference failed /api while recording as well: only a request for a file the site had
    # (so the bundle lost it) is a problem of the proof.
    line = "Failed to load resource: the server responded with a status of 404 (Not Found) "
    failed = [line + "(http://127.0.0.1:4000/api)", line + "(http://127.0.0.1:4000/img/logo.png)"]
    proof = OracleProof(
        ifs=1.0, failed_requests=failed, problems=[f"request failed: {f}" for f in failed] + ["step 2 failed"]
    )
    kept = _known_missing(proof, ["/api"])
    assert kept.failed_requests == failed[1:]
    assert kept.problems == [f"request failed: {failed[1]}", "step 2 failed"]
    assert _known_missing(proof, []) == proof
