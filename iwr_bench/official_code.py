"""``--official-code DIR``: the authors' prompt templates, read at run time from their checkout.

The project ships its own prompts under both protocols (their text is not ours to copy). A user who
has a checkout of the official code can point a run at it: the templates are then read from its
files with :mod:`ast` (nothing of it is imported or run) and used where the official scripts use
them:

* generation: ``config.py``'s ``PROMPT_TEMPLATE`` (``{resolution}`` filled as they fill it);
* assertions: ``utils/assertion_scorer.py``'s ``ASSERTION_TEMPLATE`` (``{assertion}``), the two
  screenshots after it, and the answer read as they read it (:func:`official_assertion_result`);
* rubric (HVS): ``utils/visual_scorer.py``'s ``COMPARE_TEMPLATE``, then the checkpoint and the
  screenshot, and the score read as they read it (:func:`official_rubric_score`);
* grounding: the f-string prompts of ``utils/operations.py`` (a click from the page's element
  list, and a typed field with its text), with our element list where theirs has browser-use's
  accessibility tree: the same instructions, not the same page serialisation.

The manifest records the checkout's commit and the digest of every file read. Without
``--official-code`` an official-protocol run uses our prompts and every table says
"official rules, own prompts".
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from iwr_bench.agents.generation.prompt import PromptFile
from iwr_bench.errors import UserError

FILES = {
    "generation": ("config.py", "PROMPT_TEMPLATE"),
    "assertion": ("utils/assertion_scorer.py", "ASSERTION_TEMPLATE"),
    "rubric": ("utils/visual_scorer.py", "COMPARE_TEMPLATE"),
}
"""Role -> (file in the checkout, module-level name of its template)."""

GROUNDING_FILE = "utils/operations.py"
GROUNDING_METHODS = {"click": "_try_llm_click", "type": "_try_llm_type"}
"""Grounding role -> the method whose ``prompt`` f-string is the template."""

PROMPT_LABEL_OWN = "official rules, own prompts"
PROMPT_LABEL_OFFICIAL = "official rules, official prompts"


@dataclass(frozen=True)
class OfficialCode:
    """The templates of one checkout of the official code."""

    root: Path
    commit: str | None
    """The checkout's commit (None when it is not a git checkout)."""
    templates: dict[str, str]
    """Role (generation, assertion, rubric, click, type) -> template text (``{name}`` fields)."""
    digests: dict[str, str] = field(default_factory=dict[str, str])
    """File (relative to the checkout) -> sha256 of its bytes."""

    @classmethod
    def load(cls, root: str | Path) -> OfficialCode:
        """Read every template from the checkout at ``root``.

        Raises:
            UserError: a file or a template is missing, or not what this reader knows.
        """
        base = Path(root).expanduser().resolve()
        if not base.is_dir():
            raise UserError(f"--official-code: {base} is not a folder")
        templates: dict[str, str] = {}
        digests: dict[str, str] = {}
        for role, (rel, name) in FILES.items():
            tree = _parse(base, rel, digests)
            templates[role] = _constant(tree, name, rel)
        tree = _parse(base, GROUNDING_FILE, digests)
        for role, method in GROUNDING_METHODS.items():
            templates[role] = _fstring_prompt(tree, method, GROUNDING_FILE)
        return cls(root=base, commit=_commit(base), templates=templates, digests=digests)

    def generation_prompt(self) -> PromptFile:
        """The generation template as a prompt file (``{resolution}`` filled as officially)."""
        text = self.templates["generation"]
        where = f"{self.root / FILES['generation'][0]}:{FILES['generation'][1]}"
        return PromptFile(path=where, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())

    def manifest(self) -> dict[str, Any]:
        """What a run records of the checkout."""
        return {"path": str(self.root), "commit": self.commit, "files": dict(sorted(self.digests.items()))}

    def render(self, role: str, **values: str) -> str:
        """The template of ``role`` filled with ``str.format`` as the official code fills it (a
        field not given stays as written). The rubric template is sent as it is, unformatted, as
        officially (it holds literal ``${...}`` braces)."""
        template = self.templates[role]
        if role == "rubric":
            return template
        try:
            return template.format_map(_Keep(values))
        except (ValueError, AttributeError, IndexError) as exc:
            raise UserError(f"--official-code: the {role} template cannot be filled: {exc}") from exc


class _Keep(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def prompt_label(official_code: str) -> str:
    """How tables name the prompts of an official-protocol run (``official_code``: the run's setting)."""
    return PROMPT_LABEL_OFFICIAL if official_code else PROMPT_LABEL_OWN


def _parse(base: Path, rel: str, digests: dict[str, str]) -> ast.Module:
    path = base / rel
    try:
        data = path.read_bytes()
        tree = ast.parse(data.decode("utf-8"), filename=str(path))
    except OSError as exc:
        raise UserError(f"--official-code: cannot read {rel} in {base}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, SyntaxError) as exc:
        raise UserError(f"--official-code: {rel} in {base} is not readable Python: {exc}") from exc
    digests[rel] = hashlib.sha256(data).hexdigest()
    return tree


def _constant(tree: ast.Module, name: str, rel: str) -> str:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
            raise UserError(f"--official-code: {name} in {rel} is not a plain string")
    raise UserError(f"--official-code: {rel} defines no {name}")


def _fstring_prompt(tree: ast.Module, method: str, rel: str) -> str:
    """The first ``prompt = f"..."`` in ``method``, its replacement fields as ``{expression}``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name == method:
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "prompt" for t in inner.targets)
                    and isinstance(inner.value, ast.JoinedStr)
                ):
                    return _template_of(inner.value)
    raise UserError(f"--official-code: {rel} has no prompt f-string in {method}()")


def _template_of(joined: ast.JoinedStr) -> str:
    parts: list[str] = []
    for value in joined.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue):
            parts.append("{" + ast.unparse(value.value) + "}")
    return "".join(parts)


def _commit(base: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(base), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


Verdict = Literal["Yes", "No", "Error"]


def official_assertion_result(answer: str) -> tuple[Verdict, str]:
    """(result, thinking) read from an assertion answer as the official scorer reads it: the JSON
    inside the first fenced block (or the whole answer), its ``result`` ("Yes"/"No", anything else is
    "Error") and ``think``; an answer that is not such JSON counts "Yes" if the word appears
    anywhere, else "No" if that does, else "Error"."""
    text = answer.strip()
    try:
        for fence in ("```json", "```"):
            if fence in text:
                start = text.find(fence) + len(fence)
                end = text.find("```", start)
                body = text[start:end].strip() if end >= 0 else text[start:].strip()
                break
        else:
            body = text
        parsed = json.loads(body)
        result = parsed.get("result", "Error")
        thinking = str(parsed.get("think", ""))
        return (result if result in ("Yes", "No") else "Error"), thinking
    except (ValueError, AttributeError):
        if "Yes" in text:
            return "Yes", ""
        return ("No" if "No" in text else "Error"), ""


def official_rubric_score(answer: str) -> int:
    """The 0-100 score read as the official scorer reads it: the first ``Score: ... N/100``
    (case-insensitive), clipped to 0-100; 0 when there is none."""
    found = re.search(r"Score:.*?(\d{1,3})/100", answer, re.IGNORECASE)
    return max(0, min(100, int(found.group(1)))) if found else 0
