"""Small official-layout task sets cut from the built-in suite, for tests that OCR real screenshots.

EasyOCR is slow on a loaded machine, so these sets keep a few actions and shrink the resolution
(the checkpoints are resized to match); as in the official data, a Type description says what to
type (``parameters.text`` stays for the default protocol).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image

from iwr_bench.suites.build import SAMPLE


def cut_builtin_tasks(
    root: Path, ids: tuple[int, ...], actions: int, size: tuple[int, int]
) -> list[dict[str, Any]]:
    """Write ``root/data.jsonl`` and ``root/data/<id>/`` for built-in tasks ``ids``; returns the records."""
    records = [json.loads(line) for line in (SAMPLE / "data.jsonl").read_text().splitlines() if line.strip()]
    keep = [r for r in records if r["id"] in ids]
    for r in keep:
        r["action_sequence"] = r["action_sequence"][:actions]
        r["recording_details"]["resolution"] = f"{size[0]}x{size[1]}"
        for action in r["action_sequence"]:
            params = action["parameters"]
            if action["type"] == "Type" and params.get("text"):
                params["description"] = f"type '{params['text']}' into {params['description']}"
        folder = root / "data" / str(r["id"])
        shutil.copytree(SAMPLE / "data" / str(r["id"]), folder)
        flagged = sum(a["visual_evaluation_flag"] for a in r["action_sequence"])
        for cp in (folder / "checkpoints").glob("step_*.png"):
            if int(cp.stem.split("_")[1]) > flagged:
                cp.unlink()
            else:
                with Image.open(cp) as im:
                    im.convert("RGB").resize(size).save(cp)
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep), encoding="utf-8")
    return keep
