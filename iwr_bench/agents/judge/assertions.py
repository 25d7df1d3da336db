"""The offline assertion judge: decides from what the screen shows, or says it cannot tell.

The evidence is the quoted text and the numbers in the assertion ("a message 'Saved' appears",
"the total changes to $23.50"), looked up in the text a person can see after the action (the
``visible_text`` browser tool: hidden, covered, transparent, clipped and off-screen text does not
count) and before it. The rules (README, "How the offline assertion judge decides"):

* a bare value ("the score shows 4") is looked up in the element the assertion names, when one is
  on screen, not anywhere on the page;
* a clause that says something changed ("appears", "becomes", "changes to", "is added") needs the
  text to be new: shown after the action where it was not shown before;
* a clause that says something went away ("disappears", "no longer") needs the text gone;
* any failed claim makes the answer ``no``; when every claim holds but some clause has nothing the
  text can show ("the Deluxe card is outlined"), the answer is ``undetermined``, never a yes for the
  unchecked part; an assertion with nothing checkable is ``undetermined`` when the page changed and
  ``no`` when nothing changed at all.

Without visible text (older callers) the page text, or OCR of the screenshots, stands in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import anyio.to_thread

from iwr_bench.agents.judge.claims import NUMBER, QUOTED, Claim, Parsed, norm, parse
from iwr_bench.agents.judge.claims import evidence_tokens as evidence_tokens
from iwr_bench.agents.judge.looks import FIELD, States, blocks, copy_gone, fields_named
from iwr_bench.agents.judge.looks import check as check_looks
from iwr_bench.agents.judge.pixels import moved_on_screen
from iwr_bench.agents.judge.records import AssertionJudge, AssertionRequest, AssertionVerdict
from iwr_bench.metrics.hashing import as_image, pixel_digest, raster_identical
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.registry import register
from iwr_bench.tools.models import BoundingBox, FormField, TextRun, VisibleText


def _pattern(token: str) -> re.Pattern[str]:
    needle = re.escape(norm(token))
    if NUMBER.fullmatch(token):
        return re.compile(rf"(?<![\d.,]){needle}(?![\d]|[.,]\d)")
    return re.compile(needle)


def contains(text: str, token: str) -> bool:
    """Whether ``token`` occurs in ``text`` (case- and space-insensitive; numbers not inside others)."""
    return _pattern(token).search(norm(text)) is not None


def _count(text: str, token: str) -> int:
    return len(_pattern(token).findall(norm(text)))


@dataclass
class Screen:
    """What one state shows: its text and, when the browser measured them, its visible runs."""

    text: str | None
    runs: list[TextRun] | None = None
    offscreen: str = ""
    """Text on the page within one screen of the viewport, which a little scrolling would bring into
    view (farther text is not on the screen a person judges, as for the official screenshot judge)."""
    fields: list[FormField] = field(default_factory=list[FormField])
    """The form fields on screen, with what they hold."""

    @classmethod
    def of(cls, seen: VisibleText | None, text: str | None) -> Screen:
        """The visible text when given, else the plain page text."""
        if seen is None:
            return cls(text)
        h = seen.height or 0
        near = [
            r
            for r in seen.runs
            if not r.on_screen and (not h or (-h < r.box.y + r.box.height and r.box.y < 2 * h))
        ]
        off = "\n".join(r.text for r in near)
        return cls(seen.text, [r for r in seen.runs if r.on_screen], off, list(seen.fields))


class HeuristicAssertionJudge:
    """Offline, deterministic assertion checks on the visible text (or page text, or OCR)."""

    name = "heuristic"

    def __init__(self, ocr: EasyOcr | None = None) -> None:
        self.ocr = ocr

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Decide ``request.assertion`` from the evidence."""
        before, after = request.before_text, request.after_text
        if request.after_visible is None and (before is None or after is None) and self.ocr is not None:
            ocr = self.ocr
            if before is None:
                before = await anyio.to_thread.run_sync(ocr.read, as_image(request.before_png))
            if after is None:
                after = await anyio.to_thread.run_sync(ocr.read, as_image(request.after_png))
        changed = pixel_digest(as_image(request.before_png)) != pixel_digest(as_image(request.after_png))
        verdict = decide(
            request.assertion,
            before,
            after,
            changed,
            seen_before=request.before_visible,
            seen_after=request.after_visible,
            seen_first=request.first_visible,
            acted=request.acted_box,
        )
        if verdict.verdict == "undetermined" and request.recorded_png is not None:
            verdict = await anyio.to_thread.run_sync(
                same_as_recorded, verdict, request.after_png, request.recorded_png
            )
        if verdict.verdict == "undetermined":
            verdict = await anyio.to_thread.run_sync(
                _moved_on_screen, verdict, request.assertion, request.before_png, request.after_png
            )
        return verdict


def _moved_on_screen(
    verdict: AssertionVerdict, assertion: str, before: bytes, after: bytes
) -> AssertionVerdict:
    """``verdict`` (undetermined) made yes when the assertion is one clause about something moving
    that no text shows, and the screenshots show one shape going that way (see :mod:`pixels`)."""
    parsed = parse(assertion)
    if parsed.claims or len(parsed.unchecked) != 1:
        return verdict
    try:
        why = moved_on_screen(parsed.unchecked[0], as_image(before), as_image(after))
    except (OSError, ValueError):
        return verdict
    return _v("yes", why) if why else verdict


def same_as_recorded(verdict: AssertionVerdict, after_png: bytes, recorded_png: bytes) -> AssertionVerdict:
    """``verdict`` (undetermined) made yes when the screen after the action is the recording's screen
    of that state, pixel for pixel up to raster noise: whatever the assertion says about pictures
    or shapes held there, so it holds here. Any other screen leaves it undetermined."""
    try:
        same = raster_identical(as_image(after_png), as_image(recorded_png))
    except (OSError, ValueError):
        return verdict
    if not same:
        return verdict
    return _v(
        "yes",
        f"the screen after the action is the recording's screen of this state (pixel for pixel), "
        f"where the assertion held; text alone could not tell: {verdict.reasoning}",
    )


def decide(
    assertion: str,
    before: str | None,
    after: str | None,
    changed: bool,
    *,
    seen_before: VisibleText | None = None,
    seen_after: VisibleText | None = None,
    seen_first: VisibleText | None = None,
    acted: BoundingBox | None = None,
) -> AssertionVerdict:
    """The decision rules, given the states' texts (or visible text), whether the screenshot changed,
    the page as first loaded (``seen_first``) and where the element the action touched stood."""
    old, new = Screen.of(seen_before, before), Screen.of(seen_after, after)
    parsed = parse(assertion)
    claims = parsed.claims
    seen, unchecked, look_failures = _looks(parsed, old, new, seen_before, seen_after, acted, seen_first)
    if not claims and seen and not unchecked:
        if look_failures:
            return _v("no", "; ".join(look_failures))
        return _v("yes", "; ".join(seen))
    if not claims or new.text is None:
        if look_failures:
            return _v("no", "; ".join(look_failures))
        if not changed and (old.text is None or old.text == new.text):
            return _v("no", "nothing on the page changed after the action")
        why = "no quoted text or number to check" if not claims else "no page text to check against"
        return _v("undetermined", f"{why}; the page did change")
    results = [_check(claim, old, new) for claim in claims]
    failures = [note for kind, note in results if kind == "no"] + look_failures
    if failures:
        return _v("no", "; ".join(failures))
    unsure = [note for kind, note in results if kind == "undetermined"]
    shown = [c.token for c in claims if not c.gone]
    tokens = [note or repr(c.token) for c, (_, note) in zip(claims, results, strict=True)]
    listed = ", ".join([*tokens, *seen])
    if (
        shown
        and not changed
        and old.text == new.text
        and not any(c.change for c in claims)
        and all(contains(old.text or "", t) for t in shown)
    ):
        return _v("no", f"already shown before and nothing changed: {listed}")
    if unsure or unchecked:
        rest = "; ".join([*unsure, *(f"cannot be checked from the screen: {u!r}" for u in unchecked)])
        return _v("undetermined", f"claims checked hold ({listed}) but {rest}")
    if not shown:
        return _v("yes", f"no longer shown after the action: {listed}")
    return _v("yes", f"shown after the action: {listed}")


def _looks(
    parsed: Parsed,
    old: Screen,
    new: Screen,
    seen_before: VisibleText | None,
    seen_after: VisibleText | None,
    acted: BoundingBox | None,
    seen_first: VisibleText | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """Claims about looks (:mod:`~iwr_bench.agents.judge.looks`) in every clause: what held, the
    clauses still unchecked, and what failed. Without measured runs nothing is decided."""
    if old.runs is None or new.runs is None:
        return [], list(parsed.unchecked), []
    states = States(
        before=blocks(old.runs),
        after=blocks(new.runs),
        background_before=seen_before.background if seen_before else None,
        background_after=seen_after.background if seen_after else None,
        acted=acted,
        assertion=parsed.text,
        first=blocks(seen_first.runs) if seen_first is not None else None,
        fields_before=old.fields,
        fields_after=new.fields,
    )
    held: list[str] = []
    failed: list[str] = []
    unchecked: list[str] = []
    clauses = [*dict.fromkeys(c.clause for c in parsed.claims)]
    for clause in [*clauses, *parsed.unchecked]:
        oks, nos = check_looks(clause, states)
        failed.extend(why for _, why in nos)
        if not nos:
            held.extend(why for _, why in oks)
        if clause in parsed.unchecked and not oks and not nos:
            unchecked.append(clause)
    return held, unchecked, failed


def _check(claim: Claim, old: Screen, new: Screen) -> tuple[str, str]:
    """("ok" | "no" | "undetermined", why) for ``claim`` on the screens."""
    token, after = claim.token, new.text or ""
    if claim.gone:
        if claim.one and contains(after, token):  # "the first 'X' has gone": other copies may stay
            if old.runs is None or new.runs is None:
                return "undetermined", f"{token!r} is still shown and the copies cannot be told apart"
            told = copy_gone(token, blocks(old.runs), blocks(new.runs))
            if told is None:
                return "undetermined", f"copies of {token!r} look alike and moved: which one went is unclear"
            return ("ok" if told[0] == "ok" else "no"), told[1]
        if contains(after, token):
            return "no", f"expected gone, but still shown after the action: {token!r}"
        if contains(new.offscreen, token):
            return "undetermined", f"{token!r} is still on the page, just outside the viewport"
        return "ok", ""
    scope, subject = _scope(claim, new.runs), " ".join(claim.subject)
    where = after if scope is None else "\n".join(r.text for r in scope)
    if not contains(where, token):
        typed = _typed(claim, new)
        if typed is not None:  # "the search box shows 'pine'": the value typed into a named field
            if claim.change and _typed(claim, old) == typed:
                return "no", f"{token!r} was already in the {typed} before the action"
            return "ok", ""
        if scope is not None and contains(after, token):
            return (
                "no",
                f"the {subject} shows {_short(where)!r}, not {token!r} ({token!r} is shown elsewhere)",
            )
        if contains(new.offscreen, token):
            return "undetermined", f"{token!r} is on the page but just outside the viewport"
        return "no", f"not shown after the action: {token!r}"
    if claim.change and not _is_new(claim, old, new, scope):
        return "no", f"{token!r} was already shown before the action, so it is not what changed"
    return "ok", ""


def _typed(claim: Claim, screen: Screen) -> str | None:
    """The field holding ``claim.token``, when the clause is about a field ("the box shows 'milk'");
    a value typed into a box counts only for such clauses, never for text the page should write."""
    if not screen.fields or not FIELD.search(QUOTED.sub(" ", claim.clause)):
        return None
    named, _ = fields_named(screen.fields, claim.clause)
    for f in named:
        if f.value and contains(f.value, claim.token):
            return f"{f.tag} field {f.name.split(' | ')[0] if f.name else ''}".rstrip()
    return None


def _is_new(claim: Claim, old: Screen, new: Screen, scope: list[TextRun] | None) -> bool:
    """Whether ``claim.token`` is shown after the action somewhere it was not shown before."""
    token = claim.token
    if old.text is None:
        return True  # nothing to compare with
    if old.runs is not None and new.runs is not None:
        hits = [r for r in (scope if scope is not None else new.runs) if contains(r.text, token)]
        if hits:
            before = {_key(r) for r in old.runs}
            return any(_key(r) not in before for r in hits)
        old_scope = _scope(claim, old.runs) if scope is not None else None
        old_text = old.text if old_scope is None else "\n".join(r.text for r in old_scope)
        new_text = new.text or "" if scope is None else "\n".join(r.text for r in scope)
        return _count(new_text, token) > _count(old_text, token)
    return _count(new.text or "", token) > _count(old.text, token)


def _key(run: TextRun) -> tuple[str, int, int]:
    """A run's identity across states: its text where it stands (to 4 px)."""
    return norm(run.text), round(run.box.x / 4), round(run.box.y / 4)


def _scope(claim: Claim, runs: list[TextRun] | None) -> list[TextRun] | None:
    """The runs of the element ``claim`` is about, or None to look at the whole screen."""
    if not claim.subject or runs is None:
        return None
    named = [i for i, r in enumerate(runs) if _names(r, claim.subject)]
    if not named:
        return None
    scope: dict[int, TextRun] = {}
    for i in named:
        scope[i] = runs[i]
        inside = _inside(runs, i)
        scope.update(inside)
        if not inside and not re.search(r"\d", runs[i].text):  # a bare label: its value sits next to it
            scope.update(_beside(runs, i))
    return [scope[i] for i in sorted(scope)]


def _inside(runs: list[TextRun], i: int) -> dict[int, TextRun]:
    """Runs in blocks nested inside run ``i``'s block (part of the element it names)."""
    own = runs[i].containers
    return {j: r for j, r in enumerate(runs) if own and own[0] in r.containers[1:]}


def _beside(runs: list[TextRun], i: int) -> dict[int, TextRun]:
    """The run right after run ``i`` in the same parent, else the one right before it."""
    own = runs[i].containers
    for j in (i + 1, i - 1):
        if own and 0 <= j < len(runs) and runs[j].containers[1:2] == own[1:2]:
            return {j: runs[j]}
    return {}


def _names(run: TextRun, subject: list[str]) -> bool:
    """Whether the run's text, or its own or its parent's id/class/label, uses a subject word."""
    near = " < ".join(run.label.split(" < ")[:2])
    words = re.findall(r"[a-z]+", f"{run.text} {near}".lower())
    stems = [w[:-1] if len(w) > 4 and w.endswith("s") else w for w in subject if len(w) >= 3]
    return any(w.startswith(s) for s in stems for w in words)


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def _v(verdict: str, reasoning: str) -> AssertionVerdict:
    return AssertionVerdict(verdict=verdict, reasoning=reasoning, judge="heuristic")  # type: ignore[arg-type]


@register("assertions", "heuristic")
def heuristic_assertions(ocr: bool = False) -> AssertionJudge:
    """Offline assertion judge; ``ocr=True`` reads screenshots when no page text is given."""
    return HeuristicAssertionJudge(EasyOcr() if ocr else None)
