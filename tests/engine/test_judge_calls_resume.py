"""Judge-model answers are paid once: across a kill -9 and resume (of ``iwr run`` and of ``iwr judges
eval``), and across runs (the shared cache).

The agent step judge talks to a local OpenAI-compatible server that answers from the conversation
(so the order requests come in does not matter) and counts the answers it gave in full: what a
provider bills. A request cut off by the kill is not counted, and is asked again on resume.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from aiohttp import web
from fake_openai import FakeOpenAI, Reply, serve

from iwr_bench.cli import main

pytestmark = [pytest.mark.anyio, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

_IWR = (sys.executable, "-m", "iwr_bench")

_OWN = ("scroll", "press")
"""Action tools the scripted agent calls at once (the others want an element: it looks first)."""


class AgentServer(FakeOpenAI):
    """Plays the agent step judge: the action tool (or ``observe`` first), then the final answer.
    With ``hold_from`` set, every request after that many answers is held until released."""

    def __init__(self) -> None:
        super().__init__()
        self.answered = 0
        self.hold_from: int | None = None
        self.held = 0
        self.release = anyio.Event()

    @staticmethod
    def reply(payload: dict[str, Any]) -> Reply:
        messages = payload["messages"]
        first = next(m for m in messages if m["role"] == "user")
        text = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
        tool = re.search(r"Your action tool: (\w+)", text)
        action = tool.group(1) if tool else "observe"
        called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
        if not called:
            name = action if action in _OWN else "observe"
            return Reply(tool_call=(name, "{}"))
        done = action in called
        answer = {
            "reasoning": "scrolled" if done else "no element to act on",
            "performed": done,
            "verdict": "yes" if done else "undetermined",
        }
        return Reply(tool_call=("final_result", json.dumps(answer)))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer from the conversation; hold it past ``hold_from`` answers."""
        payload = await request.json()
        self.requests.append(payload)
        if self.hold_from is not None and self.answered >= self.hold_from:
            self.held += 1
            await self.release.wait()
        response = await self.stream(request, self.reply(payload), payload.get("model", "?"))
        self.answered += 1
        return response


def _run_file(path: Path, url: str) -> Path:
    path.write_text(
        f"""
tasks = "builtin"
only = [101]
[[models]]
name = "oracle"
[judge]
model = "judge-vlm"
base_url = "{url}"
[judge.step]
name = "agent"
options = {{ max_steps = 5 }}
[limits]
browser_pages = 1
judge_calls = 1
""",
        encoding="utf-8",
    )
    return path


def _outcome(run: Path) -> list[tuple[str, str | None]]:
    data = json.loads((run / "judged" / "101" / "oracle" / "eval.json").read_text(encoding="utf-8"))
    return [(a["status"], a.get("failure")) for a in data["replay"]["actions"]]


async def _iwr(*args: str) -> int:
    return await anyio.to_thread.run_sync(lambda: main([*args, "--quiet"]))


async def _killed_at_the_fourth_call(server: AgentServer, argv: list[str], log: Path) -> None:
    """Run ``iwr ARGV`` as a child process and kill it with -9 while its fourth judge call is held."""
    server.answered, server.hold_from, server.held = 0, 3, 0
    server.release = anyio.Event()
    with log.open("wb") as sink:
        proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child process we kill -9 ourselves
            [*_IWR, *argv, "--quiet"],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=sink,
            stderr=sink,
        )
    deadline = time.monotonic() + 300
    while server.held < 1:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the run never reached its fourth judge call"
        await anyio.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    server.hold_from = None
    server.release.set()
    assert server.answered == 3


async def test_no_judge_call_is_paid_twice(tmp_path: Path, allow_requests: None) -> None:
    """An uninterrupted run pays N answers; a second run of the same judge pays none (the shared
    cache); a run killed with kill -9 mid-replay and resumed (cache off) pays N in all, and so does
    a ``judges eval`` of the same judge on the same page."""
    server = AgentServer()
    async with serve(server):
        config = _run_file(tmp_path / "agent.toml", server.url)
        whole = tmp_path / "whole"
        assert await _iwr("run", "-c", str(config), "--out", str(whole)) == 0
        paid = server.answered
        assert paid >= 6  # task 101: a first call and an answer per action at least

        again = tmp_path / "again"
        assert await _iwr("run", "-c", str(config), "--out", str(again)) == 0
        assert server.answered == paid, "a second run of the same judge paid again"
        assert _outcome(again) == _outcome(whole)

        broken = tmp_path / "broken"
        argv = ["run", "-c", str(config), "--out", str(broken), "--no-judge-cache"]
        await _killed_at_the_fourth_call(server, argv, tmp_path / "broken.log")
        assert await _iwr("run", "--resume", str(broken), "--no-judge-cache") == 0
        assert server.answered == paid, f"{server.answered} answers paid with the kill, {paid} without"
        assert _outcome(broken) == _outcome(whole)

        # The same judge as a judges eval design, on task 101's reference page (no mutant).
        (tmp_path / "no-mutants").mkdir()
        design = f"step=agent,step.max_steps=5,model=judge-vlm,base_url={server.url},label=agent"
        lab = tmp_path / "lab"
        argv = [
            "judges", "eval", "--only", "101", "--cases", str(tmp_path / "no-mutants"), "--design", design,
            "--pages-at-once", "1", "--judge-calls", "1", "--no-judge-cache", "--out", str(lab),
        ]  # fmt: skip
        await _killed_at_the_fourth_call(server, argv, tmp_path / "lab.log")
        assert await _iwr(*argv, "--resume") == 0
        assert server.answered == paid, (
            f"judges eval: {server.answered} answers paid with the kill, {paid} without"
        )
        report = json.loads((lab / "report.json").read_text(encoding="utf-8"))
        (result,) = report["results"]
        assert result["design"] == "agent" and result["case"] == "reference" and not result["error"]
        assert [(a["status"], a.get("failure")) for a in result["actions"]] == _outcome(whole)
        (s,) = report["scores"]
        assert s["usage"]["requests"] == paid  # every answer the run kept, the resumed ones included
