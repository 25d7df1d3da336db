"""Each tool on a small interactive page, in a real headless Chromium."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from patience import roomy

from iwr_bench.dataset.models import Action, ActionParameters, scroll_region
from iwr_bench.metrics.hashing import as_image
from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.models import PageSpec, SettleConfig, Viewport
from iwr_bench.tools.pool import PagePool
from iwr_bench.tools.tools import PageTools

pytestmark = [pytest.mark.browser]

APP = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif; }
#menu { display: none; } #wrap:hover #menu { display: block; }
</style></head><body>
<h1 id="title">Start</h1>
<button id="go" onclick="document.getElementById('title').textContent = 'Clicked'">Go</button>
<input id="name" placeholder="Your name" oninput="document.getElementById('echo').textContent = this.value">
<p id="echo"></p>
<div id="wrap"><span id="hov" style="cursor:pointer">Hover me</span><div id="menu">Menu open</div></div>
<a href="#x" aria-label="Anchor link">Link</a>
<p id="keys"></p>
<div style="height: 3000px"></div>
<script>
document.addEventListener('keydown', (e) => {
  document.getElementById('keys').textContent += '[' + e.key + ']';
});
</script>
</body></html>"""


def _index(obs_elements: list[object], **match: str) -> int:
    for el in obs_elements:
        if all(getattr(el, k) == v for k, v in match.items()):
            return int(el.index)  # type: ignore[attr-defined]
    raise AssertionError(f"no element with {match}")


@pytest.mark.anyio
async def test_observe_lists_elements_and_text(pool: PagePool, write_page: Callable[..., Path]) -> None:
    page = write_page(APP)
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=800, height=600))) as tools:
        obs = await tools.observe()
    tags = [(e.tag, e.text) for e in obs.elements]
    assert ("button", "Go") in tags
    field = next(e for e in obs.elements if e.tag == "input")
    assert field.placeholder == "Your name" and field.role == "textbox"
    link = next(e for e in obs.elements if e.tag == "a")
    assert link.aria_label == "Anchor link" and link.role == "link" and link.href == "#x"
    assert any(e.text == "Hover me" for e in obs.elements)
    assert "Start" in obs.text
    assert all(e.box.width > 0 for e in obs.elements)


@pytest.mark.anyio
async def test_click_type_press_hover(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(PageSpec(page=str(write_page(APP)))) as tools:
        obs = await tools.observe()
        result = await tools.click(_index(obs.elements, tag="button"))
        assert result.action == "click" and result.settled
        assert "Clicked" in (await tools.observe()).text

        obs = await tools.observe()
        await tools.type(_index(obs.elements, tag="input"), "Ada")
        assert "Ada" in (await tools.observe()).text

        await tools.press("Enter")
        await tools.press("Escape")
        text = (await tools.observe()).text
        assert "[Enter]" in text and "[Escape]" in text

        obs = await tools.observe()
        assert "Menu open" not in obs.text
        await tools.hover(_index(obs.elements, text="Hover me"))
        assert "Menu open" in (await tools.observe()).text


@pytest.mark.anyio
async def test_scroll_reports_movement(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(
        PageSpec(page=str(write_page(APP)), viewport=Viewport(width=800, height=600))
    ) as tools:
        down = await tools.scroll("down")
        assert down.target == "document" and down.moved_px == pytest.approx(300, abs=2)
        up = await tools.scroll("up", 100)
        assert up.moved_px == pytest.approx(100, abs=2)
        state = await tools.page_state()
        assert state.scroll_y == pytest.approx(200, abs=2)
        top = await tools.scroll("up", 1000)
        assert top.moved_px == pytest.approx(200, abs=2)
        stuck = await tools.scroll("up")
        assert stuck.moved_px <= 5


@pytest.mark.anyio
async def test_scroll_moves_main_container(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = """<html><body style="margin:0;overflow:hidden;height:100vh">
    <div id="main" style="height:100vh;overflow-y:auto"><div style="height:5000px">long</div></div>
    </body></html>"""
    async with pool.page(
        PageSpec(page=str(write_page(html)), viewport=Viewport(width=640, height=480))
    ) as tools:
        result = await tools.scroll("down")
        assert result.target == "container" and result.moved_px == pytest.approx(240, abs=2)
        assert (await tools.page_state()).container_scroll_y == pytest.approx(240, abs=2)


SCROLL_PANELS = (
    """<html><body style="margin:0">
<div class="panel"><h3>Top products</h3>
  <ul id="products" style="height:150px;overflow-y:auto;margin:0">"""
    + "<li>chair</li>" * 40
    + """</ul></div>
<div class="panel"><h3>Recent orders</h3>
  <ul id="orders" style="height:120px;overflow-y:auto;margin:0">"""
    + "<li>#51 paid</li>" * 40
    + """</ul></div>
<div style="height:3000px">the rest of the page</div>
</body></html>"""
)


@pytest.mark.anyio
async def test_scroll_inside_the_region_the_description_names(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    """'scroll down inside the Recent orders list' scrolls that list, though the page and a bigger
    list could scroll too; 'scroll down the page' names no region and scrolls the page."""
    named = Action(
        type="Scroll", parameters=ActionParameters(description="scroll down inside the Recent orders list")
    )
    page = Action(type="Scroll", parameters=ActionParameters(description="scroll down the page"))
    assert scroll_region(named) == ["recent", "orders"] and scroll_region(page) == []
    async with pool.page(
        PageSpec(page=str(write_page(SCROLL_PANELS)), viewport=Viewport(width=640, height=480))
    ) as tools:
        inside = await tools.scroll("down", region=scroll_region(named))
        assert inside.target == "container" and inside.moved_px == pytest.approx(240, abs=2)
        orders = await tools.tab.evaluate("[document.getElementById('orders').scrollTop, window.scrollY]")
        assert orders[0] > 0 and orders[1] == 0
        whole = await tools.scroll("down", region=scroll_region(page))
        assert whole.target == "document" and whole.moved_px == pytest.approx(240, abs=2)


@pytest.mark.anyio
async def test_screenshot_is_viewport_png(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(
        PageSpec(page=str(write_page(APP)), viewport=Viewport(width=640, height=360))
    ) as tools:
        png = await tools.screenshot()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert as_image(png).size == (640, 360)


COVERED = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif } button { position: absolute; width: 120px; height: 40px }
#veil { position: fixed; inset: 0; opacity: 0; z-index: 5 }
#half { position: absolute; left: 10px; top: 60px; width: 60px; height: 40px; background: #ddd; z-index: 5 }
#ghost { position: fixed; inset: 0; pointer-events: none; z-index: 5; background: rgba(0, 0, 0, .1) }
.fake input { opacity: 0; position: absolute; left: 10px; top: 120px; width: 20px; height: 20px }
.fake span { position: absolute; left: 10px; top: 120px; width: 20px; height: 20px; background: #39f;
  z-index: 2 }
</style></head><body>
<button id=under style="left:300px;top:200px" onclick="log('under')">Under the veil</button>
<div id=veil onclick="log('veil')"></div>
<button id=part style="left:10px;top:60px" onclick="log('part')">Half hidden</button><div id=half></div>
<div id=ghost></div>
<label class=fake><input id=box type=checkbox onchange="log('box ' + this.checked)"><span></span></label>
<p id=log style="position:absolute;top:300px"></p>
<script>const log = (t) => { document.getElementById('log').textContent += '[' + t + ']'; };
document.getElementById('veil').style.display = 'none';</script>
</body></html>"""


@pytest.mark.anyio
async def test_a_click_goes_where_the_element_is_on_top_and_a_covered_one_is_refused(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    async with pool.page(
        PageSpec(page=str(write_page(COVERED)), viewport=Viewport(width=640, height=360))
    ) as tools:
        obs = await tools.observe()
        # partly covered: the click lands on the part a person can see; a pointer-events: none
        # tint over everything is looked through, as the browser does; a checkbox under its own
        # label's drawing is reached through the label
        await tools.click(_index(obs.elements, text="Half hidden"))
        await tools.click(_index(obs.elements, tag="input"))
        assert "[part][box true]" in (await tools.observe()).text
        # an invisible layer over the whole page takes every click: the judge refuses to click
        # "through" it, since a person's click would land on the layer
        await tools.tab.evaluate("document.getElementById('veil').style.display = 'block'")
        obs = await tools.observe()
        with pytest.raises(ToolRetry, match=r"covered: button#\d+ is under div#veil"):
            await tools.click(_index(obs.elements, text="Under the veil"))
        assert "[under]" not in (await tools.observe()).text and "[veil]" not in (await tools.observe()).text


DRAWN = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif; background: #fff } .row { height: 34px }
.bare { background: none; border: 0; padding: 0; font: inherit }
</style></head><body>
<div class=row><button id=plain>Save</button></div>
<div class=row><button id=svg-icon class=bare aria-label="Settings"><svg width=16 height=16>
  <circle cx=8 cy=8 r=6 fill=#333 /></svg></button></div>
<div class=row><a id=link href="#a">Pricing</a></div>
<div class=row><span id=css-icon class=bare role=button aria-label="Close"
  style="display:inline-block;width:16px;height:16px;background:url(data:image/gif;base64,R0lGODlhAQABAAAAACw=)">
  </span></div>
<div class=row><input id=field placeholder="Search"></div>
<div class=row style="background:#1e3a8a"><button id=on-navy class=bare style="color:#fff">Next</button></div>
<div class=row><button id=transparent-ink class=bare style="color:transparent">Notifications</button></div>
<div class=row>
  <button id=white-on-white class=bare style="color:#fff;background:#fff">Appearance</button></div>
<div class=row><button id=filtered style="filter:opacity(0)">Delete</button></div>
<div class=row><div style="mask-image:linear-gradient(transparent,transparent)">
  <button id=masked>Rate 4</button></div></div>
<div class=row><button id=clipped style="clip-path:inset(50%)">Submit</button></div>
<div class=row><button id=tiny class=bare style="font-size:2px">Continue</button></div>
<div class=row><input id=bare-field class=bare style="color:transparent;outline:none" value="milk"></div>
<div class=row>
  <a id=empty-link href="#b" aria-label="Home" style="display:inline-block;width:40px;height:16px"></a></div>
</body></html>"""


@pytest.mark.anyio
async def test_observe_marks_controls_that_draw_nothing_as_not_drawn(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    """A control is drawn when it, or what it holds, shows something: a fill, a border, a picture,
    legible text. Transparent, same-coloured, tiny, filtered, masked and clipped-away controls draw
    nothing (the judge hovers such a control and acts only if it then shows)."""
    async with pool.page(
        PageSpec(page=str(write_page(DRAWN)), viewport=Viewport(width=640, height=600))
    ) as tools:
        await tools.tab.evaluate("document.getElementById('bare-field').style.border = '0'")
        obs = await tools.observe()
        ids = await tools.tab.evaluate("window.__iwr__.els.map((e) => e.id)")
    hidden = {ids[e.index] for e in obs.elements if e.hidden}
    drawn = {ids[e.index] for e in obs.elements if not e.hidden}
    assert drawn == {"plain", "svg-icon", "link", "css-icon", "field", "on-navy"}, (drawn, hidden)
    assert hidden == {
        "transparent-ink",
        "white-on-white",
        "filtered",
        "masked",
        "clipped",
        "tiny",
        "bare-field",
        "empty-link",
    }


@pytest.mark.anyio
async def test_emoji_are_drawn_in_colour_not_as_empty_boxes(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    # set-up installs an emoji font; without one Chromium draws a hollow box in the text colour
    page = (
        '<body style="margin:0;background:#fff"><span style="font-size:64px">&#x1F600;&#x1F34E;</span></body>'
    )
    async with pool.page(
        PageSpec(page=str(write_page(page)), viewport=Viewport(width=200, height=100))
    ) as tools:
        png = await tools.screenshot()
    rgb = np.asarray(as_image(png).convert("RGB")).astype(int)
    coloured = int(((rgb.max(axis=2) - rgb.min(axis=2)) > 60).sum())
    assert coloured > 500, coloured  # yellow face and red apple, not black outlines


@pytest.mark.anyio
async def test_misuse_raises_retryable(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(PageSpec(page=str(write_page(APP)))) as tools:
        with pytest.raises(ToolRetry, match="observe"):
            await tools.click(0)
        obs = await tools.observe()
        with pytest.raises(ToolRetry, match="out of range"):
            await tools.click(len(obs.elements) + 5)
        with pytest.raises(ToolRetry, match="unknown key"):
            await tools.press("NoSuchKey")
        await tools.page_state()  # the page is still usable
        state = await tools.page_state()
        assert state.failure is None


@pytest.mark.anyio
async def test_stale_index_after_dom_change(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = """<html><body><button onclick="this.remove()">Remove me</button></body></html>"""
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        await tools.observe()
        await tools.click(0)
        with pytest.raises(ToolRetry, match="no longer on the page"):
            await tools.click(0)


@pytest.mark.anyio
async def test_assets_served_from_placeholder_path(
    pool: PagePool, write_page: Callable[..., Path], tmp_path: Path
) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "data.txt").write_text("asset-ok", encoding="utf-8")
    html = """<html><body><p id="out">wait</p><script>
    fetch('__PLACEHOLDER_ASSETS_BASE_DIR__/data.txt').then(r => r.text()).then(t => {
      document.getElementById('out').textContent = t; });
    </script></body></html>"""
    page = write_page(html, "page.html")
    async with pool.page(PageSpec(page=str(page), assets_dir=str(assets))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "asset-ok" in obs.text
    assert state.blocked_requests == []


@pytest.mark.anyio
async def test_fixed_settle_mode_sleeps_the_published_wait(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    async with pool.page(PageSpec(page=str(write_page(APP)))) as tools:
        fixed = PageTools(tools.tab, SettleConfig(mode="fixed", after_action=0.2), tools.limits)
        await fixed.observe()
        result = await fixed.click(0)
    assert result.settled and result.settle_seconds >= 0.2


TOAST = """<!doctype html><html><body style="margin:0;font:20px sans-serif">
<button id="go" onclick="add()">Add</button><p id="n">0</p><div id="toasts"></div>
<script>
function add() {
  document.getElementById('n').textContent = String(Number(document.getElementById('n').textContent) + 4);
  const el = document.createElement('div');
  el.textContent = '+4';
  document.getElementById('toasts').appendChild(el);
  setTimeout(() => el.remove(), 300);
}
</script></body></html>"""


@pytest.mark.anyio
async def test_settling_waits_out_a_brief_toast(pool: PagePool, write_page: Callable[..., Path]) -> None:
    """A state shown for 300 ms is never the settled one: every click settles on the same pixels."""
    settle = SettleConfig(interval=0.05, max_wait=2.0)
    async with pool.page(PageSpec(page=str(write_page(TOAST)))) as tools:
        stable = PageTools(tools.tab, settle, tools.limits)
        await stable.observe()
        shots = []
        for _ in range(3):
            result = await stable.click(0)
            assert result.settled and result.settle_seconds >= settle.quiet
            shots.append(await stable.screenshot())
            await anyio.sleep(0.4)  # the toast is long gone by now
            assert await stable.screenshot() == shots[-1]
            # put the counter back so the next click shows the same state again
            await tools.tab.evaluate("document.getElementById('n').textContent = '0'")
    assert shots[0] == shots[1] == shots[2]


SPINNER = """<!doctype html><html><body style="margin:0">
<div id="s" style="width:40px;height:40px;background:#36c"></div><button>Go</button>
<script>
let t = 0;
setInterval(() => { t++; document.getElementById('s').style.marginLeft = (t % 2) + 'px'; }, 30);
</script></body></html>"""


@pytest.mark.anyio
async def test_a_page_that_keeps_moving_settles_on_its_perceptual_hash(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    # (the bound only ends a hang: under load two screenshots in a row can take longer than an
    # idle machine's 2 s, and the page is still settled by its hash, not by running out of time)
    settle = SettleConfig(interval=0.05, max_wait=min(60.0, roomy(2.0)), tolerant_after=0.6)
    async with pool.page(PageSpec(page=str(write_page(SPINNER)))) as tools:
        moving = PageTools(tools.tab, settle, tools.limits)
        await moving.observe()
        result = await moving.click(0)
    assert result.settled and 0.6 <= result.settle_seconds < settle.max_wait


def test_viewport_parse() -> None:
    assert Viewport.parse("1280x720") == Viewport(width=1280, height=720)
    with pytest.raises(ValueError, match="1280x720"):
        Viewport.parse("wide")
