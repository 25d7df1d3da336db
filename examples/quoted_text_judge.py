"""A strict assertion judge: every quoted phrase of the assertion must be visible after the action
(in the page text). No quoted phrase: undetermined. Option: ``case_sensitive``."""

from __future__ import annotations

import re

from iwr_bench.plugins import AssertionRequest, AssertionVerdict, register

QUOTED = re.compile(r"(?<!\w)['\"“]([^'\"”]{2,})['\"”](?!\w)")


class QuotedTextJudge:
    def __init__(self, case_sensitive: bool) -> None:
        self.case_sensitive = case_sensitive
        self.name = "quoted-text" + (" (case-sensitive)" if case_sensitive else "")

    def _fold(self, text: str) -> str:
        text = " ".join(text.split())
        return text if self.case_sensitive else text.casefold()

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        phrases = [self._fold(p) for p in QUOTED.findall(request.assertion)]
        if not phrases or request.after_text is None:
            why = "nothing quoted to look for"
            return AssertionVerdict(verdict="undetermined", reasoning=why, judge=self.name)
        after = self._fold(request.after_text)
        missing = [p for p in phrases if p not in after]
        verdict = "no" if missing else "yes"
        why = f"not visible: {missing}" if missing else f"all visible: {phrases}"
        return AssertionVerdict(verdict=verdict, reasoning=why, judge=self.name)


@register("assertions", "quoted-text")
def quoted_text(case_sensitive: bool = False) -> QuotedTextJudge:
    """Every quoted phrase must be in the page text after the action."""
    return QuotedTextJudge(case_sensitive)
