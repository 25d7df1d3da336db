"""visible_text: only text a person can see in the viewport comes back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

PAGE = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif } .box { position: relative; width: 200px; height: 40px }
.cover { position: absolute; left: 0; top: 0; width: 200px; height: 40px; background: #fff }
.glass { position: absolute; left: 0; top: 0; width: 200px; height: 40px; background: transparent }
.clip { width: 60px; height: 20px; overflow: hidden; white-space: nowrap }
.srt { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0) }
</style></head><body>
<p id="plain">Shown plainly</p>
<p style="display:none">Display none</p>
<p style="visibility:hidden">Visibility hidden <span style="visibility:visible">Visible child</span></p>
<div style="opacity:0.5"><div style="opacity:0.02">Faded out</div></div>
<p style="color: rgba(0,0,0,0)">Transparent ink</p>
<div class="box"><span>Under a cover</span><div class="cover"></div></div>
<div class="box"><span>Under glass</span><div class="glass"></div></div>
<div class="box"><span style="pointer-events:none">Click-through text</span></div>
<div class="clip"><span style="margin-left:120px">Clipped away</span></div>
<span class="srt">Screen reader only</span>
<p style="position:absolute; left:-500px">Off to the left</p>
<p style="position:absolute; top:2000px">Far below</p>
<p style="font-size:0">Zero size</p>
<div class="score-box" style="display:flex; gap:8px">
<span class="label">Score</span><span class="value">2</span></div>
<p id="count"><strong>1</strong> <span>item</span> left</p>
</body></html>"""


async def test_visible_text_leaves_out_what_a_person_cannot_see(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    page = write_page(PAGE)
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=600))) as tools:
        seen = await tools.visible_text()
    texts = [r.text for r in seen.runs if r.on_screen]
    assert [r.text for r in seen.runs if not r.on_screen] == ["Far below"]  # scrolling would show it
    # a text node of white space alone (as templates render "<b>{{n}}</b> {{word}} left") parts words
    shown_words = ("Shown plainly", "Visible child", "Under glass", "Click-through text", "Score", "2")
    for shown in (*shown_words, "1 item left"):
        assert shown in texts, (shown, texts)
    for hidden in (
        "Display none",
        "Visibility hidden",
        "Faded out",
        "Transparent ink",
        "Under a cover",
        "Clipped away",
        "Screen reader only",
        "Off to the left",
        "Zero size",
    ):
        assert all(hidden not in t for t in texts), (hidden, texts)
    plain = next(r for r in seen.runs if r.text == "Shown plainly")
    assert plain.label.startswith("p#plain") and plain.box.width > 50 and plain.box.y > 0
    score, value = (next(r for r in seen.runs if r.text == t) for t in ("Score", "2"))
    assert "score-box" in value.label and score.containers[1] == value.containers[1]
    assert seen.text.splitlines() == texts


async def test_visible_text_leaves_the_page_as_it_was(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    html = '<p style="pointer-events:none" id="p">x</p><script>window.n = 0;</script>'
    probe = (
        "[getComputedStyle(document.getElementById('p')).pointerEvents, document.adoptedStyleSheets.length]"
    )
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        before = await tools.tab.evaluate(probe)
        await tools.visible_text()
        after = await tools.tab.evaluate(probe)
    assert before[0] == after[0] == "none"
    assert after[1] == before[1]  # its temporary stylesheet is gone (the judge's caret sheet stays)


async def test_visible_text_is_capped(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = "".join(f"<p style='margin:0;font-size:8px'>line {i}</p>" for i in range(60))
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        seen = await tools.visible_text(max_runs=10)
    assert len(seen.runs) == 10 and seen.truncated


@pytest.mark.parametrize(("root", "shown"), [("", True), ("html { overflow: auto }", False)])
async def test_a_body_with_hidden_overflow_clips_only_when_it_keeps_its_overflow(
    pool: PagePool, write_page: Callable[..., Path], root: str, shown: bool
) -> None:
    # body {overflow: hidden; height: 80vh} is a common game layout. With the root's overflow
    # visible, the body's overflow applies to the viewport (CSS propagation), so text below 80vh
    # but inside the viewport is on screen; with the root's own overflow set, the body clips it.
    html = (
        f"<style>{root} body {{ margin: 0; overflow: hidden; height: 80vh }}</style>"
        "<div style='height: 85vh'>game</div><p id='n'>You won the round</p>"
    )
    spec = PageSpec(page=str(write_page(html)), viewport=Viewport(width=640, height=600))
    async with pool.page(spec) as tools:
        seen = await tools.visible_text()
    texts = [r.text for r in seen.runs if r.on_screen]
    assert ("You won the round" in texts) is shown, texts


FIELDS = """<!doctype html><html><body style="margin:0;font:16px sans-serif">
<label for="who">Name on booking</label> <input id="who" placeholder="First and last name">
<input aria-label="Search titles" value="pine">
<input type="password" aria-label="Secret" value="abc">
<select aria-label="Size"><option>Small</option><option selected>Large</option></select>
<textarea placeholder="Notes"></textarea>
<input type="checkbox" aria-label="Tick"> <input type="hidden" value="nope">
<input aria-label="Invisible" style="opacity:0">
<div style="position:relative;height:30px"><input aria-label="Covered" value="under">
<div style="position:absolute;inset:0;background:#fff"></div></div>
<input aria-label="Far" style="position:absolute;top:3000px">
</body></html>"""


async def test_visible_text_lists_the_fields_a_person_sees_with_what_they_hold(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    async with pool.page(PageSpec(page=str(write_page(FIELDS)))) as tools:
        seen = await tools.visible_text()
        await tools.tab.evaluate("document.getElementById('who').value = 'Lin Wei'")
        typed = await tools.visible_text()
    got = {f.name.split(" | ")[0]: f for f in seen.fields}
    assert list(got) == ["Name on booking", "Search titles", "Secret", "Size", "Notes"]
    assert got["Name on booking"].value == "" and got["Name on booking"].placeholder == "First and last name"
    assert got["Search titles"].value == "pine" and got["Secret"].value == "\u2022\u2022\u2022"
    assert got["Size"].tag == "select" and got["Size"].value == "Large" and got["Notes"].tag == "textarea"
    assert "pine" not in seen.text  # typed text is kept apart from the text the page writes
    assert typed.fields[0].value == "Lin Wei"
