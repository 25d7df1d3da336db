"""``iwr run`` with the ``agent`` step judge on the built-in scripted model (``--judge-model test:``).

In its own module: the CLI runs its own event loop, which the judge tests' module-scoped async
fixtures (a browser pool) would already hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.agents.events import JudgeDelta, JudgeToolCall
from iwr_bench.cli import main
from iwr_bench.engine.events import FromAgent
from iwr_bench.engine.store import RunStore


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_iwr_run_with_the_agent_step_judge_on_the_test_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_file = tmp_path / "agent.toml"
    run_file.write_text(
        """
tasks = "builtin"
only = [101]
[[models]]
name = "oracle"
[judge.step]
name = "agent"
[metrics]
image_design = "phash"
[limits]
browser_pages = 1
""",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    assert main(["run", "-c", str(run_file), "--judge-model", "test:", "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    evaluation = json.loads((run / "judged" / "101" / "oracle" / "eval.json").read_text())
    actions = evaluation["replay"]["actions"]
    assert evaluation["success_step"] == len(actions) == 8, actions  # the reference page passes
    clicks = [a for a in actions if a["type"] == "Click"]
    assert clicks and all([c.split("(")[0] for c in a["tool_calls"]] == ["observe", "click"] for a in clicks)
    assert all(a["assertion"]["judge"] == "agent:scripted:test" for a in clicks if a.get("assertion"))
    store = RunStore.open_run(run, readonly=True)
    try:
        step = store.manifest()["judges"]["designs"]["step"]
        events = [e.event for e in store.iter_events() if isinstance(e, FromAgent)]
    finally:
        store.close()
    assert (step["name"], step["model"]) == ("agent", "test:")
    streamed = "".join(e.text for e in events if isinstance(e, JudgeDelta) and e.role == "step")
    assert "Scripted (test model): click on [" in streamed
    assert "Scripted answer (test model): performed scroll" in streamed
    assert any(isinstance(e, JudgeToolCall) and e.tool == "observe" for e in events)
