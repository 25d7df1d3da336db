"""Import torchvision safely beside the CPU build of torch.

PyPI's torchvision wheel is a CUDA build. Its compiled operators fail to load next to
``torch==2.13.0+cpu`` and the import then dies on ``torchvision::nms``. Declaring the
schemas of the two missing operators before the import lets everything except the
compiled ops (and ``torchvision.io``) work, which is all open_clip, timm and EasyOCR use.
On a machine with a matching CUDA build of torch and torchvision this does nothing.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_lock = threading.Lock()
_library: object | None = None  # kept alive for the whole process


def import_torchvision() -> ModuleType:
    """Return the ``torchvision`` module, registering missing op schemas if needed."""
    global _library
    with _lock:
        try:
            return importlib.import_module("torchvision")
        except RuntimeError as exc:
            if "torchvision::nms" not in str(exc):
                raise
        import sys

        import torch

        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define(
            "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
        )
        lib.define(
            "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
        )
        _library = lib
        return importlib.import_module("torchvision")
