"""``--official-code DIR``: prompts read from a checkout laid out as the authors' code is.

The checkout here is written by the test, with the official files' names and template names but
text of our own (the authors' prompts are not ours to copy): what is tested is that each template
is found where the official code keeps it, sent as the official code sends it, and that answers
are read as the official code reads them.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo
from scripted_model import Scripted

from iwr_bench.agents.grounding import GroundingRequest
from iwr_bench.agents.judge.official_prompts import (
    OfficialPromptAssertions,
    OfficialPromptGrounder,
    OfficialPromptRubric,
)
from iwr_bench.agents.judge.records import AssertionRequest
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.run import Engine
from iwr_bench.errors import UserError
from iwr_bench.official_code import OfficialCode, official_assertion_result, official_rubric_score
from iwr_bench.tools.models import BoundingBox, Element, Observation

GENERATION = "Make the page (tested). Its size is {resolution}; braces {{kept}}."
ASSERTION = "Tested check of: {assertion}. Answer JSON with result and think."
RUBRIC = "Tested rubric. Give Score: ${final score}/100"
OPERATIONS = '''
class IWR:
    async def _try_llm_click(self, action_desc, axtree, state):
        prompt = f"""Tested click. Tree: {axtree}
State: {state}
Wanted: {action_desc}
Reply with the index only."""
        return prompt

    async def _try_llm_type(self, description, axtree, state):
        prompt = f"""Tested type. Tree: {axtree}
State: {state}
Wanted: {description}
Reply idx,"text"."""
        return prompt
'''


def checkout(root: Path, *, git: bool = True) -> Path:
    """A checkout with the official files' layout, committed to git when ``git``."""
    (root / "utils").mkdir(parents=True)
    (root / "config.py").write_text(f"API_CONFIG = {{}}\nPROMPT_TEMPLATE = {GENERATION!r}\n")
    (root / "utils" / "assertion_scorer.py").write_text(f"ASSERTION_TEMPLATE = {ASSERTION!r}\n")
    (root / "utils" / "visual_scorer.py").write_text(f"import re\nCOMPARE_TEMPLATE = {RUBRIC!r}\n")
    (root / "utils" / "operations.py").write_text(OPERATIONS)
    if git:
        env = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
            subprocess.run(["git", "-C", str(root), *args], check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return root


def test_templates_are_read_from_their_files_without_running_them(tmp_path: Path) -> None:
    root = checkout(tmp_path / "official")
    (root / "utils" / "visual_scorer.py").write_text(
        f"raise SystemExit('never run')\nCOMPARE_TEMPLATE = {RUBRIC!r}\n"
    )
    code = OfficialCode.load(root)
    assert code.templates["generation"] == GENERATION and code.templates["rubric"] == RUBRIC
    assert code.render("generation", resolution="640x360") == (
        "Make the page (tested). Its size is 640x360; braces {kept}."
    )
    assert code.render("rubric") == RUBRIC  # sent as it is, braces and all
    assert code.render("click", axtree="T", state="S", action_desc="D").startswith(
        "Tested click. Tree: T\nState: S"
    )
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert code.commit == head.stdout.strip()
    assert code.digests["config.py"] == hashlib.sha256((root / "config.py").read_bytes()).hexdigest()
    assert set(code.digests) == {
        "config.py",
        "utils/assertion_scorer.py",
        "utils/visual_scorer.py",
        "utils/operations.py",
    }
    (root / "utils" / "assertion_scorer.py").write_text("OTHER = 1\n")
    with pytest.raises(UserError, match=r"assertion_scorer\.py defines no ASSERTION_TEMPLATE"):
        OfficialCode.load(root)


def test_answers_are_read_as_the_official_scorers_read_them() -> None:
    assert official_assertion_result('```json\n{"result": "Yes", "think": "seen"}\n```') == ("Yes", "seen")
    assert official_assertion_result('{"result": "maybe"}') == ("Error", "")
    assert official_assertion_result("No idea, but Yes it changed") == ("Yes", "")  # text fallback
    assert official_assertion_result("No.") == ("No", "")
    assert official_assertion_result("cannot tell") == ("Error", "")
    assert official_rubric_score("Layout 5\nScore: 83/100") == 83
    assert official_rubric_score("score: about 250/100") == 100
    assert official_rubric_score("no number") == 0


@pytest.mark.anyio
async def test_judges_send_the_templates_and_read_the_answers(tmp_path: Path) -> None:
    code = OfficialCode.load(checkout(tmp_path / "official", git=False))
    assert code.commit is None

    def answer(messages: list[ModelMessage], info: AgentInfo) -> str:
        del info
        text = str(messages)
        if "Tested check" in text:
            return '```json\n{"result": "No", "think": "the count did not change"}\n```'
        if "Tested rubric" in text:
            return "fine overall\nScore: 64/100"
        if "Tested type" in text:
            return '1,"milk"'
        return "0"

    scripted = Scripted(answer)
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 64
    verdict = await OfficialPromptAssertions(scripted.model(), code)(
        AssertionRequest(assertion="the count shows 2", before_png=png, after_png=png)
    )
    assert verdict.verdict == "no" and verdict.reasoning == "the count did not change"
    assert (
        scripted.prompts[-1].text == "Tested check of: the count shows 2. Answer JSON with result and think."
    )
    assert scripted.prompts[-1].images == 2
    rubric = await OfficialPromptRubric(scripted.model(), code)(png, png)
    assert rubric.score == 64 and scripted.prompts[-1].text == RUBRIC and scripted.prompts[-1].images == 2
    box = BoundingBox(x=0, y=0, width=10, height=10)
    elements = [
        Element(index=0, tag="button", text="Go", box=box, in_viewport=True),
        Element(index=1, tag="input", box=box, in_viewport=True, placeholder="Search"),
    ]
    obs = Observation(url="http://127.0.0.1/", title="t", elements=elements, text="")
    grounder = OfficialPromptGrounder(scripted.model(), code)
    clicked = await grounder(
        GroundingRequest(description="the Go button", action_type="Click", observation=obs)
    )
    assert clicked.index == 0 and "Wanted: the Go button" in scripted.prompts[-1].text
    typed = await grounder(
        GroundingRequest(description="the search box", action_type="Type", observation=obs)
    )
    assert (typed.index, typed.text) == (1, "milk")


def test_a_run_file_swaps_the_llm_judges_and_needs_the_official_protocol(tmp_path: Path) -> None:
    root = str(checkout(tmp_path / "official", git=False))
    judge = {
        "grounder": "llm",
        "assertions": "heuristic",
        "rubric": "openai:gpt-4o",
        "model": "openai:gpt-4o",
    }
    config = parse_run_config({"protocol": "official", "official_code": root, "judge": judge}, "test")
    assert config.judge.grounder.name == "official-code" and config.judge.grounder.options["code"] == root
    assert config.judge.assertions.name == "heuristic"  # asks no model: nothing to prompt
    assert config.judge.rubric is not None and config.judge.rubric.name == "official-code"
    with pytest.raises(UserError, match="needs protocol"):
        parse_run_config({"official_code": root}, "test")


@pytest.mark.anyio
async def test_an_official_run_sends_the_official_generation_prompt_and_records_the_checkout(
    fake: FakeOpenAI, tasks_root: Path, tmp_path: Path
) -> None:
    root = checkout(tmp_path / "official")
    config = parse_run_config(
        {
            "tasks": str(tasks_root),
            "only": [1],
            "protocol": "official",
            "official_code": str(root),
            "models": [{"name": "vllm:m", "base_url": fake.url, "retries": 0}],
            "limits": {"browser_pages": 1},
        },
        "test",
    )
    engine = Engine(config, tmp_path / "run")
    engine.prepare()
    outcome = await engine.run()
    assert outcome.status == "completed", outcome.message
    sent: dict[str, Any] = fake.requests[0]
    assert sent["messages"][0]["content"][0]["text"] == (
        "Make the page (tested). Its size is 640x360; braces {kept}."
    )
    assert engine.prepared is not None
    manifest = engine.prepared.store.manifest()
    assert manifest["prompts"] == "official rules, official prompts"
    assert manifest["official_code"]["commit"] and set(manifest["official_code"]["files"]) >= {"config.py"}
    assert manifest["generation"]["prompt_file"].endswith("config.py:PROMPT_TEMPLATE")
    assert json.dumps(manifest)  # all of it is JSON
