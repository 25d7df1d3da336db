"""Several judge designs in one run (``[[judge.designs]]``): each judges every page as a job of its
own, the page is generated once, and a design that sets nothing scores as the run's one design."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from run_store import reported_scores

from iwr_bench.cli import main
from iwr_bench.engine.config import JudgeSettings
from iwr_bench.engine.events import RunStarted
from iwr_bench.engine.store import RunStore

RUN = """
tasks = "builtin"
only = [102]

[[models]]
name = "oracle"

[[models]]
name = "blank"

[metrics]
ocr_design = "phash"
image_design = "effnet-lite0"
cache = false

[limits]
browser_pages = 2
"""

DESIGNS = """
[[judge.designs]]
label = "plain"

[[judge.designs]]
label = "official-replay"
replay = "official"
undetermined_policy = "fail"
"""


def test_a_design_inherits_the_judge_table_and_sets_its_own_keys() -> None:
    settings = JudgeSettings.model_validate(
        {
            "grounder": "heuristic",
            "grounder_options": {"k": 1},
            "votes": 3,
            "designs": [{"label": "a"}, {"label": "b", "assertions": "llm", "grounder_options": {"j": 2}}],
        }
    )
    assert settings.labels() == ["a", "b"]
    a, b = settings.design("a"), settings.design("b")
    assert (
        a.designs == []
        and a.votes == 3
        and a.grounder.options == {"k": 1}
        and a.assertions.name == "heuristic"
    )
    assert b.assertions.name == "llm" and b.grounder.options == {"k": 1, "j": 2} and b.votes == 3
    assert settings.design("") is settings and JudgeSettings().labels() == [""]


@pytest.mark.parametrize(
    ("designs", "message"),
    [
        ([{"label": "a"}, {"label": "a"}], "a given twice"),
        ([{"label": "a", "rubric": "gpt"}], "cannot set its own rubric"),
        ([{"label": "a/b"}], "label"),
        ([{"label": "a", "colour": "red"}], "colour"),
    ],
)
def test_bad_designs_are_refused(designs: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        JudgeSettings.model_validate({"designs": designs})


def test_an_unknown_design_is_one_line_naming_its_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(RUN + '\n[[judge.designs]]\nlabel = "odd"\ngrounder = "no-such-grounder"\n')
    assert main(["run", "-c", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[[judge.designs]] 'odd'" in err[0] and "no-such-grounder" in err[0], err
    assert not (tmp_path / "run" / "run.sqlite").exists()


@pytest.mark.browser
@pytest.mark.slow
def test_each_design_judges_every_page_as_its_own_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single, compared = tmp_path / "single.toml", tmp_path / "designs.toml"
    single.write_text(RUN)
    compared.write_text(RUN + DESIGNS)
    assert main(["run", "-c", str(single), "--out", str(tmp_path / "one"), "--quiet"]) == 0
    run = tmp_path / "two"
    assert main(["run", "-c", str(compared), "--out", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["models"]
    names = ["oracle/plain", "oracle/official-replay", "blank/plain", "blank/official-replay"]
    assert list(summary) == names
    assert all(m["judged"] == 1 and not m["failures"] for m in summary.values()), summary

    # the design that sets nothing scores as the run with one design does
    one, two = reported_scores(tmp_path / "one"), reported_scores(run)
    assert sorted(two) == sorted(f"judge/102/{name}" for name in names)
    assert two["judge/102/oracle/plain"] == one["judge/102/oracle"]
    assert two["judge/102/blank/plain"] == one["judge/102/blank"]
    # the other design's own keys took effect: its undecided assertions count against the page
    assert two["judge/102/oracle/official-replay"][1] < two["judge/102/oracle/plain"][1] == 100.0

    with RunStore.open_run(run, readonly=True) as store:
        jobs = {j.id: j for j in store.jobs()}
        manifest = store.manifest()
        started = [e for e in store.iter_events() if isinstance(e, RunStarted)]
    assert started[0].designs == ["plain", "official-replay"]  # the TUI lays out a row per design
    assert sorted(j for j in jobs if j.startswith("gen/")) == ["gen/102/blank", "gen/102/oracle"]
    for name in names:  # each design's evaluation in a folder of its own
        model, label = name.split("/")
        evaluation = json.loads((run / "judged" / "102" / model / label / "eval.json").read_text())
        assert evaluation["model"] == model
    assert manifest["judge_labels"] == ["plain", "official-replay"]
    assert set(manifest["judges"]["by_label"]) == {"plain", "official-replay"}
    assert manifest["judges"]["designs"]["official-replay/replay"]["name"] == "official"
    assert "plain/grounder" in manifest["sessions"][0]["designs"]

    # finished: a resume runs nothing again
    assert main(["run", "--resume", str(run), "--quiet"]) == 0
    with RunStore.open_run(run, readonly=True) as store:
        assert {j.id: j.attempts for j in store.jobs()} == {j: r.attempts for j, r in jobs.items()}


def test_official_prompts_reach_every_design_that_asks_a_model() -> None:
    settings = JudgeSettings.model_validate(
        {
            "assertions": "llm",
            "designs": [{"label": "a"}, {"label": "b", "grounder": "llm", "assertions": "heuristic"}],
        }
    ).with_official_prompts("/official")
    a, b = settings.design("a"), settings.design("b")
    assert a.assertions.name == "official-code" and a.assertions.options["code"] == "/official"
    assert a.grounder.name == "heuristic" and b.assertions.name == "heuristic"
    assert b.grounder.name == "official-code" and settings.rubric is None
