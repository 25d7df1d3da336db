"""``iwr run`` with ``[judge.step] name = "agent"``, the agent's model served by the fake OpenAI server.

In its own module: the CLI runs its own event loop, which the judge tests' module-scoped async
fixtures (a browser pool) would already hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from fake_openai import FakeOpenAI, Reply, serve

from iwr_bench.cli import main
from iwr_bench.engine.store import RunStore


def _call(name: str, args: dict[str, Any] | None = None) -> Reply:
    return Reply(tool_call=(name, json.dumps(args or {})))


def _answer(verdict: str = "yes") -> Reply:
    return _call(
        "final_result", {"reasoning": "the snapshot shows it", "performed": True, "verdict": verdict}
    )


@pytest.fixture
def threaded_fake(allow_requests: None) -> Iterator[FakeOpenAI]:
    """The fake server on its own event loop thread (the CLI runs its own loop)."""
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(serve(FakeOpenAI())) as fake,
    ):
        yield fake


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_iwr_run_with_the_agent_step_judge(
    tmp_path: Path, threaded_fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    # Task 101: two scrolls, then a click the scripted agent gives up on.
    give_up = {"reasoning": "could not find the story button", "performed": False, "verdict": "undetermined"}
    threaded_fake.replies = [
        _call("scroll"),
        _answer(),
        _call("scroll"),
        _answer(),
        _call("observe"),
        _call("final_result", give_up),
    ]
    run_file = tmp_path / "agent.toml"
    run_file.write_text(
        f"""
tasks = "builtin"
only = [101]
[[models]]
name = "oracle"
[judge]
model = "judge-vlm"
base_url = "{threaded_fake.url}"
[judge.step]
name = "agent"
options = {{ max_steps = 5 }}
[limits]
browser_pages = 1
""",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    assert main(["run", "-c", str(run_file), "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    store = RunStore.open_run(run, readonly=True)
    try:
        designs = store.manifest()["judges"]["designs"]
    finally:
        store.close()
    assert designs["step"]["name"] == "agent" and designs["step"]["options"] == {"max_steps": 5}
    evaluation = json.loads((run / "judged" / "101" / "oracle" / "eval.json").read_text())
    replay = evaluation["replay"]
    actions = replay["actions"]
    assert replay["success_steps"] == 2 and actions[2]["failure"] == "element_not_found"
    assert "could not find the story button" in actions[2]["message"]
    assert actions[0]["tool_calls"][0].startswith("scroll() -> done")
    assert actions[0]["scroll_moved_px"] > 5 and actions[0]["budget"]["max_steps"] == 5
    assert len(threaded_fake.requests) == 6
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "observe() -&gt; " in page and "could not find the story button" in page  # the agent's log kept
    assert "budget: 1/5 tool calls" in page  # observe, then the answer (which is no tool call)
