"""Claims settled from the screenshots' pixels, when the page's text says nothing about them.

"The yellow ring moves one card to the right": the ring is a drawn outline, with no text a rule on
visible text could follow. What changed on screen says it: the pixels that differ between the two
screenshots show one colour in one place before and in another place after (the colour common to
both sides of the change). When that colour is the one the clause names, if it names one, and the
second place lies in the direction the clause says, the claim holds. This rule only ever confirms: a picture
that went the wrong way, or a change it cannot read as one shape moving, stays undetermined.
"""

from __future__ import annotations

import re

import numpy as np
from PIL import Image

from iwr_bench.agents.judge.claims import QUOTED
from iwr_bench.agents.judge.looks import COLOURS, DIRECTIONS, MOVE, colour_names

_INK = 40
"""How much (sum of channel differences) a pixel must change to count as changed."""
_MIN_SHARE = 0.0002
"""The least share of the screen each place must cover (184 pixels at 1280x720)."""


def _quantised(pixels: np.ndarray) -> np.ndarray:
    """Each RGB pixel as one integer, 16 levels a channel."""
    q = (pixels // 16).astype(np.int32)
    return q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]


def _rgb(key: int) -> str:
    """The middle of a quantised colour's cell, as "r,g,b"."""
    return ",".join(str(((key >> shift) & 15) * 16 + 8) for shift in (8, 4, 0))


def moved_on_screen(clause: str, before: Image.Image, after: Image.Image) -> str | None:
    """Why ``clause`` ("X moves/drops/slides <direction>") holds on the screenshots, else None."""
    low = QUOTED.sub(" ", clause.lower())
    if MOVE.search(low) is None or before.size != after.size:
        return None
    words = re.findall(r"[a-z]+", low)
    want = [DIRECTIONS[w] for w in words if w in DIRECTIONS]
    if not want:
        return None
    named = [w for w in words if w in COLOURS]
    a = np.asarray(before.convert("RGB"), dtype=np.int16)
    b = np.asarray(after.convert("RGB"), dtype=np.int16)
    changed = np.abs(a - b).sum(axis=2) > _INK
    total = int(changed.sum())
    if total < 2 * _MIN_SHARE * changed.size:
        return None
    # the moved shape's colour: drawn at the changed pixels of one place before and of another
    # after, so it is the colour common to both sides of the change
    qa, qb = _quantised(a[changed]), _quantised(b[changed])
    keys, counts_a = np.unique(qa, return_counts=True)
    counts_b = dict(zip(*np.unique(qb, return_counts=True), strict=True))
    common = [(min(int(n), int(counts_b.get(k, 0))), int(k)) for k, n in zip(keys, counts_a, strict=True)]
    floor = max(_MIN_SHARE * changed.size, 0.2 * total / 2)
    candidates = [k for n, k in sorted(common, reverse=True)[:2] if n >= floor]
    if not candidates:
        return None
    # a moved shape leaves the ground it stood on showing, which is common on the whole screen;
    # of the two colours, the shape's is the rarer there (or the one the clause names)
    everywhere = _quantised(a.reshape(-1, 3)[:: max(1, a.shape[0] * a.shape[1] // 50000)])
    candidates.sort(key=lambda k: int((everywhere == k).sum()))
    if named:
        candidates = [k for k in candidates if any(n in colour_names(_rgb(k), 15.0) for n in named)]
        if not candidates:
            return None
    key = candidates[0]
    ys, xs = np.nonzero(changed)
    old, new = qa == key, qb == key
    x0, y0, x1, y1 = xs[old].mean(), ys[old].mean(), xs[new].mean(), ys[new].mean()
    colour = ",".join(str(int(v)) for v in b[changed][new].mean(axis=0))
    dx, dy = x1 - x0, y1 - y0
    for wx, wy in want:
        if (wx and np.sign(dx) != wx) or (wy and np.sign(dy) != wy):
            return None
        if (wx and abs(dx) < 2 * abs(dy)) or (wy and abs(dy) < 2 * abs(dx)):
            return None  # mostly along another axis
    return (
        f"on the screenshots, a shape drawn in rgb({colour}) left ({x0:.0f}, {y0:.0f}) and shows at "
        f"({x1:.0f}, {y1:.0f}) after the action"
    )
