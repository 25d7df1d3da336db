"""Bringing a site's other-origin files into it (``iwr record --vendor``), without a browser."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from aiohttp import web
from fake_openai import serve_app

from iwr_bench.dataset.vendor import VendorSources, find_in_folder, local_path, vendor_urls
from iwr_bench.errors import UserError

pytestmark = pytest.mark.anyio


def test_local_paths_are_safe_and_keep_queries_apart() -> None:
    assert local_path("https://cdn.example.org/icons@1.0/dist/icons.js") == (
        "vendor/cdn.example.org/icons@1.0/dist/icons.js"
    )
    inter = local_path("https://fonts.example.com/css2?family=Inter", "text/css; charset=utf-8")
    roboto = local_path("https://fonts.example.com/css2?family=Roboto", "text/css")
    assert inter.startswith("vendor/fonts.example.com/css2_") and inter.endswith(".css") and inter != roboto
    assert local_path("http://host:8080/a/../../etc/passwd") == "vendor/host_8080/a/_/_/etc/passwd"
    assert local_path("https://x.org/") == "vendor/x.org/index"


def test_a_folder_is_searched_as_a_mirror_an_npm_package_and_by_name(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "cdn.example.org" / "lib" / "a.js"
    mirror.parent.mkdir(parents=True)
    mirror.write_text("a")
    assert find_in_folder(tmp_path / "mirror", "https://cdn.example.org/lib/a.js") == mirror
    wget = mirror.parent / "a.js?v=2"  # wget -x keeps the query in the file name
    wget.write_text("a2")
    assert find_in_folder(tmp_path / "mirror", "https://cdn.example.org/lib/a.js?v=2") == wget

    modules = tmp_path / "proj" / "node_modules" / "@scope" / "icons" / "dist"
    modules.mkdir(parents=True)
    (modules / "i.css").write_text("i")
    url = "https://cdn.jsdelivr.net/npm/@scope/icons@2.1.0/dist/i.css"
    assert find_in_folder(tmp_path / "proj", url) == modules / "i.css"
    assert find_in_folder(tmp_path / "proj" / "node_modules", url) == modules / "i.css"
    package = tmp_path / "proj" / "node_modules" / "@scope" / "icons"
    (package / "package.json").write_text('{"name": "@scope/icons"}')
    assert find_in_folder(package, "https://unpkg.com/@scope/icons@2/dist/i.css") == modules / "i.css"

    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "chart.min.js").write_text("c")
    assert (
        find_in_folder(flat, "https://cdnjs.example.com/ajax/libs/chart/4.0/chart.min.js")
        == flat / "chart.min.js"
    )
    assert find_in_folder(flat, "https://cdn.example.org/../../etc/passwd") is None


def _site(root: Path, html: str, css: str = "") -> Path:
    site = root / "site"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_text(html)
    (site / "css" / "main.css").write_text(css)
    return site


async def test_files_and_what_their_stylesheets_name_come_in_and_the_site_points_at_them(
    tmp_path: Path,
) -> None:
    source = tmp_path / "mirror" / "fonts.example.com"
    (source / "files").mkdir(parents=True)
    (source / "css2").write_text(  # a font CSS API answers with no file suffix
        '@import url("base.css");\n@font-face { font-family: F; src: url(/files/f.woff2?v=1#x) }\n'
    )
    (source / "base.css").write_text("body { margin: 0 }")
    (source / "files" / "f.woff2").write_bytes(b"wOF2")
    api = "https://fonts.example.com/css2?family=F&display=swap"
    html = (
        f'<link rel="stylesheet" href="{api.replace("&", "&amp;")}" integrity="sha384-x" crossorigin>'
        '<script src="//fonts.example.com/base.css"></script>'
        '<script src="js/app.js" integrity="sha384-kept"></script>'
    )
    site = _site(tmp_path, html, css=f"@import '{api}';")
    wanted = {api: "Stylesheet", "https://fonts.example.com/base.css": "Script"}
    report = await vendor_urls(site, wanted, VendorSources(folders=(tmp_path / "mirror",)))
    assert report.missing == {} and report.unreferenced == []
    locals_ = {f.url: f.local for f in report.fetched}
    api_copy = locals_[api]
    assert api_copy.startswith("vendor/fonts.example.com/css2_") and api_copy.endswith(".css")
    font_copy = locals_["https://fonts.example.com/files/f.woff2?v=1"]
    assert (site / font_copy).read_bytes() == b"wOF2"
    copied_css = (site / api_copy).read_text()
    assert 'url("base.css")' in copied_css  # the same place relative to the copy: unchanged
    assert f"url(files/{Path(font_copy).name}#x)" in copied_css
    page = (site / "index.html").read_text()
    assert f'href="{api_copy}" crossorigin>' in page and 'src="vendor/fonts.example.com/base.css"' in page
    assert 'integrity="sha384-kept"' in page  # only tags naming a copy lose their hash
    assert f"@import '../{api_copy}';" in (site / "css" / "main.css").read_text()


async def test_what_no_source_has_is_reported_with_the_reason(tmp_path: Path) -> None:
    site = _site(tmp_path, '<script src="https://cdn.example.org/gone.js"></script>')
    empty = tmp_path / "empty"
    empty.mkdir()
    report = await vendor_urls(site, ["https://cdn.example.org/gone.js"], VendorSources(folders=(empty,)))
    assert report.fetched == [] and "not in" in report.missing["https://cdn.example.org/gone.js"]
    assert not (site / "vendor").exists()


def _cdn(files: dict[str, tuple[bytes, str]]) -> AbstractAsyncContextManager[str]:
    """A stand-in CDN on 127.0.0.1 answering ``files`` (path -> body, content type), else 404."""

    async def handle(request: web.Request) -> web.Response:
        if request.path not in files:
            return web.Response(status=404)
        body, kind = files[request.path]
        return web.Response(body=body, content_type=kind)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return serve_app(app)


async def test_the_network_is_a_source_when_allowed(tmp_path: Path) -> None:
    files = {
        "/icons/style": (b".i { background: url(sprite.svg) }", "text/css"),
        "/icons/sprite.svg": (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml"),
    }
    async with _cdn(files) as base:
        url = f"{base}/icons/style"
        site = _site(tmp_path, f"<link rel='stylesheet' href='{url}'><img src='{base}/nope.png'>")
        offline = await vendor_urls(site, [url], VendorSources())
        assert url in offline.missing  # no folder and no network: nothing comes in
        report = await vendor_urls(site, [url, f"{base}/nope.png"], VendorSources(network=True))
    assert "HTTP 404" in report.missing[f"{base}/nope.png"]
    fetched = {f.url: f for f in report.fetched}
    assert fetched[url].source == "network" and fetched[url].local.endswith("/icons/style.css")  # typed
    assert (site / fetched[f"{base}/icons/sprite.svg"].local).read_bytes().startswith(b"<svg")
    assert "href='vendor/127.0.0.1_" in (site / "index.html").read_text()


async def test_a_url_a_script_builds_is_brought_in_but_reported_unreferenced(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "x.js").write_text("1")
    site = _site(tmp_path, "<script>load('https://cdn.example.org/' + 'x.js')</script>")
    report = await vendor_urls(site, ["https://cdn.example.org/x.js"], VendorSources(folders=(lib,)))
    assert report.unreferenced == ["https://cdn.example.org/x.js"]


def test_vendor_sources_are_folders_or_the_network(tmp_path: Path) -> None:
    sources = VendorSources.parse([str(tmp_path), "network"])
    assert sources.folders == (tmp_path.resolve(),) and sources.network
    with pytest.raises(UserError, match="not a folder"):
        VendorSources.parse([str(tmp_path / "missing")])
