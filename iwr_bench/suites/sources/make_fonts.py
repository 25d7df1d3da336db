"""Write the small web fonts of the built-in suite's game sites (every format a site may name).

``python iwr_bench/suites/sources/make_fonts.py`` subsets DejaVu Sans Bold (Debian package
``fonts-dejavu-core``) to printable ASCII and writes ``<slug>/site/fonts/merge-sans.{ttf,woff,woff2,
eot,svg}`` for each slug in ``SLUGS``. WOFF2 needs the ``brotli`` module. The subset is renamed
"Merge Sans": the Bitstream Vera licence that DejaVu carries allows modified copies under a name
without "Bitstream" or "Vera"; its text is copied beside the fonts as ``LICENSE-DejaVu.txt``.
"""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path
from xml.sax.saxutils import escape

from fontTools import subset
from fontTools.pens.svgPathPen import SVGPathPen
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parent
SOURCE = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
LICENCE = Path("/usr/share/doc/fonts-dejavu-core/copyright")
NAME = "Merge Sans"
SLUGS = ("merge-tiles", "memory-cards", "photo-gallery", "sprint-board")


def subset_font() -> TTFont:
    """DejaVu Sans Bold cut down to printable ASCII and renamed."""
    font = TTFont(SOURCE)
    subsetter = subset.Subsetter(subset.Options())
    subsetter.populate(text="".join(chr(c) for c in range(32, 127)))
    subsetter.subset(font)
    for record in font["name"].names:
        if record.nameID in (1, 4, 16):
            record.string = NAME
        elif record.nameID in (3, 6):
            record.string = NAME.replace(" ", "")
    return font


PANOSE = (
    "bFamilyType",
    "bSerifStyle",
    "bWeight",
    "bProportion",
    "bContrast",
    "bStrokeVariation",
    "bArmStyle",
    "bLetterForm",
    "bMidline",
    "bXHeight",
)


def eot(ttf: bytes, font: TTFont) -> bytes:
    """An Embedded OpenType (version 0x00020001) wrapper around the TrueType bytes, uncompressed."""
    os2, head = font["OS/2"], font["head"]
    header = struct.pack("<IIII", 0, len(ttf), 0x00020001, 0)
    header += bytes(getattr(os2.panose, f) for f in PANOSE)
    header += struct.pack("<BBIHH", 1, 0, os2.usWeightClass, os2.fsType, 0x504C)
    header += struct.pack(
        "<4I", os2.ulUnicodeRange1, os2.ulUnicodeRange2, os2.ulUnicodeRange3, os2.ulUnicodeRange4
    )
    header += struct.pack("<2II", os2.ulCodePageRange1, os2.ulCodePageRange2, head.checkSumAdjustment)
    header += b"\0" * 16
    for text in (NAME, "Bold", "Version 1.0", NAME):  # family, style, version, full name
        data = text.encode("utf-16-le")
        header += b"\0\0" + struct.pack("<H", len(data)) + data
    header += b"\0\0" + struct.pack("<H", 0)  # padding, empty root string
    out = bytearray(header + ttf)
    struct.pack_into("<I", out, 0, len(out))
    return bytes(out)


def svg_font(font: TTFont) -> str:
    """An SVG font (``<font>`` with one ``<glyph>`` per character) from the glyph outlines."""
    glyphs = font.getGlyphSet()
    cmap = font.getBestCmap()
    upm = font["head"].unitsPerEm
    hhea = font["hhea"]
    rows = []
    for code in sorted(cmap):
        name = cmap[code]
        pen = SVGPathPen(glyphs)
        glyphs[name].draw(pen)
        char = escape(chr(code), {'"': "&quot;"})
        rows.append(f'<glyph unicode="{char}" horiz-adv-x="{glyphs[name].width}" d="{pen.getCommands()}"/>')
    return (
        '<?xml version="1.0" standalone="no"?>\n<svg xmlns="http://www.w3.org/2000/svg"><defs>\n'
        f'<font id="MergeSans" horiz-adv-x="{upm // 2}"><font-face font-family="{NAME}" font-weight="700" '
        f'units-per-em="{upm}" ascent="{hhea.ascent}" descent="{hhea.descent}"/>\n'
        + "\n".join(rows)
        + "\n</font></defs></svg>\n"
    )


def main(argv: list[str] | None = None) -> None:
    """Write every format for each slug named on the command line (default: every slug in ``SLUGS``)."""
    for slug in (sys.argv[1:] if argv is None else argv) or SLUGS:
        out = ROOT / slug / "site" / "fonts"
        out.mkdir(parents=True, exist_ok=True)
        font = subset_font()
        font.flavor = None
        font.save(out / "merge-sans.ttf")
        ttf = (out / "merge-sans.ttf").read_bytes()
        for flavor in ("woff", "woff2"):
            flavoured = subset_font()
            flavoured.flavor = flavor
            flavoured.save(out / f"merge-sans.{flavor}")
        (out / "merge-sans.eot").write_bytes(eot(ttf, font))
        (out / "merge-sans.svg").write_text(svg_font(font), encoding="utf-8")
        if LICENCE.is_file():
            shutil.copyfile(LICENCE, out / "LICENSE-DejaVu.txt")
        print(f"{slug}: fonts written to {out}")


if __name__ == "__main__":
    main()
