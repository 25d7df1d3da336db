"""A deliberately weak assertion judge for ``iwr judges eval`` tests: it says yes to everything."""

from __future__ import annotations

from iwr_bench.plugins import AssertionRequest, AssertionVerdict, register


class AlwaysYes:
    name = "always-yes"

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        del request
        return AssertionVerdict(verdict="yes", reasoning="always yes", judge=self.name)


@register("assertions", "always-yes")
def always_yes() -> AlwaysYes:
    """Says yes to every assertion."""
    return AlwaysYes()
