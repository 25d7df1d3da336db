"""What a recorded site consists of: the reference bundle and the model-visible assets.

While a site is recorded, the page server logs the path of every request the page makes (the
document, stylesheets, scripts, fonts of every format, images named in CSS or built at run time,
``fetch`` calls). The *bundle* is every file of the site so requested, plus the files that the
requested HTML and CSS name by a relative ``src``/``href``/``url(...)`` (so the font formats and
hover images a browser skipped still travel with it). It is stored unchanged, at its original
paths, under the task's ``reference/`` folder and served as it was.

The *assets* a model sees follow the official rules: images, videos and sounds only, anonymised
as ``001.png``, ``002.svg``, ... in first-load order. Scripts, stylesheets and fonts (SVG fonts
included) stay out of ``assets/`` and the contact sheets.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

from iwr_bench.tools.server import resolve_inside

ASSET_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".svg",
        ".bmp",
        ".ico",
        ".avif",
        ".mp4",
        ".webm",
        ".mp3",
        ".ogg",
    }
)
"""Files a model may be shown (as assets and on the contact sheets)."""
FONT_SUFFIXES = frozenset({".woff", ".woff2", ".ttf", ".otf", ".eot"})
"""Web fonts: served to the oracle, never shown to a model."""
_SCANNED_SUFFIXES = frozenset({".html", ".htm", ".css"})
_SOURCE_SUFFIXES = frozenset({".html", ".htm", ".css", ".js", ".mjs", ".json"})
_REFERENCE = re.compile(
    r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]+))\s*\)|"""
    r"""\b(?:src|href|poster)\s*=\s*(?:"([^"]*)"|'([^']*)')""",
    re.IGNORECASE,
)
IGNORED_MISSING = frozenset({"/favicon.ico"})
"""Requests a browser makes on its own; their absence is not a failure of the site."""


def requested_files(site: Path, requests: list[str]) -> tuple[list[str], list[str]]:
    """Split logged request paths into site files (site-relative, first-request order) and misses."""
    found: dict[str, None] = {}
    missing: dict[str, None] = {}
    for raw in requests:
        path = unquote(urlsplit(raw).path)
        rel = path.lstrip("/") or "index.html"
        target = resolve_inside(site, rel)
        if target is not None:
            found.setdefault(target.relative_to(site).as_posix(), None)
        elif path not in IGNORED_MISSING:
            missing.setdefault(path, None)
    return list(found), list(missing)


def bundle_files(site: Path, requested: list[str]) -> list[str]:
    """Requested files, then those the bundled sources name, until nothing new is named.

    HTML and CSS name files by relative ``src``/``href``/``url(...)``; any bundled source (scripts
    included) names a file by writing its site-relative path literally (``"img/cat.png"``).
    """
    bundle: dict[str, None] = dict.fromkeys(requested)
    every = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    queue = [rel for rel in requested if Path(rel).suffix.lower() in _SOURCE_SUFFIXES]
    while queue:
        rel = queue.pop(0)
        text = (site / rel).read_text(encoding="utf-8", errors="replace")
        named = _named_files(site, rel, text) if Path(rel).suffix.lower() in _SCANNED_SUFFIXES else []
        named += [other for other in every if other in text]
        for other in named:
            if other not in bundle:
                bundle[other] = None
                if Path(other).suffix.lower() in _SOURCE_SUFFIXES:
                    queue.append(other)
    return list(bundle)


def _named_files(site: Path, rel: str, text: str) -> list[str]:
    """Site files that ``rel`` (whose content is ``text``) names by a relative or root-relative URL."""
    out: list[str] = []
    base = Path(rel).parent
    for match in _REFERENCE.finditer(text):
        ref = next((g for g in match.groups() if g), "").strip()
        parts = urlsplit(ref)
        if not parts.path or parts.scheme or parts.netloc or ref.startswith(("#", "data:")):
            continue
        path = unquote(parts.path)
        joined = path.lstrip("/") if path.startswith("/") else (base / path).as_posix()
        target = resolve_inside(site, joined)
        if target is not None:
            out.append(target.relative_to(site).as_posix())
    return out


def is_svg_font(path: Path) -> bool:
    """An SVG file that holds a ``<font>`` (a web font, not a picture)."""
    if path.suffix.lower() != ".svg":
        return False
    head = path.read_bytes()[:200_000].decode("utf-8", errors="replace")
    return "<font" in head


def is_asset(site: Path, rel: str) -> bool:
    """A file a model may be shown: a picture, video or sound (not an SVG font)."""
    path = site / rel
    return path.suffix.lower() in ASSET_SUFFIXES and path.is_file() and not is_svg_font(path)


def asset_paths(site: Path, bundle: list[str]) -> list[str]:
    """The bundle's assets, in bundle order (first-load order, then files named but not loaded)."""
    return [rel for rel in bundle if is_asset(site, rel)]


def anonymise(paths: list[str]) -> dict[str, str]:
    """Map site-relative asset paths to ``001.png``, ``002.svg``, ... in the given order."""
    return {rel: f"{n:03d}{Path(rel).suffix.lower()}" for n, rel in enumerate(paths, start=1)}


MUTANT_RECORD = "mutant.json"
"""The manifest of a mutant folder (kind, description, expected first failure, edited files)."""


def mutant_page(mutant: Path, reference: Path, dest: Path) -> Path:
    """Materialise a mutant page in ``dest``: the task's reference bundle with the mutant's edited
    files put over it (its ``mutant.json`` stays out); returns ``dest``."""
    shutil.copytree(reference, dest, dirs_exist_ok=True)
    shutil.copytree(mutant, dest, ignore=shutil.ignore_patterns(MUTANT_RECORD), dirs_exist_ok=True)
    return dest
