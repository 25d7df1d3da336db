"""Which metric designs a run uses when its run file names none: the built-in ones, or the environment's."""

from __future__ import annotations

import pytest

from iwr_bench.engine.config import RunConfig, parse_run_config


def test_design_defaults_follow_the_environment_and_a_run_file_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IWR_OCR_DESIGN", raising=False)
    monkeypatch.delenv("IWR_IMAGE_DESIGN", raising=False)
    assert (RunConfig().metrics.ocr_design, RunConfig().metrics.image_design) == ("ocr", "dino")
    monkeypatch.setenv("IWR_OCR_DESIGN", "phash")
    monkeypatch.setenv("IWR_IMAGE_DESIGN", "effnet-lite0")
    metrics = parse_run_config({"tasks": "builtin"}).metrics
    assert (metrics.ocr_design, metrics.image_design) == ("phash", "effnet-lite0")
    named = parse_run_config({"metrics": {"ocr_design": "ocr", "image_design": "clip"}}).metrics
    assert (named.ocr_design, named.image_design) == ("ocr", "clip")
    monkeypatch.setenv("IWR_OCR_DESIGN", "  ")  # blank: the built-in default
    assert RunConfig().metrics.ocr_design == "ocr"
