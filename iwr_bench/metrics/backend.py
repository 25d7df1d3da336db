"""What produced a metric value: recorded beside every score."""

from __future__ import annotations

from pydantic import BaseModel


class Backend(BaseModel):
    """The engine, model and weights behind one metric."""

    metric: str
    """Registered metric name (``ocr``, ``dino``, ``clip``, ``phash`` ...)."""
    engine: str
    """Library doing the work, e.g. ``easyocr 1.7.2`` or ``transformers``."""
    model: str = ""
    """Model name or hub id."""
    weights: str = ""
    """Where the weights came from (hub id, local path, package), or ``random`` in tests."""
    device: str = "cpu"
    """Device it ran on."""
    substitute: bool = False
    """True when this stands in for the backend the paper used (not paper-comparable)."""
    note: str = ""
    """Why a substitute was used, or anything else a reader of the score should know."""

    @property
    def label(self) -> str:
        """Short human label, marked when it is a substitute."""
        text = f"{self.metric}={self.model or self.engine}"
        return f"{text} (substitute)" if self.substitute else text


def resolve_device(device: str = "auto") -> str:
    """``auto`` becomes ``cuda`` when torch sees a GPU, else ``cpu``; others pass through."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
