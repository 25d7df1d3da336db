"""The real-app suite: pinned npm packages, laid out, recorded from our scripts, judged with mutants."""

from __future__ import annotations

import http.server
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from iwr_bench.agents.judge.claims import parse, quote_markup
from iwr_bench.cli import main as iwr
from iwr_bench.dataset.vendor import find_in_folder
from iwr_bench.errors import UserError
from iwr_bench.suites import real_apps
from iwr_bench.suites.build import load_mutants
from iwr_bench.suites.real_apps import App, Package, Source, drop_hosts, fetch_package, lay_out, load_apps


def _tarball(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, list[str]]]:
    """A local npm registry serving files from a folder; yields (folder, paths requested)."""
    root = tmp_path / "registry"
    root.mkdir()
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("IWR_BENCH_NPM_REGISTRY", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield root, asked
    finally:
        server.shutdown()
        server.server_close()


def test_every_app_names_its_source_licence_script_and_mutants() -> None:
    apps = load_apps()
    assert len(apps) >= 4
    for app in apps:
        assert app.source.license and app.source.homepage.startswith("https://")
        assert (app.folder / "task.yaml").is_file()
        mutants = load_mutants(app.folder / "mutants.yaml")
        assert any(m.expected_first_failure is not None for m in mutants)
        assert any(m.expected_first_failure is None for m in mutants) or app.slug == "toastify-demo"
        # only our own words are committed: no third-party page or code beside them
        assert {p.name for p in app.folder.iterdir()} <= {"source.yaml", "task.yaml", "mutants.yaml"}
    with pytest.raises(UserError, match="no such real app"):
        load_apps(only={"nope"})


def test_packages_come_from_the_registry_checked_against_their_pin(
    tmp_path: Path, registry: tuple[Path, list[str]]
) -> None:
    root, asked = registry
    data = _tarball({"package.json": '{"name": "demo-app"}', "index.html": "<p>hi</p>"})
    (root / "demo-app" / "-").mkdir(parents=True)
    (root / "demo-app" / "-" / "demo-app-1.0.0.tgz").write_bytes(data)
    package = Package(name="demo-app", version="1.0.0", integrity=real_apps.integrity(data))
    store = tmp_path / "store"

    unpacked = fetch_package(package, store)
    assert (unpacked / "index.html").read_text() == "<p>hi</p>"
    assert asked == ["/demo-app/-/demo-app-1.0.0.tgz"]
    assert fetch_package(package, store) == unpacked and len(asked) == 1  # kept, not downloaded again

    # a tampered cache is downloaded again; a registry serving other bytes is refused
    (store / "demo-app@1.0.0.tgz").write_bytes(b"junk")
    (store / "demo-app@1.0.0" / ".verified").unlink()
    assert fetch_package(package, store) == unpacked and len(asked) == 2
    wrong = Package(name="demo-app", version="1.0.0", integrity=real_apps.integrity(b"other"))
    with pytest.raises(UserError, match="does not match the pinned integrity"):
        fetch_package(wrong, tmp_path / "other-store")
    with pytest.raises(UserError, match=r"cannot download demo-app@2\.0\.0"):
        fetch_package(Package(name="demo-app", version="2.0.0", integrity=wrong.integrity), store)


def test_a_site_is_laid_out_from_the_package(tmp_path: Path) -> None:
    package = tmp_path / "package"
    (package / "docs" / "demo").mkdir(parents=True)
    (package / "dist").mkdir()
    (package / "dist" / "app.css").write_text("p{}")
    page = (
        '<link href="../dist/app.css"><script src="app.js"></script>'
        '<script>(function(){var s="https://www.tracker.example/t.js"})()</script>'
        '<iframe src="https://buttons.example/star"></iframe><p>app</p>'
    )
    (package / "docs" / "demo" / "demo.html").write_text(page)
    source = Source(
        package=Package(name="x", version="1.0.0", integrity="sha512-AA=="),
        license="MIT",
        homepage="https://example.org",
        root="docs/demo",
        entry="demo.html",
        files={"dist/app.css": "dist/app.css"},
        drop_hosts=["tracker.example", "buttons.example"],
    )
    site = lay_out(App("x", tmp_path, source), package, tmp_path / "site")
    html = (site / "index.html").read_text()
    assert "tracker" not in html and "iframe" not in html
    assert '<script src="app.js"></script>' in html and "<p>app</p>" in html
    assert (site / "dist" / "app.css").read_text() == "p{}"
    assert drop_hosts("<script src='a.js'></script>", ["b.example"]) == ("<script src='a.js'></script>", 0)
    with pytest.raises(UserError, match="not in the package"):
        lay_out(
            App("x", tmp_path, source.model_copy(update={"files": {"a": "../../etc/passwd"}})), package, site
        )
    with pytest.raises(UserError, match=r"no element of demo\.html loads from"):
        lay_out(App("x", tmp_path, source.model_copy(update={"drop_hosts": ["none.example"]})), package, site)


def test_a_cdn_url_naming_only_the_package_finds_its_entry_file(tmp_path: Path) -> None:
    package = tmp_path / "simple-table"
    (package / "dist" / "umd").mkdir(parents=True)
    (package / "dist" / "umd" / "table.js").write_text("//")
    meta = {"name": "simple-table", "main": "dist/index.js", "jsdelivr": "dist/umd/table.js"}
    (package / "package.json").write_text(json.dumps(meta))
    for url in ("https://cdn.jsdelivr.net/npm/simple-table@latest", "https://unpkg.com/simple-table@2/"):
        assert find_in_folder(package, url) == package / "dist" / "umd" / "table.js"
        assert (
            find_in_folder(tmp_path, url) == package / "dist" / "umd" / "table.js"
        )  # a node_modules-like folder
    assert find_in_folder(package, "https://cdn.jsdelivr.net/npm/") is None


def test_markup_in_an_assertion_is_text_the_page_prints() -> None:
    assert quote_markup("the HTML output shows <b>Hi</b>") == "the HTML output shows \u201c<b>Hi</b>\u201d"
    assert [c.token for c in parse("the output starts with <h1> and shows <hr>").claims] == ["<h1>", "<hr>"]
    assert quote_markup("the price is < 5 and > 2") == "the price is < 5 and > 2"
    assert quote_markup("it reads '<i>x</i>'") == "it reads '<i>x</i>'"


FEW = {"todomvc-vanillajs"}
"""The apps `make test` proves (the to-do app); `make test-long` proves all."""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(
    "only", [pytest.param(FEW, id="few"), pytest.param(None, id="all", marks=pytest.mark.long)]
)
def test_the_real_apps_prove_themselves_and_their_mutants_fail_where_they_should(
    tmp_path: Path, only: set[str] | None
) -> None:
    """Every app records on the first try and proves itself; the judge catches each mutant at its
    expected step (those marked known_miss aside), passes the harmless ones, and answers
    `undetermined` to at most 15% of the references' assertions (none, when this was written)."""
    out = tmp_path / "real"
    built = anyio.run(real_apps.build, out, only, False, real_apps.APPS, real_apps.default_out() / "npm")
    assert {b.slug for b in built} == {a.slug for a in load_apps(real_apps.APPS, only)}
    assert all(b.ifs == 100 and b.lowest_checkpoint >= 0.98 for b in built)
    report = tmp_path / "lab"
    assert iwr(["judges", "eval", "--tasks", str(out / "tasks"), "--cases", str(out / "mutants"),
                "--out", str(report), "--quiet"]) == 0  # fmt: skip
    results = json.loads((report / "report.json").read_text())["results"]
    known = {
        (int(f.parent.name), f.name)
        for f in (out / "mutants").glob("*/*")
        if json.loads((f / "mutant.json").read_text()).get("known_miss")
    }
    wrong = [
        f"{r['task_id']} {r['case']}: expected step {r['expected_first_failure']} "
        f"{r['expected_reason']}, found {r['first_failure']} {r['reason']}"
        for r in results
        if (r["task_id"], r["case"]) not in known
        and (r["first_failure"], r["reason"]) != (r["expected_first_failure"], r["expected_reason"])
    ]
    assert not wrong, wrong
    verdicts = [
        a["verdict"] for r in results if r["kind"] == "reference" for a in r["actions"] if a["verdict"]
    ]
    assert verdicts.count("undetermined") <= 0.15 * len(verdicts), verdicts
