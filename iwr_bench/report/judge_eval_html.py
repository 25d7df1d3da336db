"""The HTML page of ``iwr judges eval --html FILE``: scores, every case, and every disagreement.

One self-contained file plus downscaled screenshots under ``img/`` beside it (the style of the run
report, :mod:`iwr_bench.report.html`). The tables of the terminal (:mod:`iwr_bench.report.lab_rows`:
scores with their intervals, undetermined answers apart, accuracy by case kind and action type,
McNemar's tests, agreement with human labels); every wrong case with the action where it went
wrong, its assertion and the design's reasoning; for each pair of designs, every action they judged
differently with both outcomes, both reasonings and both screenshots side by side.
"""

from __future__ import annotations

import html
from pathlib import Path

from iwr_bench.agents.judge.lab import ActionOutcome, CaseResult
from iwr_bench.report.html import CSS, Images
from iwr_bench.report.judge_eval import Agreement, LabReport, WrongCase
from iwr_bench.report.lab_rows import (
    action_type_rows,
    agreement_rows,
    human_rows,
    kind_rows,
    mcnemar_rows,
    method_note,
    score_rows,
    undetermined_rows,
)
from iwr_bench.report.render import cell, columns
from iwr_bench.report.tables import Row

_CSS = (
    CSS
    + """
td.ok { color: #080; font-weight: bold; } td.wrong { color: #b00; font-weight: bold; }
.side { min-width: 340px; }
"""
)


def _e(value: object) -> str:
    return html.escape(value if isinstance(value, str) else cell(value))


def _table(rows: list[Row]) -> str:
    if not rows:
        return "<p>none</p>"
    cols = columns(rows)
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_e(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _where(index: int | None, reason: str | None) -> str:
    return "IFS 100" if index is None else f"step {index} {reason or ''}".strip()


def _wrong(wrong: list[WrongCase]) -> str:
    if not wrong:
        return "<p>none</p>"
    rows = "".join(
        f"<tr><td>{_e(w.design)}</td><td>{w.task_id}</td><td>{_e(w.case)}</td><td>{_e(w.kind)}</td>"
        f"<td>{_e(w.expected)}</td><td>{_e(w.found)}</td>"
        f"<td>{'-' if w.index is None else w.index} {_e(w.action_type)}</td><td>{_e(w.description)}</td>"
        f"<td>{_e(w.assertion or '-')}</td><td>{_e(w.outcome or '-')}</td><td>{_e(w.reasoning)}</td></tr>"
        for w in wrong
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "design", "task", "case", "kind", "expected", "found", "action", "description", "assertion",
            "outcome there", "reasoning",
        )
    )  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _tables(report: LabReport) -> list[str]:
    """The measurement's tables, as in the terminal."""
    parts = [
        f"<h2>Designs</h2>{_table(score_rows(report))}<p>{_e(method_note(report))}</p>",
        f"<h2>Undetermined answers: as judged, as wrong, left out</h2>{_table(undetermined_rows(report))}",
        f"<h2>Accuracy by case kind</h2>{_table(kind_rows(report))}",
    ]
    if any(s.by_action_type for s in report.scores):
        parts.append(f"<h2>Per-action accuracy by action type</h2>{_table(action_type_rows(report))}")
    parts.append(f"<h2>McNemar's exact test on case accuracy</h2>{_table(mcnemar_rows(report))}")
    parts.append(f"<h2>Agreement between designs</h2>{_table(agreement_rows(report))}")
    if report.labels is not None:
        src = report.labels
        parts.append(
            f"<h2>Agreement with human labels</h2><p>{_e(src.file)}: {src.labels} label(s), "
            f"{src.without_case} on no judged action</p>{_table(human_rows(report))}"
        )
    parts.append(f"<h2>Cases judged wrong (first judging)</h2>{_wrong(report.wrong)}")
    return parts


def _cases(results: list[CaseResult]) -> str:
    rows = "".join(
        f"<tr><td>{r.task_id}</td><td>{_e(r.case)}</td><td>{_e(r.kind)}</td>"
        f"<td>{_e(_where(r.expected_first_failure, r.expected_reason))}</td>"
        f"<td>{_e(r.error or _where(r.first_failure, r.reason))}</td>"
        f"<td class='{'ok' if r.correct else 'wrong'}'>{'right' if r.correct else 'wrong'}</td>"
        f"<td>{r.seconds:.1f}</td></tr>"
        for r in results
    )
    head = "<th>task</th><th>case</th><th>kind</th><th>expected</th><th>found</th><th></th><th>s</th>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _side(name: str, outcome: ActionOutcome, images: Images, key: str) -> str:
    status = outcome.status + (f": {outcome.failure}" if outcome.failure else "")
    verdict = (
        f" · <span class='v-{_e(outcome.verdict)}'>{_e(outcome.verdict)}</span>" if outcome.verdict else ""
    )
    picture = "<p>no screenshot</p>"
    if outcome.screenshot:
        rel = images.copy(Path(outcome.screenshot), key)
        if rel is not None:
            picture = (
                f"<figure><img src='{_e(rel)}' alt='{_e(name)}'><figcaption>{_e(name)}</figcaption></figure>"
            )
    head = f"<b>{_e(name)}</b>: {_e(status)}{verdict}"
    return f"<td class='side'>{head}<div>{_e(outcome.reasoning)}</div>{picture}</td>"


def _disagreements(pair: Agreement, images: Images, stem: str) -> str:
    if not pair.disagreements:
        return "<p>no disagreement</p>"
    rows: list[str] = []
    for k, d in enumerate(pair.disagreements):
        base = f"{stem}/{k}"
        rows.append(
            f"<tr><td>{d.task_id}</td><td>{_e(d.case)}</td><td>{d.index}</td><td>{_e(d.description)}</td>"
            f"{_side(pair.a, d.a, images, base + '-a.jpg')}{_side(pair.b, d.b, images, base + '-b.jpg')}</tr>"
        )
    head = (
        f"<th>task</th><th>case</th><th>action</th><th>description</th>"
        f"<th>A: {_e(pair.a)}</th><th>B: {_e(pair.b)}</th>"
    )
    return f"<table class='timeline'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def write_lab_html(path: Path, report: LabReport) -> Path:
    """Write the page to ``path`` (screenshots under ``img/`` in its folder); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    images = Images(path.parent)
    stem = path.stem
    parts = _tables(report)
    for i, pair in enumerate(report.agreements):
        kappa = "undefined" if pair.kappa is None else f"{pair.kappa:.3f}"
        parts.append(
            f"<h2>{_e(pair.a)} vs {_e(pair.b)}: {len(pair.disagreements)} disagreement(s), "
            f"kappa {kappa}</h2>{_disagreements(pair, images, stem + f'/pair-{i}')}"
        )
    for spec in report.designs:
        first = [r for r in report.results if r.design == spec.label and r.repeat == 1]
        parts.append(
            f"<details><summary>{_e(spec.label)}: every case (first judging)</summary>"
            f"<pre>{_e(spec.model_dump_json(indent=2))}</pre>{_cases(first)}</details>"
        )
    page = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>iwr judges eval</title>"
        f"<style>{_CSS}</style></head><body><h1>iwr judges eval</h1>"
        f"<p>{len(report.designs)} design(s) · {len({(r.task_id, r.case) for r in report.results})} case(s)"
        f" · wall time {', '.join(f'{k} {v:.1f} s' for k, v in report.wall_s.items())}</p>"
        f"{''.join(parts)}</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path
