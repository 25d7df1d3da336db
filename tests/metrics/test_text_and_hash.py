from __future__ import annotations

import pytest
from PIL import Image

from iwr_bench.metrics.hashing import phash_hex, phash_similarity, pixel_digest
from iwr_bench.metrics.text import join_segments, text_similarity


def test_text_similarity_rules() -> None:
    assert text_similarity("", "") == 1.0
    assert text_similarity("abc", "") == 0.0
    assert text_similarity("", "abc") == 0.0
    assert text_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert join_segments(["  Cart ", "", "TOTAL"]) == "cart total"


def test_phash_separates_pages_and_digest_is_exact(images: dict[str, Image.Image]) -> None:
    assert phash_similarity(images["a"], images["a2"]) == 1.0
    assert phash_similarity(images["a"], images["b"]) < 0.8
    assert phash_hex(images["a"]) == phash_hex(images["a2"])
    assert pixel_digest(images["a"]) == pixel_digest(images["a2"])
    assert pixel_digest(images["a"]) != pixel_digest(images["b"])
