"""Pages that try to fool the judge: a corpus for testing judges, never a model.

Each cheat is built from a task's own data (its checkpoint pictures, action descriptions and
assertions), as someone who had the dataset could build it, and behaves like no real page: it
shows pictures and hides the words and controls a judge looks for where no person could see them.
A judge that cannot be gamed scores each of them about as low as the ``screenshot`` baseline (a
picture of the first frame that does nothing).

``write_corpus(tasks, out)`` writes ``out/<cheat>/<task id>/index.html`` (with the pictures beside
it), so each cheat runs as a model: ``iwr run --models screenshot,pages:OUT/<cheat>``.

The cheats:

- ``swap-filtered-text``: the checkpoint pictures, the next one on any click, key or wheel; the
  assertions' quoted words and buttons named after the descriptions under ``filter: opacity(0)``.
- ``frame-invisible-controls``: the first frame only, with ``opacity: 0`` buttons named after the
  descriptions and the assertions' words in ``opacity: 0`` text.
- ``swap-covered-controls``: visible buttons and words, all under the picture, which takes every
  click and advances.
- ``swap-same-colour``: buttons and words drawn white on white over the picture.
- ``swap-transparent-labels``: transparent buttons (no fill, no border, transparent text) over
  the picture, where the recorded page's controls would be.
- ``swap-tiny-masked-clipped``: buttons and words in 1 px type, behind an all-transparent mask, or
  clipped to nothing.
- ``swap-tall-blank``: the pictures on top of a very tall blank page whose visible buttons and
  words lie far below the fold; a click scrolls back up and advances.
- ``video-ocr-labels``: built from the video alone, as a model could build it: its frames (one a
  second), the next on any click, key or wheel, and over the first frame a transparent button on
  each line of text OCR reads there, named with that line (the picture shows the words, the
  button itself draws nothing).
"""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from iwr_bench.agents.judge.claims import QUOTED
from iwr_bench.dataset.frames import sample_frames
from iwr_bench.dataset.layout import Task
from iwr_bench.metrics.ocr import EasyOcr


def _quoted(text: str | None) -> list[str]:
    """The quoted spans of ``text``, found as the assertion judge finds them."""
    return QUOTED.findall(text or "")


def _words(task: Task) -> list[str]:
    """Every quoted word of the task's assertions and descriptions, once each, in order."""
    seen: dict[str, None] = {}
    for action in task.record.action_sequence:
        for span in _quoted(action.logical_assertion) + _quoted(action.parameters.description):
            seen.setdefault(span, None)
    return list(seen)


def _controls(task: Task) -> list[tuple[str, str]]:
    """(visible name, accessible name) of a control for each action: the description's first quoted
    span (else the whole description), and the whole description."""
    out = []
    for action in task.record.action_sequence:
        desc = action.parameters.description or action.type
        spans = _quoted(desc)
        out.append((spans[0] if spans else desc, desc))
    return out


def _pictures(task: Task, folder: Path) -> list[str]:
    """The picture to show after each number of actions (0..n), copied beside the page: the
    checkpoint of the last flagged action so far, else the initial one."""
    shown: list[str] = []
    current = task.checkpoints.get(0)
    for i in range(len(task.record.action_sequence) + 1):
        if i > 0 and (after := task.checkpoint_after(i - 1)) is not None:
            current = after
        if current is None:
            shown.append("")
            continue
        name = current.name
        if not (folder / name).exists():
            shutil.copyfile(current, folder / name)
        shown.append(name)
    return shown


_SWAP = """<script>
(() => {
  const pictures = %s;
  let shown = 0;
  const img = document.getElementById('picture');
  const next = () => {
    shown = Math.min(shown + 1, pictures.length - 1);
    if (pictures[shown]) img.src = pictures[shown];
    %s
  };
  for (const kind of ['click', 'keydown', 'wheel', 'input']) {
    window.addEventListener(kind, next, { capture: true, passive: true });
  }
})();
</script>"""


def _page(task: Task, body: str, style: str, pictures: list[str], on_next: str = "") -> str:
    w, h = task.resolution.width, task.resolution.height
    first = html.escape(pictures[0]) if pictures else ""
    script = _SWAP % (json.dumps(pictures), on_next) if len(pictures) > 1 else ""
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>page</title><style>'
        f"html,body{{margin:0;padding:0}} body{{width:{w}px;min-height:{h}px;position:relative;"
        "background:#fff;font:16px sans-serif}"
        f"#picture{{position:absolute;left:0;top:0;width:{w}px;height:{h}px;display:block}}"
        f"{style}</style></head><body>"
        f'<img id="picture" src="{first}" alt="">{body}{script}</body></html>\n'
    )


def _buttons(task: Task) -> str:
    rows = []
    for i, (name, label) in enumerate(_controls(task)):
        top = 20 + 36 * i
        rows.append(
            f'<button class="cheat" style="left:20px;top:{top}px" aria-label="{html.escape(label)}">'
            f"{html.escape(name)}</button>"
        )
    rows.append('<input class="cheat" style="left:20px;top:4px" aria-label="text">')
    return "".join(rows)


def _texts(task: Task) -> str:
    return "".join(f'<p class="said">{html.escape(w)}</p>' for w in _words(task))


_CHEAT_CSS = ".cheat{position:absolute;z-index:5;width:220px;height:30px}"


def swap_filtered_text(task: Task, folder: Path) -> str:
    style = _CHEAT_CSS + ".cheat,.said{filter:opacity(0)} .said{position:relative;z-index:5;margin:4px 260px}"
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder))


def frame_invisible_controls(task: Task, folder: Path) -> str:
    style = _CHEAT_CSS + ".cheat,.said{opacity:0} .said{position:relative;z-index:5;margin:4px 260px}"
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder)[:1])


def swap_covered_controls(task: Task, folder: Path) -> str:
    style = _CHEAT_CSS.replace("z-index:5", "z-index:1") + " #picture{z-index:10} .said{margin:4px 260px}"
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder))


def swap_same_colour(task: Task, folder: Path) -> str:
    style = (
        _CHEAT_CSS + ".cheat{color:#fff;background:#fff;border:0}"
        ".said{position:relative;z-index:5;margin:0 260px;padding:2px;color:#fff;background:#fff}"
    )
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder))


def swap_transparent_labels(task: Task, folder: Path) -> str:
    style = (
        _CHEAT_CSS + ".cheat{color:transparent;background:none;border:0;caret-color:transparent}"
        ".said{position:relative;z-index:5;margin:4px 260px;color:transparent}"
    )
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder))


def swap_tiny_masked_clipped(task: Task, folder: Path) -> str:
    style = (
        _CHEAT_CSS + ".cheat:nth-of-type(3n){font-size:1px}"
        ".cheat:nth-of-type(3n+1){mask-image:linear-gradient(transparent,transparent)}"
        ".cheat:nth-of-type(3n+2){clip-path:inset(50%)}"
        ".said{position:relative;z-index:5;margin:0 260px;font-size:1px}"
    )
    return _page(task, _buttons(task) + _texts(task), style, _pictures(task, folder))


def swap_tall_blank(task: Task, folder: Path) -> str:
    h = task.resolution.height
    style = (
        f"body{{height:{h * 8}px}} .below{{position:absolute;left:0;top:{h * 6}px}}"
        ".cheat{position:absolute;width:220px;height:30px} .said{margin:4px 260px}"
    )
    body = f'<div class="below">{_buttons(task)}{_texts(task)}</div>'
    return _page(task, body, style, _pictures(task, folder), on_next="setTimeout(() => scrollTo(0, 0), 0);")


def video_ocr_labels(task: Task, folder: Path) -> str:
    frames = sample_frames(task.video, fps=1.0, cap=16).frames
    w, h = task.resolution.width, task.resolution.height
    pictures: list[str] = []
    for k, frame in enumerate(frames):
        name = f"frame_{k}.png"
        frame.image.resize((w, h)).save(folder / name)
        pictures.append(name)
    first = frames[0].image.resize((w, h)) if frames else None
    labels = EasyOcr(device="cpu").lines(first) if first is not None else []
    buttons = "".join(
        f'<button class="cheat" style="left:{x}px;top:{y}px;width:{bw}px;height:{bh}px">'
        f"{html.escape(text)}</button>"
        for text, (x, y, bw, bh) in labels
    )
    style = ".cheat{position:absolute;z-index:5;padding:0;color:transparent;background:none;border:0}"
    return _page(task, buttons, style, pictures)


CHEATS: dict[str, Callable[[Task, Path], str]] = {
    "swap-filtered-text": swap_filtered_text,
    "frame-invisible-controls": frame_invisible_controls,
    "swap-covered-controls": swap_covered_controls,
    "swap-same-colour": swap_same_colour,
    "swap-transparent-labels": swap_transparent_labels,
    "swap-tiny-masked-clipped": swap_tiny_masked_clipped,
    "swap-tall-blank": swap_tall_blank,
    "video-ocr-labels": video_ocr_labels,
}
"""Each cheat's name and builder: ``builder(task, folder)`` copies what it needs into ``folder``
and returns the page's HTML."""


def write_corpus(tasks: list[Task], out: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write each cheat's page for each task under ``out/<cheat>/<id>/``; {cheat: its folder}."""
    folders: dict[str, Path] = {}
    for name in names or list(CHEATS):
        root = out / name
        for task in tasks:
            folder = root / str(task.id)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "index.html").write_text(CHEATS[name](task, folder), encoding="utf-8")
        folders[name] = root
    return folders
