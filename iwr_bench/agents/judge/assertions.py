"""The offline assertion judge: decides from evidence it can measure, or says it cannot tell.

The evidence is the quoted text and the numbers in the assertion ("a message 'Saved' appears",
"the total changes to $23.50"), looked up in the page's visible text after the action and before
it; OCR of the screenshots stands in when no page text is given. Assertions about something
going away ("disappears", "is removed", "no longer") expect the text gone afterwards. An
assertion that names nothing checkable is ``undetermined`` when the page changed and ``no`` when
nothing changed at all.
"""

from __future__ import annotations

import itertools
import re

import anyio.to_thread

from iwr_bench.agents.judge.records import AssertionJudge, AssertionRequest, AssertionVerdict
from iwr_bench.metrics.hashing import as_image, pixel_digest
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.registry import register

_QUOTED = re.compile(r"[\"“'‘«]([^\"”'’»]{1,120})[\"”'’»]")
_NUMBER = re.compile(r"[$€£]?\d+(?:[.,]\d+)*%?")
_NEGATIVE = re.compile(
    r"\b(disappears?|vanish(?:es)?|is removed|are removed|removed|no longer|hidden|hides|closes|is cleared|"
    r"goes away|is gone|are gone|empty|collapses?)\b"
)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("\u00a0", " ").split())


_FROM = re.compile(r"\bfrom\s*$")
_CLAUSE = re.compile(r";|,| and | but | while | then ")


def evidence_tokens(assertion: str) -> list[str]:
    """The checkable pieces of an assertion: quoted spans, or (when nothing is quoted) numbers.

    A value right after "from" ("goes from 12 to 13") is the old state and is not expected after.
    """
    return [token for token, _ in _tokens_with_clauses(assertion)]


def _tokens_with_clauses(assertion: str) -> list[tuple[str, str]]:
    quoted = list(_QUOTED.finditer(assertion))
    matches = quoted or list(_NUMBER.finditer(assertion))
    out: list[tuple[str, str]] = []
    for m in matches:
        token = (m.group(1) if quoted else m.group(0)).strip()
        if not token or _FROM.search(assertion[: m.start()].lower()):
            continue
        out.append((token, _clause_at(assertion, m.start())))
    return out


def _clause_at(text: str, pos: int) -> str:
    """The clause of ``text`` around ``pos`` (split at ; , and ...), ignoring separators in quotes."""
    masked = _QUOTED.sub(lambda m: "_" * len(m.group(0)), text)
    bounds = [0, *(m.end() for m in _CLAUSE.finditer(masked)), len(text)]
    for start, end in itertools.pairwise(bounds):
        if start <= pos < end:
            return text[start:end]
    return text


def contains(text: str, token: str) -> bool:
    """Whether ``token`` occurs in ``text`` (case- and space-insensitive; numbers not inside others)."""
    hay, needle = _norm(text), _norm(token)
    if _NUMBER.fullmatch(token):
        return re.search(rf"(?<![\d.,]){re.escape(needle)}(?![\d]|[.,]\d)", hay) is not None
    return needle in hay


class HeuristicAssertionJudge:
    """Offline, deterministic assertion checks on page text (or OCR)."""

    name = "heuristic"

    def __init__(self, ocr: EasyOcr | None = None) -> None:
        self.ocr = ocr

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Decide ``request.assertion`` from the evidence."""
        before, after = request.before_text, request.after_text
        if (before is None or after is None) and self.ocr is not None:
            ocr = self.ocr
            before = (
                before
                if before is not None
                else await anyio.to_thread.run_sync(ocr.read, as_image(request.before_png))
            )
            after = (
                after
                if after is not None
                else await anyio.to_thread.run_sync(ocr.read, as_image(request.after_png))
            )
        changed = pixel_digest(as_image(request.before_png)) != pixel_digest(as_image(request.after_png))
        return decide(request.assertion, before, after, changed)


def decide(assertion: str, before: str | None, after: str | None, changed: bool) -> AssertionVerdict:
    """The decision rules, given texts before/after and whether the screenshot changed."""
    pairs = _tokens_with_clauses(assertion)
    tokens = [t for t, _ in pairs]
    if not tokens or after is None:
        if not changed and (before is None or before == after):
            return _v("no", "nothing on the page changed after the action")
        why = "no quoted text or number to check" if not tokens else "no page text to check against"
        return _v("undetermined", f"{why}; the page did change")
    gone = [t for t, clause in pairs if _NEGATIVE.search(clause.lower())]
    shown = [t for t in tokens if t not in gone]
    still = [t for t in gone if contains(after, t)]
    if still:
        return _v("no", f"expected gone, but still shown after the action: {', '.join(map(repr, still))}")
    missing = [t for t in shown if not contains(after, t)]
    if missing:
        return _v("no", f"not shown after the action: {', '.join(map(repr, missing))}")
    if not shown:
        return _v("yes", f"no longer shown after the action: {', '.join(map(repr, gone))}")
    found_before = [contains(before, t) for t in shown] if before is not None else []
    if found_before and all(found_before) and not changed and before == after:
        return _v("no", f"already shown before and nothing changed: {', '.join(map(repr, tokens))}")
    return _v("yes", f"shown after the action: {', '.join(map(repr, tokens))}")


def _v(verdict: str, reasoning: str) -> AssertionVerdict:
    return AssertionVerdict(verdict=verdict, reasoning=reasoning, judge="heuristic")  # type: ignore[arg-type]


@register("assertions", "heuristic")
def heuristic_assertions(ocr: bool = False) -> AssertionJudge:
    """Offline assertion judge; ``ocr=True`` reads screenshots when no page text is given."""
    return HeuristicAssertionJudge(EasyOcr() if ocr else None)
