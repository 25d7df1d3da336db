"""Checks on the sources of the built-in suite (reference sites, action scripts, mutants).

Fast and browser-free: it reads every ``task.yaml`` and ``mutants.yaml`` under
``iwr_bench/suites/sources/`` and asserts the suite's requirements.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from iwr_bench.dataset.models import TaskRecord

SOURCES = Path(__file__).resolve().parents[2] / "iwr_bench" / "suites" / "sources"
SLUGS = sorted(p.name for p in SOURCES.iterdir() if (p / "task.yaml").is_file())
MUTANT_KINDS = {
    "handler_removed",
    "label_changed",
    "off_by_one",
    "layout_changed",
    "rule_changed",
    "hidden_leftovers",
}
REASONS = {"assertion_failed", "element_not_found", "no_scroll", "action_error"}
DOMAINS = {"Shop", "Productivity", "Media", "Forms", "Dashboard", "Game"}
NETWORK = re.compile(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/|@import|fonts\.googleapis|cdn\.", re.IGNORECASE)
CSS_SELECTORISH = re.compile(r"#[a-z][\w-]*|\.[a-z][\w-]*\b\s*[{>]|\[data-")


def load(slug: str, name: str) -> Any:
    return yaml.safe_load((SOURCES / slug / name).read_text(encoding="utf-8"))


TASKS: dict[str, dict[str, Any]] = {slug: load(slug, "task.yaml") for slug in SLUGS}
MUTANTS: dict[str, list[dict[str, Any]]] = {slug: load(slug, "mutants.yaml") for slug in SLUGS}
ALL_ACTIONS = [a for t in TASKS.values() for a in t["actions"]]


def html(slug: str) -> str:
    return site_file(slug, "index.html")


def site_file(slug: str, name: str) -> str:
    return (SOURCES / slug / "site" / name).read_text(encoding="utf-8")


def site_text(slug: str) -> str:
    """Every HTML, CSS and script file of the site, concatenated."""
    files = sorted((SOURCES / slug / "site").rglob("*"))
    return "\n".join(p.read_text(encoding="utf-8") for p in files if p.suffix in (".html", ".css", ".js"))


def as_record(task: dict[str, Any]) -> dict[str, Any]:
    """The data.jsonl form of a task.yaml: ``record`` keys dropped, ``actions`` renamed."""
    out = {k: v for k, v in task.items() if k != "actions"}
    out["action_sequence"] = [{k: v for k, v in a.items() if k != "record"} for a in task["actions"]]
    return out


def test_suite_size_and_levels() -> None:
    assert len(SLUGS) >= 12
    levels = Counter(t["classification"]["interaction_complexity"] for t in TASKS.values())
    assert levels["L1"] >= 2
    assert levels["L2"] >= 4
    assert levels["L3"] >= 4
    assert levels["L4"] >= 2


def test_domains_and_visual_levels() -> None:
    domains = {t["classification"]["domain"] for t in TASKS.values()}
    assert domains >= DOMAINS
    visual = {t["classification"]["visual_complexity"] for t in TASKS.values()}
    assert visual >= {"V1", "V2", "V3"}


def test_resolutions() -> None:
    mobile = [s for s, t in TASKS.items() if t["recording_details"]["environment"] == "mobile"]
    assert len(mobile) == 2
    for slug, t in TASKS.items():
        want = "390x844" if slug in mobile else "1280x720"
        assert t["recording_details"]["resolution"] == want, slug
        if slug not in mobile:
            assert t["recording_details"]["environment"] == "desktop", slug


def test_unique_ids_and_sources() -> None:
    ids = [t["id"] for t in TASKS.values()]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(i, int) and i >= 101 for i in ids)
    for slug, t in TASKS.items():
        assert t["source_website"] == f"iwr-suite://{slug}"


def test_action_totals() -> None:
    n = len(ALL_ACTIONS)
    assert n >= 100
    assert {a["type"] for a in ALL_ACTIONS} == {"Click", "Type", "Scroll", "Press"}
    flagged = sum(bool(a.get("visual_evaluation_flag")) for a in ALL_ACTIONS)
    asserted = sum(bool((a.get("logical_assertion") or "").strip()) for a in ALL_ACTIONS)
    assert flagged / n >= 0.40
    assert asserted / n >= 0.30


@pytest.mark.parametrize("slug", SLUGS)
def test_task_validates_as_record(slug: str) -> None:
    record = TaskRecord.model_validate(as_record(TASKS[slug]))
    assert record.id == TASKS[slug]["id"]
    assert record.unknown_fields() == []


@pytest.mark.parametrize("slug", SLUGS)
def test_actions_are_recordable(slug: str) -> None:
    page = site_text(slug)
    for i, a in enumerate(TASKS[slug]["actions"]):
        rec = a.get("record") or {}
        params = a["parameters"]
        desc = params["description"]
        where = f"{slug} action {i}"
        assert desc.strip(), where
        assert not CSS_SELECTORISH.search(desc), f"{where}: description looks like a selector: {desc!r}"
        if a["type"] in ("Click", "Type"):
            assert rec.get("selector"), f"{where}: {a['type']} without record.selector"
        if a["type"] == "Type":
            assert params.get("text"), f"{where}: Type without text"
        if a["type"] == "Press":
            assert params.get("key"), f"{where}: Press without key"
            assert "selector" not in rec, where
        if a["type"] == "Scroll":
            assert params.get("direction") in ("up", "down"), where
        assert set(rec) <= {"selector", "expect_text", "wait"}, where
        sel = rec.get("selector") or ""
        if sel.startswith("#"):
            ident = sel[1:]
            head, _, tail = ident.partition("-")
            assert ident in page or (f"{head}-" in page and tail in page), f"{where}: no element {sel}"


@pytest.mark.parametrize("slug", SLUGS)
def test_site_is_self_contained(slug: str) -> None:
    site = SOURCES / slug / "site"
    page = html(slug)
    assert "<header" in page and "<footer" in page, slug
    assert not NETWORK.search(site_text(slug)), f"{slug}: external reference"
    if not (site / "js").is_dir():  # single-file sites stay deterministic; games use the stored seed
        assert "Math.random" not in page and "Date.now" not in page and "new Date" not in page, slug
    for attr in re.findall(r"""(?:src|href)=["']([^"'#][^"']*)["']""", page):
        assert "://" not in attr, f"{slug}: external {attr}"
    refs = set(re.findall(r"""img/[\w.-]+\.(?:png|svg)""", site_text(slug)))
    assert refs, f"{slug}: no images"
    for ref in refs:
        assert (site / ref).is_file(), f"{slug}: missing {ref}"
    for tag in re.findall(r"<img\b[^>]*>", page):
        assert "width=" in tag and "height=" in tag, f"{slug}: img without size: {tag}"
    for tag in re.findall(r"<button\b[^>]*>", page):
        assert re.search(r"""class=["'][^"']*\bbtn\b""", tag), f"{slug}: button without btn class: {tag}"
    for png in site.rglob("*.png"):
        assert png.stat().st_size < 60_000, png


def test_total_size() -> None:
    total = sum(p.stat().st_size for p in SOURCES.rglob("*") if p.is_file())
    assert total < 3_000_000


@pytest.mark.parametrize("slug", SLUGS)
def test_mutants(slug: str) -> None:
    muts = MUTANTS[slug]
    n = len(TASKS[slug]["actions"])
    assert len(muts) >= 2
    names = [m["name"] for m in muts]
    assert len(set(names)) == len(names)
    for m in muts:
        where = f"{slug} mutant {m['name']}"
        assert m["kind"] in MUTANT_KINDS, where
        assert m["description"].strip(), where
        assert m["replace"], where
        for r in m["replace"]:
            page = site_file(slug, r.get("file", "index.html"))
            assert page.count(r["old"]) == 1, f"{where}: {r['old']!r} occurs {page.count(r['old'])} times"
            assert r["old"] != r["new"], where
        ef, reason = m["expected_first_failure"], m["expected_reason"]
        if m["kind"] in ("layout_changed", "hidden_leftovers"):
            assert ef is None and reason is None, where
        else:
            assert isinstance(ef, int) and 0 <= ef < n, where
            assert reason in REASONS, where
        if m["kind"] == "label_changed":
            assert reason == "element_not_found", where
            assert TASKS[slug]["actions"][ef]["type"] in ("Click", "Type"), where
        if reason == "assertion_failed":
            assert (TASKS[slug]["actions"][ef].get("logical_assertion") or "").strip(), where
    failing = [m["expected_first_failure"] for m in muts if m["expected_first_failure"] is not None]
    assert any(ef > 0 for ef in failing), f"{slug}: every failing mutant fails at action 0"


def test_all_mutant_kinds_used() -> None:
    kinds = {m["kind"] for muts in MUTANTS.values() for m in muts}
    assert kinds == MUTANT_KINDS


def test_every_png_is_drawn_by_the_script() -> None:
    text = (SOURCES / "draw_images.py").read_text(encoding="utf-8")
    for slug in SLUGS:
        if any((SOURCES / slug / "site" / "img").glob("*.png")):
            assert f'"{slug}"' in text, f"{slug}: PNGs not drawn by draw_images.py"
