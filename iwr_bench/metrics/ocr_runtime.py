"""EasyOCR's text detector (CRAFT) under OpenVINO: the same weights, a faster CPU runtime.

The detector is nine tenths of EasyOCR's time on a screenshot (about 4 s of 4.5 s for 1280x720
on 2 cores under PyTorch). It is exported once from the shipped weights to ONNX, cached on disk
under a name that carries the weights' digest and the torch version, and compiled by OpenVINO
for the thread count the metrics may use. In ``f32`` it computes the same score maps as PyTorch
(to about 1e-6), so EasyOCR finds the same boxes; ``bf16`` (on CPUs with bf16 or AMX units) is
several times faster again but moves a box now and then, so it is only a labelled substitute.

The recogniser stays EasyOCR's own PyTorch module: on CPU EasyOCR quantises its LSTM to int8,
and an un-quantised export reads one in five screenshots differently by a character.
The wrapper is used in place of ``reader.detector``: EasyOCR's ``detect`` only calls it.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

PRECISIONS = ("f32", "bf16")
_EXPORT_LOCK = threading.Lock()


def openvino_version() -> str:
    """The installed OpenVINO release (``2026.4.1``)."""
    return version("openvino").split("-")[0]


def bf16_supported() -> bool:
    """Whether OpenVINO can run bf16 on this CPU (avx512_bf16 or AMX)."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def detector_onnx(detector: Any, weights: Path, folder: Path) -> Path:
    """The ONNX export of ``detector`` (EasyOCR's CRAFT, loaded from ``weights``), made once.

    The file name carries the weights' digest and the torch version, so other weights or another
    exporter make a new file; the export is written beside it and renamed into place, so parallel
    processes never read half a file.
    """
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"craft-{_digest(weights)}-torch{torch.__version__.split('+')[0]}.onnx"
    if target.is_file():
        return target
    with _EXPORT_LOCK:
        if target.is_file():
            return target
        partial = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        try:
            example = torch.zeros(1, 3, 736, 1280)
            module = getattr(detector, "module", detector)  # EasyOCR wraps it in DataParallel on GPU
            with torch.no_grad():
                torch.onnx.export(
                    module.cpu().eval(),
                    (example,),
                    str(partial),
                    input_names=["image"],
                    output_names=["score", "feature"],
                    dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"}},
                    opset_version=17,
                    dynamo=False,
                )
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return target


class OpenVinoDetector:
    """Stands in for ``reader.detector``: ``(y, None) = detector(x)`` with ``x`` a torch batch.

    One compiled model per thread count (OpenVINO fixes the count when it compiles), so the
    metrics can take every core once the browsers are done, as the PyTorch models do.
    """

    def __init__(self, onnx: Path, precision: str = "f32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        import openvino as ov

        self.precision = precision
        self._core = ov.Core()
        self._model = self._core.read_model(str(onnx))
        self._compiled: dict[int, Any] = {}
        self._lock = threading.Lock()

    def compiled(self, threads: int) -> Any:
        """The model compiled for ``threads`` CPU threads."""
        with self._lock:
            if threads not in self._compiled:
                self._compiled[threads] = self._core.compile_model(
                    self._model,
                    "CPU",
                    {
                        "INFERENCE_NUM_THREADS": threads,
                        "INFERENCE_PRECISION_HINT": self.precision,
                        "PERFORMANCE_HINT": "LATENCY",
                        # pinned threads cannot leave a core a browser is busy on: under load
                        # that cost a third more time per screenshot here (6.5 s against 4.9 s)
                        "ENABLE_CPU_PINNING": False,
                    },
                )
            return self._compiled[threads]

    def __call__(self, x: Any) -> tuple[Any, None]:
        import torch

        from iwr_bench.metrics.models import metric_threads

        batch = np.ascontiguousarray(x.detach().cpu().numpy(), dtype=np.float32)
        score = self.compiled(metric_threads())([batch])[0]
        return torch.from_numpy(np.asarray(score)), None
