"""A grounder that picks the element whose label shares the longest common substring with the
description (case-folded). Options: ``min_chars`` (shorter overlaps count as no match)."""

from __future__ import annotations

from difflib import SequenceMatcher

from iwr_bench.plugins import Grounding, GroundingRequest, element_label, is_editable, register


class LcsGrounder:
    def __init__(self, min_chars: int) -> None:
        self.min_chars = min_chars
        self.name = f"lcs(min_chars={min_chars})"

    async def __call__(self, request: GroundingRequest) -> Grounding:
        desc = request.description.casefold()
        best, best_len = None, 0
        for el in request.observation.elements:
            if request.action_type == "Type" and not is_editable(el):
                continue
            label = element_label(el).casefold()
            match = SequenceMatcher(None, desc, label, autojunk=False).find_longest_match()
            if match.size > best_len:
                best, best_len = el, match.size
        if best is None or best_len < self.min_chars:
            return Grounding(index=None, reason=f"no label shares {self.min_chars} chars", grounder=self.name)
        reason = f"{element_label(best)!r} shares {best_len} chars"
        return Grounding(index=best.index, score=min(1.0, best_len / 12), reason=reason, grounder=self.name)


@register("grounder", "lcs")
def lcs(min_chars: int = 3) -> LcsGrounder:
    """Longest common substring between the description and each element's label."""
    if min_chars < 1:
        raise ValueError("min_chars must be at least 1")
    return LcsGrounder(min_chars)
