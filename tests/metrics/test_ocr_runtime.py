"""EasyOCR's detector under OpenVINO reads what EasyOCR under PyTorch reads, faster; bf16 is labelled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from iwr_bench.dataset.media import load_font
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.metrics.ocr_runtime import OpenVinoDetector, bf16_supported, detector_onnx
from iwr_bench.registry import build
from iwr_bench.suites.build import SAMPLE


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ocr-build")


@pytest.fixture(scope="module")
def fast(build_dir: Path) -> EasyOcr:
    return EasyOcr(device="cpu", runtime="openvino", build_dir=build_dir)


@pytest.fixture(scope="module")
def reference() -> EasyOcr:
    return EasyOcr(device="cpu", runtime="torch")


RGB = tuple[int, int, int]


def _label(text: str, fg: RGB, bg: RGB, size: tuple[int, int] = (460, 70)) -> Image.Image:
    img = Image.new("RGB", size, bg)
    ImageDraw.Draw(img).text((12, 20), text, fill=fg, font=load_font(24))
    return img


def test_runtimes_name_themselves_and_bf16_is_a_labelled_substitute(build_dir: Path) -> None:
    torch_reader = EasyOcr(device="cpu", runtime="torch")
    # unchanged, so text cached by earlier runs of the reference is still found
    assert torch_reader.backend.engine.endswith("(file input)")
    ov = EasyOcr(device="cpu", build_dir=build_dir)  # auto on CPU: OpenVINO
    assert ov.runtime == "openvino"
    assert "openvino" in ov.backend.engine and ov.backend.engine.endswith(" f32")
    assert not ov.backend.substitute
    bf16 = EasyOcr(device="cpu", runtime="openvino-bf16", build_dir=build_dir).backend
    if bf16_supported():
        assert bf16.engine.endswith(" bf16") and bf16.substitute and "bf16" in bf16.note
    else:  # OpenVINO computes in f32 here: the same values as the f32 runtime, under its name
        assert bf16.engine == ov.backend.engine and not bf16.substitute
    with pytest.raises(ValueError, match="runtime must be one of"):
        EasyOcr(device="cpu", runtime="tensorrt")
    with pytest.raises(ValueError, match="runs on the CPU"):
        EasyOcr(device="cuda", runtime="openvino")


def test_paper_designs_and_the_substitute_are_labelled() -> None:
    from iwr_bench.engine.setup import PAPER_DESIGNS

    assert {"ocr", "ocr-torch"} <= set(PAPER_DESIGNS["ocr"]) and "ocr-bf16" not in PAPER_DESIGNS["ocr"]
    reference, _ = build("metric", "ocr-torch", context={"device": "cpu", "cache_dir": None})
    assert reference.backend.engine.endswith("(file input)")
    default, _ = build("metric", "ocr", context={"device": "cpu", "cache_dir": None})
    assert "openvino" in default.backend.engine


@pytest.mark.slow
def test_the_export_is_made_once_and_named_by_the_weights(fast: EasyOcr, build_dir: Path) -> None:
    reader = fast._load()  # pyright: ignore[reportPrivateUsage]
    assert isinstance(reader.detector, OpenVinoDetector)  # type: ignore[attr-defined]
    (onnx,) = build_dir.glob("craft-*.onnx")
    before = onnx.stat().st_mtime_ns
    import easyocr_en_models

    weights = Path(easyocr_en_models.model_dir()) / "craft_mlt_25k.pth"
    again = detector_onnx(object(), weights, build_dir)  # no detector needed: nothing is exported
    assert again == onnx and onnx.stat().st_mtime_ns == before
    assert not list(build_dir.glob(".craft-*"))  # no partial file left behind


@pytest.mark.slow
def test_openvino_scores_text_as_pytorch_does(fast: EasyOcr, reference: EasyOcr) -> None:
    """The detector's score map itself, on a real checkpoint (downscaled to keep it cheap)."""
    import torch
    from easyocr.imgproc import normalizeMeanVariance

    checkpoint = SAMPLE / "data" / "115" / "checkpoints" / "step_0.png"
    image = Image.open(checkpoint).convert("RGB").resize((640, 352))
    x = torch.from_numpy(normalizeMeanVariance(np.asarray(image))).permute(2, 0, 1).unsqueeze(0)
    torch_detector = reference._load().detector  # type: ignore[attr-defined]  # pyright: ignore[reportPrivateUsage]
    with torch.no_grad():
        expected = torch_detector(x)[0].numpy()
    got = fast._load().detector(x)[0].numpy()  # type: ignore[attr-defined]  # pyright: ignore[reportPrivateUsage]
    assert got.shape == expected.shape
    assert float(np.abs(got - expected).max()) < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize(
    "image",  # (the whole checkpoint is two minutes of PyTorch OCR on a loaded machine: `make test-long`)
    ["label", pytest.param("checkpoint", marks=pytest.mark.long)],
)
def test_openvino_reads_the_same_text_as_pytorch(fast: EasyOcr, reference: EasyOcr, image: str) -> None:
    """A real, colourful checkpoint, and red text on navy: the same text, character for character."""
    if image == "checkpoint":
        images = [Image.open(SAMPLE / "data" / "115" / "checkpoints" / "step_3.png").convert("RGB")]
    else:
        images = [_label("Checkout now - total 42 USD", (255, 0, 0), (0, 0, 97))]
    expected = [reference.read(img) for img in images]
    assert all(expected)
    assert fast.read_many(images) == expected


@pytest.mark.slow
def test_batched_detection_reads_as_one_image_at_a_time(fast: EasyOcr) -> None:
    """The GPU path's batching (same-sized images detected together), run on the CPU."""
    images = [
        _label("Add to cart", (0, 0, 0), (255, 255, 255)),
        _label("Total 42 USD", (255, 255, 255), (30, 80, 200)),
        _label("Another size", (0, 0, 0), (255, 255, 255), size=(300, 60)),
        _label("Add to cart", (0, 0, 0), (255, 255, 255)),
    ]
    one_by_one = [fast.read(img) for img in images]
    assert fast.read_many(images, batch=3) == one_by_one
    assert one_by_one[0] == one_by_one[3] == "add to cart"
