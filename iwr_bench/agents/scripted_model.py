"""The built-in scripted judge model ``test:``: valid answers with no key, network or server.

In the spirit of inspect_ai's ``mockllm``, ``test:`` names a pydantic-ai ``FunctionModel`` that
answers every request the judges send, so the LLM designs, the ``agent`` step judge, the rubric
judge and the terminal UI can be tried offline. Its answers are labelled as scripted (model
``test``, system ``scripted``, so judges record ``llm:scripted:test``) and carry no price.

The default script decides from the request alone:

- a structured answer (an output tool, or a JSON object for native or prompted output) is built
  from the tool's JSON schema: ``index`` is the listed element whose label shares the most words
  with the action's description, a quoted phrase of it counting five (the first listed when none
  shares any), ``sure`` says whether any did, ``text`` is what a Type action types (the prompt's
  ``Text to type``, else a quoted phrase of the description), ``performed`` whether the action tool
  succeeded; a prose field (``reasoning``, ``reason``) says the answer is scripted; any other field
  gets a valid value for its type (an enum's first value, so a verdict is ``yes``; the middle of a
  bounded number, so a rubric part scores about half);
- with function tools (the ``agent`` step judge), it calls ``observe`` when the action needs an
  element, then the step's action tool on the best-matching element (once more on the next one if
  that fails), then answers; never more than :data:`MAX_TOOL_TURNS` tool calls;
- a plain-text request gets :data:`PLAIN_TEXT`.

Options follow the prefix, comma-separated: ``test:answers.jsonl`` serves the answers of a script
file first (see :class:`ScriptLine`), ``test:delay=0.05`` waits that many seconds before each
streamed piece (to watch the text arrive in the terminal UI); ``test:answers.jsonl,delay=0.05``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.tools import ToolDefinition

from iwr_bench.agents.events import PROSE_FIELDS
from iwr_bench.errors import UserError
from iwr_bench.tools.surface import tool_for

PROVIDER = "test"
"""The model-name prefix that selects this model."""

MAX_TOOL_TURNS = 4
"""Most function-tool calls before the final answer."""

PLAIN_TEXT = "This is a scripted answer from the built-in test model; no model was asked."
"""The answer to a request that takes plain text."""

CHUNK = 8
"""Characters per streamed piece."""

MAX_DELAY = 10.0
"""Longest ``delay`` option (seconds before each streamed piece)."""

_FALLBACK_ACTIONS = tuple(tool_for(method).name for method in ("click", "type", "press"))
"""The action tools tried, in this order, when the prompt names none (names from the one tool list)."""
_OBSERVE = tool_for("observe").name
_STOP = frozenset(
    ["a", "an", "and", "at", "by", "for", "in", "into", "of", "on", "or", "the", "then", "to", "with"]
)
_WORDS = re.compile(r"\w+")
_QUOTED = re.compile(r"""(?:^|\W)['"‘“](.+?)['"’”](?=\W|$)""")


class ScriptLine(BaseModel):
    """One answer of a script file (``test:FILE``): a JSON object per line, blank lines skipped.

    Exactly one of ``text``, ``output`` or ``tool`` (with ``args``)::

        {"match": "Statement to check", "output": {"reasoning": "scripted", "verdict": "no"}}
        {"tool": "observe", "args": {}}
        {"text": "Result: Yes"}

    Each request takes the first unused line that fits it: its ``match`` (if any) is in the
    request's instructions or prompt text, and it answers in the form the request takes (``output``
    for a structured answer, ``text`` for plain text; a ``tool`` line needs that tool on offer). A
    request no line fits gets the default script's answer. Each judge role builds its own model, so
    each reads the file from its first line: give lines a ``match`` to keep them to one role.
    """

    model_config = ConfigDict(extra="forbid")

    match: str = ""
    """Text the request must contain (empty: any request)."""
    text: str | None = None
    """A plain-text answer."""
    output: dict[str, Any] | None = None
    """The final answer's arguments (sent as they are: an invalid one is retried by the judge)."""
    tool: str | None = None
    """A function tool to call."""
    args: dict[str, Any] = Field(default_factory=dict[str, Any])
    """That tool's arguments."""

    def fits(self, text: str, structured: bool, tools: set[str]) -> bool:
        """Whether this line answers a request with this text, answer form and tools."""
        if self.match and self.match not in text:
            return False
        if self.tool is not None:
            return self.tool in tools
        return (self.output is not None) == structured

    @model_validator(mode="after")
    def _one_answer(self) -> ScriptLine:
        if sum(x is not None for x in (self.text, self.output, self.tool)) != 1:
            raise ValueError('give exactly one of "text", "output" or "tool"')
        return self


def load_script(path: Path) -> list[ScriptLine]:
    """The lines of a script file.

    Raises:
        UserError: the file cannot be read, or a line is not a valid answer.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"test model: cannot read the script {path}: {exc}") from exc
    lines: list[ScriptLine] = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append(ScriptLine.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]["msg"]
            raise UserError(f"test model: {path}:{number}: {problem}") from exc
    return lines


@dataclass
class Turn:
    """One answer: prose streamed as text, then at most one tool call."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict[str, Any])


# -- reading the request ---------------------------------------------------------------------------


@dataclass
class Request:
    """What the default script reads from a conversation."""

    text: str
    """Instructions and the text of every user prompt."""
    returns: list[ToolReturnPart]
    """Tool results so far, oldest first."""
    calls: list[ToolCallPart]
    """Function-tool calls so far (final answers left out), oldest first."""


def read_request(messages: Sequence[ModelMessage], info: AgentInfo) -> Request:
    """The request's text, tool results and tool calls so far."""
    texts = [info.instructions or ""]
    returns: list[ToolReturnPart] = []
    calls: list[ToolCallPart] = []
    output_names = {t.name for t in info.output_tools}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    items = [part.content] if isinstance(part.content, str) else list(part.content)
                    texts += [i for i in items if isinstance(i, str)]
                elif isinstance(part, ToolReturnPart):
                    returns.append(part)
        else:
            calls += [
                p for p in message.parts if isinstance(p, ToolCallPart) and p.tool_name not in output_names
            ]
    return Request("\n".join(texts), returns, calls)


def _field(text: str, *names: str) -> str:
    """The value of the first ``Name: value`` line of ``text`` for one of ``names``."""
    for name in names:
        found = re.search(rf"^{name}: (.*)$", text, re.M)
        if found:
            return found.group(1).strip()
    return ""


def description(request: Request) -> str:
    """The action's description of its target (the whole text when none is labelled)."""
    return _field(request.text, "Target description", "Description") or request.text


def text_to_type(request: Request, target: str = "") -> str | None:
    """What a Type action types: the prompt's ``Text to type``, else the description's first quoted
    phrase that is not part of ``target`` (the label of the element typed into)."""
    given = _field(request.text, "Text to type")
    if given:
        try:
            value = ast.literal_eval(given)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, str):
            return value
    quoted = [q for q in _QUOTED.findall(description(request)) if q.lower() not in target.lower()]
    return quoted[0] if quoted else None


def _brief(content: Any) -> str:
    """A tool result in one short line."""
    if isinstance(content, BaseModel):
        detail = getattr(content, "detail", None)  # an action's result says what it acted on
        content = detail if isinstance(detail, str) and detail else content.model_dump(mode="json")
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    text = " ".join(text.split())
    return text[:120] + ("..." if len(text) > 120 else "")


def _is_type_action(request: Request) -> bool:
    return bool(re.search(r"^(?:Action: Type|Step \d+: Type)\b", request.text, re.M))


def _from_content(content: Any) -> list[tuple[int, str]]:
    if isinstance(content, BaseModel):
        content = content.model_dump(mode="json")
    if isinstance(content, str):
        return _from_lines(content)
    if not isinstance(content, dict) or not isinstance(content.get("elements"), list):
        return []
    found: list[tuple[int, str]] = []
    for el in cast("list[Any]", cast("dict[str, Any]", content)["elements"]):
        if isinstance(el, dict) and isinstance(index := cast("dict[str, Any]", el).get("index"), int):
            found.append((index, _element_label(cast("dict[str, Any]", el))))
    return found


def _element_label(el: dict[str, Any]) -> str:
    """``button 'Add one'`` (with its other names after it) for an element as ``observe`` lists it."""
    names = [str(v) for k in ("text", "aria_label", "placeholder", "name", "icon") if (v := el.get(k))]
    shown = " ".join(names[0].split()) if names else ""
    others = " ".join(dict.fromkeys(n for n in names[1:] if n != names[0]))
    return f"{el.get('role') or el.get('tag') or 'element'} {shown!r}" + (f" ({others})" if others else "")


def _from_lines(text: str) -> list[tuple[int, str]]:
    """``[3] button 'Add one' at (10,20) near: ...`` lines (position and surroundings dropped)."""
    found: list[tuple[int, str]] = []
    for index, rest in re.findall(r"^\s*\[(\d+)\]\s*(.*)$", text, re.M):
        found.append((int(index), rest.split(" at (")[0]))
    return found


def candidates(request: Request) -> list[tuple[int, str]]:
    """The elements on offer, ``(index, label)``: from the latest tool result listing them, else
    from the prompt."""
    for part in reversed(request.returns):
        if part.outcome == "success" and (found := _from_content(part.content)):
            return found
    return _from_lines(request.text)


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if w not in _STOP}


def rank(wanted: str, elements: list[tuple[int, str]]) -> list[tuple[int, str, int]]:
    """``elements`` best first, each with its score: the words its label shares with ``wanted``,
    plus 5 for each quoted phrase of ``wanted`` that its label contains (ties keep list order)."""
    words = _words(wanted)
    quotes = [q.lower() for q in _QUOTED.findall(wanted)]
    scored = [
        (index, label, len(words & _words(label)) + 5 * sum(q in label.lower() for q in quotes))
        for index, label in elements
    ]
    return sorted(scored, key=lambda item: -item[2])


# -- answers built from a JSON schema --------------------------------------------------------------


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
        return cast("dict[str, Any]", defs[ref.rsplit("/", 1)[-1]])
    return schema


def _is(value: Any, kind: Any) -> bool:
    match kind:
        case "null":
            return value is None
        case "boolean":
            return isinstance(value, bool)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "string":
            return isinstance(value, str)
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case _:
            return kind is None


def fits(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    """Whether ``value`` has a type (or enum value) the schema allows."""
    schema = _resolve(schema, defs)
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(variants, list):
        return any(fits(value, v, defs) for v in cast("list[dict[str, Any]]", variants))
    if isinstance(schema.get("enum"), list):
        return value in schema["enum"]
    kind = schema.get("type")
    return any(_is(value, k) for k in (cast("list[Any]", kind) if isinstance(kind, list) else [kind]))


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    step = 1 if integer else 0.0
    low = schema.get("minimum", schema["exclusiveMinimum"] + step if "exclusiveMinimum" in schema else None)
    high = schema.get("maximum", schema["exclusiveMaximum"] - step if "exclusiveMaximum" in schema else None)
    if low is not None and high is not None:
        middle = (low + high) / 2
        return int(middle) if integer else middle
    value = low if low is not None else high if high is not None else 0
    return int(value) if integer else float(value)


def _string(schema: dict[str, Any]) -> str:
    text = "test"
    least = int(schema.get("minLength", 0))
    most = int(schema.get("maxLength", len(text)))
    return (text * (1 + least // len(text)))[: max(least, min(len(text), most))]


def value_for(schema: dict[str, Any], defs: dict[str, Any], name: str, hints: dict[str, Any]) -> Any:
    """A valid value for ``schema``: ``hints[name]`` when its type fits, else one built from the
    schema (a constant or the first enum value, the first non-null variant, the middle of a bounded
    number, ``true``, ``"test"``, the fewest items an array may have, an object's required fields and
    hinted ones)."""
    schema = _resolve(schema, defs)
    if name in hints and fits(hints[name], schema, defs):
        return hints[name]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    variants = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if isinstance(variants, list) and variants:
        options = cast("list[dict[str, Any]]", variants)
        chosen = next((v for v in options if _resolve(v, defs).get("type") != "null"), options[0])
        return value_for(chosen, defs, name, hints)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast("list[Any]", kind) if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, defs, hints)
    if kind == "array":
        item = cast("dict[str, Any]", schema.get("items", {}))
        return [value_for(item, defs, "", hints) for _ in range(int(schema.get("minItems", 0)))]
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    return None if kind == "null" else _string(schema)


def _object(schema: dict[str, Any], defs: dict[str, Any], hints: dict[str, Any]) -> dict[str, Any]:
    properties = cast("dict[str, dict[str, Any]]", schema.get("properties", {}))
    required = [k for k in cast("list[str]", schema.get("required", [])) if k in properties]
    hinted = [k for k in properties if k not in required and hints.get(k) is not None]
    return {key: value_for(properties[key], defs, key, hints) for key in required + hinted}


def output_schema(info: AgentInfo) -> tuple[str, dict[str, Any]] | None:
    """The structured answer the request asks for: ``(output tool name, its schema)``, or ``("",
    schema)`` for native or prompted JSON output; None for plain text."""
    if info.output_tools:
        tool = info.output_tools[0]
        return tool.name, tool.parameters_json_schema
    target = info.model_request_parameters.output_object
    return ("", target.json_schema) if target is not None else None


def build_args(schema: dict[str, Any], hints: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool (or a structured answer) with this JSON schema (see :func:`value_for`)."""
    value = value_for(schema, cast("dict[str, Any]", schema.get("$defs", {})), "", hints)
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


# -- the default script -----------------------------------------------------------------------------


def _prose(text: str) -> dict[str, str]:
    return dict.fromkeys(PROSE_FIELDS, f"Scripted answer (test model): {text}")


def _action_tool(request: Request, tools: dict[str, ToolDefinition]) -> ToolDefinition | None:
    """The step's action tool: the one the prompt names, else the first of click, type_text, press."""
    named = re.search(r"Your action tool: (\w+)", request.text)
    if named and named.group(1) in tools:
        return tools[named.group(1)]
    return next((tools[n] for n in _FALLBACK_ACTIONS if n in tools), None)


def _tool_limit(request: Request) -> int:
    stated = re.search(r"at most (\d+) tool calls", request.text)
    return min(MAX_TOOL_TURNS, int(stated.group(1))) if stated else MAX_TOOL_TURNS


def _tried(request: Request, tool: str) -> tuple[list[ToolCallPart], list[ToolReturnPart]]:
    calls = [c for c in request.calls if c.tool_name == tool]
    return calls, [r for r in request.returns if r.tool_name == tool]


def next_tool_call(request: Request, info: AgentInfo) -> Turn | None:
    """The agent's next tool call: ``observe`` when the action needs an element and none is listed
    yet, then the action tool on the best-matching element not tried yet (twice at most); None when
    it is time to answer."""
    tools = {t.name: t for t in info.function_tools}
    limit = _tool_limit(request)
    action = _action_tool(request, tools)
    if action is None or len(request.calls) >= limit:
        return None
    calls, results = _tried(request, action.name)
    if any(r.outcome == "success" for r in results) or len(calls) >= 2:
        return None
    schema = action.parameters_json_schema
    if "index" not in schema.get("properties", {}):
        return Turn(f"Scripted (test model): performing the step with {action.name}.\n", action.name, {})
    elements = candidates(request)
    observed = any(c.tool_name == _OBSERVE for c in request.calls)
    if not elements and _OBSERVE in tools and not observed and limit - len(request.calls) >= 2:
        return Turn("Scripted (test model): listing the page's elements first.\n", _OBSERVE, {})
    used = {c.args_as_dict().get("index") for c in calls}
    ranked = [e for e in rank(description(request), elements) if e[0] not in used]
    if not ranked:
        return None
    index, label, score = ranked[0]
    why = f"the best match, score {score}" if score else "the first: none matches"
    args = build_args(schema, {"index": index, "text": text_to_type(request, label) or "test"})
    return Turn(f"Scripted (test model): {action.name} on [{index}] {label} ({why}).\n", action.name, args)


def answer_hints(request: Request, info: AgentInfo) -> dict[str, Any]:
    """Values for the structured answer's fields (see the module doc)."""
    action = _action_tool(request, {t.name: t for t in info.function_tools})
    if action is not None:
        _, results = _tried(request, action.name)
        done = next((r for r in results if r.outcome == "success"), None)
        if done is None:
            why = _brief(results[-1].content) if results else "no element to act on"
            return {"performed": False, "verdict": "undetermined", **_prose(f"could not act: {why}")}
        text = f"performed {action.name} ({_brief(done.content)}); the statement was not checked"
        return {"performed": True, **_prose(text)}
    ranked = rank(description(request), candidates(request))
    hints: dict[str, Any] = _prose("nothing was checked; no model looked at the page")
    label = ""
    if ranked:
        index, label, score = ranked[0]
        why = f"matches the description best (score {score})" if score else "is listed first (none matches)"
        hints.update(index=index, sure=score > 0, **_prose(f"[{index}] {label} {why}"))
    if _is_type_action(request):
        hints["text"] = text_to_type(request, label)
    return hints


def default_turn(request: Request, info: AgentInfo) -> Turn:
    """The default script's answer to one request (see the module doc)."""
    if info.function_tools and (call := next_tool_call(request, info)) is not None:
        return call
    wanted = output_schema(info)
    if wanted is None:
        return Turn(PLAIN_TEXT)
    name, schema = wanted
    args = build_args(schema, answer_hints(request, info))
    return Turn(tool=name, args=args) if name else Turn(json.dumps(args))


# -- the model ---------------------------------------------------------------------------------------


class ScriptedJudgeModel(FunctionModel):
    """The ``test:`` model: a script file's answers first, then the default script's.

    Plain and streamed requests get the same answers; a streamed one arrives in pieces of
    :data:`CHUNK` characters, prose first, then the tool call's arguments.
    """

    def __init__(self, script: Sequence[ScriptLine] = (), *, delay: float = 0.0) -> None:
        super().__init__(self._reply, stream_function=self._stream, model_name="test")
        self.script = list(script)
        """The script file's lines."""
        self.delay = delay
        """Seconds before each streamed piece."""
        self._used: set[int] = set()

    @property
    def system(self) -> str:
        """``scripted``: what judges record before the model name (``scripted:test``)."""
        return "scripted"

    def _from_script(self, request: Request, info: AgentInfo) -> Turn | None:
        wanted = output_schema(info)
        tools = {t.name for t in info.function_tools}
        for i, line in enumerate(self.script):
            if i in self._used or not line.fits(request.text, wanted is not None, tools):
                continue
            self._used.add(i)
            if line.output is not None and wanted is not None:
                name = wanted[0]
                return Turn(tool=name, args=line.output) if name else Turn(json.dumps(line.output))
            return Turn(line.text or "", line.tool, line.args)
        return None

    def turn(self, messages: Sequence[ModelMessage], info: AgentInfo) -> Turn:
        """The answer to one request."""
        request = read_request(messages, info)
        return self._from_script(request, info) or default_turn(request, info)

    async def _reply(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = self.turn(messages, info)
        parts: list[ModelResponsePart] = [TextPart(turn.text)] if turn.text or not turn.tool else []
        if turn.tool:
            parts.append(ToolCallPart(turn.tool, json.dumps(turn.args), tool_call_id=_call_id(messages)))
        return ModelResponse(parts=parts)

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        turn = self.turn(messages, info)
        for i in range(0, len(turn.text), CHUNK):
            await self._pause()
            yield turn.text[i : i + CHUNK]
        if turn.tool:
            args = json.dumps(turn.args)
            await self._pause()
            yield {1: DeltaToolCall(turn.tool, args[:CHUNK], tool_call_id=_call_id(messages))}
            for i in range(CHUNK, len(args), CHUNK):
                await self._pause()
                yield {1: DeltaToolCall(json_args=args[i : i + CHUNK])}
        elif not turn.text:
            yield ""

    async def _pause(self) -> None:
        if self.delay:
            await anyio.sleep(self.delay)


def _call_id(messages: Sequence[ModelMessage]) -> str:
    return f"test-{sum(isinstance(m, ModelResponse) for m in messages) + 1}"


def scripted_model(options: str = "") -> ScriptedJudgeModel:
    """The model ``test:OPTIONS`` names (see the module doc).

    Raises:
        UserError: an unknown option, a bad delay, or a script file that cannot be read.
    """
    script: list[ScriptLine] = []
    delay = 0.0
    for item in (i.strip() for i in options.split(",")):
        key, sep, value = item.partition("=")
        if not item:
            continue
        if not sep or key.strip() == "script":
            script += load_script(Path(value.strip() if sep else item).expanduser())
        elif key.strip() == "delay":
            try:
                delay = float(value)
            except ValueError:
                delay = -1.0
            if not 0 <= delay <= MAX_DELAY:
                raise UserError(f"test model: delay must be 0 to {MAX_DELAY:g} seconds, not {value!r}")
        else:
            raise UserError(
                f"test model: unknown option {key!r} (give a script file, script=FILE or delay=SECONDS)"
            )
    return ScriptedJudgeModel(script, delay=delay)
