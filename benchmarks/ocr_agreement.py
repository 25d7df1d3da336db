"""Agreement of the OCR runtimes with EasyOCR under PyTorch, on the built-in suite, with timings.

    .venv/bin/python benchmarks/ocr_agreement.py [--work DIR] [--runtimes openvino,openvino-bf16]

The images: every checkpoint of the 16 tasks, and every screenshot the judges took of generated
pages that differ from them: the three baselines (oracle, screenshot, blank) and the suite's
hand-made mutants. Collecting them replays those pages once with the cheap pHash metrics (no
OCR); the screenshots stay in ``--work`` so a second run only reads.

Each runtime reads every distinct image (by pixel digest), and the reference ``torch`` does too.
Printed, from this one run: the share of images whose text is identical to the reference's (the
bar: 95%), by kind of image; per task, the largest change of LVS over that task's judged pages
(the bar: 0.5 points; the image term of LVS is the same for every OCR runtime, so the change is
half the change of mean text similarity); and seconds per image of each runtime, with the ratio
to the reference. Texts read are kept in ``--work`` (``texts-<runtime>.json``), so an interrupted
run resumes; ``--fresh`` reads again (timings then cover every image).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from PIL import Image

from iwr_bench.suites.build import SAMPLE

MUTANTS = SAMPLE.parent / "sample-mutants"


def _collect(work: Path) -> None:
    """Replay the baselines and the mutants once, with pHash metrics, keeping their screenshots."""
    from iwr_bench.cli import main
    from iwr_bench.dataset.bundle import mutant_page

    os.environ["IWR_OCR_DESIGN"] = "phash"  # only the screenshots are wanted here
    os.environ["IWR_IMAGE_DESIGN"] = "phash"
    if not (work / "baselines" / "run.sqlite").is_file():
        assert main(["run", "--out", str(work / "baselines"), "--quiet", "--no-metric-cache"]) == 0
    pages = work / "mutant-pages"
    if not (work / "mutants").is_dir():
        shutil.rmtree(pages, ignore_errors=True)
        for folder in sorted(MUTANTS.glob("*/*/")):
            task = folder.parent.name
            mutant_page(folder, SAMPLE / "data" / task / "reference", pages / task / f"mutant-{folder.name}")
        args = ["judge", "--tasks", str(SAMPLE), "--pages", str(pages), "--out", str(work / "mutants")]
        assert main([*args, "--quiet"]) == 0


def _judged(work: Path) -> list[tuple[str, str, list[tuple[Path, Path]]]]:
    """(task, page, counted (checkpoint, screenshot) pairs) of every judged page."""
    out = []
    for eval_json in sorted(work.glob("*/judged/*/*/eval.json")) + sorted(work.glob("mutants/*/*/eval.json")):
        record = json.loads(eval_json.read_text())
        task = str(record["task_id"])
        pairs = [
            (SAMPLE / "data" / task / "checkpoints" / name, eval_json.parent / shot)
            for name, shot in zip(record["pair_checkpoints"], record["screenshot_paths_to_eval"], strict=True)
        ][: record["counted_pairs"]]
        out.append((task, eval_json.parent.name, pairs))
    return out


def _images(work: Path) -> tuple[dict[str, Image.Image], dict[str, str], dict[Path, str]]:
    """Distinct images by digest, the kind of each, and the digest of every file."""
    from iwr_bench.metrics.hashing import pixel_digest

    images: dict[str, Image.Image] = {}
    kinds: dict[str, str] = {}
    digest_of: dict[Path, str] = {}
    files = [(p, "checkpoint") for p in sorted(SAMPLE.glob("data/*/checkpoints/*.png"))]
    for _, page, pairs in _judged(work):
        kind = "mutant" if page.startswith("mutant-") else "baseline"
        files += [(shot, kind) for _, shot in pairs]
    for path, kind in files:
        image = Image.open(path).convert("RGB")
        digest = pixel_digest(image)
        digest_of[path] = digest
        if digest not in images:
            images[digest], kinds[digest] = image, kind
    return images, kinds, digest_of


def _read(
    runtime: str, images: dict[str, Image.Image], work: Path, fresh: bool
) -> tuple[dict[str, str], float]:
    """Texts of every image under ``runtime`` (resuming from ``work``), and seconds per image read now."""
    from iwr_bench.metrics.ocr import EasyOcr

    store = work / f"texts-{runtime}.json"
    texts: dict[str, str] = {} if fresh or not store.is_file() else json.loads(store.read_text())
    reader = EasyOcr(device="cpu", runtime=runtime)
    todo = [d for d in images if d not in texts]
    if todo:
        reader.read(next(iter(images.values())))  # load and warm up outside the timing
    spent = 0.0
    for n, digest in enumerate(todo, 1):
        start = time.perf_counter()
        texts[digest] = reader.read(images[digest])
        spent += time.perf_counter() - start
        if n % 10 == 0 or n == len(todo):
            store.write_text(json.dumps(texts))
            print(f"  {runtime}: {n}/{len(todo)} read, {spent / n:.2f} s per image", flush=True)
    return texts, (spent / len(todo) if todo else float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", default=".bench/ocr-agreement", help="screenshots and texts (kept)")
    parser.add_argument("--runtimes", default="openvino,openvino-bf16")
    parser.add_argument("--fresh", action="store_true", help="read every image again (full timings)")
    args = parser.parse_args()
    from iwr_bench.metrics.text import text_similarity

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    _collect(work)
    images, kinds, digest_of = _images(work)
    by_kind = defaultdict(int)
    for kind in kinds.values():
        by_kind[kind] += 1
    print(f"{len(images)} distinct images: " + ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items())))
    reference, ref_seconds = _read("torch", images, work, args.fresh)
    judged = _judged(work)
    runtimes: dict[str, object] = {}
    results = {"images": dict(by_kind), "reference_s_per_image": ref_seconds, "runtimes": runtimes}
    for runtime in args.runtimes.split(","):
        texts, seconds = _read(runtime, images, work, args.fresh)
        same = {k: sum(texts[d] == reference[d] for d in kinds if kinds[d] == k) for k in by_kind}
        share = sum(same.values()) / len(images)
        worst: dict[str, float] = defaultdict(float)
        for task, _, pairs in judged:
            if not pairs:
                continue
            ref_ocr = fmean(
                text_similarity(reference[digest_of[c]], reference[digest_of[s]]) for c, s in pairs
            )
            new_ocr = fmean(text_similarity(texts[digest_of[c]], texts[digest_of[s]]) for c, s in pairs)
            worst[task] = max(worst[task], abs(100 * (new_ocr - ref_ocr) / 2))
        ratio = ref_seconds / seconds if seconds == seconds and ref_seconds == ref_seconds else float("nan")
        runtimes[runtime] = {
            "identical_share": share,
            "identical_by_kind": same,
            "max_task_lvs_change": max(worst.values()),
            "task_lvs_change": dict(sorted(worst.items())),
            "s_per_image": seconds,
        }
        print(f"\n{runtime} against torch")
        print("| images | identical text |")
        print("|---|---|")
        for kind, n in sorted(by_kind.items()):
            print(f"| {kind} ({n}) | {same[kind]} ({100 * same[kind] / n:.1f}%) |")
        print(f"| all ({len(images)}) | {sum(same.values())} ({100 * share:.1f}%), bar 95% |")
        print("per task, largest LVS change over its judged pages (points; bar 0.5):")
        print("  " + ", ".join(f"{t}: {v:.2f}" for t, v in sorted(worst.items())))
        print(f"  seconds per image: {seconds:.2f} (torch {ref_seconds:.2f}; {ratio:.2f}x faster)")
        verdict = share >= 0.95 and max(worst.values()) <= 0.5
        print(f"  meets the agreement bar: {'yes' if verdict else 'no'}")
    (work / "agreement.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
