"""``iwr generate`` end to end, in process: baselines, and a configured model on the fake server."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from anyio.from_thread import start_blocking_portal
from fake_openai import FakeOpenAI, Reply, serve
from PIL import Image
from published import FPS, LONG_S, _frame, build_published_set

from iwr_bench.agents.generation import read_record
from iwr_bench.cli import main


@pytest.fixture
def threaded_fake(allow_requests: None) -> Iterator[FakeOpenAI]:
    """The fake server on its own event loop thread (the CLI runs its own loop)."""
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(serve(FakeOpenAI())) as fake,
    ):
        yield fake


def test_generate_baselines(tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = tasks_root / "data" / "2" / "reference"
    ref.mkdir()
    (ref / "index.html").write_text("<html>ref</html>", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(out), "--no-cache"]
    rc = main([*argv, "--model", "oracle", "--model", "screenshot", "--model", "blank"])
    assert rc == 0
    for task_id in (1, 2):
        for model in ("oracle", "screenshot", "blank"):
            folder = out / str(task_id) / model
            assert (folder / "index.html").is_file()
            record = json.loads((folder / "generation.json").read_text(encoding="utf-8"))
            assert record["task_id"] == task_id and record["model"] == model and "html" not in record
    assert (out / "2" / "oracle" / "index.html").read_text(encoding="utf-8") == "<html>ref</html>"
    assert read_record(out / "1" / "oracle").error is not None  # no reference: recorded, page empty
    assert (out / "1" / "oracle" / "index.html").read_text(encoding="utf-8") == ""
    assert (out / "1" / "screenshot" / "index.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    text = capsys.readouterr().out
    assert "oracle: 2 task(s), 1 ok, 1 failed (no_reference 1)" in text
    assert "total: 6 generation(s)" in text


def test_generate_with_a_configured_server_model_cache_and_budget(
    threaded_fake: FakeOpenAI, tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.toml"
    run.write_text(
        f'[[models]]\nname = "vllm:gpt-4o"\nbase_url = "{threaded_fake.url}"\n'
        "image_budget = 4\nretries = 0\n",
        encoding="utf-8",
    )
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["generate", "--tasks", str(tasks_root), "--model", "vllm:gpt-4o", "--out", str(out)]
    argv += ["--config", str(run), "--cache-dir", str(cache), "--concurrency", "1"]
    # Each answer costs $0.0075 (gpt-4o prices): a $0.005 budget allows the first call only.
    assert main([*argv, "--budget", "0.005"]) == 0
    assert len(threaded_fake.requests) == 1
    # Which task gets the one affordable call depends on which is ready first, not on its id.
    records = {i: read_record(out / str(i) / "vllm_gpt-4o") for i in (1, 2)}
    assert sorted(r.status for r in records.values()) == ["failed", "ok"]
    paid = next(i for i, r in records.items() if r.status == "ok")
    refused = records[3 - paid]
    assert refused.error is not None and refused.error.kind == "budget_exhausted"
    assert (out / str(paid) / "vllm_gpt-4o" / "raw.txt").read_text(encoding="utf-8").startswith("```html")
    assert records[paid].images.sheets + records[paid].images.frames <= 4
    assert "budget_exhausted 1" in capsys.readouterr().out

    # Rerun without a budget: the paid task comes from the cache, only the other is requested.
    assert main(argv) == 0
    assert len(threaded_fake.requests) == 2
    assert read_record(out / str(paid) / "vllm_gpt-4o").cache_hit
    # Once more: nothing is requested; --no-cache requests everything again.
    assert main(argv) == 0
    assert len(threaded_fake.requests) == 2
    assert main([*argv, "--no-cache"]) == 0
    assert len(threaded_fake.requests) == 4


def test_generate_user_errors(tasks_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["generate", "--tasks", str(tasks_root), "--out", str(tmp_path / "o")]
    assert main([*base, "--model", "openai:gpt-4o"]) == 2
    assert main([*base, "--model", "nosuch:thing"]) == 2
    assert main([*base, "--model", "blank", "--concurrency", "0"]) == 2
    assert not (tmp_path / "o").exists()


PAGE_WITH_ASSET = (
    '```html\n<html><body><img src="__PLACEHOLDER_ASSETS_BASE_DIR__/001.png" width="10" height="10" '
    "onload=\"document.body.setAttribute('data-w', this.naturalWidth)\" "
    "onerror=\"document.body.setAttribute('data-w', 'error')\"></body></html>\n```"
)


def _image_width_as_file_url(page: Path, profile: Path) -> str:
    """Open ``page`` as file:// in headless Chromium; what its image's onload/onerror wrote."""
    done = subprocess.run(
        [
            "/usr/bin/chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.absolute().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = re.search(r'data-w="([^"]*)"', done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


@pytest.mark.browser
def test_generate_official_protocol_prompt_file_and_pages_that_render_from_file_urls(
    threaded_fake: FakeOpenAI, tasks_root: Path, tmp_path: Path
) -> None:
    threaded_fake.replies = [Reply(text=PAGE_WITH_ASSET)]
    run = tmp_path / "run.toml"
    run.write_text(f'[[models]]\nname = "Qwen/Qwen2.5-VL-7B"\nbase_url = "{threaded_fake.url}"\n')
    prompt = tmp_path / "official_prompt.txt"
    prompt.write_text("Make the page. The webpage resolution in the video is {resolution}.\n")
    out = tmp_path / "results"
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(out), "--no-cache", "--config", str(run)]
    argv += ["--model", "Qwen/Qwen2.5-VL-7B", "--protocol", "official", "--prompt-file", str(prompt)]
    assert main(argv) == 0
    assert len(threaded_fake.requests) == 2
    body = threaded_fake.requests[0]
    assert body["max_tokens"] == 4096 and body["temperature"] == 0  # the qwen preset
    assert body["messages"][-1]["content"][0]["text"].endswith("resolution in the video is 640x360.\n")
    # The official folder name, and the asset placeholder relative to the task's assets folder.
    folder = out / "1" / "qwen__qwen2.5-vl-7b"
    record = read_record(folder)
    assert record.protocol == "official" and record.preset == "qwen"
    assert record.prompt_file_sha256 == hashlib.sha256(prompt.read_bytes()).hexdigest()
    assert record.asset_base == "../../../ds/data/1/assets"
    page = folder / "index.html"
    assert 'src="../../../ds/data/1/assets/001.png"' in page.read_text()
    with Image.open(tasks_root / "data" / "1" / "assets" / "001.png") as asset:
        width = asset.width
    assert _image_width_as_file_url(page, tmp_path / "profile") == str(width)
    # The old fixed "assets" prefix does not render from the results tree: the check can fail.
    assert main([*argv, "--asset-base", "assets"]) == 0
    assert _image_width_as_file_url(page, tmp_path / "profile") == "error"


def test_generate_with_a_missing_prompt_file_is_a_user_error(
    tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(tmp_path / "o"), "--model", "blank"]
    assert main([*argv, "--prompt-file", str(tmp_path / "none.txt")]) == 2
    assert "cannot read prompt file" in capsys.readouterr().err


def _which_frame(data: bytes, candidates: list[np.ndarray]) -> int:
    """The published fixture's frame number that an encoded frame is closest to."""
    with Image.open(io.BytesIO(data)) as img:
        sent = np.asarray(img.convert("RGB"), dtype=np.int16)
    return int(np.argmin([np.abs(sent - c).mean() for c in candidates]))


def test_generate_official_sends_exactly_the_official_sheets_and_frames_of_published_data(
    threaded_fake: FakeOpenAI, tmp_path: Path
) -> None:
    build_published_set(tmp_path / "pub")
    run = tmp_path / "run.toml"
    run.write_text(f'[[models]]\nname = "gpt-4o"\nbase_url = "{threaded_fake.url}"\n')
    argv = ["generate", "--tasks", str(tmp_path / "pub"), "--out", str(tmp_path / "out"), "--no-cache"]
    assert main([*argv, "--config", str(run), "--model", "gpt-4o", "--protocol", "official"]) == 0
    assert len(threaded_fake.requests) == 3
    sheets_dir = tmp_path / "pub" / "data" / "301" / "stitched_assets"
    names = ["stitched_image_1.png", *(f"stitched_image_{n}.png" for n in (10, 11, 12, *range(2, 10)))]
    total_long = round(LONG_S * FPS)
    candidates = [np.asarray(_frame(n), dtype=np.int16) for n in range(total_long)]
    by_count: dict[int, list[int]] = {}
    for body in threaded_fake.requests:
        assert body["temperature"] == 0 and body["max_tokens"] == 16384  # the default preset
        images = body["messages"][-1]["content"][1:]
        data = [base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) for part in images]
        # The twelve sheets, plain sorted (_10 before _2), as the files are; never preview.png.
        assert data[:12] == [(sheets_dir / n).read_bytes() for n in names]
        by_count[len(images)] = [_which_frame(d, candidates) for d in data[12:]]
    # Task 301, 70 s: min(64, 70 - 12) = 58 frames at int(i * 140 / 58). Tasks 302/303, 5.5 s: 5 at 1 FPS.
    assert by_count[70] == [int(i * total_long / 58) for i in range(58)]
    assert by_count[17] == [0, 2, 4, 6, 8]
    record = read_record(tmp_path / "out" / "301" / "gpt-4o")
    assert record.images.sheet_names == names and record.sampling is not None
    assert record.sampling.indices == by_count[70]
    assert record.sampling.timestamps == pytest.approx([i / FPS for i in by_count[70]])


def test_generate_takes_page_and_mutant_sources_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model mutants:NAME`` and ``--model pages:DIR`` name the same generators as in ``iwr run``."""
    from iwr_bench.agents.generation.config import slugify
    from iwr_bench.engine.setup import builtin_suite

    pages = tmp_path / "mine"
    (pages / "101").mkdir(parents=True)
    (pages / "101" / "index.html").write_text("<p>mine</p>", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["generate", "--tasks", str(builtin_suite()), "--only", "101", "--out", str(out), "--no-cache"]
    assert main([*argv, "--model", "mutants:hours-label-changed", "--model", f"pages:{pages}"]) == 0
    mutant = (out / "101" / "mutants_hours-label-changed" / "index.html").read_text(encoding="utf-8")
    assert mutant and "__PLACEHOLDER" not in mutant
    mine = out / "101" / slugify(f"pages:{pages}") / "index.html"
    assert mine.read_text(encoding="utf-8") == "<p>mine</p>"
    text = capsys.readouterr().out
    assert "mutants:hours-label-changed: 1 task(s), 1 ok" in text
