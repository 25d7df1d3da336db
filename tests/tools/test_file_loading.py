"""``PageSpec.loading``: a page served as a site (ours) or as the official scripts open it (file://)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from PIL import Image

from iwr_bench.tools.models import PageSpec
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

# Four images: the official generator's own relative path, a path one folder off that still ends
# in assets/<file>, the placeholder left in, and /assets/; then a fetch and an XHR of a sibling file.
_PAGE = """<!doctype html><html><body><p id="out">pending</p>
<img src="RIGHT/a.png"><img src="../wrong/assets/a.png">
<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/a.png"><img src="/assets/a.png">
<script>
const said = [];
const done = () => { if (said.length === 2) document.getElementById('out').textContent = said.join(' '); };
fetch('data.txt').then((r) => r.text()).then((t) => said.push('fetch:' + t))
  .catch(() => said.push('fetch:failed')).finally(done);
const x = new XMLHttpRequest();
x.onload = () => { said.push('xhr:' + x.responseText); done(); };
x.onerror = () => { said.push('xhr:failed'); done(); };
x.open('GET', 'data.txt'); x.send();
</script></body></html>"""


def _site(tmp_path: Path) -> tuple[Path, Path]:
    assets = tmp_path / "data" / "101" / "assets"
    assets.mkdir(parents=True)
    Image.new("RGB", (4, 4), "red").save(assets / "a.png")
    page = tmp_path / "results" / "101" / "model"
    page.mkdir(parents=True)
    right = os.path.relpath(assets, page)  # what the official generator writes
    (page / "index.html").write_text(_PAGE.replace("RIGHT", right), encoding="utf-8")
    (page / "data.txt").write_text("ok", encoding="utf-8")
    return page, assets


async def _loaded(pool: PagePool, spec: PageSpec) -> tuple[list[bool], str, list[str]]:
    async with pool.page(spec) as tools:
        with anyio.fail_after(10):
            while "pending" in (text := (await tools.observe()).text):  # noqa: ASYNC110 (polls the page)
                await anyio.sleep(0.1)
        shown = await tools.tab.evaluate("[...document.images].map((i) => i.naturalWidth > 0)", world="page")
        state = await tools.page_state()
    return shown, text, [b.reason for b in state.blocked_requests]


async def test_file_loading_answers_only_what_a_file_url_resolves(pool: PagePool, tmp_path: Path) -> None:
    page, assets = _site(tmp_path)
    spec = PageSpec(page=str(page), assets_dir=str(assets), loading="file")
    shown, text, blocked = await _loaded(pool, spec)
    # as Chromium shows the page from file://: only the real relative path finds the image, and
    # scripts cannot read local files
    assert shown == [True, False, False, False]
    assert "fetch:failed" in text and "xhr:failed" in text
    assert len(blocked) == 2 and all("file://" in reason for reason in blocked)


async def test_http_loading_answers_every_asset_spelling(pool: PagePool, tmp_path: Path) -> None:
    page, assets = _site(tmp_path)
    shown, text, blocked = await _loaded(pool, PageSpec(page=str(page), assets_dir=str(assets)))
    assert shown == [True, True, True, True]
    assert "fetch:ok" in text and "xhr:ok" in text and blocked == []


async def test_file_loading_refuses_files_outside_the_page_and_assets(pool: PagePool, tmp_path: Path) -> None:
    page, assets = _site(tmp_path)
    Image.new("RGB", (4, 4), "blue").save(tmp_path / "elsewhere.png")  # a file:// page could show it
    probe = f"""<!doctype html><html><body><img src="{(tmp_path / "elsewhere.png").as_posix()}">
<img src="../../../elsewhere.png?again"><img src="{(assets / "a.png").as_posix()}"></body></html>"""
    (page / "index.html").write_text(probe, encoding="utf-8")
    async with pool.page(PageSpec(page=str(page), assets_dir=str(assets), loading="file")) as tools:
        await tools.observe()
        shown = await tools.tab.evaluate("[...document.images].map((i) => i.naturalWidth > 0)", world="page")
    assert shown == [False, False, True]
