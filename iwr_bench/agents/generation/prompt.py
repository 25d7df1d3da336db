"""The generation request: instructions, then asset sheets, then video frames (one user message)."""

from __future__ import annotations

import hashlib
import io
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image
from pydantic_ai import BinaryContent, UserContent

from iwr_bench.agents.generation.postprocess import PLACEHOLDER
from iwr_bench.dataset.models import Resolution
from iwr_bench.errors import UserError

INSTRUCTIONS = """\
You are an expert front-end engineer. The images below show a web page being used: first the \
contact sheets of the page's image assets (each asset is labelled with its file name), then \
{frame_note}

Rebuild this page as ONE self-contained file, index.html, so that it looks and behaves like the \
recording: reproduce its layout, its text and content, and every interaction you can see.

Rules:
1. Everything lives in that one file: put CSS in <style> and JavaScript in <script>. Do not load \
any external library, framework, stylesheet, script or web font.
2. Do not call any backend or network service. Where the page would fetch data, mock it with \
static data inside the file.
3. Design for a viewport of exactly {width}x{height} pixels (width x height), the resolution of \
the recording.
4. Give every element a user can click (buttons, links, tabs, menu items, toggles, cards that \
react to clicks) the CSS class "btn", in addition to any other classes.
5. Use the provided assets for images. Refer to an asset as {placeholder}/<filename> (for example \
{placeholder}/001.png), in <img> tags and in CSS url() alike, and give each image an explicit \
width and height.
6. Answer with the complete HTML inside a single ```html code block, and nothing else: no \
explanation before or after it.
"""

_FRAMES_NOTE = "{n} frames taken from the screen recording, in time order ({rate})."
_VIDEO_NOTE = "the screen recording itself, as a video."
_NO_VIDEO_NOTE = "no frames (the image budget was spent on the asset sheets)."


def render_instructions(
    resolution: Resolution, n_frames: int, video: Literal["frames", "native", "none"] = "frames"
) -> str:
    """The instruction text for one task."""
    if video == "native":
        note = _VIDEO_NOTE
    elif n_frames == 0 or video == "none":
        note = _NO_VIDEO_NOTE
    else:
        note = _FRAMES_NOTE.format(n=n_frames, rate="about one per second, spread over the whole video")
    return INSTRUCTIONS.format(
        frame_note=note, width=resolution.width, height=resolution.height, placeholder=PLACEHOLDER
    )


@dataclass(frozen=True)
class PromptFile:
    """Instructions read from a file (``--prompt-file``), e.g. the official prompt template."""

    path: str
    """Where the text came from."""
    text: str
    """The template; ``{resolution}`` becomes ``WxH``."""
    sha256: str
    """Digest of the file's bytes."""

    def render(self, resolution: Resolution) -> str:
        """The instructions for one task.

        A template whose only replacement field is ``{resolution}`` is filled with ``str.format``,
        as the official script fills its template (so ``{{`` and ``}}`` become braces); any other
        text has just the literal ``{resolution}`` replaced, so CSS or JSON braces survive.
        """
        value = f"{resolution.width}x{resolution.height}"
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(self.text) if name is not None}
        except ValueError:
            fields = {"?"}
        if fields <= {"resolution"}:
            return self.text.format(resolution=value)
        return self.text.replace("{resolution}", value)


def load_prompt_file(path: str | Path) -> PromptFile:
    """Read an instruction file (UTF-8).

    Raises:
        UserError: when it cannot be read, is not UTF-8 or is empty.
    """
    where = Path(path).expanduser()
    try:
        data = where.read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        raise UserError(f"cannot read prompt file {where}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"prompt file {where} is not UTF-8 text: {exc.reason}") from exc
    if not text.strip():
        raise UserError(f"prompt file {where} is empty")
    return PromptFile(path=str(where), text=text, sha256=hashlib.sha256(data).hexdigest())


def downscale(image: Image.Image, max_side: int | None) -> Image.Image:
    """``image`` shrunk (aspect kept) so its longer side is at most ``max_side``; never enlarged."""
    if max_side is None or max(image.size) <= max_side:
        return image
    scale = max_side / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


def encode_image(
    image: Image.Image, max_side: int | None, fmt: Literal["jpeg", "png"] = "png"
) -> BinaryContent:
    """Downscale and encode one image as an image part."""
    image = downscale(image, max_side)
    buf = io.BytesIO()
    if fmt == "jpeg":
        image.convert("RGB").save(buf, format="JPEG", quality=90)
        return BinaryContent(buf.getvalue(), media_type="image/jpeg")
    image.save(buf, format="PNG")
    return BinaryContent(buf.getvalue(), media_type="image/png")


def encode_sheets(paths: Sequence[Path], max_side: int | None) -> list[BinaryContent]:
    """Contact sheets as PNG image parts, in the order given (filename order)."""
    parts: list[BinaryContent] = []
    for path in paths:
        with Image.open(path) as img:
            img.load()
            ready = img if img.mode in ("RGB", "RGBA", "L") else img.convert("RGBA")
            parts.append(encode_image(ready, max_side))
    return parts


def build_content(
    instructions: str, sheets: Sequence[BinaryContent], video: Sequence[BinaryContent]
) -> list[UserContent]:
    """The one user message: instructions, then sheets, then frames (or the video part)."""
    return [instructions, *sheets, *video]
