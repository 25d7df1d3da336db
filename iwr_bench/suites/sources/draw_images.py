"""Draw every PNG image of the built-in suite's reference sites (deterministic).

Run ``python iwr_bench/suites/sources/draw_images.py``; it rewrites ``<slug>/site/img/*.png``.
Every picture is made of simple shapes, gradients and text, with no randomness, so a rerun
gives the same pixels.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parent
RGB = tuple[int, int, int]


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled font at ``size`` (the same on every machine)."""
    return ImageFont.load_default(size=size)


def hexc(h: str) -> RGB:
    h = h.lstrip("#")
    return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))


def gradient(w: int, h: int, top: str, bottom: str) -> Image.Image:
    """A vertical two-colour gradient."""
    a, b = hexc(top), hexc(bottom)
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    for y in range(h):
        t = y / max(1, h - 1)
        d.line([(0, y), (w, y)], fill=tuple(round(a[i] + (b[i] - a[i]) * t) for i in range(3)))
    return img


def centered_text(
    d: ImageDraw.ImageDraw, box: tuple[int, int, int, int], text: str, size: int, fill: str
) -> None:
    f = font(size)
    left, t, r, b = d.textbbox((0, 0), text, font=f)
    x = box[0] + (box[2] - box[0] - (r - left)) / 2 - left
    y = box[1] + (box[3] - box[1] - (b - t)) / 2 - t
    d.text((x, y), text, font=f, fill=fill)


def logo(text: str, bg: str, fg: str, w: int = 160, h: int = 48, mark: str | None = None) -> Image.Image:
    """A small wordmark: a round badge with an initial, then the name."""
    img = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle([0, 0, w - 1, h - 1], radius=h // 4, fill=bg)
    d.ellipse([6, 6, h - 6, h - 6], fill=fg)
    centered_text(d, (6, 6, h - 6, h - 6), mark or text[0], h // 2, bg)
    centered_text(d, (h, 0, w - 4, h), text, h // 3 + 2, fg)
    return img


def avatar(bg: str, skin: str, hair: str, size: int = 96) -> Image.Image:
    """A flat round avatar: head, hair and shoulders."""
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.ellipse([0, 0, size - 1, size - 1], fill=bg)
    s = size / 96
    d.ellipse([28 * s, 62 * s, 68 * s, 110 * s], fill=hair)
    d.pieslice([18 * s, 64 * s, 78 * s, 124 * s], 180, 360, fill="#ffffff")
    d.ellipse([32 * s, 22 * s, 64 * s, 58 * s], fill=skin)
    d.chord([30 * s, 16 * s, 66 * s, 46 * s], 180, 360, fill=hair)
    mask = Image.new("L", (size, size), 0)
    ImageDraw.Draw(mask).ellipse([0, 0, size - 1, size - 1], fill=255)
    out = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    out.paste(img, (0, 0), mask)
    return out


def product(
    bg_top: str, bg_bottom: str, draw: Callable[[ImageDraw.ImageDraw], None], w: int = 240, h: int = 180
) -> Image.Image:
    img = gradient(w, h, bg_top, bg_bottom)
    draw(ImageDraw.Draw(img))
    return img


# ---------------------------------------------------------------- shapes used by several sites


def loaf(d: ImageDraw.ImageDraw, cx: int, cy: int, rw: int, rh: int, crust: str, slashes: int = 3) -> None:
    d.ellipse([cx - rw, cy - rh, cx + rw, cy + rh], fill=crust, outline="#5a3312", width=3)
    for i in range(slashes):
        x = cx - rw // 2 + i * rw // max(1, slashes - 1) if slashes > 1 else cx
        d.line([(x - 14, cy + 10), (x + 14, cy - 14)], fill="#f3d9a8", width=5)


def pot(d: ImageDraw.ImageDraw, cx: int, base: int, colour: str) -> None:
    d.polygon([(cx - 42, base - 56), (cx + 42, base - 56), (cx + 32, base), (cx - 32, base)], fill=colour)
    d.rectangle([cx - 48, base - 66, cx + 48, base - 54], fill=colour, outline="#00000040")


def leaf(d: ImageDraw.ImageDraw, x0: int, y0: int, x1: int, y1: int, colour: str) -> None:
    d.ellipse([x0, y0, x1, y1], fill=colour)
    d.line([(x0 + 4, (y0 + y1) // 2), (x1 - 4, (y0 + y1) // 2)], fill="#0b3d1f", width=2)


def mountains(
    w: int, h: int, sky: tuple[str, str], ridge: str, near: str, sun: str | None = "#ffd97a"
) -> Image.Image:
    img = gradient(w, h, *sky)
    d = ImageDraw.Draw(img)
    if sun:
        d.ellipse([w * 0.7, h * 0.12, w * 0.7 + h * 0.22, h * 0.34], fill=sun)
    d.polygon(
        [
            (0, h * 0.75),
            (w * 0.22, h * 0.35),
            (w * 0.42, h * 0.7),
            (w * 0.62, h * 0.3),
            (w, h * 0.72),
            (w, h),
            (0, h),
        ],
        fill=ridge,
    )
    d.polygon([(w * 0.58, h * 0.38), (w * 0.62, h * 0.3), (w * 0.66, h * 0.38)], fill="#ffffff")
    d.polygon(
        [
            (0, h * 0.9),
            (w * 0.3, h * 0.68),
            (w * 0.6, h * 0.88),
            (w * 0.85, h * 0.72),
            (w, h * 0.82),
            (w, h),
            (0, h),
        ],
        fill=near,
    )
    return img


# ---------------------------------------------------------------- per-site pictures


def pottery() -> dict[str, Image.Image]:
    def vase(d: ImageDraw.ImageDraw) -> None:
        d.ellipse([80, 60, 160, 160], fill="#b5653a")
        d.rectangle([104, 28, 136, 80], fill="#b5653a")
        d.ellipse([98, 20, 142, 36], fill="#8e4a26")
        d.line([(84, 110), (156, 110)], fill="#e9c9a8", width=4)

    def bowl(d: ImageDraw.ImageDraw) -> None:
        d.pieslice([50, 40, 190, 160], 0, 180, fill="#4f7a8a")
        d.ellipse([50, 88, 190, 112], fill="#2f5563")
        d.rectangle([100, 150, 140, 160], fill="#4f7a8a")

    def mug(d: ImageDraw.ImageDraw) -> None:
        d.rounded_rectangle([78, 50, 150, 150], radius=10, fill="#d8cbb5", outline="#8a7a60", width=3)
        d.arc([134, 72, 176, 124], -90, 90, fill="#8a7a60", width=8)
        d.line([(80, 80), (148, 80)], fill="#6b8f71", width=6)

    def plate(d: ImageDraw.ImageDraw) -> None:
        d.ellipse([50, 30, 190, 150], fill="#f5efe4", outline="#a88f6a", width=4)
        d.ellipse([84, 58, 156, 122], outline="#c77d4b", width=5)

    bg = ("#f4ede4", "#e3d5c3")
    return {
        "logo.png": logo("Clay & Kiln", "#3d2b1f", "#f4ede4", 170, 44),
        "vase.png": product(*bg, vase),
        "bowl.png": product(*bg, bowl),
        "mug.png": product(*bg, mug),
        "plate.png": product(*bg, plate),
        "artist.png": avatar("#c9b49a", "#e8b98f", "#3d2b1f"),
    }


def trail() -> dict[str, Image.Image]:
    def map_img() -> Image.Image:
        img = Image.new("RGB", (340, 180), "#e7efd8")
        d = ImageDraw.Draw(img)
        for i in range(6):
            d.ellipse([40 + i * 18, 20 + i * 10, 300 - i * 18, 170 - i * 10], outline="#b9c99a", width=2)
        pts = [(30, 160), (80, 130), (120, 140), (170, 90), (220, 100), (260, 50), (310, 40)]
        d.line(pts, fill="#c0392b", width=4)
        d.ellipse([300, 30, 320, 50], fill="#c0392b")
        centered_text(d, (0, 150, 120, 178), "Start", 14, "#333333")
        return img

    return {
        "hero.png": mountains(390, 200, ("#7fb3d5", "#d6eaf8"), "#5d6d7e", "#27ae60"),
        "map.png": map_img(),
        "lake.png": mountains(120, 90, ("#aed6f1", "#eaf2f8"), "#7f8c8d", "#2e86c1", None),
        "ridge.png": mountains(120, 90, ("#f5b041", "#fdebd0"), "#6e2c00", "#a04000", "#fff3c4"),
        "forest.png": mountains(120, 90, ("#a9dfbf", "#e9f7ef"), "#1e8449", "#145a32", None),
        "guide.png": avatar("#a9cce3", "#f0c8a0", "#6e4b2a", 64),
    }


def plants() -> dict[str, Image.Image]:
    def monstera(d: ImageDraw.ImageDraw) -> None:
        pot(d, 120, 170, "#d98c5f")
        for x0, y0, x1, y1 in [(60, 30, 130, 90), (110, 20, 190, 84), (80, 70, 160, 120)]:
            leaf(d, x0, y0, x1, y1, "#2e8b57")

    def cactus(d: ImageDraw.ImageDraw) -> None:
        pot(d, 120, 170, "#c0504d")
        d.rounded_rectangle([104, 30, 136, 110], radius=16, fill="#4caf50")
        d.rounded_rectangle([74, 58, 96, 96], radius=10, fill="#4caf50")
        d.rectangle([90, 84, 106, 96], fill="#4caf50")
        d.rounded_rectangle([144, 44, 166, 84], radius=10, fill="#4caf50")
        d.rectangle([134, 72, 150, 84], fill="#4caf50")
        d.ellipse([112, 22, 128, 38], fill="#ff7aa2")

    def fern(d: ImageDraw.ImageDraw) -> None:
        pot(d, 120, 170, "#e6e0d4")
        for i in range(7):
            a = math.radians(200 + i * 23)
            x, y = 120 + 80 * math.cos(a), 110 + 80 * math.sin(a)
            d.line([(120, 110), (x, y)], fill="#3a7d44", width=8)

    def snake(d: ImageDraw.ImageDraw) -> None:
        pot(d, 120, 170, "#34495e")
        for i, hgt in enumerate([70, 100, 85, 60]):
            x = 88 + i * 20
            d.polygon([(x, 110), (x + 9, 110 - hgt), (x + 18, 110)], fill="#6b8e23", outline="#d4e157")

    bg = ("#f1f8f1", "#dcefdc")
    return {
        "logo.png": logo("Leafy", "#1f5130", "#e8f5e9", 130, 44),
        "monstera.png": product(*bg, monstera),
        "cactus.png": product(*bg, cactus),
        "fern.png": product(*bg, fern),
        "snake.png": product(*bg, snake),
    }


def recipes() -> dict[str, Image.Image]:
    def pancakes(d: ImageDraw.ImageDraw) -> None:
        d.ellipse([60, 200, 420, 260], fill="#ffffff", outline="#cccccc", width=3)
        for i in range(5):
            y = 190 - i * 26
            d.ellipse([110, y - 10, 370, y + 30], fill="#d89a4e", outline="#a8682a", width=3)
        d.rectangle([215, 68, 265, 92], fill="#fff6c9")
        d.polygon([(150, 120), (330, 120), (300, 170), (180, 170)], fill="#8b4513")
        for x in (160, 250, 330):
            d.ellipse([x, 40, x + 22, 62], fill="#4169e1")

    return {
        "pancakes.png": product("#fff4e0", "#ffe0b3", pancakes, 480, 280),
        "chef.png": avatar("#ffd0a6", "#e0ac69", "#2b1b0e", 72),
    }


def settings() -> dict[str, Image.Image]:
    return {
        "logo.png": logo("Taskly", "#4338ca", "#eef2ff", 130, 40),
        "avatar.png": avatar("#c7d2fe", "#f1c27d", "#4a2c17", 96),
    }


def dashboard() -> dict[str, Image.Image]:
    def thumb(colour: str, shape: str) -> Image.Image:
        img = gradient(48, 48, "#f8fafc", "#e2e8f0")
        d = ImageDraw.Draw(img)
        if shape == "circle":
            d.ellipse([10, 10, 38, 38], fill=colour)
        elif shape == "square":
            d.rounded_rectangle([10, 10, 38, 38], radius=6, fill=colour)
        else:
            d.polygon([(24, 8), (40, 38), (8, 38)], fill=colour)
        return img

    return {
        "logo.png": logo("Metricly", "#0f172a", "#38bdf8", 150, 40),
        "avatar.png": avatar("#bae6fd", "#c68642", "#1b1b1b", 64),
        "p-lamp.png": thumb("#f59e0b", "triangle"),
        "p-chair.png": thumb("#10b981", "square"),
        "p-clock.png": thumb("#6366f1", "circle"),
    }


def bakery() -> dict[str, Image.Image]:
    def sourdough(d: ImageDraw.ImageDraw) -> None:
        loaf(d, 120, 100, 80, 50, "#c68a4a")

    def rye(d: ImageDraw.ImageDraw) -> None:
        loaf(d, 120, 100, 90, 42, "#6f4a2a", 4)

    def baguette(d: ImageDraw.ImageDraw) -> None:
        d.rounded_rectangle([20, 80, 220, 122], radius=21, fill="#d9a55b", outline="#7a4b1c", width=3)
        for x in (60, 100, 140, 180):
            d.line([(x - 12, 112), (x + 12, 90)], fill="#f6e0b5", width=4)

    def croissant(d: ImageDraw.ImageDraw) -> None:
        for i, (x0, x1) in enumerate([(40, 100), (70, 170), (140, 200)]):
            d.ellipse(
                [x0, 70 + (i % 2) * -12, x1, 130 + (i % 2) * 12], fill="#e0a040", outline="#8a5a12", width=3
            )

    def muffin(d: ImageDraw.ImageDraw) -> None:
        d.polygon([(80, 100), (160, 100), (150, 160), (90, 160)], fill="#e8c07a")
        d.ellipse([70, 50, 170, 120], fill="#7b3f1d")
        for x, y in [(95, 70), (120, 62), (145, 78), (110, 92)]:
            d.ellipse([x, y, x + 8, y + 8], fill="#3b1d0b")

    def roll(d: ImageDraw.ImageDraw) -> None:
        d.ellipse([60, 40, 180, 160], fill="#d79b58", outline="#7a4b1c", width=3)
        for r in (44, 30, 16):
            d.arc([120 - r, 100 - r, 120 + r, 100 + r], 0, 300, fill="#8b5a2b", width=5)
        d.line([(80, 70), (160, 64)], fill="#ffffff", width=5)

    bg = ("#fff8ef", "#f3e2c7")
    return {
        "logo.png": logo("Crumb & Co.", "#5a3312", "#fff3dd", 170, 44),
        "sourdough.png": product(*bg, sourdough),
        "rye.png": product(*bg, rye),
        "baguette.png": product(*bg, baguette),
        "croissant.png": product(*bg, croissant),
        "muffin.png": product(*bg, muffin),
        "roll.png": product(*bg, roll),
    }


def signup() -> dict[str, Image.Image]:
    def art() -> Image.Image:
        img = gradient(360, 420, "#0d9488", "#134e4a")
        d = ImageDraw.Draw(img)
        for i in range(5):
            d.ellipse([40 + i * 40, 60 + i * 30, 200 + i * 40, 220 + i * 30], outline="#5eead4", width=2)
        d.rounded_rectangle([80, 250, 280, 370], radius=14, fill="#f0fdfa")
        d.rectangle([100, 275, 260, 290], fill="#99f6e4")
        d.rectangle([100, 305, 220, 320], fill="#ccfbf1")
        d.rounded_rectangle([100, 335, 180, 355], radius=6, fill="#0d9488")
        return img

    return {"logo.png": logo("Orbit Club", "#134e4a", "#ccfbf1", 160, 44), "welcome.png": art()}


def todo() -> dict[str, Image.Image]:
    def check() -> Image.Image:
        img = Image.new("RGBA", (120, 120), (0, 0, 0, 0))
        d = ImageDraw.Draw(img)
        d.rounded_rectangle([10, 10, 110, 110], radius=24, fill="#fde68a")
        d.line([(34, 62), (54, 82), (88, 40)], fill="#92400e", width=10)
        return img

    return {"logo.png": logo("Jot", "#111827", "#fde68a", 100, 40), "check.png": check()}


def booking() -> dict[str, Image.Image]:
    def room(wall: str, bed: str) -> Image.Image:
        img = gradient(220, 140, wall, "#f5f5f4")
        d = ImageDraw.Draw(img)
        d.rectangle([0, 104, 220, 140], fill="#a8a29e")
        d.rectangle([30, 70, 190, 112], fill=bed)
        d.rectangle([30, 58, 70, 76], fill="#ffffff")
        d.rectangle([150, 58, 190, 76], fill="#ffffff")
        d.rectangle([150, 14, 200, 50], fill="#bae6fd", outline="#ffffff", width=3)
        return img

    return {
        "logo.png": logo("Harbor Inn", "#1e3a5f", "#fef3c7", 160, 44),
        "room-standard.png": room("#e7e5e4", "#64748b"),
        "room-deluxe.png": room("#fde68a", "#b45309"),
        "room-suite.png": room("#c7d2fe", "#4338ca"),
    }


def game2048() -> dict[str, Image.Image]:
    img = Image.new("RGBA", (72, 72), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    cols = ["#eee4da", "#ede0c8", "#f2b179", "#f59563"]
    for i, c in enumerate(cols):
        x, y = (i % 2) * 36, (i // 2) * 36
        d.rounded_rectangle([x + 2, y + 2, x + 34, y + 34], radius=5, fill=c)
    centered_text(d, (38, 38, 70, 70), "8", 18, "#ffffff")
    return {"logo.png": img}


def medal(ring: str, face: str, label: str) -> Image.Image:
    img = Image.new("RGBA", (56, 56), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.polygon([(18, 0), (28, 18), (38, 0)], fill="#c0392b")
    d.ellipse([6, 12, 50, 56], fill=ring)
    d.ellipse([12, 18, 44, 50], fill=face)
    centered_text(d, (12, 18, 44, 50), label, 14, "#5a4a3a")
    return img


def merge_tiles() -> dict[str, Image.Image]:
    grain = Image.new("RGB", (24, 24), hexc("#bbada0"))
    d = ImageDraw.Draw(grain)
    for i in range(0, 24, 6):
        d.line([(0, i), (24, i + 3)], fill=hexc("#b3a496"))
    return {
        "logo.png": game2048()["logo.png"],
        "board-grain.png": grain,
        "medal-none.png": medal("#d6cfc4", "#ece6dc", "-"),
        "medal-bronze.png": medal("#a0652d", "#d49a5a", "16"),
        "medal-silver.png": medal("#8d99a6", "#d9e0e6", "32"),
    }


def calculator() -> dict[str, Image.Image]:
    return {"logo.png": logo("Abacus", "#1f2937", "#fbbf24", 130, 40, "=")}


def card_face(bg: str, draw: Callable[[ImageDraw.ImageDraw], None]) -> Image.Image:
    img = Image.new("RGBA", (96, 96), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle([0, 0, 95, 95], radius=14, fill=bg)
    draw(d)
    return img


def memory_cards() -> dict[str, Image.Image]:
    def sun(d: ImageDraw.ImageDraw) -> None:
        for i in range(8):
            a = math.radians(i * 45)
            d.line([(48, 48), (48 + 38 * math.cos(a), 48 + 38 * math.sin(a))], fill="#f59e0b", width=6)
        d.ellipse([26, 26, 70, 70], fill="#fbbf24", outline="#b45309", width=3)

    def moon(d: ImageDraw.ImageDraw) -> None:
        d.ellipse([20, 16, 80, 76], fill="#e5e7eb")
        d.ellipse([36, 10, 92, 66], fill="#1e3a8a")

    def star(d: ImageDraw.ImageDraw) -> None:
        pts = []
        for i in range(10):
            r = 38 if i % 2 == 0 else 16
            a = math.radians(-90 + i * 36)
            pts.append((48 + r * math.cos(a), 50 + r * math.sin(a)))
        d.polygon(pts, fill="#facc15", outline="#a16207")

    def leaf_face(d: ImageDraw.ImageDraw) -> None:
        leaf(d, 14, 28, 82, 68, "#22c55e")

    def drop(d: ImageDraw.ImageDraw) -> None:
        d.polygon([(48, 12), (24, 56), (72, 56)], fill="#0ea5e9")
        d.ellipse([24, 34, 72, 82], fill="#0ea5e9")
        d.ellipse([36, 50, 46, 62], fill="#e0f2fe")

    def bolt(d: ImageDraw.ImageDraw) -> None:
        d.polygon([(54, 8), (22, 54), (46, 54), (38, 88), (74, 38), (50, 38)], fill="#a855f7")

    back = Image.new("RGB", (24, 24), hexc("#0f766e"))
    dd = ImageDraw.Draw(back)
    dd.line([(0, 0), (24, 24)], fill=hexc("#14b8a6"), width=3)
    dd.line([(0, 24), (24, 0)], fill=hexc("#14b8a6"), width=3)
    return {
        "logo.png": logo("P", "#0f766e", "#ccfbf1", 64, 64, "2"),
        "back.png": back,
        "sun.png": card_face("#fff7ed", sun),
        "moon.png": card_face("#1e3a8a", moon),
        "star.png": card_face("#fefce8", star),
        "leaf.png": card_face("#f0fdf4", leaf_face),
        "drop.png": card_face("#f0f9ff", drop),
        "bolt.png": card_face("#faf5ff", bolt),
    }


def photo_gallery() -> dict[str, Image.Image]:
    def city(sky: tuple[str, str], towers: str, lights: str) -> Image.Image:
        img = gradient(240, 160, *sky)
        d = ImageDraw.Draw(img)
        for i, (x, hgt) in enumerate([(8, 70), (44, 110), (84, 84), (124, 128), (168, 92), (204, 116)]):
            d.rectangle([x, 160 - hgt, x + 30, 160], fill=towers)
            for y in range(160 - hgt + 8, 152, 14):
                d.rectangle([x + 6 + (i % 2) * 10, y, x + 12 + (i % 2) * 10, y + 6], fill=lights)
        return img

    def harbor() -> Image.Image:
        img = gradient(240, 160, "#fb923c", "#fde68a")
        d = ImageDraw.Draw(img)
        d.rectangle([0, 104, 240, 160], fill="#1e40af")
        d.polygon([(60, 104), (140, 104), (126, 122), (74, 122)], fill="#7c2d12")
        d.line([(100, 104), (100, 48)], fill="#44403c", width=3)
        d.polygon([(102, 52), (102, 100), (136, 100)], fill="#f8fafc")
        return img

    def pines() -> Image.Image:
        img = gradient(240, 160, "#cbd5e1", "#f1f5f9")
        d = ImageDraw.Draw(img)
        for i, x in enumerate(range(10, 240, 34)):
            top = 40 + (i % 3) * 14
            d.polygon([(x, 150), (x + 16, top), (x + 32, 150)], fill="#166534" if i % 2 else "#14532d")
        d.rectangle([0, 148, 240, 160], fill="#3f6212")
        return img

    def dunes() -> Image.Image:
        img = gradient(240, 160, "#7dd3fc", "#fef3c7")
        d = ImageDraw.Draw(img)
        d.ellipse([150, 20, 190, 60], fill="#fde047")
        d.chord([-60, 90, 180, 230], 180, 360, fill="#f59e0b")
        d.chord([80, 100, 320, 240], 180, 360, fill="#d97706")
        return img

    return {
        "logo.png": logo("Lumen", "#111827", "#fbbf24", 130, 40),
        "harbor.png": harbor(),
        "pines.png": pines(),
        "dunes.png": dunes(),
        "peaks.png": mountains(240, 160, ("#93c5fd", "#e0f2fe"), "#475569", "#15803d"),
        "lake.png": mountains(240, 160, ("#c4b5fd", "#ede9fe"), "#6b21a8", "#0e7490", "#fef9c3"),
        "skyline.png": city(("#1e1b4b", "#4338ca"), "#0f172a", "#fde047"),
        "market.png": city(("#fecaca", "#fff1f2"), "#9f1239", "#fff7ed"),
        "bridge.png": city(("#a5f3fc", "#ecfeff"), "#334155", "#e2e8f0"),
        "owner.png": avatar("#fde68a", "#d6a77a", "#3b2410", 72),
    }


def sprint_board() -> dict[str, Image.Image]:
    return {
        "logo.png": logo("Sprint", "#312e81", "#e0e7ff", 130, 40),
        "avatar-mia.png": avatar("#fbcfe8", "#f1c27d", "#7c2d12", 40),
        "avatar-ravi.png": avatar("#bfdbfe", "#8d5524", "#111827", 40),
        "avatar-jo.png": avatar("#bbf7d0", "#e0ac69", "#a16207", 40),
        "avatar-lena.png": avatar("#fde68a", "#ffdbac", "#4b5563", 40),
        "empty.png": logo("Done", "#dcfce7", "#166534", 110, 36, "+"),
    }


SITES: dict[str, Callable[[], dict[str, Image.Image]]] = {
    "pottery-portfolio": pottery,
    "trail-guide": trail,
    "plant-shop": plants,
    "recipe-card": recipes,
    "settings-panel": settings,
    "sales-dashboard": dashboard,
    "bakery-checkout": bakery,
    "signup-form": signup,
    "todo-list": todo,
    "booking-wizard": booking,
    "tile-2048": game2048,
    "calculator": calculator,
    "merge-tiles": merge_tiles,
    "memory-cards": memory_cards,
    "photo-gallery": photo_gallery,
    "sprint-board": sprint_board,
}


def main(argv: list[str] | None = None) -> None:
    """Draw the images of each slug named on the command line (default: every site)."""
    chosen = (sys.argv[1:] if argv is None else argv) or list(SITES)
    for slug in chosen:
        make = SITES[slug]
        out = ROOT / slug / "site" / "img"
        out.mkdir(parents=True, exist_ok=True)
        for name, img in make().items():
            img.save(out / name, optimize=True)
            print(f"{slug}/site/img/{name}: {(out / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
