"""The offline assertion judge judges what a person sees, on real Chromium pages.

Hidden, covered, transparent, filtered, masked, clipped, same-coloured, tiny and off-screen text
does not satisfy an assertion (legible text in the same styles does); a bare value is
looked up in the element the assertion names; text already shown before the action is not the
change an assertion describes; and on a 2048-style game every mutant fails at the step it breaks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from judge_site import write_page
from tile_game import GAME, MUTANTS, SCRIPT, game

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge, decide
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.records import AssertionRequest, AssertionVerdict, Replay
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.dataset.recorder import record
from iwr_bench.dataset.script import load_script
from iwr_bench.tools.models import PageSpec, Viewport, VisibleText
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

_STYLE = """<style>body { margin: 0; font: 16px sans-serif } .box { position: relative; height: 30px }
.cover { position: absolute; inset: 0; background: #fff }</style>"""


def _html(body: str) -> str:
    return f"<!doctype html><html><head>{_STYLE}</head><body><h1>Notes</h1>{body}</body></html>"


async def _seen(pool: PagePool, tmp_path: Path, name: str, body: str) -> VisibleText:
    page = write_page(tmp_path / name, _html(body))
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=480, height=360))) as tools:
        return await tools.visible_text()


async def _judge(pool: PagePool, tmp_path: Path, assertion: str, before: str, after: str) -> AssertionVerdict:
    """Decide ``assertion`` between two real pages' visible text (the page changed)."""
    seen_before = await _seen(pool, tmp_path, "before", before)
    seen_after = await _seen(pool, tmp_path, "after", after)
    return decide(assertion, None, None, True, seen_before=seen_before, seen_after=seen_after)


HIDDEN_SAVED = {
    "display-none": '<p style="display:none">Saved</p>',
    "visibility-hidden": '<p style="visibility:hidden">Saved</p>',
    "covered": '<div class="box"><p>Saved</p><div class="cover"></div></div>',
    "transparent-ink": '<p style="color:rgba(0,0,0,0)">Saved</p>',
    "faded-out": '<div style="opacity:0.3"><p style="opacity:0.1">Saved</p></div>',
    "outside-viewport": '<p style="position:absolute; left:-3000px">Saved</p>',
    "clipped": '<div style="height:0; overflow:hidden"><p>Saved</p></div>',
    # the ways a page can write text no person reads (each seen used to game the judge)
    "filter-opacity": '<div style="filter: opacity(0)"><p>Saved</p></div>',
    "filter-opacity-percent": '<p style="filter: blur(0px) opacity(2%)">Saved</p>',
    "masked": '<p style="mask-image: linear-gradient(transparent, transparent)">Saved</p>',
    "webkit-masked": '<p style="-webkit-mask-image: linear-gradient(rgba(0,0,0,0), transparent)">Saved</p>',
    "clip-path-inset": '<div style="clip-path: inset(50%)"><p>Saved</p></div>',
    "clip-path-circle": '<p style="clip-path: circle(0)">Saved</p>',
    "clip-path-polygon": '<p style="clip-path: polygon(0 0, 0 0, 0 0)">Saved</p>',
    "same-colour": '<p style="color:#fff">Saved</p>',
    "same-colour-on-a-panel": '<div style="background:#1e3a8a"><p style="color:#1e3a8a">Saved</p></div>',
    "nearly-same-colour": '<p style="color:#fbfbfb">Saved</p>',
    "one-pixel": '<p style="font-size:1px">Saved</p>',
    "scaled-away": '<p style="transform: scale(0.05); transform-origin: 0 0">Saved</p>',
}

SHOWN_SAVED = {  # legible text in the same families of style: still read
    "white-on-navy": '<div style="background:#1e3a8a"><p style="color:#fff">Saved</p></div>',
    "light-grey": '<p style="color:#9ca3af">Saved</p>',
    "shadowed-same-colour": '<p style="color:#fff; text-shadow: 0 0 2px #000">Saved</p>',
    "over-a-picture": (
        '<div style="position:relative; height:60px; background-image: linear-gradient(#111, #333)">'
        '<p style="position:absolute; top:0; color:#eee">Saved</p></div>'
    ),
    "half-transparent": '<p style="filter: opacity(0.6)">Saved</p>',
    "soft-mask": '<p style="mask-image: linear-gradient(#000, rgba(0,0,0,0.4))">Saved</p>',
    "clip-path-round": '<p style="clip-path: inset(0 round 6px)">Saved</p>',
    "small-print": '<p style="font-size:9px">Saved</p>',
}


@pytest.mark.parametrize("case", sorted(HIDDEN_SAVED))
async def test_hidden_text_does_not_satisfy_an_assertion(pool: PagePool, tmp_path: Path, case: str) -> None:
    verdict = await _judge(pool, tmp_path, "a message 'Saved' appears", "<p>Draft</p>", HIDDEN_SAVED[case])
    assert verdict.verdict == "no", verdict
    shown = await _judge(
        pool, tmp_path / "shown", "a message 'Saved' appears", "<p>Draft</p>", "<p>Saved</p>"
    )
    assert shown.verdict == "yes", shown


@pytest.mark.parametrize("case", sorted(SHOWN_SAVED))
async def test_legible_text_satisfies_an_assertion(pool: PagePool, tmp_path: Path, case: str) -> None:
    verdict = await _judge(pool, tmp_path, "a message 'Saved' appears", "<p>Draft</p>", SHOWN_SAVED[case])
    assert verdict.verdict == "yes", verdict


async def test_text_below_the_fold_is_undetermined_and_far_below_is_not_shown(
    pool: PagePool, tmp_path: Path
) -> None:
    # a little scrolling would show it: the judge cannot tell from the screen
    near = '<div style="height:400px"></div><p>Saved</p>'
    verdict = await _judge(pool, tmp_path, "a message 'Saved' appears", "<p>Draft</p>", near)
    assert verdict.verdict == "undetermined" and "outside the viewport" in verdict.reasoning
    # screens away (a page that hides its words far below a picture): not on the screen a person
    # judges, as for the official judge, which sees screenshots
    far = '<div style="height:2000px"></div><p>Saved</p>'
    verdict = await _judge(pool, tmp_path / "far", "a message 'Saved' appears", "<p>Draft</p>", far)
    assert verdict.verdict == "no" and "not shown" in verdict.reasoning
    gone = await _judge(
        pool, tmp_path / "g", "the message 'Draft' disappears", "<p>Draft</p>", far.replace("Saved", "Draft")
    )
    assert gone.verdict == "yes", gone


SCORE = '<div style="display:flex; gap:8px"><span>Score</span><b id="score">{score}</b></div>{board}'


async def test_a_value_is_looked_up_in_the_element_the_assertion_names(
    pool: PagePool, tmp_path: Path
) -> None:
    before = SCORE.format(score=0, board='<div class="tile">2</div>')
    wrong = SCORE.format(score=2, board='<div class="tile">4</div>')
    verdict = await _judge(pool, tmp_path, "the score shows 4", before, wrong)
    assert verdict.verdict == "no" and "the score shows" in verdict.reasoning, verdict
    assert decide("the score shows 4", before, wrong, True).verdict == "yes"  # page-wide text: fooled
    right = SCORE.format(score=4, board='<div class="tile">2</div>')
    assert (await _judge(pool, tmp_path / "r", "the score shows 4", before, right)).verdict == "yes"


async def test_text_shown_before_is_not_the_change(pool: PagePool, tmp_path: Path) -> None:
    before = "<p>Saved</p><p>Draft 1</p>"
    after = "<p>Saved</p><p>Draft 2</p>"
    verdict = await _judge(pool, tmp_path, "a message 'Saved' appears", before, after)
    assert verdict.verdict == "no" and "already shown before" in verdict.reasoning, verdict
    fresh = await _judge(pool, tmp_path / "f", "a message 'Saved' appears", "<p>Draft 1</p>", after)
    assert fresh.verdict == "yes"
    still = await _judge(pool, tmp_path / "s", "the page shows 'Saved'", before, after)
    assert still.verdict == "yes"  # no change claimed: being there is enough


LEFTOVERS = """<div class="box" style="width:60px; height:60px">
<div class="tile" style="position:absolute; inset:0; background:#eee; z-index:1">4</div>
<div class="tile" style="position:absolute; inset:0; background:#eee; z-index:1">4</div>
<div class="tile" style="position:absolute; inset:0; background:#f2b179; z-index:2">8</div></div>
<div style="position:relative"><span style="position:absolute; opacity:0">+8</span></div>"""


async def test_hidden_leftovers_are_ignored(pool: PagePool, tmp_path: Path) -> None:
    before = '<div class="tile">4</div><div class="tile">4</div>'
    verdict = await _judge(pool, tmp_path, "the 4 tiles are gone and an 8 tile appears", before, LEFTOVERS)
    assert verdict.verdict == "yes", verdict
    popup = await _judge(pool, tmp_path / "p", "a '+8' pop-up appears", before, LEFTOVERS)
    assert popup.verdict == "no", popup


def test_partly_checkable_assertions_are_undetermined() -> None:
    verdict = decide("the board is reset to two tiles and the score shows 0", "Score 8", "Score 0", True)
    assert verdict.verdict == "undetermined" and "reset to two tiles" in verdict.reasoning
    assert decide("the board is reset to two tiles", "a", "b", True).verdict == "undetermined"
    assert decide("the board is reset to two tiles and the score shows 0", "8", "5", True).verdict == "no"


# ----- the 2048-style game and its mutants ------------------------------------------------------------


class PageTextJudge:
    """The same rules on the whole page text (``innerText``), as the judge worked before visible text."""

    def __init__(self) -> None:
        self.inner = HeuristicAssertionJudge()

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        return await self.inner(request.model_copy(update={"before_visible": None, "after_visible": None}))


@pytest.fixture(scope="module")
async def game_task(pool: PagePool, tmp_path_factory: pytest.TempPathFactory) -> Task:
    root = tmp_path_factory.mktemp("game")
    write_page(root / "site", GAME)
    (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    await record(root / "site", load_script(root / "script.yaml"), root / "ds", pool=pool)
    return load_tasks(root / "ds").by_id(21)


def _first_failure(replay: Replay) -> int | None:
    return next((a.index for a in replay.actions if a.status == "failed"), None)


async def test_game_reference_passes_a_claim_text_cannot_check_on_the_recorded_screen(
    game_task: Task, pool: PagePool, tmp_path: Path
) -> None:
    executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
    replay = await executor.replay(game_task, write_page(tmp_path / "ref", GAME), tmp_path / "ev")
    verdicts = [a.assertion.verdict if a.assertion else a.message for a in replay.actions]
    # "the board is reset to its starting tiles" has no text to check: the screen after the action
    # is the recording's checkpoint, pixel for pixel, so it holds (test_recorded_witness.py)
    assert verdicts == ["yes", "yes", "yes", "yes"], replay.actions
    last = replay.actions[-1].assertion
    assert last is not None and "recording's screen" in last.reasoning
    assert replay.undetermined == 0 and replay.success_steps == 4


async def test_game_mutants_fail_at_the_step_they_break(
    game_task: Task, pool: PagePool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    visible = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
    page_text = Executor(pool, HeuristicGrounder(), PageTextJudge())
    rows: list[tuple[str, int | None, int | None, int | None]] = []
    for name, (changes, expected, _) in MUTANTS.items():
        page = write_page(tmp_path / name, game(**changes))
        got = _first_failure(await visible.replay(game_task, page, tmp_path / f"ev-{name}"))
        before = _first_failure(await page_text.replay(game_task, page, tmp_path / f"ev0-{name}"))
        rows.append((name, expected, got, before))
    with capsys.disabled():
        print("\nmutant                      expected  visible-text judge  page-text judge")
        for name, expected, got, before in rows:
            print(f"{name:<28}{expected!s:>8}{got!s:>20}{before!s:>17}")
        hits = sum(got == expected for _, expected, got, _ in rows)
        old = sum(before == expected for _, expected, _, before in rows)
        print(f"at the expected step: visible text {hits}/{len(rows)}, page text {old}/{len(rows)}")
    assert [(n, got) for n, _, got, _ in rows] == [(n, e) for n, e, _, _ in rows]
    assert sum(before != expected for _, expected, _, before in rows) >= 2  # the page text is fooled
