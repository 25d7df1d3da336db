"""A tiny randomly initialised open_clip checkpoint, written by the tests that need CLIP."""

from __future__ import annotations

import json
from pathlib import Path

from iwr_bench._torch import import_torchvision


def tiny_clip(folder: Path) -> tuple[str, Path]:
    """Write the checkpoint under ``folder``; returns (open_clip model name, checkpoint path)."""
    import torch

    import_torchvision()  # before open_clip: PyPI's torchvision needs the shim beside CPU torch
    import open_clip

    folder.mkdir()
    name = "iwr-tiny-clip"
    config = {
        "embed_dim": 32,
        "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
    }
    (folder / f"{name}.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / f"{name}.json")
    ckpt = folder / "tiny.pt"
    torch.save({"state_dict": open_clip.create_model(name).state_dict()}, ckpt)
    return name, ckpt
