from __future__ import annotations

import csv
from pathlib import Path

import pytest

from iwr_bench.scoring.formulas import PairScore, TaskScore, final_from, ifs, summarise, vfs_from

PUBLISHED = Path(__file__).resolve().parents[3] / "shared" / "spec" / "published-results.csv"


def _rows() -> list[dict[str, str]]:
    with PUBLISHED.open() as fh:
        return list(csv.DictReader(fh))


def test_published_table_is_reproduced_from_its_components() -> None:
    rows = _rows()
    assert len(rows) == 28
    for row in rows:
        lvs, hvs, ifs_, vfs, final = (float(row[k]) for k in ("lvs", "hvs", "ifs", "vfs", "final"))
        assert vfs_from(lvs, hvs) == pytest.approx(vfs, abs=0.01), row["model"]
        assert final_from(ifs_, vfs) == pytest.approx(final, abs=0.01), row["model"]


def test_ifs_is_the_successful_prefix_fraction() -> None:
    assert ifs(3, 8) == 0.375
    assert ifs(0, 0) == 0.0
    with pytest.raises(ValueError, match="outside"):
        ifs(9, 8)


def test_task_score_with_and_without_hvs() -> None:
    with_hvs = TaskScore(
        total_steps=4,
        success_steps=2,
        pairs=[PairScore(step=0, ocr=0.8, dino=0.6, hvs=0.5), PairScore(step=1, ocr=1.0, dino=1.0, hvs=0.9)],
    )
    assert with_hvs.lvs == pytest.approx(0.85)
    assert with_hvs.hvs == pytest.approx(0.7)
    assert with_hvs.vfs == pytest.approx(0.775)
    assert with_hvs.final == pytest.approx(0.7 * 0.5 + 0.3 * 0.775)
    assert not with_hvs.lvs_only

    lvs_only = TaskScore(total_steps=2, success_steps=2, pairs=[PairScore(step=0, ocr=0.5, dino=0.7)])
    assert lvs_only.hvs is None and lvs_only.lvs_only
    assert lvs_only.vfs == pytest.approx(0.6)

    mixed = TaskScore(
        total_steps=2,
        success_steps=2,
        pairs=[PairScore(step=0, ocr=1, dino=1), PairScore(step=1, ocr=1, dino=1, hvs=1)],
    )
    with pytest.raises(ValueError, match="some pairs"):
        _ = mixed.vfs


def test_summary_macro_micro_and_missing_pages_count() -> None:
    good = TaskScore(total_steps=2, success_steps=2, pairs=[PairScore(step=0, ocr=1, dino=1, hvs=1)])
    half = TaskScore(total_steps=8, success_steps=4, pairs=[PairScore(step=0, ocr=0.5, dino=0.5, hvs=0.5)])
    missing = TaskScore(total_steps=10, success_steps=0)  # no page: counted, scores 0
    s = summarise([good, half, missing])
    assert s.tasks == 3
    assert s.ifs == pytest.approx(100 * (1 + 0.5 + 0) / 3)
    assert s.ifs_micro == pytest.approx(100 * 6 / 20)
    assert s.vfs == pytest.approx(100 * (1 + 0.5 + 0) / 3)
    assert s.hvs == pytest.approx(100 * (1 + 0.5 + 0) / 3)
    assert s.final == pytest.approx(100 * ((0.7 + 0.3) + (0.35 + 0.15) + 0) / 3)
    assert not s.lvs_only
    assert summarise([missing]).lvs_only
