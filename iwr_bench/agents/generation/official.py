"""The official generator's rules for ``--protocol official`` (protocol.md section 6).

- Per-model presets, picked by name: the first key (in the order below) found in the lower-cased model
  name wins, else ``default``. Under the official protocol a preset fills every setting the model's
  config does not set itself.
- Sheets go as the files are (their bytes, their media type from the extension), all of them, in
  plain sorted order; frames are the official sampler's JPEGs (quality 95).
- Where a preset (or the config) sets ``max_image_side``, every image whose longer side is larger is
  shrunk with cv2's area filter to ``int()`` sizes and written back in its own format, as the official
  script rewrites its temporary copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict
from pydantic_ai import BinaryContent

from iwr_bench.agents.generation.config import ModelConfig
from iwr_bench.dataset.frames import OFFICIAL_JPEG_QUALITY, OfficialSample
from iwr_bench.protocol import EvalProtocol


class Preset(BaseModel):
    """One entry of the official generator's per-model table."""

    model_config = ConfigDict(frozen=True)

    key: str
    """Matched as a substring of the lower-cased model name."""
    max_tokens: int
    """Completion limit (always sent)."""
    image_budget: int
    """Most images per request (``max_images``)."""
    frame_cap: int
    """Most video frames (``max_video_frames``)."""
    timeout: float
    """Seconds one request may take."""
    max_image_side: int | None = None
    """Downscale every image to this longer side (``max_single_image_size``), if set."""


PRESETS: tuple[Preset, ...] = (
    Preset(key="claude", max_tokens=16384, image_budget=70, frame_cap=64, timeout=300, max_image_side=1000),
    Preset(key="glm", max_tokens=16384, image_budget=20, frame_cap=20, timeout=600),
    Preset(key="qwen", max_tokens=4096, image_budget=20, frame_cap=20, timeout=300),
    Preset(key="gpt-4o-2024-05-13", max_tokens=4096, image_budget=70, frame_cap=64, timeout=600),
    Preset(key="gpt-5", max_tokens=16384, image_budget=70, frame_cap=64, timeout=600),
    Preset(
        key="doubao-seed-1-6-thinking-250615", max_tokens=16384, image_budget=70, frame_cap=64, timeout=600
    ),
    Preset(key="gpt-4.1-2025-04-14", max_tokens=16384, image_budget=70, frame_cap=64, timeout=600),
)
"""The official table, in its order (the first match wins)."""

DEFAULT_PRESET = Preset(key="default", max_tokens=16384, image_budget=70, frame_cap=64, timeout=300)
"""Used when no key matches."""

PRESET_FIELDS = ("max_tokens", "image_budget", "frame_cap", "timeout", "max_image_side")
"""Model-config fields a preset fills."""

# The official script's media types, by file extension.
MEDIA_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
}


def official_model_name(config: ModelConfig) -> str:
    """The model name the official script would be given: the id sent, without our provider prefix."""
    if config.base_url:
        return config.server_model_id
    return config.name.split(":", 1)[1] if ":" in config.name else config.name


def preset_for(model_name: str) -> Preset:
    """The preset the official generator picks for ``model_name``."""
    lowered = model_name.lower()
    return next((p for p in PRESETS if p.key in lowered), DEFAULT_PRESET)


def for_protocol(config: ModelConfig, protocol: EvalProtocol) -> tuple[ModelConfig, Preset | None]:
    """``config`` with the official preset filling every field it does not set; unchanged by default."""
    if protocol is not EvalProtocol.official:
        return config, None
    preset = preset_for(official_model_name(config))
    unset = {f: getattr(preset, f) for f in PRESET_FIELDS if f not in config.model_fields_set}
    return config.model_copy(update=unset), preset


def describe(config: ModelConfig, effective: ModelConfig, preset: Preset | None) -> dict[str, Any]:
    """What the manifest records for one model: preset, settings in effect, and which the user set."""
    return {
        "preset": preset.key if preset else None,
        "settings": effective.model_settings(),
        "image_budget": effective.image_budget,
        "frame_cap": effective.frame_cap,
        "max_image_side": effective.max_image_side,
        "set_by_user": sorted(f for f in PRESET_FIELDS if f in config.model_fields_set),
    }


def media_type(path: Path) -> str:
    """Media type of a sheet file, by extension as the official script maps it."""
    return MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream")


def _shrink(data: bytes, suffix: str, max_side: int | None) -> bytes:
    """The official resize: longer side to ``max_side`` with INTER_AREA, ``int()`` sizes, same format.

    An image cv2 cannot read, or one already small enough, is returned unchanged.
    """
    if max_side is None:
        return data
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        return data
    h, w = img.shape[:2]
    if w > h:
        ratio = max_side / w
        size = (max_side, int(h * ratio))
    else:
        ratio = max_side / h
        size = (int(w * ratio), max_side)
    if ratio >= 1.0:
        return data
    resized = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    params = [cv2.IMWRITE_JPEG_QUALITY, OFFICIAL_JPEG_QUALITY] if suffix in (".jpg", ".jpeg") else []
    ok, buf = cv2.imencode(suffix, resized, params)
    return buf.tobytes() if ok else data


def sheet_parts(paths: Sequence[Path], max_side: int | None) -> list[BinaryContent]:
    """The sheets as the official script sends them: file bytes and extension media type."""
    parts: list[BinaryContent] = []
    for path in paths:
        suffix = path.suffix.lower()
        data = _shrink(path.read_bytes(), suffix, max_side)
        parts.append(BinaryContent(data, media_type=media_type(path)))
    return parts


def frame_parts(sample: OfficialSample, max_side: int | None) -> list[BinaryContent]:
    """The sampled frames as JPEG image parts (shrunk and re-encoded at quality 95 where asked)."""
    return [BinaryContent(_shrink(f.jpeg, ".jpg", max_side), media_type="image/jpeg") for f in sample.frames]
