"""The page server: assets under the placeholder prefix, traversal refused."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from iwr_bench.tools.server import PageServer

pytestmark = pytest.mark.anyio


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


async def test_serves_page_and_assets_and_refuses_traversal(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>page</p>", encoding="utf-8")
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "a.txt").write_text("asset", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    async with PageServer(site, assets) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert await _get(server.url) == (200, "<p>page</p>")
        assert await _get(f"{server.origin}/__PLACEHOLDER_ASSETS_BASE_DIR__/a.txt") == (200, "asset")
        assert await _get(f"{server.origin}/assets/a.txt") == (200, "asset")
        for path in (
            "/../secret.txt",
            "/%2e%2e/secret.txt",
            "/assets/../../secret.txt",
            "/assets/%2e%2e/a.txt",
        ):
            status, body = await _get(server.origin + path)
            assert status == 404 and "secret" not in body


async def test_official_relative_asset_paths_come_from_the_assets_folder(tmp_path: Path) -> None:
    """``../../../data/data/<id>/assets/<file>`` from a page folder reaches the task's assets."""
    site = tmp_path / "results" / "7" / "gpt-4o"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<p>page</p>", encoding="utf-8")
    (site / "own.txt").write_text("own", encoding="utf-8")
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "logo.txt").write_text("asset", encoding="utf-8")
    (assets / "own.txt").write_text("from assets", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    async with PageServer(site, assets) as server:
        assert await _get(f"{server.origin}/data/data/7/assets/logo.txt") == (200, "asset")
        assert await _get(f"{server.origin}/x/../data/data/7/assets/logo.txt") == (200, "asset")
        # the page folder answers first; only what it cannot answer falls back to the assets
        assert await _get(f"{server.origin}/own.txt") == (200, "own")
        for path in (
            "/data/data/7/assets/../../../../secret.txt",
            "/data/assets/%2e%2e/secret.txt",
            "/data/data/7/assets/",
            "/data/data/7/assets/missing.png",
        ):
            status, body = await _get(server.origin + path)
            assert status == 404 and "secret" not in body
    async with PageServer(site) as server:  # no assets folder: nothing to fall back to
        assert (await _get(f"{server.origin}/data/data/7/assets/logo.txt"))[0] == 404
