"""The self-contained HTML evidence report: one folder that opens from disk, with no network.

``index.html`` holds the leaderboard, the breakdown plots (inline SVG) and tables, and per task
and model a timeline of the replayed actions: the reference checkpoint beside the replay
screenshot, the sampled video frames near that moment, the grounded element, each verdict with
the judge's reasoning, console errors and blocked requests, and the scores. Filters (model,
interaction level, failure class) are a few lines of inline script. Images are downscaled JPEG
copies under ``img/``; nothing points outside the folder.

The video frames "near" an action: frames are sampled at 1 FPS; the moment of a scored action is
the frame most similar (perceptual hash) to its checkpoint, searched forward from the previous
moment; the moments of other actions are interpolated between their neighbours.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from iwr_bench.agents.judge.records import ActionRecord
from iwr_bench.dataset.frames import VideoError, sample_frames
from iwr_bench.dataset.layout import Task
from iwr_bench.metrics.diff import diff_overlay
from iwr_bench.metrics.hashing import phash_hex
from iwr_bench.protocol import EvalProtocol
from iwr_bench.report.data import Result, RunData
from iwr_bench.report.render import cell, columns
from iwr_bench.report.tables import Row
from iwr_bench.scoring.official import hvs_as_zero

THUMB_WIDTH = 480
FRAME_WIDTH = 240


def _e(value: Any) -> str:
    return html.escape(cell(value) if not isinstance(value, str) else value)


def _table(rows: Sequence[Row], skip: Sequence[str] = ()) -> str:
    cols = [c for c in columns(rows) if c not in skip]
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell(r.get(c)))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Images:
    """Downscaled copies of images under ``<out>/img``, each made once."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.done: dict[tuple[str, str], str] = {}

    def copy(self, source: Path, name: str, width: int = THUMB_WIDTH) -> str | None:
        key = (str(source), name)
        if key in self.done:
            return self.done[key]
        target = self.out / "img" / name
        try:
            with Image.open(source) as im:
                img = im.convert("RGB")
        except (OSError, ValueError):
            return None
        img.thumbnail((width, width * 4))
        target.parent.mkdir(parents=True, exist_ok=True)
        img.save(target, "JPEG", quality=78)
        rel = target.relative_to(self.out).as_posix()
        self.done[key] = rel
        return rel

    def save(self, image: Image.Image, name: str, width: int = FRAME_WIDTH) -> str:
        target = self.out / "img" / name
        if not target.exists():
            img = image.convert("RGB")
            img.thumbnail((width, width * 4))
            target.parent.mkdir(parents=True, exist_ok=True)
            img.save(target, "JPEG", quality=72)
        return target.relative_to(self.out).as_posix()


def _hamming(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def frame_moments(task: Task, frame_hashes: Sequence[str]) -> list[int]:
    """For each action, the index of the sampled frame nearest its moment (see the module doc)."""
    actions = task.record.action_sequence
    n = len(frame_hashes)
    anchors: dict[int, int] = {}
    start = 0
    for i in range(len(actions)):
        checkpoint = task.checkpoint_after(i)
        if checkpoint is None or not checkpoint.is_file() or n == 0:
            continue
        with Image.open(checkpoint) as im:
            target = phash_hex(im.convert("RGB"))
        best = min(range(start, n), key=lambda j: (_hamming(frame_hashes[j], target), j), default=start)
        anchors[i] = best
        start = best
    known = sorted(anchors.items())
    moments: list[int] = []
    for i in range(len(actions)):
        if i in anchors:
            moments.append(anchors[i])
            continue
        before = max(((k, v) for k, v in known if k < i), default=(-1, 0))
        after = min(((k, v) for k, v in known if k > i), default=(len(actions), max(0, n - 1)))
        span = after[0] - before[0]
        frac = (i - before[0]) / span if span else 0.0
        moments.append(round(before[1] + frac * (after[1] - before[1])))
    return moments


def _frames(run: RunData, task: Task | None, images: Images) -> tuple[list[str], list[int]]:
    """Paths of the task's sampled frames (copied) and each action's moment."""
    if task is None or not task.video.is_file():
        return [], []
    try:
        sampled = sample_frames(task.video)
    except VideoError:
        return [], []
    paths = [images.save(f.image, f"{task.id}/frame_{k:03d}.jpg") for k, f in enumerate(sampled.frames)]
    return paths, frame_moments(task, sampled.identity.frame_phashes)


def _img(rel: str | None, caption: str) -> str:
    if rel is None:
        return f'<figure class="none"><figcaption>{_e(caption)}: none</figcaption></figure>'
    image = f'<img src="{_e(rel)}" alt="{_e(caption)}" loading="lazy">'
    return f"<figure>{image}<figcaption>{_e(caption)}</figcaption></figure>"


def _diff(images: Images, reference: Path, replay: Path, prefix: str) -> str:
    """Where the replay differs from the reference, highlighted (a note when it cannot be read)."""
    try:
        diff = diff_overlay(reference, replay)
    except (OSError, ValueError) as exc:
        return f"<div class='calls'>diff unavailable: {_e(str(exc))}</div>"
    rel = images.save(diff.image, f"{prefix}/diff_{replay.stem}.jpg", THUMB_WIDTH)
    caption = f"diff: {100 * diff.changed:.1f}% of pixels, {len(diff.regions)} region(s)"
    return _img(rel, caption)


def _action_row(
    a: ActionRecord, r: Result, task: Task | None, images: Images, frames: list[str], moments: list[int]
) -> str:
    status = a.status if not a.failure else f"{a.status}: {a.failure}"
    grounded = ""
    if a.grounding is not None:
        g = a.grounding
        element = "none" if g.index is None else f"#{g.index}"
        grounded = (
            f"<div><b>grounded</b> {_e(element)} ({_e(g.grounder)}, {g.score:.2f}): {_e(g.reason)}</div>"
        )
    verdict = ""
    if a.assertion is not None:
        v = a.assertion
        votes = f" votes {_e(', '.join(v.votes))}" if len(v.votes) > 1 else ""
        assertion = task.record.action_sequence[a.index].logical_assertion if task else ""
        verdict = (
            f'<div><b>assertion</b> {_e(assertion)}<br><span class="v-{_e(v.verdict)}">{_e(v.verdict)}</span>'
            f"{votes} ({_e(v.judge)}): {_e(v.reasoning)}</div>"
        )
    message = f"<div class='msg'>{_e(a.message)}</div>" if a.message else ""
    calls = f"<div class='calls'>{_e(' · '.join(a.tool_calls))}</div>" if a.tool_calls else ""
    if a.budget is not None:
        b = a.budget
        tokens = f"{b.tokens}/{b.max_tokens}" if b.max_tokens is not None else str(b.tokens)
        hit = f", {b.exhausted} budget exhausted" if b.exhausted else ""
        used = f"{b.steps}/{b.max_steps} tool calls, {tokens} tokens{hit}"
        calls += f"<div class='calls'>budget: {_e(used)}</div>"
    pics: list[str] = []
    checkpoint = task.checkpoint_after(a.index) if task is not None else None
    if checkpoint is not None:
        pics.append(
            _img(images.copy(checkpoint, f"{task.id}/ref_{a.index + 1}.jpg") if task else None, "reference")
        )
    shot_name = a.after or (a.before if a.status == "failed" else None)
    if shot_name and r.eval_dir is not None:
        rel = images.copy(r.eval_dir / "evidence" / shot_name, f"{r.task_id}/{r.model}/{shot_name}.jpg")
        pics.append(_img(rel, "replay" if a.after else "replay (state it met)"))
        if checkpoint is not None and checkpoint.is_file():
            pics.append(
                _diff(images, checkpoint, r.eval_dir / "evidence" / shot_name, f"{r.task_id}/{r.model}")
            )
    if frames and a.index < len(moments):
        m = moments[a.index]
        near = [k for k in (m - 1, m, m + 1) if 0 <= k < len(frames)]
        strip = "".join(
            f'<img class="frame" src="{_e(frames[k])}" alt="video frame {k}s" loading="lazy">' for k in near
        )
        pics.append(
            f"<figure><div class='frames'>{strip}</div><figcaption>video near {m} s</figcaption></figure>"
        )
    return (
        f"<tr class='st-{_e(a.status)}'><td>{a.index + 1}</td><td>{_e(a.type)}</td>"
        f"<td>{_e(a.description)}{grounded}{verdict}{message}{calls}</td><td>{_e(status)}</td>"
        f"<td class='pics'>{''.join(pics)}</td></tr>"
    )


def _pair(run: RunData, r: Result, images: Images, frames: list[str], moments: list[int]) -> str:
    info = run.tasks[r.task_id]
    task = info.task
    s = r.score
    if s is not None and run.protocol == EvalProtocol.official:
        s = hvs_as_zero(s)  # the official reading: a missing HVS counts 0
    if not r.judged or s is None:
        scores = "not judged"
    else:
        hvs = "n/a" if s.hvs is None else f"{100 * s.hvs:.2f}"
        scores = (
            f"IFS {100 * s.ifs:.2f} · LVS {100 * s.lvs:.2f} · HVS {hvs} · VFS {100 * s.vfs:.2f} · "
            f"Final {100 * s.final:.2f} · steps {s.success_steps}/{s.total_steps}"
        )
    failure = r.failure or "none"
    backends = ", ".join(f"{k}: {v}" for k, v in sorted(r.backends.items())) or "-"
    ev = r.evaluation
    rows = ""
    extra = ""
    if ev is not None:
        rows = "".join(_action_row(a, r, task, images, frames, moments) for a in ev.replay.actions)
        errors = ev.replay.console_errors
        err_html = "".join(f"<li>{_e(x)}</li>" for x in errors[:20]) or "<li>none</li>"
        extra = (
            f"<div class='meta'>console errors: <ul>{err_html}</ul>blocked requests: "
            f"{ev.replay.blocked_requests} · judge errors: {ev.replay.judge_errors} · undetermined: "
            f"{ev.replay.undetermined}{' · ' + _e(ev.replay.message) if ev.replay.message else ''}</div>"
        )
    initial = ""
    if task is not None and task.initial_checkpoint is not None and r.eval_dir is not None:
        ref = images.copy(task.initial_checkpoint, f"{task.id}/ref_0.jpg")
        shot = images.copy(r.eval_dir / "evidence" / "step_0.png", f"{r.task_id}/{r.model}/step_0.png.jpg")
        pics = _img(ref, "reference: initial state") + _img(shot, "replay: initial state")
        initial = f"<div class='pics'>{pics}</div>"
    timeline = (
        "<table class='timeline'><thead><tr><th>#</th><th>type</th><th>action and judgement</th>"
        f"<th>status</th><th>evidence</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p>no replay record</p>"
    )
    return (
        f"<details class='pair' data-model='{_e(r.model)}' data-level='{_e(info.interaction)}' "
        f"data-failure='{_e(failure)}'><summary>task {r.task_id} · {_e(r.model)} · {_e(info.interaction)}"
        f"/{_e(info.visual)} · {_e(info.domain)} · {scores} · failure: {_e(failure)}</summary>"
        f"<p class='backends'>backends: {_e(backends)}</p>{extra}{initial}{timeline}</details>"
    )


CSS = """
body { font: 14px/1.4 "DejaVu Sans", sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
th { background: #eef; }
.timeline td.pics { white-space: nowrap; }
figure { display: inline-block; margin: 0 6px 4px 0; vertical-align: top; }
figure img { max-width: 320px; max-height: 220px; border: 1px solid #999; }
figcaption { font-size: 11px; color: #555; }
.frames img.frame { max-width: 120px; max-height: 150px; margin-right: 2px; }
details.pair { border: 1px solid #bbb; margin: 6px 0; padding: 4px 8px; }
details.pair summary { cursor: pointer; font-weight: bold; }
.v-yes { color: #080; font-weight: bold; } .v-no, .v-error { color: #b00; font-weight: bold; }
.v-undetermined { color: #a60; font-weight: bold; }
tr.st-failed { background: #fee; } tr.st-not_run { color: #999; }
.msg { color: #b00; } .calls, .backends { color: #666; font-size: 12px; }
.sub { color: #b00; font-weight: bold; }
.filters select { margin-right: 1em; }
.plots svg { max-width: 48%; height: auto; display: inline-block; }
"""

SCRIPT = """
function applyFilters() {
  const want = {};
  document.querySelectorAll('.filters select').forEach(s => { want[s.name] = s.value; });
  let shown = 0;
  document.querySelectorAll('details.pair').forEach(d => {
    const ok = Object.keys(want).every(k => want[k] === '' || d.dataset[k] === want[k]);
    d.style.display = ok ? '' : 'none';
    if (ok) shown += 1;
  });
  document.getElementById('shown').textContent = shown;
}
document.querySelectorAll('.filters select').forEach(s => s.addEventListener('change', applyFilters));
applyFilters();
"""


def _select(name: str, label: str, values: Sequence[str]) -> str:
    options = "".join(f"<option value='{_e(v)}'>{_e(v)}</option>" for v in values)
    select = f"<select name='{_e(name)}'><option value=''>all</option>{options}</select>"
    return f"<label>{_e(label)} {select}</label>"


def write_html(
    out: Path, run: RunData, board: Sequence[Row], breakdowns: Sequence[Row], svgs: dict[str, str]
) -> Path:
    """Write ``out/index.html`` and its images; returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    images = Images(out)
    pairs: list[str] = []
    for tid in run.task_ids:
        task = run.tasks[tid].task
        frames, moments = _frames(run, task, images)
        pairs.extend(
            _pair(run, run.results[(model, tid)], images, frames, moments)
            for model in run.models
            if (model, tid) in run.results
        )
    failures = sorted({r.failure or "none" for r in run.results.values()})
    levels = sorted({t.interaction for t in run.tasks.values()})
    substitutes = sorted(
        {b for row in board for b in str(row["backends"]).split(", ") if "(substitute)" in b}
    )
    sub_note = (
        f"<p class='sub'>Substitute backends were used ({_e(', '.join(substitutes))}): these numbers are not "
        "comparable with the paper's.</p>"
        if substitutes
        else ""
    )
    for note in sorted({str(row["HVS note"]) for row in board if row.get("HVS note")}):
        sub_note += f"<p class='sub'>{_e(note)}</p>"
    for row in board:
        if row.get("left out"):
            sub_note += (
                f"<p class='sub'>{_e(str(row['model']))}: {row['left out']} task(s) without index.html "
                "left out of the means (official protocol)</p>"
            )
    plots = "".join(svgs.values())
    tables = "".join(
        f"<h3>{_e(name)}</h3>"
        + _table([r for r in breakdowns if r["breakdown"] == name], skip=("breakdown",))
        for name in dict.fromkeys(str(r["breakdown"]) for r in breakdowns)
    )
    manifest = {
        "judges": run.manifest.get("judges"),
        "policies": run.manifest.get("policies"),
        "metric backends": [
            b.get("model") or b.get("engine") for b in run.manifest.get("metric_backends", [])
        ],
        "chromium": run.manifest.get("chromium"),
        "packages": run.manifest.get("packages"),
    }
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>iwr-bench report: {_e(run.run_dir.name)}</title>
<style>{CSS}</style></head><body>
<h1>iwr-bench report: {_e(run.run_dir.name)}</h1>
<p>status {_e(run.status)} · {len(run.task_ids)} tasks · {len(run.models)} models
· wall time {run.wall_s:.1f} s
{"" if run.tasks_found else " · the task set was not found: no levels, checkpoints or video frames"}</p>
<h2>Leaderboard (x100, {_e(run.protocol_label)})</h2>
{_table(board)}
{sub_note}
<details><summary>run settings</summary><pre>{_e(json.dumps(manifest, indent=2, default=str))}</pre></details>
<h2>Breakdowns ({_e(run.protocol_label)})</h2>
<div class="plots">{plots}</div>
{tables}
<h2>Tasks and models</h2>
<div class="filters">{_select("model", "model", run.models)}{_select("level", "level", levels)}
{_select("failure", "failure", failures)} <span id="shown"></span> shown</div>
{"".join(pairs)}
<script>{SCRIPT}</script>
</body></html>
"""
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
