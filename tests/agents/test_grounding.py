"""The offline heuristic grounder on hand-made element lists."""

from __future__ import annotations

import pytest

from iwr_bench.agents.grounding import GroundingRequest, HeuristicGrounder
from iwr_bench.registry import create
from iwr_bench.tools.models import BoundingBox, Element, Observation

pytestmark = pytest.mark.anyio


def _el(index: int, tag: str, text: str = "", y: float = 10, **kw: object) -> Element:
    return Element(
        index=index,
        tag=tag,
        text=text,
        box=BoundingBox(x=10, y=y, width=80, height=20),
        in_viewport=True,
        **kw,
    )


PAGE = Observation(
    url="http://127.0.0.1/",
    title="shop",
    text="",
    elements=[
        _el(0, "a", "Home", role="link", href="/"),
        _el(1, "input", placeholder="Search products", input_type="text", role="textbox"),
        _el(2, "button", "Add to cart", y=100, role="button"),
        _el(3, "button", "Add to cart", y=200, role="button"),
        _el(4, "button", "Checkout", y=300, role="button"),
        _el(5, "input", input_type="checkbox", aria_label="Gift wrap", role="checkbox"),
        _el(6, "button", "", aria_label="Close dialog", role="button"),
    ],
)


@pytest.fixture(scope="module", params=[False, True], ids=["lexical", "semantic"])
def grounder(request: pytest.FixtureRequest) -> HeuristicGrounder:
    return HeuristicGrounder(semantic=request.param)


@pytest.mark.parametrize(
    ("description", "action", "expected"),
    [
        ("the 'Checkout' button", "Click", 4),
        ("the search box at the top of the page", "Type", 1),
        ("the Home link in the header", "Click", 0),
        ("the gift wrap checkbox", "Click", 5),
        ("the X button that closes the dialog", "Click", 6),
        ("the second 'Add to cart' button", "Click", 3),
        ("the first 'Add to cart' button", "Click", 2),
        ("the last 'Add to cart' button", "Click", 3),
    ],
)
async def test_grounds_descriptions(
    grounder: HeuristicGrounder, description: str, action: str, expected: int
) -> None:
    result = await grounder(GroundingRequest(description=description, action_type=action, observation=PAGE))  # type: ignore[arg-type]
    assert result.index == expected, result


async def test_refuses_when_nothing_matches(grounder: HeuristicGrounder) -> None:
    request = GroundingRequest(
        description="the 'Subscribe to newsletter' button", action_type="Click", observation=PAGE
    )
    result = await grounder(request)
    assert result.index is None
    assert "no element matches well enough" in result.reason
    assert result.candidates  # the near misses are reported


async def test_type_needs_an_editable_element(grounder: HeuristicGrounder) -> None:
    request = GroundingRequest(description="the 'Checkout' field", action_type="Type", observation=PAGE)
    result = await grounder(request)
    assert result.index != 4


async def test_deterministic_and_registered() -> None:
    grounder, spec = create("grounder", "heuristic", semantic=False)
    request = GroundingRequest(description="the 'Checkout' button", action_type="Click", observation=PAGE)
    assert (await grounder(request)) == (await grounder(request))
    assert spec.args == {"semantic": False}
    empty = Observation(url="x", title="", text="", elements=[])
    assert (
        await grounder(GroundingRequest(description="x", action_type="Click", observation=empty))
    ).index is None
