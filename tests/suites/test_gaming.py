"""Pages that try to fool the judge score no better than a picture that does nothing.

The corpus (:mod:`iwr_bench.suites.gaming`) is built from the tasks' own pictures and words and run
as models beside the ``screenshot`` baseline, with the default offline judges and metrics, on the
tasks an adversary tried first (101, 103, 105). (Under ``--protocol official`` the official rules
stand and such steps are flagged instead: tests/agents/test_official_protocol.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.cli import main
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.suites.build import SAMPLE
from iwr_bench.suites.gaming import CHEATS, write_corpus

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TASKS = [101, 103, 105]
MARGIN = 5.0
"""How far above the ``screenshot`` baseline's Final a cheat may score (the issue's bound)."""


def _run(out: Path, folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> dict:
    args = ["run", "--only", ",".join(map(str, TASKS)), "--model", "screenshot", "--out", str(out), "--json"]
    for folder in folders.values():
        args += ["--model", f"pages:{folder}"]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)["models"]


@pytest.mark.timeout(900)
def test_no_cheat_scores_above_the_screenshot_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = [t for t in load_tasks(SAMPLE).tasks if t.id in TASKS]
    folders = write_corpus(tasks, tmp_path / "corpus")
    assert set(folders) == set(CHEATS)
    models = _run(tmp_path / "default", folders, capsys)
    floor = models.pop("screenshot")["final"]
    assert all(m["judged"] == len(TASKS) and not m["failures"] for m in models.values()), models
    scores = {name.rsplit("__", 1)[-1]: m["final"] for name, m in models.items()}
    assert len(scores) == len(CHEATS)
    above = {name: final for name, final in scores.items() if final >= floor + MARGIN}
    assert not above, (floor, scores)
