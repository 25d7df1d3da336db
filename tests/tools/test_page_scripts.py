"""The page scripts in ``iwr_bench/tools/js/``: each one used, and each one valid JavaScript.

Chromium (the browser the judge runs them in) compiles every file as it is, and every script the
functions of :mod:`iwr_bench.tools.scripts` build from them; ``node --check`` parses the files too
when Node.js is installed. The files hold their slots as plain identifiers (``__MAX__``), so
they parse before they are filled in.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from iwr_bench.tools import scripts
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool
from iwr_bench.tools.tab import CdpTab

JS = Path(str(resources.files("iwr_bench.tools") / "js"))


def script_files() -> list[Path]:
    return sorted(JS.glob("*.js"))


def built_scripts() -> dict[str, str]:
    """What the functions build, with the arguments the tools, the browser and the recorder use."""
    clock = scripts.SteppedClock("iwr0123456789abcdef", 100)
    return {
        "determinism (plain)": scripts.determinism_script(7, None),
        "determinism (stepped clock, popups, window size)": scripts.determinism_script(
            7, 1_700_000_000_000, False, clock, 8, (1280, 887)
        ),
        "judge_init": scripts.judge_init_script(True, clock),
        "judge_init (no clock)": scripts.judge_init_script(False),
        "observe": scripts.observe_script(200, 20000, 200),
        "element_click": scripts.element_click_script(3),
        "point": scripts.point_script(3),
        "point (select, hit)": scripts.point_script(3, select=True, hit=True),
        "scroll_probe": scripts.SCROLL_PROBE,
        "scroll_probe (region)": scripts.scroll_probe_script(("main", "list")),
        "scroll_fallback": scripts.scroll_fallback_script("container", 0, 400.5),
        "visible_text": scripts.visible_text_script(400, 20000),
        "visible_text (annotated)": scripts.visible_text_script(400, 20000, annotate=True),
        "wait_frame": scripts.WAIT_FRAME,
    }


def test_every_script_file_is_used() -> None:
    on_disk = {path.name for path in script_files()}
    assert on_disk, f"no scripts found in {JS}"
    assert on_disk == set(scripts.SOURCES), (
        f"unused by scripts.py: {sorted(on_disk - set(scripts.SOURCES))}; "
        f"read but missing: {sorted(set(scripts.SOURCES) - on_disk)}"
    )
    for path in script_files():  # the package data is the file in the source tree
        assert path.read_text(encoding="utf-8") == scripts.SOURCES[path.name], path.name


@pytest.mark.browser
@pytest.mark.anyio
async def test_every_script_compiles_in_chromium(pool: PagePool, write_page: Callable[..., Path]) -> None:
    page = write_page("<!doctype html><html><body><p>blank</p></body></html>")
    sources = {path.name: path.read_text(encoding="utf-8") for path in script_files()}
    sources.update(built_scripts())
    failures: list[str] = []
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        tab = tools.tab
        assert isinstance(tab, CdpTab)  # a DevTools tab: it takes any CDP method
        for name, source in sources.items():
            params = {"expression": source, "sourceURL": name, "persistScript": False}
            reply: dict[str, Any] = await tab.send("Runtime.compileScript", params)
            details = reply.get("exceptionDetails")
            if details:
                where = f"{name}:{details.get('lineNumber', 0) + 1}:{details.get('columnNumber', 0) + 1}"
                text = details.get("exception", {}).get("description") or details.get("text", "")
                failures.append(f"{where}: {text}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_every_script_file_parses_with_node() -> None:
    node = shutil.which("node")
    assert node is not None
    for path in script_files():
        done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{path.name}:\n{done.stderr}"
