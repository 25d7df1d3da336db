"""The official protocol's rules (protocol.md section 6), each tested against the default one.

Every test runs the same input under both protocols and asserts the difference a user would see,
so switching a rule off makes its test fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo
from scripted_model import Scripted, last_prompt

from iwr_bench.agents.grounding import HeuristicGrounder, text_from_description
from iwr_bench.agents.grounding_llm import LLMGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.records import ActionRecord, AssertionRequest, AssertionVerdict, Replay
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.setup import effective_policies, pool_config
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import create
from iwr_bench.scoring.evaluation import VisualMetrics, evaluate
from iwr_bench.scoring.formulas import PairScore, TaskScore
from iwr_bench.scoring.official import aggregate, assertion_entry, official_pair_states
from iwr_bench.tools.models import SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig

OFFICIAL = EvalProtocol.official
DEFAULT = EvalProtocol.default


def make_task(root: Path, actions: list[dict[str, Any]], task_id: int = 1) -> Task:
    """A task on disk: one record, 1 + flagged checkpoints (plain grey images)."""
    record = {
        "id": task_id,
        "source_website": "test://official",
        "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "Test"},
        "recording_details": {"resolution": "800x600", "environment": "desktop"},
        "action_sequence": [{"visual_evaluation_flag": False, "logical_assertion": "", **a} for a in actions],
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "data.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    checkpoints = root / "data" / str(task_id) / "checkpoints"
    checkpoints.mkdir(parents=True)
    flagged = sum(1 for a in record["action_sequence"] if a["visual_evaluation_flag"])
    for k in range(flagged + 1):
        Image.new("RGB", (800, 600), (200 + k, 200, 200)).save(checkpoints / f"step_{k}.png")
    return load_tasks(root).by_id(task_id)


def write_page(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(f"<!doctype html><html><body>{body}</body></html>", encoding="utf-8")
    return folder


class AlwaysError:
    """An assertion judge whose every answer is an error (a judge that fails)."""

    name = "always-error"

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        del request
        return AssertionVerdict(verdict="error", reasoning="the judge model failed", judge=self.name)


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[PagePool]:
    async with PagePool(PoolConfig(size=1)) as p:
        yield p


async def _replay(
    pool: PagePool, task: Task, page: Path, out: Path, protocol: EvalProtocol, judge: Any = None
) -> Replay:
    config = ExecutorConfig(protocol=protocol, judge_error_policy="fail")
    executor = Executor(pool, HeuristicGrounder(semantic=False), judge or HeuristicAssertionJudge(), config)
    return await executor.replay(task, page, out)


@pytest.mark.browser
@pytest.mark.anyio
async def test_official_scroll_is_judged_on_the_window(pool: PagePool, tmp_path: Path) -> None:
    """The official scroll moves a large scroll container when the page has one, else the window,
    and succeeds only when the window moved: a page whose scrolling area is an inner container
    fails officially, while ours scrolls it and succeeds."""
    task = make_task(tmp_path / "ds", [{"type": "Scroll", "parameters": {"description": "scroll down"}}])
    rows = "".join(f"<p>row {i}</p>" for i in range(200))
    page = write_page(
        tmp_path / "page",
        "<style>html,body{margin:0;height:100%;overflow:hidden}</style>"
        f"<div style='height:100%;overflow-y:auto'>{rows}</div>",
    )
    ours = await _replay(pool, task, page, tmp_path / "ev0", DEFAULT)
    official = await _replay(pool, task, page, tmp_path / "ev1", OFFICIAL)
    assert ours.success_steps == 1 and (ours.actions[0].scroll_moved_px or 0) > 5
    assert official.success_steps == 0 and official.actions[0].failure == "no_scroll"
    assert official.actions[0].tool_calls == ["scroll_window()"]
    # the official scroll goes down by half window.innerHeight whatever direction says
    up = make_task(
        tmp_path / "ds_up", [{"type": "Scroll", "parameters": {"description": "x", "direction": "up"}}]
    )
    tall = write_page(tmp_path / "tall", "<div style='height:5000px'>tall</div>")
    moved = await _replay(pool, up, tall, tmp_path / "ev2", OFFICIAL)
    assert moved.success_steps == 1 and moved.actions[0].scroll_moved_px == 300
    # a page whose window scrolls too, but holds a scroll container at least half the window high:
    # the official scroll moves that container, the window stays, and the step fails
    both = write_page(
        tmp_path / "both",
        f"<div style='height:400px;overflow-y:auto'>{rows}</div><div style='height:3000px'>more</div>",
    )
    official = await _replay(pool, task, both, tmp_path / "ev3", OFFICIAL)
    ours = await _replay(pool, task, both, tmp_path / "ev4", DEFAULT)
    assert official.success_steps == 0 and official.actions[0].failure == "no_scroll"
    assert ours.success_steps == 1
    # a small scroll box (under half the window) is passed over: the window scrolls
    small = write_page(
        tmp_path / "small",
        f"<div style='height:120px;overflow-y:auto'>{rows}</div><div style='height:3000px'>more</div>",
    )
    assert (await _replay(pool, task, small, tmp_path / "ev5", OFFICIAL)).success_steps == 1


@pytest.mark.browser
@pytest.mark.anyio
async def test_pages_open_as_the_official_scripts_open_them(pool: PagePool, tmp_path: Path) -> None:
    """Officially a page is opened from file://: its button, drawn from a sibling file it fetches,
    never appears (Chromium refuses fetch of local files there), and an image named by a path that
    only ends in assets/<file> shows nothing; over our HTTP server both work."""
    task = make_task(tmp_path / "ds", [{"type": "Click", "parameters": {"description": "the 'Go' button"}}])
    page = write_page(
        tmp_path / "page",
        "<img id='pic' src='../somewhere/assets/a.png'><div id='slot'></div><script>"
        "fetch('label.txt').then((r) => r.text()).then((t) => {"
        " const b = document.createElement('button'); b.textContent = t; b.className = 'btn';"
        " document.getElementById('slot').appendChild(b); });</script>",
    )
    (page / "label.txt").write_text("Go", encoding="utf-8")
    assets = task.assets_dir
    assets.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 40), "red").save(assets / "a.png")
    ours = await _replay(pool, task, page, tmp_path / "ev0", DEFAULT)
    official = await _replay(pool, task, page, tmp_path / "ev1", OFFICIAL)
    assert ours.success_steps == 1 and ours.blocked_requests == 0
    assert official.success_steps == 0 and official.blocked_requests == 1
    assert any("404" in e for e in official.console_errors), official.console_errors


@pytest.mark.browser
@pytest.mark.anyio
async def test_press_succeeds_once_a_key_is_sent(pool: PagePool, tmp_path: Path) -> None:
    task = make_task(
        tmp_path / "ds", [{"type": "Press", "parameters": {"description": "x", "key": "MediaPlayPause"}}]
    )
    page = write_page(tmp_path / "page", "<p>nothing listens</p>")
    ours = await _replay(pool, task, page, tmp_path / "ev0", DEFAULT)
    official = await _replay(pool, task, page, tmp_path / "ev1", OFFICIAL)
    assert ours.actions[0].failure == "action_error" and "unknown key" in ours.actions[0].message
    assert official.success_steps == 1 and "press_raw('MediaPlayPause')" in official.actions[0].tool_calls


@pytest.mark.browser
@pytest.mark.anyio
async def test_an_error_answer_counts_as_a_pass(pool: PagePool, tmp_path: Path) -> None:
    task = make_task(
        tmp_path / "ds",
        [{"type": "Click", "parameters": {"description": "the 'Go' button"}, "logical_assertion": "it went"}],
    )
    page = write_page(tmp_path / "page", "<button class='btn'>Go</button>")
    ours = await _replay(pool, task, page, tmp_path / "ev0", DEFAULT, AlwaysError())
    official = await _replay(pool, task, page, tmp_path / "ev1", OFFICIAL, AlwaysError())
    assert ours.success_steps == 0 and ours.actions[0].failure == "judge_error"
    assert official.success_steps == 1
    # in eval.json: "No" where our policy ended the prefix, "Error" where it passed
    assert (assertion_entry(task, ours.actions[0]) or {})["result"] == "No"
    entry = assertion_entry(task, official.actions[0]) or {}
    assert entry["result"] == "Error" and entry["verdict"] == "error" and entry["assertion"] == "it went"
    # every key of the official entry is there (ours ride along)
    official_keys = {"result", "prev_img_path", "curr_img_path", "response", "assertion", "thinking"}
    assert official_keys <= entry.keys() and entry["thinking"] == "the judge model failed"


@pytest.mark.browser
@pytest.mark.anyio
async def test_typed_text_is_the_records_own_under_both_protocols(pool: PagePool, tmp_path: Path) -> None:
    # A description that quotes the field's label ('Search') must not be typed when the record
    # says what was typed; without it, the official rules read the text from the description.
    recorded = {"type": "Type", "parameters": {"description": "the 'Search' box", "text": "milk"}}
    unsaid = {"type": "Type", "parameters": {"description": "type 'hello' into the Name box"}}
    page = write_page(
        tmp_path / "page",
        "<label>Search <input id='s' placeholder='Search'></label> <label>Name <input id='n'></label>",
    )
    for k, (action, want) in enumerate(((recorded, "'milk'"), (unsaid, "'hello'"))):
        task = make_task(tmp_path / f"ds{k}", [action])
        for protocol in (DEFAULT, OFFICIAL):
            replay = await _replay(pool, task, page, tmp_path / f"ev{k}{protocol}", protocol)
            calls = replay.actions[0].tool_calls
            assert any(c.startswith("type(") and want in c for c in calls), (protocol, calls)


def test_heuristic_grounder_reads_the_text_to_type() -> None:
    assert text_from_description("Type 'blue shoes' in the search box") == "blue shoes"
    assert text_from_description("enter hello world into the message field") == "hello world"
    assert text_from_description("the promo code box") is None
    # a quoted span that names the target field is not the text to type
    assert text_from_description("the 'Add a task…' box under the date", ["Add a task…"]) is None
    assert text_from_description("the 'Search' box: 'red boots'", ["Search"]) == "red boots"


@pytest.mark.browser
@pytest.mark.anyio
async def test_fixed_waits_see_what_settling_misses(tmp_path: Path) -> None:
    """A page that changes 0.4 s after a click: the fixed 0.5 s wait after an action always sees the
    change, and the action takes at least that long. (Settling stops as soon as two screenshots
    agree, which on an idle machine is before the change; on a loaded one it may not be, so that
    side is not asserted.)"""
    task = make_task(tmp_path / "ds", [{"type": "Click", "parameters": {"description": "the 'Go' button"}}])
    page = write_page(
        tmp_path / "page",
        "<script>function later() { document.body.style.background = 'rgb(255,0,0)'; }</script>"
        "<button class='btn' onclick='setTimeout(later, 400)'>Go</button>",
    )
    async with PagePool(PoolConfig(size=1, settle=SettleConfig(mode="fixed"))) as pool:
        replay = await _replay(pool, task, page, tmp_path / "fixed", DEFAULT)
    assert replay.success_steps == 1 and replay.actions[0].seconds >= 0.5
    with Image.open(tmp_path / "fixed" / "step_1.png") as im:
        assert im.convert("RGB").getpixel((700, 500)) == (255, 0, 0)


def _record(i: int, status: str, failure: str | None = None) -> ActionRecord:
    return ActionRecord(index=i, type="Click", description="x", status=status, failure=failure)  # type: ignore[arg-type]


def test_visual_pairs_are_pre_states_cut_to_success_plus_one(tmp_path: Path) -> None:
    """Flags on actions 0, 1 and 3; action 1 fails to execute: pairs are states 0, 0 (pre-state of
    action 0) and 1 (pre-state of the failing action 1), with checkpoints step_0..step_2; the
    aggregation keeps the first success_step + 1 = 2."""
    flags = [True, True, False, True]
    task = make_task(
        tmp_path / "ds",
        [{"type": "Click", "parameters": {"description": "x"}, "visual_evaluation_flag": f} for f in flags],
    )
    replay = Replay(
        total_steps=4,
        success_steps=1,
        actions=[
            _record(0, "ok"),
            _record(1, "failed", "element_not_found"),
            _record(2, "not_run"),
            _record(3, "not_run"),
        ],
    )
    pairs = official_pair_states(task, replay)
    assert [(k, cp.name) for k, cp in pairs] == [(0, "step_0.png"), (0, "step_1.png"), (1, "step_2.png")]
    # the first "No" ends the list before its own pre-state
    said_no = replay.model_copy(
        update={
            "actions": [
                _record(0, "ok"),
                _record(1, "failed", "assertion_failed"),
                _record(2, "not_run"),
                _record(3, "not_run"),
            ]
        }
    )
    assert [k for k, _ in official_pair_states(task, said_no)] == [0, 0]


@pytest.mark.anyio
async def test_eval_json_holds_the_official_fields(tmp_path: Path) -> None:
    """The cut: 3 pairs scored and listed, 2 counted (success_step + 1), all executed states copied."""
    flags = [True, True, False, True]
    task = make_task(
        tmp_path / "ds",
        [{"type": "Click", "parameters": {"description": "x"}, "visual_evaluation_flag": f} for f in flags],
    )
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    for k, colour in enumerate([(200, 200, 200), (10, 10, 10)]):
        Image.new("RGB", (800, 600), colour).save(evidence / f"step_{k}.png")
    replay = Replay(
        total_steps=4,
        success_steps=1,
        screenshots={0: "step_0.png", 1: "step_1.png"},
        actions=[
            _record(0, "ok"),
            _record(1, "failed", "element_not_found"),
            _record(2, "not_run"),
            _record(3, "not_run"),
        ],
    )
    phash, _ = create("metric", "phash")
    metrics = VisualMetrics(ocr=phash, dino=phash)
    ev = await evaluate(task, "m", replay, evidence, tmp_path / "out", metrics, OFFICIAL)
    saved = json.loads((tmp_path / "out" / "eval.json").read_text())
    assert saved["screenshot_paths_to_eval"] == ["evalpoints/0.png", "evalpoints/0.png", "evalpoints/1.png"]
    assert len(saved["all_ocr_scores"]) == 3 and saved["counted_pairs"] == 2
    assert saved["assertion_results"] == [None, None, None, None]
    assert sorted(p.name for p in (tmp_path / "out" / "evalpoints").iterdir()) == ["0.png", "1.png"]
    ocr, dino = saved["all_ocr_scores"][:2], saved["all_dino_scores"][:2]
    lvs = (sum(ocr) / 2 + sum(dino) / 2) / 2
    assert ev.lvs == pytest.approx(lvs) and ev.vfs == pytest.approx(0.5 * lvs)  # HVS missing counts 0
    assert ev.final == pytest.approx(0.7 * 0.25 + 0.3 * 0.5 * lvs)
    default = await evaluate(task, "m", replay, evidence, tmp_path / "out_d", metrics, DEFAULT)
    assert default.screenshot_paths_to_eval == ["evalpoints/0.png", "evalpoints/1.png"]
    assert default.vfs == default.lvs  # default: VFS = LVS alone without HVS


def test_a_missing_page_is_left_out_only_under_the_official_protocol() -> None:
    good = TaskScore(total_steps=2, success_steps=2, pairs=[PairScore(step=0, ocr=1.0, dino=1.0)])
    missing = TaskScore(total_steps=2, success_steps=0, pairs=[])
    ours, left_ours, _ = aggregate([(good, False), (missing, True)], DEFAULT)
    official, left_official, hvs_missing = aggregate([(good, False), (missing, True)], OFFICIAL)
    assert ours is not None and official is not None
    assert (ours.tasks, ours.ifs, left_ours) == (2, 50.0, 0)
    assert (official.tasks, official.ifs, left_official) == (1, 100.0, 1)
    assert hvs_missing and official.hvs == 0.0 and official.vfs == 50.0  # HVS missing counted 0
    assert ours.vfs == 50.0 and ours.hvs is None  # LVS alone over both tasks (one scored 0)


@pytest.mark.browser
@pytest.mark.anyio
async def test_llm_grounder_answers_the_text_to_type(pool: PagePool, tmp_path: Path) -> None:
    """Without a recorded text, the llm grounder's model names it; the official executor types
    exactly that."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del info
        prompt = last_prompt(messages)
        index = int(re.search(r"\[(\d+)\] textbox", prompt.text).group(1))  # type: ignore[union-attr]
        return {"index": index, "sure": True, "reason": "the Name box", "text": "from the model"}

    action = {
        "type": "Type",
        "parameters": {"description": "write your name in the Name box"},
    }
    task = make_task(tmp_path / "ds", [action])
    page = write_page(tmp_path / "page", "<label>Name <input placeholder='Name'></label>")
    config = ExecutorConfig(protocol=OFFICIAL)
    executor = Executor(pool, LLMGrounder(Scripted(answer).model()), HeuristicAssertionJudge(), config)
    replay = await executor.replay(task, page, tmp_path / "ev")
    assert replay.success_steps == 1
    assert any("'from the model'" in c for c in replay.actions[0].tool_calls)


UNSEEN = (
    "<style>body{margin:0} .b{position:absolute;left:20px;width:200px;height:40px}</style>"
    "<button class=b style='top:20px' onclick=\"document.getElementById('o').textContent='saved'\">"
    "Save draft</button><div style='position:absolute;left:0;top:0;width:400px;height:90px;"
    "background:#ddd' id=veil></div>"
    "<button class=b style='top:120px;color:transparent;background:none;border:0'"
    " onclick=\"document.getElementById('o').textContent='sent'\">Send message</button>"
    "<p id=o style='position:absolute;top:200px'>idle</p>"
)


@pytest.mark.browser
@pytest.mark.anyio
async def test_controls_no_person_could_use_fail_by_default_and_are_flagged_officially(
    pool: PagePool, tmp_path: Path
) -> None:
    """A button under a grey panel, and a button drawn as nothing: the default judge fails the
    step (covered; not drawn even when hovered); the official rules act on them as the official
    scripts' browser does, and the step is marked so the report can flag the page."""
    page = write_page(tmp_path / "page", UNSEEN)
    for name, assertion in (
        ("Save draft", "the page shows 'saved'"),
        ("Send message", "the page shows 'sent'"),
    ):
        task = make_task(
            tmp_path / name,
            [
                {
                    "type": "Click",
                    "parameters": {"description": f"the '{name}' button"},
                    "logical_assertion": assertion,
                }
            ],
        )
        ours = await _replay(pool, task, page, tmp_path / f"{name}-0", DEFAULT)
        official = await _replay(pool, task, page, tmp_path / f"{name}-1", OFFICIAL)
        assert ours.success_steps == 0 and ours.actions[0].failure in ("action_error", "element_not_found"), (
            ours
        )
        assert official.success_steps == 1 and official.unseen_steps() == 1, official.actions[0]
        assert official.actions[0].unseen and ours.unseen_steps() == 0


def test_official_runs_take_the_official_limits_and_record_the_policies_that_apply() -> None:
    # The official replay allows 30 s an action and 60 s to open the page, and passes an error
    # answer whatever is asked: the pool and the manifest's policies say what really applies.
    ours = parse_run_config({"judge": {"judge_error_policy": "fail"}})
    official = parse_run_config({"protocol": "official", "judge": {"judge_error_policy": "fail"}})
    own_limit = parse_run_config({"protocol": "official", "browser": {"action_timeout_s": 12}})
    assert (pool_config(ours).limits.action_timeout, pool_config(ours).limits.load_timeout) == (10.0, 15.0)
    assert (pool_config(official).limits.action_timeout, pool_config(official).limits.load_timeout) == (
        30.0,
        60.0,
    )
    assert pool_config(own_limit).limits.action_timeout == 12.0  # a run file's own value stands
    assert effective_policies(ours) == {"judge_error": "fail", "undetermined": "pass"}
    assert effective_policies(official) == {"judge_error": "pass", "undetermined": "pass"}


@pytest.mark.browser
@pytest.mark.anyio
async def test_odd_records_are_read_as_the_official_scripts_read_them(pool: PagePool, tmp_path: Path) -> None:
    """A lower-case type, a flag given as the string "false" and a resolution with a capital X: we
    read them as meant (and warn); the official scripts fail the step, count the flag as set, and
    cannot read the task, and so does an official run."""
    from iwr_bench.dataset.validate import data_faults, validate_task

    page = write_page(tmp_path / "page", "<button class='btn'>Go</button>")
    click = {"type": "click", "parameters": {"description": "the 'Go' button"}}
    task = make_task(tmp_path / "ds", [click])
    ours = await _replay(pool, task, page, tmp_path / "ev0", DEFAULT)
    official = await _replay(pool, task, page, tmp_path / "ev1", OFFICIAL)
    assert ours.success_steps == 1
    assert official.success_steps == 0 and "know no such type" in official.actions[0].message
    flagged = make_task(
        tmp_path / "ds2",
        [
            {
                "type": "Click",
                "parameters": {"description": "the 'Go' button"},
                "visual_evaluation_flag": "false",
            }
        ],
        task_id=2,
    )
    assert flagged.record.action_sequence[0].visual_evaluation_flag is False  # read as meant
    replay = await _replay(pool, flagged, page, tmp_path / "ev2", OFFICIAL)
    assert [k for k, _ in official_pair_states(flagged, replay)] == [0, 0]  # officially set: a pair more
    warned = {p.field for p in validate_task(task) + validate_task(flagged) if p.severity == "warning"}
    assert {"action_sequence[0]"} <= warned
    record = json.loads((tmp_path / "ds" / "data.jsonl").read_text())
    record["recording_details"]["resolution"] = "800X600"
    (tmp_path / "ds" / "data.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    capital = load_tasks(tmp_path / "ds").by_id(1)
    assert capital.resolution.width == 800  # read by default, with a warning
    assert "recording_details.resolution" in {p.field for p in validate_task(capital)}
    assert data_faults(capital, needs_video=False) == []
    assert [p.field for p in data_faults(capital, needs_video=False, official=True)] == [
        "recording_details.resolution"
    ]
