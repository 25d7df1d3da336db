"""Perceptual and exact hashes of screenshots and frames."""

from __future__ import annotations

import hashlib
import io

import imagehash
from PIL import Image

HASH_SIZE = 16
"""Side of the DCT hash grid; 16 (256 bits) separates mostly-white pages better than 8."""


def as_image(data: bytes | Image.Image) -> Image.Image:
    """Decode PNG/JPEG bytes, or pass a PIL image through."""
    if isinstance(data, Image.Image):
        return data
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        return img.copy()


def phash(data: bytes | Image.Image, hash_size: int = HASH_SIZE) -> imagehash.ImageHash:
    """Perceptual (DCT) hash of an image."""
    return imagehash.phash(as_image(data).convert("L"), hash_size=hash_size)


def phash_hex(data: bytes | Image.Image, hash_size: int = HASH_SIZE) -> str:
    """Perceptual hash as a hex string, stable across runs."""
    return str(phash(data, hash_size))


def phash_similarity(a: bytes | Image.Image, b: bytes | Image.Image, hash_size: int = HASH_SIZE) -> float:
    """1 - normalised Hamming distance between the perceptual hashes of two images."""
    ha, hb = phash(a, hash_size), phash(b, hash_size)
    return 1.0 - (ha - hb) / float(hash_size * hash_size)


def pixel_digest(img: Image.Image) -> str:
    """SHA-256 of the decoded RGB pixels plus the size: equal exactly when the pixels are equal."""
    rgb = img.convert("RGB")
    h = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode())
    h.update(rgb.tobytes())
    return h.hexdigest()
