"""Claims about looks, decided from how the page draws its text (the offline judge's eyes).

A clause such as "step 1 is struck through", "the Deluxe card is outlined", "the digest switch
turns on (purple)", "the viewer closes" or "the cart panel opens" holds no quoted text to look up.
These rules decide it from what ``visible_text`` measured before and after the action: each text
block's colours, line-through, frames (border, outline, shadow, background of the block and its
nearest ancestors), toggle state, font size and position, and the page's background.

Each rule first finds the blocks the clause is about: those holding the clause's quoted text, else
those whose text or id/class/label names the clause's own words ("Deluxe card"), else the blocks
of the element the action touched. A rule answers ``ok`` or ``no`` only from those blocks'
measurements, naming them in its reason; when it cannot find what the clause is about, or the
page does not draw the property in a way it measures (a picture, a canvas), it answers nothing and
the clause stays undetermined.
"""

from __future__ import annotations

import colorsys
import itertools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from iwr_bench.agents.judge.claims import GENERIC, QUOTED, norm
from iwr_bench.tools.models import BoundingBox, FormField, RunLook, TextRun

Verdict = tuple[str, str]
"""("ok" | "no", why)."""

_HUES: dict[str, tuple[tuple[float, float], ...]] = {
    "red": ((0, 18), (340, 360)),
    "orange": ((12, 45),),
    "yellow": ((40, 72),),
    "gold": ((38, 60),),
    "green": ((68, 180),),
    "teal": ((160, 200),),
    "cyan": ((170, 200),),
    "blue": ((190, 265),),
    "navy": ((200, 255),),
    "purple": ((250, 310),),
    "violet": ((250, 300),),
    "indigo": ((230, 285),),
    "pink": ((295, 350),),
    "magenta": ((285, 330),),
}
_NEUTRAL = ("grey", "gray", "black", "white", "dark", "light")
COLOURS = frozenset([*_HUES, *_NEUTRAL])
"""Colour words a clause may use."""


def colour_names(rgb: str | None, slack: float = 0.0) -> set[str]:
    """The colour words that fit an "r,g,b" colour (hue names, grey/black/white, dark/light); with
    ``slack``, hue names within that many degrees of their range too (indigo is called purple)."""
    if not rgb:
        return set()
    try:
        r, g, b = (int(x) / 255 for x in rgb.split(","))
    except ValueError:
        return set()
    hue, light, sat = colorsys.rgb_to_hls(r, g, b)
    names: set[str] = set()
    if light < 0.35:
        names.add("dark")
    if light > 0.75:
        names.add("light")
    if sat < 0.2 or light < 0.1 or light > 0.95:
        names.update({"black"} if light < 0.2 else {"white"} if light > 0.9 else {"grey", "gray"})
        return names
    deg = hue * 360
    names.update(
        name for name, spans in _HUES.items() if any(a - slack <= deg <= b + slack for a, b in spans)
    )
    return names


def luminance(rgb: str | None) -> float | None:
    """Relative lightness of an "r,g,b" colour in [0, 1] (None: unknown)."""
    if not rgb:
        return None
    try:
        r, g, b = (int(x) / 255 for x in rgb.split(","))
    except ValueError:
        return None
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _colours(look: RunLook | None) -> list[str]:
    """Every colour the block draws with: its ink, then its frames' borders, outlines, shadows, fills."""
    if look is None:
        return []
    found = [look.color] if look.color else []
    for frame in [*look.frames, *look.marks]:
        found.extend(c for c in (frame.border, frame.outline, frame.shadow, frame.bg) if c)
    return found


def _roles(look: RunLook | None) -> list[str | None]:
    """The block's colours by role: its ink, then each frame's border, outline, shadow and fill."""
    if look is None:
        return []
    found: list[str | None] = [look.color]
    for frame in [*look.frames, *look.marks]:
        found.extend((frame.border, frame.outline, frame.shadow, frame.bg))
    return found


def _recoloured(new: RunLook | None, old: RunLook | None) -> set[str]:
    """The colours ``new`` draws in a role that ``old`` drew otherwise (a button whose fill takes
    the colour its ink had is recoloured, though it uses no colour it did not use before)."""
    now, then = _roles(new), _roles(old)
    then += [None] * (len(now) - len(then))
    return {c for c, o in zip(now, then, strict=False) if c and c != o}


def _frame_sig(look: RunLook | None) -> tuple[object, ...]:
    """What a highlight changes: frames, fill, ink and weight."""
    if look is None:
        return ()
    frames = tuple((f.border, f.outline, f.shadow, f.bg, round(f.width)) for f in look.frames)
    return (frames, look.color, look.weight, _marks(look))


def _marks(look: RunLook | None) -> tuple[object, ...]:
    """How the small shapes beside a block (a switch, a tick box) are drawn."""
    if look is None:
        return ()
    return tuple((f.border, f.outline, f.shadow, f.bg) for f in look.marks)


@dataclass(frozen=True)
class Block:
    """A text block, or an inline part of one with an element of its own, as the rules see it."""

    text: str
    label: str
    look: RunLook | None
    box: BoundingBox
    containers: tuple[int, ...] = ()
    """Page-wide ids of the element of each part of ``label`` (the block, then its ancestors)."""


def blocks(runs: list[TextRun]) -> list[Block]:
    """Every run, each followed by its inline parts (a part stands where its run stands)."""
    out: list[Block] = []
    for run in runs:
        ids = tuple(run.containers)
        out.append(Block(run.text, run.label, run.look, run.box, ids))
        if run.look is not None:
            out.extend(
                Block(p.text, f"{p.label} < {run.label}", p.look, run.box, (-1, *ids)) for p in run.look.parts
            )
    return out


@dataclass
class States:
    """The two states a clause is checked on (on-screen blocks), and the element the action touched."""

    before: list[Block]
    after: list[Block]
    background_before: str | None = None
    background_after: str | None = None
    acted: BoundingBox | None = None
    """Where the element the action touched stood before it (None: unknown, or a key press)."""
    assertion: str = ""
    """The whole assertion the clause comes from."""
    first: list[Block] | None = None
    """The page as the replay found it, before the first action (None: not measured)."""
    fields_before: list[FormField] = field(default_factory=list[FormField])
    """The form fields on screen before the action."""
    fields_after: list[FormField] = field(default_factory=list[FormField])
    """The form fields on screen after it."""


_STOP_TEXT = (
    "the a an of in on at to for with and or its their his her this that these those now still new "
    "is are be it as so show shows shown to into onto from up down by each all both one under over "
    "beside next near inside within behind after before while across between around about via per "
    "than only other same can"
)
_STOP = frozenset(_STOP_TEXT.split())
_PREDICATE_TEXT = (
    "struck through crossed out off strike strikethrough line turns turn turned switched switches "
    "ticked checked unchecked unticked selected active outlined outline outlines highlighted highlight "
    "highlights border bordered ringed framed glow solid appears appear opens open opened expands "
    "expand expanded listed dealt back comes come visible view slides slide slid closes close closed "
    "disappears disappear gone away hidden collapses collapse leaves removed moves move moved drops "
    "drop larger bigger smaller grows shrinks gets get gains becomes become changes change goes go "
    "well too again over next right left top bottom below above first last row column side edge "
    "along fills fill filled face color colour background"
)
_PREDICATE_WORDS = frozenset(_PREDICATE_TEXT.split())
_NUMBERS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}


_VERB = re.compile(
    r"\b(is|are|was|were|gets?|got|becomes?|became|turns?|moves?|slides?|slid|leaves|closes|opens|"
    r"appears?|disappears?|goes|drops?|changes?|shows?|reads?|says|stays?|has|have|merges?|trade|"
    r"swaps?|comes?|jumps?|shifts?|expands?|collapses|grows|shrinks|glows?)\b"
)


def subject_words(clause: str) -> list[str]:
    """The words of a clause that say which element it is about: those before its verb ("the card
    leaves the board": card), quoted text, predicates, colours and numbers left out."""
    masked = QUOTED.sub(" ", clause.lower())
    verb = _VERB.search(masked)
    parts = [masked[: verb.start()], masked] if verb is not None else [masked]
    for part in parts:
        words = [
            w
            for w in re.findall(r"[a-z][a-z0-9]+", part)
            if w not in _STOP and w not in _PREDICATE_WORDS and w not in COLOURS and w not in _NUMBERS
        ]
        if words:
            return words
    return []


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z]+", text.lower())}


_KINDS: dict[str, frozenset[str]] = {
    "list": frozenset({"ul", "ol", "li"}),
    "photo": frozenset({"img", "image", "picture", "thumb", "thumbnail", "pic", "figure"}),
    "image": frozenset({"img", "photo", "picture", "thumb", "thumbnail", "pic", "figure"}),
    "picture": frozenset({"img", "image", "photo", "thumb", "thumbnail", "pic", "figure"}),
    "thumbnail": frozenset({"img", "image", "photo", "picture", "thumb", "pic"}),
    "field": frozenset({"input", "textarea", "select"}),
    "viewer": frozenset({"dialog", "modal", "overlay", "lightbox", "popup", "frame"}),
    "dialog": frozenset({"modal", "overlay", "lightbox", "popup"}),
    "modal": frozenset({"dialog", "overlay", "lightbox", "popup"}),
    "popup": frozenset({"dialog", "modal", "overlay", "lightbox", "popover"}),
    "tile": frozenset({"cell"}),
    "heading": frozenset({"h1", "h2", "h3", "h4", "h5", "h6"}),
    "row": frozenset({"tr"}),
}
"""What pages call a kind of thing in tags and classes, besides its own name ("list": ul, li)."""


def _names(run: Block, word: str) -> bool:
    """Whether ``run`` shows ``word`` (as a whole word, plural or not) or its element is named by it
    (or by a tag or class of that kind: a "list" is a ul, a "photo" an img or a thumb)."""
    near = " < ".join(run.label.split(" < ")[:2])
    stem = _stem(word)
    if stem in _words(f"{run.text} {near}"):
        return True
    kinds = _KINDS.get(stem)  # a kind often lives on an ancestor (the dialog around a title)
    tags = _words(run.label) | set(re.findall(r"\b[a-z][a-z0-9]*", run.label.lower()))  # h1, h2
    return kinds is not None and not kinds.isdisjoint(tags)


def _owns(run: Block, word: str) -> bool:
    """Whether ``run``'s own text or own element (not an ancestor) is named by ``word``."""
    return _stem(word) in _words(f"{run.text} {run.label.split(' < ')[0]}")


def _mention(run: Block, pool: list[str]) -> bool:
    """Prose that merely mentions the subject ("use the arrows to slide the tiles"): a long text named
    only by its words, not by its element's label."""
    if len(run.text.split()) <= 6:
        return False
    near = " < ".join(run.label.split(" < ")[:2])
    return not any(_stem(w) in _words(near) for w in pool)


def _inside(run: Block, box: BoundingBox) -> bool:
    cx, cy = run.box.x + run.box.width / 2, run.box.y + run.box.height / 2
    return box.x <= cx <= box.x + box.width and box.y <= cy <= box.y + box.height


_ORDINAL = re.compile(r"\b([a-z]{3,})\s+(\d{1,2})\b")


def _nth(hits: list[Block], clause: str, pool: list[str]) -> list[Block]:
    """ "step 1", "photo 3": the n-th of the blocks named by that noun, unless one shows those words."""
    masked = QUOTED.sub(" ", clause.lower())
    for noun, n in _ORDINAL.findall(masked):
        if noun not in pool:
            continue
        literal = [b for b in hits if f"{noun} {n}" in norm(b.text)]
        if literal:
            return literal
        k = int(n)
        if 1 <= k <= len(hits):
            return [hits[k - 1]]
    return hits


@dataclass(frozen=True)
class Found:
    """The blocks a clause is about, how they were found, and whether that says which ones for sure
    (quoted text, a name, the element acted on) or only what kind ("the card": every card)."""

    blocks: list[Block]
    how: str = ""
    sure: bool = False
    own: bool = False
    """Whether each block is the thing itself (its own text or element is named), not a block inside it."""


def _named(runs: list[Block], pool: list[str], clause: str) -> list[Block]:
    scored = [(sum(_names(r, w) for w in pool), r) for r in runs if not _mention(r, pool)]
    best = max((s for s, _ in scored), default=0)
    return _nth([r for s, r in scored if s == best], clause, pool) if best else []


def find(
    runs: list[Block], clause: str, acted: BoundingBox | None, before: list[Block] | None = None
) -> Found:
    """The blocks ``clause`` is about in ``runs``. ``acted`` is where the element acted on stood in
    ``before`` (the state the action met); its blocks are followed into ``runs`` by text and holder."""
    quoted = [norm(m.group(1)) for m in QUOTED.finditer(clause) if m.group(1).strip()]
    if quoted:
        hits = [r for r in runs if any(q in norm(r.text) for q in quoted)]
        if hits:
            return Found(hits, "the text quoted", True, True)
    words = [w for w in subject_words(clause) if len(w) >= 3]
    named = [w for w in words if w not in GENERIC]
    if named and (hits := _named(runs, named, clause)):
        own = all(any(_owns(r, w) for w in named) for r in hits)
        return Found(hits, "named " + " ".join(named), True, own)
    if acted is not None:
        inside = [r for r in (before if before is not None else runs) if _inside(r, acted)]
        hits = inside if before is None else [a for r in inside if (a := _same(r, runs)) is not None]
        if hits:
            return Found(hits, "the element acted on", True, True)
    if words and (hits := _named(runs, words, clause)):  # only what kind: never sure which
        return Found(hits, "named " + " ".join(words))
    return Found([])


def _same(run: Block, runs: list[Block]) -> Block | None:
    """The block in ``runs`` with the same text and holder, the nearest to where ``run`` stands."""
    text, holder = norm(run.text), run.label.split(" < ")[0].split(".")[0]
    same = [r for r in runs if norm(r.text) == text and r.label.split(" < ")[0].split(".")[0] == holder]
    if not same:
        return None
    return min(same, key=lambda r: abs(r.box.x - run.box.x) + abs(r.box.y - run.box.y))


def _stayed(run: Block, runs: list[Block]) -> bool:
    """Whether ``runs`` held ``run``'s text in the same holder at the same place (to 4 px)."""
    old = _same(run, runs)
    return old is not None and abs(old.box.x - run.box.x) <= 4 and abs(old.box.y - run.box.y) <= 4


def _short(runs: list[Block]) -> str:
    texts = [r.text if len(r.text) <= 40 else r.text[:39] + "\u2026" for r in runs[:3]]
    return ", ".join(repr(t) for t in texts) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")


Rule = Callable[[str, States], Verdict | None]

_STRIKE = re.compile(r"\b(struck through|crossed (?:out|off)|strike ?through|line through)\b")
_NOT = re.compile(r"\b(no longer|not|un-?struck)\b")


def _strike(clause: str, s: States) -> Verdict | None:
    if not _STRIKE.search(clause):
        return None
    found = find(s.after, clause, s.acted, s.before)
    if not found.blocks:
        return None
    want = _NOT.search(clause) is None
    hits = [r for r in found.blocks if r.look is not None and r.look.strike == want]
    state = "struck through" if want else "not struck through"
    if hits:
        return "ok", f"{_short(hits)} ({found.how}) drawn {state}"
    if not found.sure:
        return None
    return "no", f"{_short(found.blocks)} ({found.how}) not drawn {state}"


_ON = re.compile(r"\b(turns? on|switche[sd] on|is on|ticked|is checked|gets checked|toggled on)\b|\bon$")
_OFF = re.compile(r"\b(turns? off|switche[sd] off|is off|unticked|unchecked|toggled off)\b|\boff$")
_SWITCHING = re.compile(r"\b(turns?|turned|switche[sd]|toggled|gets|ticked|unticked)\b")
"""A toggle said to change with the action, not merely to be on or off ("mentions off")."""


def _toggle(clause: str, s: States) -> Verdict | None:
    on, off = _ON.search(clause) is not None, _OFF.search(clause) is not None
    if on == off:
        return None
    found = find(s.after, clause, s.acted, s.before)
    known = [r for r in found.blocks if r.look is not None and r.look.on is not None]
    if not known:
        if _SWITCHING.search(clause) is None:
            return _drawn_as(found, s, on)
        return _marked(found, s, "on" if on else "off")
    hits = [r for r in known if r.look is not None and r.look.on == on]
    word = "on" if on else "off"
    if hits:
        return "ok", f"the toggle of {_short(hits)} ({found.how}) is {word}"
    if not found.sure:
        return None
    return "no", f"the toggle of {_short(known)} ({found.how}) is not {word}"


def _chroma(rgb: str | None) -> float:
    """How coloured an "r,g,b" colour is (0 for grey, 1 for a pure hue)."""
    try:
        r, g, b = (int(x) / 255 for x in (rgb or "").split(","))
    except ValueError:
        return 0.0
    return max(r, g, b) - min(r, g, b)


def _drawn_as(found: Found, s: States, on: bool) -> Verdict | None:
    """ "mentions off": a setting's state read from how its switch is drawn, against the page's other
    switches. Where the page draws them in exactly two ways, one in a colour and one grey or pale
    (the usual convention), the coloured one is on."""
    marked = [r for r in found.blocks if r.look and r.look.marks]
    fills = {m.bg for r in s.after if r.look for m in r.look.marks[:1] if m.bg}
    if not marked or len(fills) != 2:
        return None
    lit, dim = sorted(fills, key=_chroma, reverse=True)
    if _chroma(lit) - _chroma(dim) < 0.25:
        return None  # no clear coloured one
    states = {(r.look.marks[0].bg == lit) for r in marked if r.look and r.look.marks[0].bg in fills}
    if len(states) != 1:
        return None
    (is_on,) = states
    word = "on" if on else "off"
    where = f"the switch beside {_short(marked)} ({found.how}) drawn rgb({lit if is_on else dim})"
    if is_on == on:
        return "ok", f"{where}, as the page's {word} switches are"
    if not (found.sure and found.own):
        return None
    return "no", f"{where}, as the page's {'on' if is_on else 'off'} switches are, not {word}"


def _marked(found: Found, s: States, word: str) -> Verdict | None:
    """A toggle the page keeps in no ARIA attribute: the small shape beside the named setting (its
    switch track, its tick box) must be drawn differently after the action."""
    pairs = [(r, o) for r in found.blocks if r.look and r.look.marks and (o := _same(r, s.before))]
    if not pairs:
        return None
    changed = [r for r, o in pairs if _marks(r.look) != _marks(o.look)]
    if changed:
        return "ok", f"the switch or box beside {_short(changed)} ({found.how}) changed as turned {word}"
    if not (found.sure and found.own):
        return None
    return "no", f"the switch or box beside {_short([r for r, _ in pairs])} ({found.how}) is drawn as before"


_CHANGE = re.compile(r"\b(turns?|turned|becomes?|became|changes?|changed|goes|gets|switche[sd]|glows?)\b")
_DARK_PAGE = re.compile(r"\b(dark|light)\s+(?:background|mode|theme|page)\b")


_SLACK = 15.0
"""Degrees of hue a colour word stretches by: people name neighbouring hues loosely."""


def _has(block: Block | None, colour: str) -> bool:
    return block is not None and any(colour in colour_names(c, _SLACK) for c in _colours(block.look))


def _colour(clause: str, s: States) -> Verdict | None:
    masked = QUOTED.sub(" ", clause.lower())
    page = _DARK_PAGE.search(masked)
    if page is not None:
        lum = luminance(s.background_after)
        if lum is None:
            return None
        dark = page.group(1) == "dark"
        ok = lum < 0.35 if dark else lum > 0.65
        what = f"the page background is rgb({s.background_after}) (lightness {lum:.2f})"
        return ("ok" if ok else "no"), what
    wanted = [
        w for w in re.findall(r"[a-z]+", masked) if w in _HUES or w in ("grey", "gray", "black", "white")
    ]
    if not wanted:
        return None
    found = find(s.after, clause, s.acted, s.before)
    runs = [r for r in found.blocks if r.look is not None]
    if not runs:
        return None
    colour, how = wanted[0], found.how
    if _CHANGE.search(masked) is None:  # "the badge is red": how the blocks are drawn now
        hits = [r for r in runs if _has(r, colour)]
        if hits and found.sure:
            return "ok", f"{_short(hits)} ({how}) drawn in {colour}"
        if not hits and how == "the text quoted":  # the quoted text is the thing itself
            return "no", f"{_short(runs)} ({how}) drawn in no {colour}"
        return None
    # "turns green": the blocks whose look the action changed carry the colour now
    pairs = [(r, _same(r, s.before)) for r in runs]
    changed = [(r, o) for r, o in pairs if o is None or _frame_sig(r.look) != _frame_sig(o.look)]
    fresh = [(r, _recoloured(r.look, o.look if o else None)) for r, o in changed]
    if hits := [r for r, new in fresh if any(colour in colour_names(c, _SLACK) for c in new)]:
        return "ok", f"{_short(hits)} ({how}) newly drawn in {colour} after the action"
    if not found.sure:
        return None
    if any(new for _, new in fresh):  # drawn in new colours, none of them the one said
        shown = sorted({n for _, new in fresh for c in new for n in colour_names(c)} - {"dark", "light"})
        return (
            "no",
            f"{_short([r for r, _ in changed])} ({how}) now drawn in {', '.join(shown)}, not {colour}",
        )
    if changed:
        return None
    if all(_has(r, colour) and _has(o, colour) for r, o in pairs):
        return "no", f"{_short(runs)} ({how}) was already {colour} before the action, and is unchanged"
    return None  # the colour may be drawn by a neighbour the rules do not measure (a switch's track)


_FILL = re.compile(
    r"\b(fills? in|filled in|is filled|gets filled|becomes filled|turns? solid|goes solid|becomes solid|"
    r"is now solid|turns? filled)\b"
)


def _glyphs(text: str, shade: str) -> set[str]:
    """The symbols of ``text`` drawn hollow (``shade`` WHITE) or filled (BLACK), by what they are
    ("WHITE HEART SUIT" -> "HEART SUIT")."""
    names = (unicodedata.name(ch, "") for ch in text if not ch.isalnum() and not ch.isspace())
    return {n.split(" ", 1)[1] for n in names if n.startswith(shade + " ") and " " in n}


def _counterpart(run: Block, runs: list[Block]) -> Block | None:
    """``run``'s element in ``runs``: the same text in the same holder, else the holder of the same
    id (a button whose text changed as it was pressed: "♡ 12" -> "♥ 13")."""
    same = _same(run, runs)
    if same is not None:
        return same
    holder = run.label.split(" < ")[0]
    if "#" not in holder:
        return None
    ident = re.sub(r"\..*$", "", holder.split("[")[0])
    found = [r for r in runs if re.sub(r"\..*$", "", r.label.split(" < ")[0].split("[")[0]) == ident]
    return found[0] if len(found) == 1 else None


def _filled(new: Block, old: Block) -> str:
    """How ``new`` is drawn filled where ``old`` was hollow ('' when it is not)."""
    if _glyphs(new.text, "BLACK") & _glyphs(old.text, "WHITE"):
        return "its symbol drawn filled"
    fill_now = new.look.frames[0].bg if new.look and new.look.frames else None
    fill_then = old.look.frames[0].bg if old.look and old.look.frames else None
    hue_now = colour_names(fill_now) - set(_NEUTRAL)
    if fill_now and hue_now and (not fill_then or not colour_names(fill_then) - set(_NEUTRAL)):
        return f"filled with rgb({fill_now})"
    return ""


def _fill(clause: str, s: States) -> Verdict | None:
    """ "the heart fills in", "the button turns solid": a hollow symbol or a light box drawn filled."""
    if not _FILL.search(clause) or _NEGATED.search(QUOTED.sub(" ", clause)):
        return None
    found = find(s.after, clause, s.acted, s.before)
    pairs = [(r, o) for r in found.blocks if (o := _counterpart(r, s.before)) is not None]
    if not pairs:
        return None
    filled = [(r, how) for r, o in pairs if (how := _filled(r, o))]
    if filled:
        return "ok", f"{_short([r for r, _ in filled])} ({found.how}): {filled[0][1]}"
    if not (found.sure and found.own):
        return None
    return "no", f"{_short([r for r, _ in pairs])} ({found.how}) not drawn filled where it was hollow"


_FRAME = re.compile(
    r"\b(?:is|are|gets?|got|becomes?|became|stays?|now|drawn|shown|turns?)\s+(?:\w+\s+){0,2}?"
    r"(outlined|highlighted|bordered|ringed|framed|selected|marked|active)\b"
    r"|\b(?:gets?|got|has|have|with|shows?|gains?)\s+(?:an?\s+|the\s+)?(?:\w+\s+){0,2}?"
    r"(outline|border|ring|highlight|glow|frame)\b"
)
"""A highlight said of the subject ("is outlined", "gets a blue outline"), not "the selected card"."""
_NEGATED = re.compile(r"\b(no|not|never|cannot|can't|won't|doesn't|don't|without|nothing|stays?)\b")
"""Clauses that say something does not happen ("no tile can move"): left to the other checks."""


def _frame(clause: str, s: States) -> Verdict | None:
    if not _FRAME.search(clause) or _NEGATED.search(QUOTED.sub(" ", clause)):
        return None
    found = find(s.after, clause, s.acted, s.before)
    pairs = [(r, o) for r in found.blocks if r.look is not None and (o := _same(r, s.before)) is not None]
    if not pairs:
        return None
    changed = [r for r, o in pairs if _frame_sig(r.look) != _frame_sig(o.look)]
    if changed:
        return "ok", f"{_short(changed)} ({found.how}) drawn with a new frame, fill or ink"
    if not found.sure:
        return None
    return "no", f"{_short([r for r, _ in pairs])} ({found.how}) looks as it did before the action"


_APPEAR = re.compile(
    r"\b(appears?|appeared|opens?|opened|expands?|expanded|is shown|are shown|shows up|pops up|"
    r"comes? into view|slides? into view|is listed|are listed|are dealt|is dealt|is back|are back|"
    r"comes? back|come back|is displayed|are displayed|lists)\b"
)
_GONE = re.compile(
    r"\b(closes|closed|disappears?|goes away|is gone|are gone|is hidden|are hidden|collapses|"
    r"(?:has|have) (?:gone|disappeared|vanished|closed)|"
    r"leaves the \w+|is removed|are removed)\b"
)


def copy_gone(token: str, before: list[Block], after: list[Block]) -> Verdict | None:
    """ "the first 'X' has gone" while other copies of 'X' stay or arrive: a person tells the copies
    apart by how they are drawn (a red notice and a green one), so a copy counts as gone when fewer
    copies drawn its way are shown after the action than before. None when every copy is drawn
    alike and some moved or arrived, so which one went cannot be told."""
    want = norm(token)

    def copies(state: list[Block]) -> list[Block]:
        return [b for b in state if b.containers[:1] != (-1,) and want in norm(b.text)]

    old, new = copies(before), copies(after)
    kinds = {_frame_sig(b.look) for b in old + new}
    for kind in kinds:
        then = [b for b in old if _frame_sig(b.look) == kind]
        now = [b for b in new if _frame_sig(b.look) == kind]
        if len(now) < len(then):
            look = then[0].look
            fill = look.frames[0].bg if look and look.frames else None
            drawn = f" on rgb({fill})" if fill else ""
            return "ok", f"a copy of {token!r}{drawn} went: {len(then)} such before, {len(now)} after"
    if len(kinds) == 1 and not all(_stayed(b, old) for b in new):
        return None
    return "no", f"every copy of {token!r} shown before is still shown ({len(old)} before, {len(new)} after)"


def _appear(clause: str, s: States) -> Verdict | None:
    masked = QUOTED.sub(" ", clause.lower())
    if QUOTED.search(clause):
        return None  # quoted text is checked as a claim
    new = [r for r in s.after if not _stayed(r, s.before)]
    if _GONE.search(masked):
        found = find(s.before, clause, None)
        if not found.blocks:
            return None
        gone = [r for r in found.blocks if _same(r, s.after) is None]
        if gone:
            return "ok", f"{_short(gone)} ({found.how}) shown before, gone after"
        if not found.sure:
            return None
        return "no", f"{_short(found.blocks)} ({found.how}) still shown after the action"
    verb = _APPEAR.search(masked)
    if verb is None or _FORM_FIELD.search(masked[: verb.start()]):
        return None  # a form field is known by its box, not by text that names it (see _field)
    if not new:
        return None  # what appeared may be a picture: pixels, not text, decide it
    hits = find(new, clause, None)
    if hits.blocks:  # even a kind word ("a new tile") is evidence among what is new
        return "ok", f"newly shown: {_short(hits.blocks)} ({hits.how})"
    # a kind of thing ("red messages") is often not named in its own text: its colour says which
    inked = [w for w in re.findall(r"[a-z]+", masked) if w in _HUES]
    if inked:
        coloured = [r for r in new if r.look is not None and inked[0] in colour_names(r.look.color, _SLACK)]
        plural = any(w.endswith("s") and not w.endswith("ss") for w in subject_words(clause))
        if len(coloured) >= (2 if plural else 1):
            return "ok", f"newly shown in {inked[0]}: {_short(coloured)}"
    return None


MOVE = re.compile(
    r"\b(moves?|moved|slides?|slid|drops?|dropped|jumps?|shifts?|trade places|swap(?:s|ped)?)\b"
)
_NO_MERGE = re.compile(r"\b(without merging|with no merges?|no merges?|without a merge|nothing merges)\b")
DIRECTIONS = {
    "left": (-1, 0),
    "right": (1, 0),
    "up": (0, -1),
    "top": (0, -1),
    "above": (0, -1),
    "first": (0, -1),
    "down": (0, 1),
    "bottom": (0, 1),
    "below": (0, 1),
}


def _shift(pairs: list[tuple[Block, Block]]) -> list[tuple[Block, float, float]]:
    moved = [(r, r.box.x - o.box.x, r.box.y - o.box.y) for r, o in pairs]
    return [(r, dx, dy) for r, dx, dy in moved if abs(dx) > 4 or abs(dy) > 4]


def _move(clause: str, s: States) -> Verdict | None:
    masked = QUOTED.sub(" ", clause.lower())
    verb = MOVE.search(masked)
    if verb is None or "into view" in masked or _NEGATED.search(masked[: verb.end()]):
        return None
    found = find(s.after, clause, s.acted, s.before)
    pairs = [(r, o) for r in found.blocks if (o := _same(r, s.before)) is not None]
    if not pairs:
        return None
    how, moved = found.how, _shift(pairs)
    if not moved:
        if not (found.sure and found.own):
            return None
        elsewhere = _shift([(r, o) for r in s.after if (o := _same(r, s.before)) is not None])
        if elsewhere:
            return None  # other text moved: what moved may be what the clause means
        return "no", f"{_short([r for r, _ in pairs])} ({how}) and all other text stand where they stood"
    if _NO_MERGE.search(masked):  # "slide left without merging": as many of them after as before
        earlier = find(s.before, clause, None)
        if len(found.blocks) < len(earlier.blocks):
            return (
                None
                if not found.sure
                else ("no", f"{_short(found.blocks)} ({how}): fewer than before, some merged")
            )
    words = re.findall(r"[a-z]+", masked.split(verb.group(0), 1)[-1])
    direction = next((DIRECTIONS[w] for w in words if w in DIRECTIONS), None)
    if direction is None:
        return "ok", f"{_short([r for r, _, _ in moved])} ({how}) moved"
    sx, sy = direction
    right_way = [r for r, dx, dy in moved if (sx and dx * sx > 4) or (sy and dy * sy > 4)]
    if right_way:
        return "ok", f"{_short(right_way)} ({how}) moved as said"
    if not (found.sure and found.own):
        return None
    return "no", f"{_short([r for r, _, _ in moved])} ({how}) moved the other way"


_SAME = re.compile(
    r"\b(?:stays?|remains?|is|are|looks?)\s+(?:exactly\s+)?"
    r"(?:the same|unchanged|as (?:it was|they were|before))\b"
    r"|\b(?:does not|doesn't|did not|do not|don't) change\b"
)


def _as_then(
    clause: str, said: re.Pattern[str], then: list[Block] | None, now: list[Block], when: str
) -> Verdict | None:
    """The thing the clause names before ``said`` shows in ``now`` what it showed in ``then``, where
    it showed it: every block stands as it stood, and none came or went (``when`` says which state)."""
    masked = QUOTED.sub(" ", clause.lower())
    match = said.search(masked)
    if match is None or then is None:
        return None
    head = re.split(r"[:;,]", masked[: match.start()])[-1]  # "no tile can move: the board"
    old, new = _whole(then, head), _whole(now, head)
    if not (old.sure and new.sure and old.blocks and new.blocks):
        return None
    moved = [r for r in new.blocks if not _stayed(r, old.blocks)]
    went = [r for r in old.blocks if not _stayed(r, new.blocks)]
    if not moved and not went:
        return "ok", f"{_short(new.blocks)} ({new.how}) stand as {when}"
    return (
        "no",
        f"{_short(moved or went)} ({new.how}) {'changed or moved' if moved else 'went away'} since {when}",
    )


def _unchanged(clause: str, s: States) -> Verdict | None:
    """ "the board stays the same": as before the action."""
    return _as_then(clause, _SAME, s.before, s.after, "before the action")


_BACK = re.compile(
    r"\b(?:goes|go|went|is|are|comes?|gets?|returns?|resets?)\s+(?:all\s+the\s+way\s+)?back\s+to\s+"
    r"(?:its|their|the)\s+(?:starting|original|initial|first|opening)\b"
    r"|\breturns?\s+to\s+(?:its|their|the)\s+(?:starting|original|initial|first)\b"
    r"|\b(?:is|are)\s+(?:as|like)\s+(?:it was|they were)\s+at\s+the\s+start\b"
)


def _whole(runs: list[Block], head: str) -> Found:
    """The blocks of the thing ``head`` names as a whole ("the board"): those it names, else every
    block inside an element whose id or class is that name (the board's tiles)."""
    found = find(runs, head, None)
    if found.sure and found.blocks:
        return found
    words = [_stem(w) for w in subject_words(head) if len(w) >= 3 and w not in GENERIC]
    inside = [r for r in runs if words and all(w in _words(r.label.split("[")[0]) for w in words)]
    return Found(inside, "inside the " + " ".join(words), True) if inside else found


def _back(clause: str, s: States) -> Verdict | None:
    """ "the board goes back to its starting tiles": as when the page had just loaded."""
    return _as_then(clause, _BACK, s.first, s.after, "when the page was loaded")


_SIZE = re.compile(
    r"\b(?:is|are|becomes?|became|gets?|got|looks?|now|drawn|appears?)\s+(?:much\s+|a bit\s+)?"
    r"(larger|bigger|smaller)\b"
)
"""Text drawn at another size ("the preview is larger"); "the list shrinks" is about how many."""


def _size(clause: str, s: States) -> Verdict | None:
    said = _SIZE.search(clause)
    if said is None or _NEGATED.search(clause):
        return None
    found = find(s.after, clause, s.acted, s.before)
    pairs = [(r, o) for r in found.blocks if r.look is not None and (o := _same(r, s.before)) is not None]
    pairs = [(r, o) for r, o in pairs if o.look is not None]
    if not pairs:
        return None
    grow = said.group(1) in ("larger", "bigger")
    changed = [
        r
        for r, o in pairs
        if r.look is not None
        and o.look is not None
        and ((r.look.size > o.look.size) if grow else (r.look.size < o.look.size))
    ]
    word = "larger" if grow else "smaller"
    if changed:
        return "ok", f"{_short(changed)} ({found.how}) drawn {word} than before"
    if not (found.sure and found.own):
        return None
    return "no", f"{_short([r for r, _ in pairs])} ({found.how}) not drawn {word}"


_ONLY = re.compile(r"\bonly\b")


def _row(block: Block) -> tuple[str, ...] | None:
    """Where a block stands in a list: its own tag and classes, and the tags of its two nearest
    ancestors, whose state classes do not count ("li.completed" is still an "li"); None when the
    chain is too short."""
    chain = block.label.split(" < ")
    if len(chain) < 3:
        return None
    own = re.sub(r"#[^.\[]*", "", chain[0])
    return (own, *(part.split(".")[0].split("#")[0].split("[")[0] for part in chain[1:3]))


_ONLY_NAMES = re.compile(
    r"\bonly\s+(.+?)\s+(?:remain|remains|stay|stays|are left|is left|are shown|is shown|are listed|"
    r"is listed|are visible|is visible|show|shows)\b"
)


def _only_names(clause: str, s: States) -> list[str]:
    """The unquoted names of "only the Saguaro Cactus and the Snake Plant remain", each of them the
    whole text of a block on screen (else nothing: a kind, "only the landscape photos", is no name)."""
    said = _ONLY_NAMES.search(clause.lower())
    if said is None:
        return []
    names = [re.sub(r"^(?:the|a|an)\s+", "", n.strip()) for n in re.split(r",|\band\b", said.group(1))]
    shown = {norm(b.text) for b in s.after}
    names = [norm(n) for n in names if n.strip()]
    return names if names and all(n in shown for n in names) else []


def _only(clause: str, s: States) -> Verdict | None:
    """ "only 'Water the plants' is shown", "only the Snake Plant remains": no other item of the
    same list stays on screen."""
    if not _ONLY.search(QUOTED.sub(" ", clause.lower())):
        return None
    quoted = [norm(m.group(1)) for m in QUOTED.finditer(clause) if m.group(1).strip()]
    if not quoted:
        quoted = _only_names(clause, s)
        if not quoted:
            return None
        hits = [b for b in s.after if norm(b.text) in quoted]
    else:
        hits = [b for b in s.after if any(q in norm(b.text) for q in quoted)]
    # every text the whole assertion quotes may stay ("only 'A' and 'B' are shown")
    quoted += [norm(m.group(1)) for m in QUOTED.finditer(s.assertion) if m.group(1).strip()]
    rows = {r for b in hits if (r := _row(b)) is not None}
    if not hits or len(rows) != 1:
        return None
    (row,) = rows
    # in a table, or when the named texts sit in different parents, an item is the parent (a
    # row), and the other cells of a named row are part of it, not other items
    parents = {b.containers[1] for b in hits if len(b.containers) > 1}
    whole_rows = row[1] == "tr" or (len(hits) > 1 and len(parents) == len(hits))
    others = [
        b
        for b in s.after
        if _row(b) == row
        and not any(q in norm(b.text) for q in quoted)
        and not (whole_rows and len(b.containers) > 1 and b.containers[1] in parents)
    ]
    if others:
        return "no", f"besides {_short(hits)}, the same list still shows {_short(others)}"
    return "ok", f"{_short(hits)}: no other item of the same list on screen"


_COUNTED = re.compile(
    r"\b(a single|only one|just one|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|\d{1,2})\s+((?:[a-z]+[\s-]+){0,2}?[a-z]{3,})\b"
)


def _signature(part: str) -> str:
    """A label part without its id and naming attribute: what its siblings in a list share."""
    return re.sub(r"#[^.\[]*", "", part.split("[")[0])


def _groups(runs: list[Block], word: str) -> dict[str, set[int]]:
    """The elements a kind word names (by tag, id or class, not by text), grouped by what they
    share (``div.room``): each element once, however many text blocks it holds."""
    stem = _stem(word)
    kinds = _KINDS.get(stem, frozenset())
    groups: dict[str, set[int]] = {}
    for run in runs:
        for k, part in enumerate(run.label.split(" < ")[:3]):
            words = _words(part.split("[")[0])
            if (stem in words or not kinds.isdisjoint(words)) and k < len(run.containers):
                groups.setdefault(_signature(part), set()).add(run.containers[k])
                break
    return groups


def _count(clause: str, s: States) -> Verdict | None:
    """ "three room cards", "a single photo is left": that many elements of the kind are on screen
    (counted by element, so a card with a title and a price is one card). Only ever ``ok``: what is
    counted may be drawn in pictures, or partly off screen, so a different count proves nothing."""
    masked = QUOTED.sub(" ", clause.lower())
    for said in _COUNTED.finditer(masked):
        number, phrase = said.group(1), said.group(2)
        n = (
            1
            if number in ("a single", "only one", "just one", "one")
            else _NUMBERS.get(number) or int(number)
        )
        nouns = [w for w in re.split(r"[\s-]+", phrase) if w not in _STOP and w not in _PREDICATE_WORDS]
        for noun in reversed(nouns):  # "room cards": the cards, else the rooms
            for shared, members in _groups(s.after, noun).items():
                if len(members) == n:
                    return "ok", f"{n} elements {shared} on screen: {number} {phrase}"
    return None


FIELD = re.compile(r"\b(fields?|inputs?|text ?box(?:es)?|search box|boxe?s?|textareas?|text areas?)\b")
"""A clause about a form field ("a name field", "the search box is cleared")."""
_FORM_FIELD = re.compile(r"\b(fields?|inputs?|text ?box(?:es)?|search box(?:es)?|textareas?|text areas?)\b")
"""The words that name a form field for certain ("box" alone may be a message box)."""
_FIELD_KINDS = frozenset({"field", "input", "box", "textbox", "textarea", "area", "text"})
_EMPTY = re.compile(r"\b(empty|emptie[sd]|clear(?:s|ed)?|blank)\b")
_EMPTY_NOT = re.compile(r"\b(not|no longer|never)\s+(?:\w+\s+)?(empty|blank|cleared)\b")


def fields_named(fields: list[FormField], clause: str) -> tuple[list[FormField], str]:
    """The fields ``clause`` names, by its quoted text or its own words against each field's
    accessible name ("a name field": the box labelled 'First and last name'), and how."""
    quoted = [norm(m.group(1)) for m in QUOTED.finditer(clause) if m.group(1).strip()]
    if quoted:
        hits = [f for f in fields if any(q in norm(f"{f.name} {f.placeholder}") for q in quoted)]
        if hits:
            return hits, "the name quoted"
    words = [w for w in subject_words(clause) if len(w) >= 3 and _stem(w) not in _FIELD_KINDS]
    if not words:
        return [], ""
    hits = [f for f in fields if any(_stem(w) in _words(f"{f.name} {f.placeholder}") for w in words)]
    return hits, "named " + " ".join(words)


def _label_of(f: FormField) -> str:
    name = f.name.split(" | ")[0] if f.name else f.tag
    return name if len(name) <= 40 else name[:39] + "\u2026"


def _field(clause: str, s: States) -> Verdict | None:
    """A form field that is shown, empty or gone, decided from the fields a person sees and what
    they hold (their value, else their placeholder); quoted values are checked as claims."""
    if not FIELD.search(QUOTED.sub(" ", clause)):
        return None
    after, how = fields_named(s.fields_after, clause)
    before, _ = fields_named(s.fields_before, clause)
    if not how:
        return None
    if _EMPTY.search(clause):
        if not after:
            return None
        full = [f for f in after if f.value]
        if _EMPTY_NOT.search(clause):
            if full:
                return "ok", f"field {_label_of(full[0])!r} ({how}) holds {full[0].value!r}"
            return "no", f"field {_label_of(after[0])!r} ({how}) is empty"
        if full:
            return "no", f"field {_label_of(full[0])!r} ({how}) still holds {full[0].value!r}"
        return "ok", f"field {_label_of(after[0])!r} ({how}) is empty"
    masked = QUOTED.sub(" ", clause)
    if _GONE.search(masked):
        if before and not after:
            return "ok", f"field {_label_of(before[0])!r} ({how}) shown before, gone after"
        if after:
            return "no", f"field {_label_of(after[0])!r} ({how}) still shown after the action"
        return None
    if QUOTED.search(clause) or not (_APPEAR.search(masked) or _VERB.search(masked) is None):
        return None
    if after:
        shown = after[0]
        hint = f", placeholder {shown.placeholder!r}" if shown.placeholder and not shown.value else ""
        return "ok", f"a {shown.tag} field {_label_of(shown)!r} ({how}{hint}) is shown"
    return None


_TYPEFACE = re.compile(
    r"\b(?:turns?|turned|becomes?|became|is|are|gets?|now|set|shown|written|appears?)\s+"
    r"(?:also\s+|now\s+)?(?:set\s+|shown\s+|written\s+)?(?:in\s+)?(bold|italics?)\b"
)


def _typeface(clause: str, s: States) -> Verdict | None:
    """ "the text turns bold", "the heading is set in italics": the weight or style of what it names."""
    said = _TYPEFACE.search(clause)
    if said is None or _NEGATED.search(QUOTED.sub(" ", clause)):
        return None
    bold = said.group(1) == "bold"
    found = find(s.after, clause, s.acted, s.before)
    shown = [r for r in found.blocks if r.look is not None]
    if not shown:
        return None
    word = "bold" if bold else "in italics"
    styled = [r for r in shown if r.look is not None and (r.look.weight >= 600 if bold else r.look.italic)]
    if styled:
        return "ok", f"{_short(styled)} ({found.how}) drawn {word}"
    if not found.sure:
        return None
    return "no", f"{_short(shown)} ({found.how}) not drawn {word}"


_HEADING = re.compile(
    r"\b(?:becomes?|became|turns? into|turned into|is made|is now|is set as)\s+an?\s+"
    r"(?:large\s+|big\s+|main\s+|new\s+)?(heading|title|headline)\b"
)


def _tag(block: Block) -> str:
    """The block's own tag name, from its label."""
    return block.label.split(" < ")[0].split(".")[0].split("#")[0].split("[")[0]


def _heading(clause: str, s: States) -> Verdict | None:
    """ "the line becomes a large heading": text that was not a heading before now is one."""
    if _HEADING.search(clause) is None or _NEGATED.search(QUOTED.sub(" ", clause)):
        return None
    was = {norm(b.text) for b in s.before if _tag(b) in _KINDS["heading"]}
    made = [
        b
        for b in s.after
        if _tag(b) in _KINDS["heading"]
        and norm(b.text) not in was
        and any(norm(o.text) == norm(b.text) for o in s.before)
    ]
    if made:
        size = f", {made[0].look.size:.0f} px" if made[0].look is not None else ""
        return "ok", f"{_short(made)} is now a heading ({_tag(made[0])}{size})"
    return None


_EMPTIED = re.compile(r"\b(?:is|are|becomes?|became|goes|went|now|left)\s+(?:now\s+|all\s+)?empty\b")


def _emptied(clause: str, s: States) -> Verdict | None:
    """ "the list is empty": nothing the clause names is left (a form field's emptiness is _field's)."""
    said = _EMPTIED.search(clause)
    if said is None or _FORM_FIELD.search(clause[: said.start()]) or _NEGATED.search(clause):
        return None
    found = find(s.before, clause, None)
    if not found.blocks:
        return None
    left = [r for r in found.blocks if _same(r, s.after) is not None]
    if not left:
        return "ok", f"{_short(found.blocks)} ({found.how}) shown before, none left after"
    if not found.sure:
        return None
    return "no", f"{_short(left)} ({found.how}) still shown after the action"


_SORTED = re.compile(
    r"\b(sorted|in (?:alphabetical|ascending|descending|reverse) order|order is reversed|reversed|"
    r"(?:a|z) to (?:a|z)|ascending|descending)\b"
)
_BY = re.compile(r"\bby\s+(?:the\s+|its\s+|their\s+)?([a-z][a-z. ]{1,30}?)(?:\s+column)?(?:\s+and\b|[,;.]|$)")


def _column(runs: list[Block], left: float, right: float) -> list[Block]:
    """The table cells whose centres lie between ``left`` and ``right``, top to bottom."""
    cells = [
        r for r in runs if _tag(r) == "td" and left <= r.box.x + r.box.width / 2 <= right and r.text.strip()
    ]
    return sorted(cells, key=lambda r: r.box.y)


def _order(cells: list[Block]) -> int:
    """1 ascending, -1 descending, 0 neither (numbers as numbers, else text without case)."""
    texts = [norm(r.text).replace(" ", "") for r in cells]
    if all(re.fullmatch(r"-?[\d,]*\.?\d+%?", t) for t in texts):
        return _direction([float(t.replace(",", "").replace("%", "")) for t in texts])
    return _direction([t.casefold() for t in texts])


def _direction(keys: list[float] | list[str]) -> int:
    pairs: list[tuple[Any, Any]] = list(itertools.pairwise(keys))
    if all(a <= b for a, b in pairs):
        return 1
    if all(a >= b for a, b in pairs):
        return -1
    return 0


def _sorted(clause: str, s: States) -> Verdict | None:
    """ "the rows are sorted by name", "the order is reversed": the column the clause names (or whose
    heading was clicked) runs in order after the action, in the direction said."""
    said = _SORTED.search(clause)
    if said is None or _NEGATED.search(QUOTED.sub(" ", clause)):
        return None
    span: tuple[float, float] | None = None
    by = _BY.search(QUOTED.sub(" ", clause))
    if by is not None:
        heads = [r for r in s.after if _tag(r) == "th" and _words(r.text) & _words(by.group(1))]
        if len(heads) == 1:
            span = (heads[0].box.x, heads[0].box.x + heads[0].box.width)
    if span is None and s.acted is not None:
        span = (s.acted.x, s.acted.x + s.acted.width)
    if span is None:
        return None
    after, before = _column(s.after, *span), _column(s.before, *span)
    if len(after) < 3:
        return None
    now, then = _order(after), _order(before) if len(before) >= 3 else 0
    words = said.group(1)
    want = (
        -1
        if ("descending" in words or "z to a" in words)
        else 1
        if ("ascending" in words or "a to z" in words)
        else 0
    )
    first = f"{after[0].text!r} first"
    if "revers" in words:
        if then and now == -then:
            return "ok", f"the column ran the other way before; now {first}"
        if now == 0 or (then and now == then):
            return "no", f"the column is not in the reverse order of before ({first})"
        return None
    if now == 0:
        return "no", f"the column is not in order after the action ({first})"
    if want and now != want:
        return "no", f"the column is in the opposite order ({first})"
    return "ok", f"the column is in {'ascending' if now == 1 else 'descending'} order ({first})"


RULES: tuple[Rule, ...] = (
    _strike,
    _toggle,
    _colour,
    _fill,
    _frame,
    _appear,
    _move,
    _size,
    _only,
    _count,
    _unchanged,
    _back,
    _field,
    _typeface,
    _heading,
    _emptied,
    _sorted,
)
"""The look rules, each deciding a kind of claim (or answering nothing)."""


def check(clause: str, states: States) -> tuple[list[Verdict], list[Verdict]]:
    """Every rule's answer on ``clause``: (the ``ok`` ones, the ``no`` ones)."""
    oks: list[Verdict] = []
    nos: list[Verdict] = []
    low = clause.lower()
    for rule in RULES:
        found = rule(low if rule is not _appear else clause, states)
        if found is None:
            continue
        (oks if found[0] == "ok" else nos).append(found)
    return oks, nos
