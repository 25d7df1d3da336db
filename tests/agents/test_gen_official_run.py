"""``iwr run --protocol official`` end to end: manifest, records, pages and the report say what was sent."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply, serve
from rich.console import Console

from iwr_bench.agents.generation import read_record
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.run import Engine
from iwr_bench.report import build_report

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]


@pytest.mark.filterwarnings("ignore:Sampling parameters:UserWarning")  # pydantic-ai's, for gpt-5
async def test_official_run_records_presets_prompt_and_what_was_sent(
    tmp_path: Path, tasks_root: Path, allow_requests: None
) -> None:
    page = (
        '<html><body><img src="__PLACEHOLDER_ASSETS_BASE_DIR__/001.png" width="8" height="8"></body></html>'
    )
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Rebuild the page at {resolution}.\n", encoding="utf-8")
    async with serve(FakeOpenAI(replies=[Reply(text=f"```html\n{page}\n```")])) as fake:
        config = parse_run_config(
            {
                "tasks": str(tasks_root),
                "only": [1],
                "protocol": "official",
                "prompt_file": str(prompt),
                "models": [{"name": "vllm:gpt-5", "base_url": fake.url, "retries": 0, "frame_cap": 3}],
                "limits": {"browser_pages": 1},
            }
        )
        engine = Engine(config, tmp_path / "run")
        engine.prepare()
        outcome = await engine.run()
    assert outcome.status == "completed", outcome.message
    assert len(fake.requests) == 1
    body = fake.requests[0]
    assert "temperature" not in body and body["max_tokens"] == 16384
    assert body["messages"][-1]["content"][0]["text"] == "Rebuild the page at 640x360.\n"
    assert engine.prepared is not None
    manifest = engine.prepared.store.manifest()
    generation = manifest["generation"]
    assert generation["protocol"] == "official" and generation["prompt_file"] == str(prompt)
    assert generation["prompt_file_sha256"] == hashlib.sha256(prompt.read_bytes()).hexdigest()
    model = generation["models"]["gpt-5"]
    assert model["preset"] == "gpt-5" and model["set_by_user"] == ["frame_cap"]
    assert model["settings"]["max_tokens"] == 16384 and model["settings"]["timeout"] == 600
    assert model["frame_cap"] == 3 and model["image_budget"] == 70
    sent = manifest["sent_settings"]["gpt-5"]
    assert sent["dropped"] == ["temperature"] and sent["max_tokens"] == 16384
    assert sent["max_tokens_field"] == "max_tokens"
    # The page written in the run folder refers to the task's assets relative to its folder.
    # named as the official results tree names it: the model id, not our "vllm_gpt-5"
    folder = tmp_path / "run" / "pages" / "1" / "gpt-5"
    assert not (tmp_path / "run" / "pages" / "1" / "vllm_gpt-5").exists()
    record = read_record(folder)
    assert record.protocol == "official" and record.images.frames == 3
    assert record.asset_base is not None and record.asset_base.endswith("/ds/data/1/assets")
    assert (folder / record.asset_base).resolve() == (tasks_root / "data" / "1" / "assets").resolve()
    assert f'src="{record.asset_base}/001.png"' in (folder / "index.html").read_text(encoding="utf-8")
    # The report shows it.
    console = Console(record=True, width=200)
    report = build_report(tmp_path / "run", tmp_path / "report", console, html=False)
    summary = json.loads((report / "summary.json").read_text())
    assert summary["generation"]["models"]["gpt-5"]["preset"] == "gpt-5"
    assert summary["sent_settings"]["gpt-5"]["dropped"] == ["temperature"]
    text = console.export_text()
    assert "gpt-5: sent max_tokens=16384, timeout=600s; not sent" in text
    assert "(dropped by the model class): temperature" in text
