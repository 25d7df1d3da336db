"""Hostile pages end with the right recorded outcome, and the pool keeps working afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from patience import patient

from iwr_bench.tools.errors import PageFailure
from iwr_bench.tools.models import Limits, PageSpec, SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

OK_PAGE = """<html><body><button onclick="this.textContent='done'">press</button></body></html>"""


async def _pool_still_works(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(PageSpec(page=str(write_page(OK_PAGE, "ok.html")))) as tools:
        await tools.observe()
        await tools.click(0)
        assert "done" in (await tools.observe()).text


def _report(text: str) -> str:
    return f"""<html><body><p id="out">pending</p><script>
    const out = (t) => {{ document.getElementById('out').textContent = t; }};
    {text}
    </script></body></html>"""


async def test_internet_fetch_is_blocked_and_recorded(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    html = _report("fetch('https://example.com/data').then(() => out('leaked'), () => out('refused'));")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "refused" in obs.text
    assert any(b.url.startswith("https://example.com/") for b in state.blocked_requests)
    await _pool_still_works(pool, write_page)


async def test_other_loopback_port_is_blocked(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = _report("fetch('http://127.0.0.1:9/x').then(() => out('leaked'), () => out('refused'));")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "refused" in obs.text
    assert any(b.url.startswith("http://127.0.0.1:9/") for b in state.blocked_requests)


async def test_external_image_is_blocked(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = _report("""const img = new Image(); img.onload = () => out('loaded');
    img.onerror = () => out('img-failed'); img.src = 'https://images.example.net/cat.png';
    document.body.appendChild(img);""")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "img-failed" in obs.text
    assert [b.resource_type for b in state.blocked_requests if "images.example.net" in b.url] == ["Image"]


async def test_window_open_is_closed_and_recorded(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = _report("""window.open('https://example.com/popup'); window.open('/ok.html', '_blank', 'noopener');
    out('opened');""")
    write_page(OK_PAGE, "ok.html")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "opened" in obs.text
    assert len(state.popups) == 2
    assert "https://example.com/popup" in [p.url for p in state.popups]
    assert state.failure is None
    await _pool_still_works(pool, write_page)


async def test_dialogs_are_answered_and_recorded(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = _report("""alert('hello'); const yes = confirm('sure?'); const name = prompt('name?');
    out('confirm=' + yes + ' prompt=' + name);""")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "confirm=true prompt=null" in obs.text
    assert [(d.type, d.message, d.accepted) for d in state.dialogs] == [
        ("alert", "hello", True),
        ("confirm", "sure?", True),
        ("prompt", "name?", False),
    ]


async def test_navigation_away_is_blocked_and_recorded(
    pool: PagePool, write_page: Callable[..., Path]
) -> None:
    html = """<html><body><p id="out">here</p><button onclick="window.marker = 7; location = 'https://example.com/away'">
    leave</button></body></html>"""
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        await tools.observe()
        await tools.click(0)
        state = await tools.page_state()
        marker = await tools.tab.evaluate("window.marker", world="page")
    assert state.url.startswith("http://127.0.0.1:") and state.url.endswith("/index.html")
    assert [(n.url, n.blocked) for n in state.navigations] == [("https://example.com/away", True)]
    assert marker == 7  # the document was kept, not replaced by an error page


async def test_infinite_loop_fails_with_timeout(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = "<html><body>spin<script>while (true) {}</script></body></html>"
    with pytest.raises(PageFailure) as info:
        async with pool.page(PageSpec(page=str(write_page(html)))):
            pass
    assert info.value.reason == "timeout"
    await _pool_still_works(pool, write_page)


async def test_loop_after_click_fails_the_action(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = "<html><body><button onclick='while (true) {}'>spin</button></body></html>"
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        await tools.observe()
        with pytest.raises(PageFailure) as info:
            await tools.click(0)
        assert info.value.reason == "timeout"
        assert (await tools.page_state()).failure is not None
        with pytest.raises(PageFailure):
            await tools.observe()
    await _pool_still_works(pool, write_page)


async def test_memory_bomb_is_stopped(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = """<html><body><button onclick="const a = []; while (true) a.push(new Array(1e6).fill(1.5));">
    bomb</button></body></html>"""
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        await tools.observe()
        with pytest.raises(PageFailure) as info:
            await tools.click(0)
    assert info.value.reason in ("page_crashed", "timeout")
    await _pool_still_works(pool, write_page)


async def test_huge_dom_is_bounded(write_page: Callable[..., Path]) -> None:
    # Its own pool with room to build 50,000 buttons on a loaded machine; the bound under test is the
    # observation's size, not the load time (the shared pool's 4 s load limit failed under load).
    limits = Limits(
        action_timeout=patient(15.0), load_timeout=patient(30.0), js_heap_mb=128, page_memory_mb=384
    )
    config = PoolConfig(size=1, limits=limits, settle=SettleConfig(interval=0.05, max_wait=2.0))
    async with PagePool(config) as pool:
        await _huge_dom(pool, write_page)


async def _huge_dom(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = """<html><body><script>
    const frag = document.createDocumentFragment();
    for (let i = 0; i < 50000; i++) { const b = document.createElement('button'); b.textContent = 'b' + i;
      frag.appendChild(b); }
    document.body.appendChild(frag);
    </script></body></html>"""
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        assert obs.elements_truncated
        assert len(obs.elements) == pool.config.limits.max_elements
        assert len(obs.text) <= pool.config.limits.max_text_chars
        await tools.click(0)
        png = await tools.screenshot()
    assert png.startswith(b"\x89PNG")
    await _pool_still_works(pool, write_page)


async def test_file_url_cannot_be_read(pool: PagePool, write_page: Callable[..., Path]) -> None:
    html = _report("""fetch('file:///etc/passwd').then(r => r.text()).then(t => out('read ' + t.slice(0, 20)),
      () => out('refused'));
    const f = document.createElement('iframe'); f.src = 'file:///etc/passwd';
    document.body.appendChild(f);""")
    async with pool.page(PageSpec(page=str(write_page(html)))) as tools:
        obs = await tools.observe()
        state = await tools.page_state()
    assert "refused" in obs.text and "root:" not in obs.text
    recorded = [b.url for b in state.blocked_requests] + [c.text for c in state.console_errors]
    assert any("file:///etc/passwd" in line for line in recorded)
