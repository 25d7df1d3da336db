"""``iwr record`` end to end on a small site, in the real sandboxed Chromium."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from PIL import Image, ImageDraw

from iwr_bench.cli import main
from iwr_bench.dataset.frames import probe_video, sample_frames
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.recorder import PLACEHOLDER, RecordError, record, upsert_record
from iwr_bench.dataset.script import load_script
from iwr_bench.dataset.validate import validate
from iwr_bench.metrics.hashing import pixel_digest
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

SITE = """<!doctype html><html><head><style>
body { font-family: "DejaVu Sans", sans-serif; margin: 0 }
header { background: #234; color: #fff; padding: 10px }
.tall { height: 900px; background: url(img/bg.png) no-repeat 20px 20px }
</style></head><body>
<header><img src="img/logo.png" width="40" height="40"> Counter shop</header>
<p id="count">Count: 0</p><button class="btn" id="inc">Add one</button>
<input id="name" placeholder="Your name"><p id="hello"></p><div class="tall"></div>
<script>
let n = 0;
const count = document.getElementById('count');
document.getElementById('inc').onclick = () => { n++; count.textContent = 'Count: ' + n; };
document.getElementById('name').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') document.getElementById('hello').textContent = 'Hello, ' + e.target.value + '!';
});
</script></body></html>"""

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
            "logical_assertion": "a greeting 'Hello, Ada!' appears",
            "record": {"expect_text": "Hello, Ada!"},
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


def _site(root: Path) -> Path:
    (root / "img").mkdir(parents=True)
    logo = Image.new("RGB", (80, 80), "orange")
    ImageDraw.Draw(logo).ellipse((10, 10, 70, 70), fill="purple")
    logo.save(root / "img" / "logo.png")
    Image.new("RGB", (120, 60), "teal").save(root / "img" / "bg.png")
    Image.new("RGB", (10, 10), "red").save(root / "img" / "unused.png")
    (root / "index.html").write_text(SITE)
    return root


def _script(path: Path, change: dict[str, object] | None = None) -> Path:
    data = json.loads(json.dumps(SCRIPT))
    if change:
        data["actions"][int(change["index"])].update(change["update"])  # type: ignore[arg-type]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
async def recorded(pool: PagePool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rec")
    site = _site(root / "site")
    await record(site, load_script(_script(root / "script.yaml")), root / "out", pool=pool)
    return root / "out"


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


async def test_video_decodes_with_plausible_length(recorded: Path) -> None:
    video = recorded / "data" / "7" / "video.mp4"
    info = probe_video(video)
    assert (info.width, info.height, info.average_fps) == (640, 400, 10.0)
    # 2 s initial hold + 4 actions x (0.6 s lead-in + 1.6 s hold) plus settling
    assert 10.0 < info.duration < 25.0
    assert info.frame_count == pytest.approx(info.duration * 10, abs=1)
    sampled = sample_frames(video)
    assert len(sampled.frames) == int(info.duration) + (0 if info.duration.is_integer() else 1)


async def test_assets_are_anonymised_stitched_and_mapped(recorded: Path) -> None:
    task = recorded / "data" / "7"
    assert sorted(p.name for p in (task / "assets").iterdir()) == ["001.png", "002.png"]
    mapping = json.loads((recorded / "asset_maps" / "7.json").read_text())
    assert mapping == {"img/logo.png": "001.png", "img/bg.png": "002.png"}
    assert json.loads((task / "stitched_assets" / "sheets.json").read_text()) == {
        "stitched_image_01.png": ["001.png", "002.png"]
    }
    html = (task / "reference" / "index.html").read_text()
    assert (
        "img/logo.png" not in html
        and f"{PLACEHOLDER}/001.png" in html
        and f"url({PLACEHOLDER}/002.png)" in html
    )
    assert not any("img" in p.name for p in (task / "reference").rglob("*"))


async def test_checkpoints_match_a_fresh_screenshot_of_the_reference(recorded: Path, pool: PagePool) -> None:
    task = recorded / "data" / "7"
    spec = PageSpec(
        page=str(task / "reference"),
        assets_dir=str(task / "assets"),
        viewport=Viewport(width=640, height=400),
    )
    async with pool.page(spec) as tools:
        initial = await tools.screenshot()
        obs = await tools.observe()
        [button] = [e for e in obs.elements if e.text == "Add one"]
        await tools.click(button.index)
        after_click = await tools.screenshot()

    def digest(data: bytes) -> str:
        return pixel_digest(Image.open(io.BytesIO(data)))

    assert digest(initial) == digest((task / "checkpoints" / "step_0.png").read_bytes())
    assert digest(after_click) == digest((task / "checkpoints" / "step_1.png").read_bytes())


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
    missing = _script(tmp_path / "missing.yaml", {"index": 1, "update": {"record": {"selector": "#nope"}}})
    with pytest.raises(RecordError, match=r"step 2 .*selector '#nope' matches nothing"):
        await record(site, load_script(missing), tmp_path / "out", pool=pool)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_script_errors_are_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(json.dumps(SCRIPT))
    del data["actions"][0]["record"]["selector"]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["record", str(tmp_path), str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "a Click action needs record.selector" in capsys.readouterr().err


def test_upsert_replaces_by_id_and_keeps_others(tmp_path: Path) -> None:
    jsonl = tmp_path / "data.jsonl"
    upsert_record(jsonl, {"id": 1, "v": "a"})
    upsert_record(jsonl, {"id": 2, "v": "b"})
    upsert_record(jsonl, {"id": 1, "v": "c"})
    assert [json.loads(line) for line in jsonl.read_text().splitlines()] == [
        {"id": 1, "v": "c"},
        {"id": 2, "v": "b"},
    ]


async def test_asset_named_only_at_run_time_is_refused(pool: PagePool, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "img").mkdir(parents=True)
    Image.new("RGB", (20, 20), "red").save(site / "img" / "dot.png")
    (site / "index.html").write_text(
        "<button class=btn id=b>Go</button><img id=i width=20 height=20>"
        "<script>document.getElementById('i').src = 'img/' + 'do' + 't.png';</script>"
    )
    press = {"type": "Press", "parameters": {"description": "press Tab", "key": "Tab"}}
    data = {"id": 9, "recording_details": {"resolution": "320x240"}, "actions": [press]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(
        RecordError, match=r"loads img/dot\.png but no file of the site names that path literally"
    ):
        await record(site, load_script(tmp_path / "s.yaml"), tmp_path / "out", pool=pool)
    assert not (tmp_path / "out" / "data").exists()
