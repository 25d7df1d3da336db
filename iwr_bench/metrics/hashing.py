"""Perceptual and exact hashes of screenshots and frames, and the raster-noise bound on pixel identity."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import imagehash
import numpy as np
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


def _rgb(img: Image.Image) -> Image.Image:
    """The image in RGB (itself when it already is: converting would copy it)."""
    return img if img.mode == "RGB" else img.convert("RGB")


def pixel_digest(img: Image.Image) -> str:
    """SHA-256 of the decoded RGB pixels plus the size: equal exactly when the pixels are equal."""
    rgb = _rgb(img)
    h = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode())
    h.update(rgb.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class RasterDifference:
    """How two images of the same size differ, pixel by pixel."""

    max_level: int
    """Largest difference of one channel of one pixel, in levels (0-255)."""
    pixels: int
    """Pixels whose colour differs at all."""
    total: int
    """Pixels in each image."""

    @property
    def share(self) -> float:
        """Share of the pixels that differ (0-1)."""
        return self.pixels / self.total if self.total else 0.0


@dataclass(frozen=True)
class RasterBound:
    """When two screenshots count as the same picture although their pixels are not all equal.

    Chromium's anti-aliasing, image scaling and compositing can come out a few levels different on
    a few pixels between two renderings of the same page. Such a pair is *raster-identical*: the
    same size, every channel of every pixel within ``levels``, and at most a share ``share`` of the
    pixels different at all. The bound is a check on the pair, never a change of digest: caches
    stay keyed by exact :func:`pixel_digest` values.
    """

    levels: int
    """Most a channel may differ, in levels (0-255)."""
    share: float
    """Largest share of the pixels (0-1) that may differ at all."""

    @property
    def label(self) -> str:
        """The bound in words, stable across runs (it names the cache namespace of its decisions)."""
        return f"raster<={self.levels}levels/{self.share:g}share"

    def max_pixels(self, width: int, height: int) -> int:
        """Most pixels of a ``width`` x ``height`` image that may differ."""
        return int(self.share * width * height)

    def difference(self, a: Image.Image, b: Image.Image) -> RasterDifference | None:
        """How ``a`` and ``b`` differ, or None when they differ by more than this bound (or in size).

        The pixels are compared as bytes and only the differing ones are looked at further, and a
        pair with too many differing channels stops there: 4-5 ms at 1280x720 on one core,
        decoding to RGB included.
        """
        if a.size != b.size:
            return None
        x = np.frombuffer(_rgb(a).tobytes(), dtype=np.uint8)
        y = np.frombuffer(_rgb(b).tobytes(), dtype=np.uint8)
        limit = self.max_pixels(*a.size)
        unequal = x != y
        if int(np.count_nonzero(unequal)) > 3 * limit:  # 3 channels a pixel: more than `limit` pixels
            return None
        channels = np.flatnonzero(unequal)
        pixels = len(np.unique(channels // 3))
        level = int(np.abs(x[channels].astype(np.int16) - y[channels]).max()) if len(channels) else 0
        if pixels > limit or level > self.levels:
            return None
        return RasterDifference(max_level=level, pixels=pixels, total=a.width * a.height)

    def holds(self, a: Image.Image, b: Image.Image) -> bool:
        """Whether ``a`` and ``b`` are raster-identical under this bound."""
        return self.difference(a, b) is not None


RASTER_NOISE = RasterBound(levels=10, share=0.001)
"""The bound the pixel-identity shortcuts use (the metric cache and the oracle proof).

Measured when it was set (Chromium 156, 2 cores): with the sandbox's flags the suite's replays are
byte-identical to their recordings. With partial raster on (``--disable-partial-raster`` left out),
the anti-aliased corners and edges of rounded boxes came out differently: tasks 103, 107 and 115
by at most 7 levels (all but one pixel by 1-2) on at most 113 pixels (0.012%); the whole suite in
69 of 130 pairs, on at most 228 pixels (0.069%, a 390x844 page). Ten levels leaves margin over the
7, a share of 0.1% (921 pixels at 1280x720) over the 0.069%. Two of those 130 pairs (up to 34
levels on corner pixels of a large rounded button) are outside the bound and go to the metric
models, as before. Outside it too: a changed character of text, a border moved by one pixel
unless it is within 10 levels of its background, a button whose colour changes by more than 10
levels, or by less over more than 0.1% of the screen.
"""


def raster_identical(a: Image.Image, b: Image.Image, bound: RasterBound = RASTER_NOISE) -> bool:
    """Whether two images are the same picture up to raster noise (see :class:`RasterBound`)."""
    return bound.holds(a, b)
