"""The same page judged twice gives byte-identical screenshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
