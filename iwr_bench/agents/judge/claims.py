"""Reading an assertion into checkable claims (the offline assertion judge's parser).

An assertion is cut into clauses at ``;``, ``,``, "and", "but", "while" and "then" (never inside
quotes). In each clause the evidence is its quoted spans, or its numbers when nothing in it is
quoted; a value right after "from", or before "merge into" ("the two 4 tiles merge into an 8"), is the
old state and is not expected afterwards. A clause
without evidence ("the Deluxe card is outlined") is kept as *unchecked*: the judge cannot decide
it from text and must not answer a confident yes for it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

QUOTED = re.compile(r"[\"“'‘«]([^\"”'’»]{1,120})[\"”'’»]")
NUMBER = re.compile(r"[$€£]?\d+(?:[.,]\d+)*%?")
_NEGATIVE = re.compile(
    r"\b(disappears?|vanish(?:es)?|is removed|are removed|removed|no longer|"
    r"(?:is|are|gets?|becomes?|now) hidden|hides|closes|is cleared|"
    r"goes away|is gone|are gone|(?:has|have|had) (?:gone|disappeared|vanished|closed|been removed)|"
    r"empty|collapses?)\b"
)
_CHANGE = re.compile(
    r"\b(appears?|appeared|shows up|pops up|becomes?|became|changes?|changed|updates?|updated|"
    r"increases?|decreases?|rises?|falls?|drops?|grows?|gains?|(?:is|are|gets|get) added|turns? into|"
    r"switches? to|is replaced|goe?s? (?:from|up|down|back)|(?:merges?|merged|combines?|combined) into|"
    r"now (?:reads?|shows?|says|displays?))\b"
)


def norm(text: str) -> str:
    """Text as the judge compares it: lower case, runs of white space (no-break spaces too) as one."""
    return " ".join(text.lower().replace("\u00a0", " ").split())


_FROM = re.compile(r"\bfrom\s*$")
_REPLACED_OLD = re.compile(r"\b(?:replaces?|replacing|instead of|in place of)\s*(?:the\s+\w+\s+)?$")
"""Before a value the clause says is replaced (the old state, expected gone)."""
_REPLACED_NEW = re.compile(r"\b(?:replaced?|replacing)\b.*\b(?:with|by)\s*(?:the\s+\w+\s+)?$")
"""Before the value that replaces another ("replace X with Y", "is replaced by Y")."""
_IS_REPLACED = re.compile(r"^\W*(?:is|are|gets|get|was|were)\s+replaced\b")
"""Right after a value that is replaced ("'steer' is replaced by 'cold'")."""
_REPLACES = re.compile(r"^\W*(?:replaces|takes the place of)\b")
"""Right after a value that replaces another ("'cold' replaces 'steer'")."""
_NAMED_BY_NUMBER = re.compile(
    r"(?:^|\b(?:the|a|an|of|to|on|in|at)\s+|^\s*)(?:step|item|row|column|photo|picture|image|slide|"
    r"level|round|question|task|lane|option|player|tab|entry|stage|chapter|day)\s+$"
)
_ONE_COPY = re.compile(
    r"\b(?:(?:the|an?)\s+(?:first|earlier|older|oldest|previous|original|old)|one of the|one)\s+$"
)
"""Before a quoted text of which one copy goes ("the first 'Saved' notice disappears"): other copies
of the same words may stay, or arrive with the same action."""
_AT_PLACE = re.compile(
    r"\b(?:under|below|above|beneath|beside|next to|after|before|near|inside|within|in|on|into|onto|"
    r"over|at)\s+(?:the\s+)?$"
)
"""Before a quoted text that says where something is ("appears under 'Buy milk'"): it must be shown,
but it is not what the clause says changed."""
_INTO = re.compile(r"\b(?:merge|merges|merged|combine|combines|combined|turn|turns)\s+into\b")
_CLAUSE = re.compile(r";|,(?!\d)| and | but | while | then ")
_VERB = (
    r"(?:now\s+)?(?:shows?|reads?|says|displays?|becomes?|changes?\s+to|goes\s+to|returns?\s+to|"
    r"rises?\s+to|falls?\s+to|drops?\s+to|increases?\s+to|decreases?\s+to|updates?\s+to|goes\s+back\s+to|"
    r"stays(?:\s+at)?|remains(?:\s+at)?|(?:is\s+)?resets?\s+to|is\s+now|is|equals|=)"
)
_SUBJECT = re.compile(rf"\b(?:the|a|an|its|their|his|her)\s+([a-z][a-z0-9' -]{{0,40}}?)\s+{_VERB}\s*:?\s*$")
_PLACE = re.compile(
    r"\b(?:in|on|at|of|above|below|under|over|beside|next|near|inside|within|from|for|with|by|to)\b"
)
_STOP_WORDS = (
    "the a an of in on at to for with and or its their his her this that these those now still new current is"
)
_STOP = frozenset(_STOP_WORDS.split())
_GENERIC_WORDS = (
    "button card panel box line label text field area section widget value number figure entry item list"
)
GENERIC = frozenset(_GENERIC_WORDS.split())
"""Subject words that name a kind of element, not which one (used only when nothing else is named)."""


@dataclass
class Claim:
    """One piece of evidence an assertion expects (or expects gone) after the action."""

    token: str
    """The quoted text or number."""
    clause: str
    """The clause it came from."""
    quoted: bool
    """Whether it was quoted."""
    gone: bool = False
    """The clause says it goes away ("disappears", "no longer")."""
    one: bool = False
    """Only one copy of the text goes ("the first 'X' has gone"): the others may stay."""
    change: bool = False
    """The clause says it is new ("appears", "becomes", "changes to", "is added", ...)."""
    subject: list[str] = field(default_factory=list[str])
    """Words naming the element the value belongs to ("score" in "the score shows 4"), for bare values."""

    @property
    def bare(self) -> bool:
        """A value that does not say what it is (a number, or a quoted value without letters)."""
        return not re.search(r"[^\W\d_]{2,}", self.token)


@dataclass
class Parsed:
    """An assertion read into claims, plus the clauses that hold nothing checkable."""

    claims: list[Claim]
    """Checkable claims, in order."""
    unchecked: list[str]
    """Clauses that say something the text cannot show (trimmed)."""
    text: str = ""
    """The whole assertion."""


_MARKUP = re.compile(r"<(/?)([a-z][a-z0-9]{0,9})\b[^<>\"'\n]{0,60}>(?:[^<>\"'\n]{1,80}</\2>)?", re.IGNORECASE)


def quote_markup(assertion: str) -> str:
    """``assertion`` with each literal piece of markup outside quotes put in quotes: "the HTML
    output shows <b>Hello</b>" names text the page prints, as a quoted one would."""
    spans = [m.span() for m in QUOTED.finditer(assertion)]

    def wrap(m: re.Match[str]) -> str:
        inside = any(a <= m.start() < b for a, b in spans)
        return m.group(0) if inside else f"\u201c{m.group(0)}\u201d"

    return _MARKUP.sub(wrap, assertion)


def parse(assertion: str) -> Parsed:
    """Read ``assertion`` into claims and unchecked clauses (markup counts as quoted text)."""
    assertion = quote_markup(assertion)
    claims: list[Claim] = []
    unchecked: list[str] = []
    for start, end in _clauses(assertion):
        clause = assertion[start:end]
        found = _claims_in(assertion, start, end)
        if found:
            claims.extend(found)
        elif _says_something(clause):
            unchecked.append(re.sub(r"\s+(?:and|but|while|then)\s*$", "", clause).strip(" .:,;"))
    return Parsed(claims, unchecked, assertion)


_LISTING = re.compile(r"\b(?:only|both)\b")
_HAS_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|shows?|reads?|says|stays?|remains?|appears?|becomes?|turns?|"
    r"goes|moves?|opens?|closes?|changes?|lists?|gets?|leaves?|drops?|slides?|fills?)\b"
)


def _clauses(text: str) -> list[tuple[int, int]]:
    masked = QUOTED.sub(lambda m: "_" * len(m.group(0)), text)
    bounds = [0]
    for m in _CLAUSE.finditer(masked):
        left = masked[bounds[-1] : m.start()].lower()
        # "only the Cactus and the Snake Plant remain": one clause, the names listed before its verb
        if m.group(0) == " and " and _LISTING.search(left) and not _HAS_VERB.search(left):
            continue
        bounds.append(m.end())
    bounds.append(len(text))
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _claims_in(assertion: str, start: int, end: int) -> list[Claim]:
    clause = assertion[start:end]
    quoted = list(QUOTED.finditer(clause))
    matches = quoted or list(NUMBER.finditer(clause))
    low = clause.lower()
    masked = QUOTED.sub(lambda m: "_" * len(m.group(0)), low)  # words inside quotes say nothing
    gone, change = _NEGATIVE.search(masked) is not None, _CHANGE.search(masked) is not None
    out: list[Claim] = []
    for m in matches:
        token = (m.group(1) if quoted else m.group(0)).strip()
        if not token or _FROM.search(assertion[: start + m.start()].lower()) or _INTO.search(low[m.end() :]):
            continue
        if not quoted and _NAMED_BY_NUMBER.search(low[: m.start()]):
            continue  # "step 1 is struck through": the number says which step, not what it shows
        head = masked[: m.start()]
        if _REPLACED_OLD.search(head) or _IS_REPLACED.search(masked[m.end() :]):  # the old value
            out.append(Claim(token, clause, bool(quoted), gone=True))
            continue
        new = _REPLACED_NEW.search(head) is not None or _REPLACES.search(masked[m.end() :]) is not None
        if quoted and not new and _AT_PLACE.search(head):
            out.append(Claim(token, clause, True))  # a landmark ("under 'Buy milk'"): shown, not new
            continue
        claim = Claim(token, clause, bool(quoted), gone=gone and not new, change=(change or new) and not gone)
        claim.one = claim.gone and bool(quoted) and _ONE_COPY.search(head) is not None
        if claim.bare:
            claim.subject = _subject(low[: m.start()]) or _kind(low[: m.start()], low[m.end() :])
        out.append(claim)
    return out


def _subject(head: str) -> list[str]:
    """The words naming what shows the value, from the clause text before the value."""
    match = _SUBJECT.search(head)
    if match is None:
        return []
    head = _PLACE.split(match.group(1))[0]  # "the cart button in the header": the cart button
    words = [w for w in re.findall(r"[a-z][a-z0-9]+", head) if w not in _STOP]
    named = [w for w in words if w not in GENERIC]
    return named or words


def _kind(head: str, tail: str) -> list[str]:
    """The noun right after "a|an <value>" ("a 4 tile", "an 8 tile"): the kind of element showing it."""
    noun = re.match(r"[\s-]+([a-z]{3,})\b", tail)
    if noun is None or not re.search(r"\b(?:a|an)\s*$", head) or noun.group(1) in _STOP:
        return []
    return [noun.group(1)]


def _says_something(clause: str) -> bool:
    words = [w for w in re.findall(r"[a-z]+", clause.lower()) if w not in _STOP]
    return len(words) >= 2


def evidence_tokens(assertion: str) -> list[str]:
    """The checkable pieces of an assertion: per clause, quoted spans or (when none) numbers."""
    return [c.token for c in parse(assertion).claims]
