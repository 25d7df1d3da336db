"""``iwr judge`` on an official results tree: official asset paths, both model-folder spellings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from official_data import cut_builtin_tasks
from PIL import Image

from iwr_bench.cli import main
from iwr_bench.suites.build import SAMPLE


def write_page(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(body, encoding="utf-8")
    return folder


def _official_tree(tmp_path: Path) -> tuple[Path, Path]:
    """Two built-in tasks as an official dataset (one action each, 480x270), and an official
    results tree for them: task 101 in the official lower-case folder plus a page whose asset
    paths lead nowhere on disk (though they end in ``assets/<file>``), task 109 in our spelling."""
    data = tmp_path / "bench"
    keep = cut_builtin_tasks(data, (101, 109), actions=1, size=(480, 270))
    results = tmp_path / "results"
    for r in keep:
        tid = str(r["id"])
        # A model's page refers to the anonymised assets through the placeholder; the recorded
        # bundle names the site's own paths, which the task's asset map turns into those names.
        html = (data / "data" / tid / "reference" / "index.html").read_text()
        for site_path, anon in json.loads((SAMPLE / "asset_maps" / f"{tid}.json").read_text()).items():
            html = html.replace(f'"{site_path}"', f'"__PLACEHOLDER_ASSETS_BASE_DIR__/{anon}"')
        # the official generator's path: from the page's folder to the task's assets (both folder
        # spellings lie at the same depth); opened as file://, only a path that resolves shows
        assets = os.path.relpath(data / "data" / tid / "assets", results / tid / "gpt-4o")
        official = html.replace("__PLACEHOLDER_ASSETS_BASE_DIR__/", f"{assets}/")
        assert official != html
        if tid == "101":
            write_page(results / tid / "gpt-4o", official)
            (results / tid / "gpt-4o" / "temp_frames").mkdir()
            Image.new("RGB", (8, 8)).save(results / tid / "gpt-4o" / "temp_frames" / "frame_0000.jpg")
            # a path that an HTTP server's "ends in assets/<file>" rule would still answer
            broken = html.replace("__PLACEHOLDER_ASSETS_BASE_DIR__/", f"../../../data/data/{tid}/assets/")
            write_page(results / tid / "Broken", broken)
        else:  # ours: the model folder spelled as the model is named
            write_page(results / tid / "GPT-4o", official)
    return data, results


@pytest.mark.browser
@pytest.mark.slow
def test_iwr_judge_reads_an_official_results_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data, results = _official_tree(tmp_path)
    out = tmp_path / "judged"
    args = ["judge", "--tasks", str(data / "data.jsonl"), "--pages", str(results), "--out", str(out)]
    assert main([*args, "--protocol", "official", "--pages-at-once", "1"]) == 0
    text = capsys.readouterr().out
    assert "protocol official" in text and "tasks without index.html are left out" in text
    # both spellings of the model folder were judged as one model
    # (named by the first spelling met: task 101's lower-case folder)
    assert sorted(p.name for p in out.glob("*/*")) == ["Broken", "Broken", "gpt-4o", "gpt-4o"]
    for tid in ("101", "109"):
        ev = json.loads((out / tid / "gpt-4o" / "eval.json").read_text())
        assert ev["protocol"] == "official" and ev["replay"]["failure"] is None
        errors = ev["replay"]["console_errors"]
        assert not [e for e in errors if "404" in e or "Failed to load" in e], errors
        assert ev["replay"]["blocked_requests"] == 0 and ev["success_step"] >= 1
        assert len(ev["assertion_results"]) == ev["total_step"]
    # the control: a page whose asset paths lead nowhere shows its failed loads in the evidence
    broken = json.loads((out / "101" / "Broken" / "eval.json").read_text())
    assert any("404" in e or "Failed to load" in e for e in broken["replay"]["console_errors"])
    # Broken has no page for task 109: left out of its mean under the official protocol
    missing = json.loads((out / "109" / "Broken" / "eval.json").read_text())
    assert missing["replay"]["failure"] == "no_page"
