"""Grounding as a person and a screen reader do: icon-only controls by their accessible names, a
field by its ``<label for>``, and position words, on a page real Chromium lays out."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_site import write_page

from iwr_bench.agents.grounding import GroundingRequest, HeuristicGrounder
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

# Icons drawn as glyphs, an SVG and an image; names only in aria-label, aria-labelledby, title,
# alt, an SVG <title> and a <label for>. The visible "Add item" button is the decoy.
PAGE = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif } header { display: flex; justify-content: space-between;
padding: 8px } button { font-size: 20px } main { padding: 20px }
</style></head><body>
<header><button aria-label="Help">?</button><span id=tl>Open settings</span>
<button aria-labelledby="tl">&#9881;</button></header>
<main>
<button>Add item</button>
<span class=stars><button aria-label="Rate 1">&#9733;</button>
<button aria-label="Rate 4">&#9733;</button></span>
<button title="Delete note">&#128465;</button>
<button><img alt="Share on mastodon" width=16 height=16
 src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></button>
<button><svg width=16 height=16><title>Print receipt</title><rect width=16 height=16 /></svg></button>
<p><label for=qty>Quantity</label> <input id=qty value=2></p>
</main>
<footer style="position:fixed;bottom:0;left:0;right:0;display:flex;justify-content:space-between">
<button aria-label="Settings for this page">&#9881;</button><button aria-label="Preferences">&#9881;</button>
</footer></body></html>"""

CASES = [
    ("the star icon labelled 'Rate 4'", "Click", "Rate 4"),
    ("the gear button that opens settings", "Click", "Open settings"),
    ("the trash can icon to delete the note", "Click", "Delete note"),
    ("the mastodon share button", "Click", "Share on mastodon"),
    ("the printer icon to print the receipt", "Click", "Print receipt"),
    ("the quantity field", "Type", "Quantity"),
    ("the gear at the bottom right", "Click", "Preferences"),
    ("the gear at the bottom left", "Click", "Settings for this page"),
]


@pytest.fixture(scope="module", params=[False, True], ids=["lexical", "semantic"])
def grounder(request: pytest.FixtureRequest) -> HeuristicGrounder:
    return HeuristicGrounder(semantic=request.param)


async def test_icon_only_controls_are_found_by_their_accessible_names(
    pool: PagePool, tmp_path: Path, grounder: HeuristicGrounder
) -> None:
    page = write_page(tmp_path / "icons", PAGE)
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=800, height=500))) as tools:
        observation = await tools.observe()
    assert (observation.width, observation.height) == (800, 500)
    names = {el.index: el.name for el in observation.elements}
    for description, action, want in CASES:
        request = GroundingRequest(description=description, action_type=action, observation=observation)
        result = await grounder(request)
        assert result.index is not None, (description, result.reason)
        assert names[result.index] == want, (description, names[result.index], result.reason)
    # a visible label is still found by its text
    add = await grounder(
        GroundingRequest(description="the 'Add item' button", action_type="Click", observation=observation)
    )
    texts = {el.index: el.text for el in observation.elements}
    assert add.index is not None and texts[add.index] == "Add item" and names[add.index] is None


# Icon fonts and sprites as real sites use them (Bootstrap Icons, Font Awesome, an SVG sprite, a
# Lucide placeholder): no text, no name; only the icon's class or reference says what it shows.
ICON_FONTS = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif } button { width: 40px; height: 32px }
i, span { display: inline-block }
</style></head><body>
<p><label for=pw>Password</label> <input id=pw type=password>
<button type=button><i class="bi bi-eye"></i></button></p>
<button><i class="fa-solid fa-trash-can fa-fw fa-lg"></i></button>
<button><svg width=16 height=16><use href="#icon-gear"></use></svg></button>
<button><span data-lucide="heart"></span></button>
<button>Save <i class="bi bi-download"></i></button>
</body></html>"""

ICON_CASES = [
    ("the eye button next to the password", "eye"),
    ("the trash can icon", "trash can"),
    ("the gear icon", "gear"),
    ("the heart button", "heart"),
]


async def test_icon_font_and_sprite_controls_are_found_by_what_they_show(
    pool: PagePool, tmp_path: Path, grounder: HeuristicGrounder
) -> None:
    page = write_page(tmp_path / "fonts", ICON_FONTS)
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=600, height=300))) as tools:
        observation = await tools.observe()
    icons = {el.index: el.icon for el in observation.elements if el.tag == "button"}
    assert sorted(filter(None, icons.values())) == ["eye", "gear", "heart", "trash can"]  # "Save" has text
    for description, want in ICON_CASES:
        request = GroundingRequest(description=description, action_type="Click", observation=observation)
        result = await grounder(request)
        assert result.index is not None and icons[result.index] == want, (description, result.reason)
