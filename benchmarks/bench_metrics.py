"""Metric throughput (images/s) and judge time per action on the built-in suite.

Prints, measured in this one run on this machine: images per second for ``ocr`` (EasyOCR),
``effnet-lite0`` (the offline DINO substitute), ``clip`` (a tiny random open_clip checkpoint,
so the number is a floor on model cost, not ViT-B-32's) and ``phash``; then the heuristic judge's
replay time per action over every reference page of the built-in suite.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import anyio
from PIL import Image

from iwr_bench._torch import import_torchvision
from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.registry import create
from iwr_bench.suites.build import SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig


def _checkpoints(n: int) -> list[Image.Image]:
    paths = sorted(SAMPLE.glob("data/*/checkpoints/step_*.png"))[:n]
    return [Image.open(p).convert("RGB") for p in paths]


def _tiny_clip(folder: Path) -> tuple[str, str]:
    import torch

    import_torchvision()  # before open_clip: PyPI's torchvision needs the shim beside CPU torch
    import open_clip

    name = "bench-tiny-clip"
    cfg = {
        "embed_dim": 64,
        "vision_cfg": {"image_size": 224, "layers": 4, "width": 128, "patch_size": 32, "head_width": 64},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
    }
    (folder / f"{name}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(folder / f"{name}.json")
    ckpt = folder / "tiny.pt"
    torch.save({"state_dict": open_clip.create_model(name).state_dict()}, ckpt)
    return name, str(ckpt)


async def _throughput(images: list[Image.Image]) -> None:
    pairs = [(a, b) for a, b in zip(images[::2], images[1::2], strict=False)]
    with tempfile.TemporaryDirectory() as tmp:
        name, ckpt = _tiny_clip(Path(tmp))
        specs = {
            "phash": {},
            "effnet-lite0": {"device": "cpu"},
            "clip": {"model": name, "pretrained": ckpt, "device": "cpu"},
            "ocr": {"device": "cpu"},
        }
        for metric_name, args in specs.items():
            metric, _ = create("metric", metric_name, **args)
            work = pairs[:3] if metric_name == "ocr" else pairs
            await metric(work[:1])  # load weights outside the timing
            t0 = time.perf_counter()
            await metric(work)
            dt = time.perf_counter() - t0
            print(
                f"{metric_name:>13}: {2 * len(work) / dt:8.2f} images/s ({2 * len(work)} images, {dt:.2f} s)"
            )


async def _judge_time() -> None:
    tasks = load_tasks(SAMPLE).tasks
    async with PagePool(PoolConfig(size=1)) as pool:
        executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
        actions = 0
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            for task in tasks:
                assert task.reference_page is not None
                replay = await executor.replay(task, task.reference_page.parent, Path(tmp) / str(task.id))
                actions += replay.total_steps
        dt = time.perf_counter() - t0
    print(
        f"judge (heuristic, 1 page at a time): {actions} actions in {dt:.1f} s = {dt / actions:.3f} s/action"
    )


async def main() -> None:
    await _throughput(_checkpoints(16))
    await _judge_time()


if __name__ == "__main__":
    anyio.run(main)
