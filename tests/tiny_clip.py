"""A tiny randomly initialised open_clip checkpoint, written by the tests that need CLIP."""

from __future__ import annotations

import json
from pathlib import Path

from iwr_bench._torch import import_torchvision


def tiny_clip(folder: Path, seed: int = 0) -> tuple[str, Path]:
    """Write the checkpoint under ``folder``; returns (open_clip model name, checkpoint path).

    The weights come from ``seed`` alone, so a test sees the same model whatever ran before it.
    """
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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = open_clip.create_model(name)
    torch.save({"state_dict": model.state_dict()}, ckpt)
    return name, ckpt
