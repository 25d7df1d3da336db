"""The same page judged twice gives byte-identical screenshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

PAGE = """<!doctype html><html><body style="margin:0;font:14px sans-serif">
<div id="boxes"></div>
<p id="clock"></p><p id="tz"></p>
<input id="field" autofocus placeholder="caret here">
<button id="more" onclick="paint()">more</button>
<script>
function paint() {
  for (let i = 0; i < 12; i++) {
    const d = document.createElement('div');
    d.style.cssText = 'display:inline-block;width:40px;height:40px;' +
      `background:hsl(${Math.random() * 360},70%,50%)`;
    document.getElementById('boxes').appendChild(d);
  }
}
paint();
const now = new Date();
const clock = document.getElementById('clock');
clock.textContent = now.toISOString().slice(0, 16) + ' ' + now.toLocaleDateString();
const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
document.getElementById('tz').textContent = zone + ' ' + navigator.language;
</script></body></html>"""


async def _judge(pool: PagePool, page: Path) -> tuple[list[bytes], str]:
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        shots = [await tools.screenshot()]
        obs = await tools.observe()
        await tools.click(next(e.index for e in obs.elements if e.tag == "button"))
        shots.append(await tools.screenshot())
        text = (await tools.observe()).text
    return shots, text


async def test_same_page_twice_gives_identical_screenshots(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    page = write_page(PAGE)
    first, text = await _judge(pool, page)
    second, _ = await _judge(pool, page)
    assert first[0] != first[1]  # the click changed the page
    assert first == second
    assert "2024-01-01T00:00" in text and "UTC en-US" in text


async def test_seed_differs_between_pages(pool: PagePool, write_page: Callable[..., Path]) -> None:
    script = "<p id='r'></p><script>document.getElementById('r').textContent = 'r=' + Math.random();</script>"
    values = []
    for name in ("a.html", "b.html", "a.html"):
        extra = "<!-- b -->" if name == "b.html" else ""
        async with pool.page(
            PageSpec(page=str(write_page(f"<html><body>{script}{extra}</body></html>", name)))
        ) as t:
            values.append((await t.observe()).text)
    assert values[0] == values[2] and values[0] != values[1]


COUNTDOWN = """<!doctype html><html><body style="margin:0;font:14px sans-serif">
<p id="left">10</p><p id="ticks">0</p><p id="frames">0</p><p id="later"></p>
<button id="go" onclick="start()">start</button><button id="poke">poke</button>
<script>
let left = 10, timer = null, frames = 0;
const t0 = Date.now();
function start() {
  if (timer !== null) return;
  timer = setInterval(() => {
    left -= 1;
    document.getElementById('left').textContent = String(left);
    if (left === 0) clearInterval(timer);
  }, 1000);
}
setTimeout("document.getElementById('later').textContent = 'at ' + (Date.now() - t0)", 250);
setTimeout(() => Promise.resolve().then(() => {
  document.getElementById('ticks').textContent = 'p' + performance.now();
}), 500);
(function frame(ts) {
  frames += 1;
  document.getElementById('frames').textContent = frames + '@' + Math.round(ts || 0);
  if (frames < 1000) requestAnimationFrame(frame);
})();
</script></body></html>"""

_PROBE = (
    "[...['left', 'later', 'ticks', 'frames'].map((i) => document.getElementById(i).textContent),"
    " String(setTimeout), setTimeout.name, setTimeout.length]"
)


async def test_a_stepped_clock_ticks_per_action_not_per_second(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    page = write_page(COUNTDOWN)
    spec = PageSpec(page=str(page), viewport=Viewport(width=640, height=400), clock_step_ms=1000)
    seen = []
    for pause in (0.0, 1.6):  # the same actions, taken quickly and slowly
        async with pool.page(spec) as tools:
            after_load = await tools.tab.evaluate(_PROBE, world="page")
            obs = await tools.observe()
            buttons = {e.text: e.index for e in obs.elements if e.tag == "button"}
            await tools.click(buttons["start"])
            states = [await tools.tab.evaluate(_PROBE, world="page")]
            for _ in range(3):
                await anyio.sleep(pause)
                await tools.click(buttons["poke"])
                states.append(await tools.tab.evaluate(_PROBE, world="page"))
            seen.append((after_load, states))
    assert seen[0] == seen[1]  # however long each action took
    after_load, states = seen[0]
    # the load's step ran the timers due within 1 s: the string handler at 250 ms, the promise at
    # 500 ms, and 60 animation frames with page-time stamps
    assert after_load[:4] == ["10", "at 250", "p500", "60@983"]
    assert after_load[4:] == ["function setTimeout() { [native code] }", "setTimeout", 1]
    # the countdown started by the click loses exactly one second with each action, that one too
    assert [s[0] for s in states] == ["9", "8", "7", "6"]


async def test_without_a_stepped_clock_timers_run_in_real_time(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    page = write_page(COUNTDOWN)
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        await tools.tab.evaluate("document.getElementById('go').click()", world="page")
        await anyio.sleep(2.3)
        left = int(await tools.tab.evaluate("document.getElementById('left').textContent", world="page"))
    assert left <= 8
