"""Claims about looks are decided from how real Chromium draws the page, before and after.

Each case is an assertion with no quoted text to look up (or a look beside the quoted text), a page
before the action, the page the recorded site shows after it (the answer must be yes) and a broken
page after it (the answer must be no). The pages differ only in the property the claim is about.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from judge_site import write_page

from iwr_bench.agents.judge.assertions import decide
from iwr_bench.agents.judge.looks import States, blocks, check, colour_names
from iwr_bench.tools.models import BoundingBox, PageSpec, Viewport, VisibleText
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

_STYLE = """<style>body { margin: 0; font: 16px sans-serif } .card { width: 180px; padding: 8px;
border: 1px solid #ccc; margin: 6px; display: inline-block } .pill { padding: 2px 8px }</style>"""


def _html(body: str, body_style: str = "") -> str:
    return f"<!doctype html><html><head>{_STYLE}</head><body style='{body_style}'>{body}</body></html>"


STEPS = "<ol class=method>{}<li class=step>Fold in the flour</li></ol>"
CARDS = (
    "<div class=card{}><h3>Standard room</h3><p>$250.00</p></div>"
    "<div class=card{}><h3>Deluxe sea view</h3><p>$390.00</p></div>"
)
SWITCH = (
    "<div class=row><label class=switch><input type=checkbox{}> Weekly digest</label></div>"
    "<div class=row><label><input type=checkbox> Mentions</label></div>"
)
PLAIN_SWITCH = (  # the state lives in a class and a colour only, as on many real settings pages
    "<div class=row><div>Weekly digest</div><button class=track style='width:40px;height:22px;"
    "border:0;background:{}'></button></div>"
    "<div class=row><div>Mentions</div><button class=track style='width:40px;height:22px;"
    "border:0;background:{}'></button></div>"
)
YEARLY = "<button id=yearly style='color:{};background:{};border:1px solid #0d9488'>Pay yearly</button>"
PLANTS = "<main><div class=grid>" + "<div class=card><h3>{}</h3></div>" * 3 + "</div></main>"
PILL = "<p>Settings <span class=pill style='background:{}'>1 unsaved change</span></p>"
SEARCH = "<input aria-label='Search titles' value='{}'>"
NOTICE = "<p class=notice style='color:{}'>Exported 3 rows to orders.csv</p>"
VIEWER = "<div class=grid><p>Thumbnails</p></div>{}"
BOARD = (
    "<div style='position:relative;height:60px'>"
    "<span class=token style='position:absolute;left:{}px'>Ring</span></div>"
)

TOAST = "<div style='margin:4px;padding:6px;background:linear-gradient(to right, {}, #eee)'>Saved</div>"
"""A notice drawn on a gradient, as notification libraries draw them: its colour tells copies apart."""

TABLE = (
    "<table><thead><tr><th>Name</th><th>City</th></tr></thead><tbody>"
    + "<tr><td>{}</td><td>Neath</td></tr>" * 4
    + "</tbody></table>"
)

CASES = {
    "strike": (
        "step 1 is struck through",
        STEPS.format("<li class=step>Whisk the eggs</li>"),
        STEPS.format("<li class='step' style='text-decoration:line-through'>Whisk the eggs</li>"),
        STEPS.format("<li class='step done'>Whisk the eggs</li>"),
        {},
    ),
    "toggle": (
        "the digest switch turns on",
        SWITCH.format(""),
        SWITCH.format(" checked"),
        SWITCH.format(""),
        {},
    ),
    "plain-switch": (
        "the digest switch turns on (purple)",
        PLAIN_SWITCH.format("#c9cce0", "#c9cce0"),
        PLAIN_SWITCH.format("#4f46e5", "#c9cce0"),
        PLAIN_SWITCH.format("#c9cce0", "#4f46e5"),
        {},
    ),
    "only": (  # state classes on the rows ("done") do not make them another list
        "only 'Water the plants' is shown",
        "<ul><li><label>Buy milk</label></li><li><label>Water the plants</label></li></ul>",
        "<ul><li class=done><label style='display:none'>Buy milk</label></li>"
        "<li><label>Water the plants</label></li></ul>",
        "<ul><li class=done><label>Buy milk</label></li><li><label>Water the plants</label></li></ul>",
        {},
    ),
    "colour": (
        "the pill turns green",
        PILL.format("#fde68a"),
        PILL.format("#16a34a"),
        PILL.format("#f59e0b"),
        {},
    ),
    "outline": (
        "the Deluxe card is outlined",
        CARDS.format("", ""),
        CARDS.format("", " style='outline:3px solid #2563eb'"),
        CARDS.format(" style='outline:3px solid #2563eb'", ""),
        {},
    ),
    "closes": (
        "the viewer closes",
        VIEWER.format("<div class=viewer><p>Harbour at dawn</p></div>"),
        VIEWER.format(""),
        VIEWER.format("<div class=viewer><p>Harbour at dawn</p></div>"),
        {},
    ),
    "opens": (
        "a cart panel opens",
        "<p>Shop</p>",
        "<p>Shop</p><aside class=cart-panel><h2>Basket</h2><p>Sourdough loaf</p></aside>",
        "<p>Shop</p><aside class=cart-panel hidden><h2>Basket</h2><p>Sourdough loaf</p></aside>",
        {},
    ),
    "moves": (
        "the ring moves one card to the right",
        BOARD.format(10),
        BOARD.format(120),
        BOARD.format(0),
        {},
    ),
    "dark": (
        "the page switches to a dark background",
        "<p>Appearance</p>",
        "<p style='color:#eee'>Appearance</p>",
        "<p>Appearance</p>",
        {"after_body": "background:#111827"},
    ),
    "larger": (
        "the preview sentence is larger",
        "<p class=preview style='font-size:16px'>The quick brown fox</p>",
        "<p class=preview style='font-size:18px'>The quick brown fox</p>",
        "<p class=preview style='font-size:16px'>The quick brown fox</p>",
        {},
    ),
    "fills-in": (  # a hollow symbol drawn filled, its element known by its id
        "the like button fills in",
        "<button id=like class=like>&#9825; 12 likes</button>",
        "<button id=like class='like on'>&#9829; 13 likes</button>",
        "<button id=like class=like>&#9825; 13 likes</button>",
        {},
    ),
    "solid-green": (  # the fill takes the colour the ink had: recoloured, though no colour is new
        "the yearly button turns solid green",
        YEARLY.format("#0d9488", "#fff"),
        YEARLY.format("#fff", "#0d9488"),
        YEARLY.format("#0d9488", "#fff"),
        {},
    ),
    "only-named": (  # names without quotes, listed before one verb
        "only the Saguaro Cactus and the Snake Plant remain",
        PLANTS.format("Monstera", "Saguaro Cactus", "Snake Plant"),
        PLANTS.format("Saguaro Cactus", "Snake Plant", ""),
        PLANTS.format("Monstera", "Saguaro Cactus", "Snake Plant"),
        {},
    ),
    "switch-states": (  # states read against the page's other switches: coloured is on
        "the digest is on and mentions off",
        PLAIN_SWITCH.format("#c9cce0", "#c9cce0"),
        PLAIN_SWITCH.format("#4f46e5", "#c9cce0"),
        PLAIN_SWITCH.format("#c9cce0", "#4f46e5"),
        {},
    ),
    "stays-same": (
        "no tile can move: the board stays the same",
        "<div class=board><span>2</span> <span>4</span></div><p>Moves: 1</p>",
        "<div class=board><span>2</span> <span>4</span></div><p>Moves: 2</p>",
        "<div class=board><span>4</span> <span>2</span></div><p>Moves: 2</p>",
        {},
    ),
    "field-cleared": (
        "the search box is cleared",
        SEARCH.format("pine"),
        SEARCH.format(""),
        SEARCH.format("pine") + "<p>1 photo</p>",
        {},
    ),
    "typed-value": (  # text typed into a box counts for a clause about that box
        "the search box shows 'pine'",
        SEARCH.format(""),
        SEARCH.format("pine"),
        SEARCH.format("") + "<p>pin</p>",
        {},
    ),
    "box-is-not-field": (  # ... and never for text the page should write itself
        "a green box says 'Lin Wei'",
        "<input aria-label='Name on booking' value='Lin Wei'>",
        "<input aria-label='Name on booking' value='Lin Wei'><p style='color:#15803d'>Lin Wei</p>",
        "<input aria-label='Name on booking' value='Lin Wei'><p>Booking pending</p>",
        {},
    ),
    "italic": (  # the words themselves are drawn in italics, inside a bold part of a heading
        "the heading is also set in italics",
        "<h1><b>Hello pell</b></h1>",
        "<h1><b><i>Hello pell</i></b></h1>",
        "<h1><b>Hello pell</b></h1><p><i>unrelated</i></p>",
        {},
    ),
    "bold": (
        "the note turns bold",
        "<p class=note>Ship on Friday</p>",
        "<p class=note><b>Ship on Friday</b></p>",
        "<p class=note><i>Ship on Friday</i></p>",
        {},
    ),
    "cart-empty": (  # an element the clause names by its id: sure which, so no when items stay
        "the cart is empty",
        "<ul id=cart><li>Sourdough loaf</li><li>Rye rolls</li></ul><p>Bakery</p>",
        "<ul id=cart></ul><p>Bakery</p>",
        "<ul id=cart><li>Rye rolls</li></ul><p>Bakery</p>",
        {},
    ),
    "sorted": (  # the column whose heading the clause names runs in order
        "the rows are sorted by name",
        TABLE.format("Pearl", "Adrienne", "Zelenia", "Mira"),
        TABLE.format("Adrienne", "Mira", "Pearl", "Zelenia"),
        TABLE.format("Mira", "Adrienne", "Zelenia", "Pearl"),
        {},
    ),
    "reversed": (
        "the order is reversed by name",
        TABLE.format("Adrienne", "Mira", "Pearl", "Zelenia"),
        TABLE.format("Zelenia", "Pearl", "Mira", "Adrienne"),
        TABLE.format("Adrienne", "Mira", "Pearl", "Zelenia"),
        {},
    ),
    "quoted-colour": (
        "a green notice says 'Exported 3 rows to orders.csv'",
        "<p>Orders</p>",
        "<p>Orders</p>" + NOTICE.format("#15803d"),
        "<p>Orders</p>" + NOTICE.format("#b91c1c"),
        {},
    ),
    "one-copy-gone": (  # a new 'Saved' arrives as the first one leaves; a broken page keeps both
        "a new 'Saved' notice is listed and the first 'Saved' notice has gone",
        TOAST.format("#dc2626") + TOAST.format("#16a34a"),
        TOAST.format("#16a34a") + TOAST.format("#16a34a"),
        TOAST.format("#16a34a") + TOAST.format("#dc2626") + TOAST.format("#16a34a"),
        {},
    ),
}


ROOM = "<div class=room><h3>{}</h3><p>$90 per night</p><button>Select</button></div>"
ONLY_OK = {  # rules that say only yes: what they count or look for may be drawn as pictures
    "count": (
        "the room step shows three room cards",
        "<h2>Your stay</h2>",
        "<h2>Choose a room</h2>" + "".join(ROOM.format(n) for n in ("Standard", "Deluxe", "Suite")),
        "<h2>Choose a room</h2>" + "".join(ROOM.format(n) for n in ("Standard", "Deluxe")),
    ),
    "kind-of-thing": (  # a list is a ul, though no text says "ingredient list"
        "the ingredient list is back",
        "<p>Leftovers keep for two days.</p>",
        "<ul id=ing><li>250 g flour</li><li>2 eggs</li></ul>",
        "<p>Leftovers keep for two days.</p><p>Whisk everything.</p>",
    ),
    "field-shown": (  # the field is known by its placeholder, though no label names it
        "a name field appears",
        "<h2>Extras</h2>",
        "<h2>Review</h2><p>Name on booking</p><input placeholder='First and last name'>",
        "<h2>Review</h2><p>Name on booking</p>",
    ),
    "list-empty": (  # "the list" names only a kind (a page may hold other lists): yes or nothing
        "the list is empty",
        "<ul id=todo-list><li>Buy oat milk</li><li>Water the basil</li></ul><p>Todos</p>",
        "<ul id=todo-list></ul><p>Todos</p>",
        "<ul id=todo-list><li>Buy oat milk</li></ul><p>Todos</p>",
    ),
    "heading": (  # a line made a heading: yes; still a paragraph: nothing to say for sure
        "the line becomes a large heading",
        "<div class=editor><p>Hello pell</p></div>",
        "<div class=editor><h1>Hello pell</h1></div>",
        "<div class=editor><p>Hello pell</p></div>",
    ),
    "coloured-kind": (
        "red messages appear under each field",
        "<label>Name</label><label>Email</label>",
        "<label>Name</label><p style='color:#b91c1c'>Name is required</p>"
        "<label>Email</label><p style='color:#b91c1c'>Email is required</p>",
        "<label>Name</label><p>Name is required</p><label>Email</label><p>Email is required</p>",
    ),
}


@pytest.mark.parametrize("case", list(ONLY_OK))
async def test_a_rule_that_only_confirms_leaves_the_rest_undetermined(
    pool: PagePool, tmp_path: Path, case: str
) -> None:
    assertion, before, good, broken = ONLY_OK[case]
    seen = await _seen_all(
        pool, tmp_path, {"before": (before, ""), "good": (good, ""), "broken": (broken, "")}
    )
    seen_before = seen["before"]
    for name, want in (("good", "yes"), ("broken", "undetermined")):
        seen_after = seen[name]
        verdict = decide(assertion, None, None, True, seen_before=seen_before, seen_after=seen_after)
        assert verdict.verdict == want, (case, name, verdict.reasoning)


async def _seen(pool: PagePool, tmp_path: Path, name: str, body: str, style: str = "") -> VisibleText:
    page = write_page(tmp_path / name, _html(body, style))
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        return await tools.visible_text()


async def _seen_all(
    pool: PagePool, tmp_path: Path, pages: dict[str, tuple[str, str]]
) -> dict[str, VisibleText]:
    """What each page (name: (body, body style)) shows, the pages opened side by side in the pool."""
    seen: dict[str, VisibleText] = {}

    async def one(name: str, body: str, style: str) -> None:
        seen[name] = await _seen(pool, tmp_path, name, body, style)

    async with anyio.create_task_group() as tg:
        for name, (body, style) in pages.items():
            tg.start_soon(one, name, body, style)
    return seen


@pytest.mark.parametrize("case", list(CASES))
async def test_a_claim_about_looks_is_decided_from_the_page(
    pool: PagePool, tmp_path: Path, case: str
) -> None:
    assertion, before, good, broken, opts = CASES[case]
    style = str(opts.get("after_body", ""))
    seen = await _seen_all(
        pool, tmp_path, {"before": (before, ""), "good": (good, style), "broken": (broken, "")}
    )
    seen_before = seen["before"]
    for name, want in (("good", "yes"), ("broken", "no")):
        seen_after = seen[name]
        # the screenshot changed: what the page draws (runs, their looks, the background) changed
        changed = seen_after.model_dump() != seen_before.model_dump()
        verdict = decide(assertion, None, None, changed, seen_before=seen_before, seen_after=seen_after)
        assert verdict.verdict == want, (case, name, verdict.reasoning)
        assert verdict.reasoning  # names what it measured


async def test_the_element_acted_on_is_what_an_unnamed_claim_is_about(pool: PagePool, tmp_path: Path) -> None:
    # "it is highlighted" names nothing: the block the click landed on is what must change.
    before = await _seen(pool, tmp_path, "before", CARDS.format("", ""))
    after = await _seen(pool, tmp_path, "after", CARDS.format("", " style='background:#dbeafe'"))
    deluxe = next(r for r in before.runs if r.text == "Deluxe sea view")
    other = next(r for r in before.runs if r.text == "Standard room")
    for box, want in ((deluxe.box, "yes"), (other.box, "no")):
        acted = BoundingBox(x=box.x - 2, y=box.y - 2, width=box.width + 4, height=box.height + 40)
        verdict = decide(
            "it is highlighted", None, None, True, seen_before=before, seen_after=after, acted=acted
        )
        assert verdict.verdict == want, verdict.reasoning


async def test_a_look_that_is_not_measured_stays_undetermined(pool: PagePool, tmp_path: Path) -> None:
    # A picture appearing is pixels, not text: the judge cannot tell from text and says so.
    before = await _seen(pool, tmp_path, "before", "<p>Board</p>")
    after = await _seen(pool, tmp_path, "after", "<p>Board</p><img alt='' src='data:,' width=40 height=40>")
    verdict = decide(
        "a sun picture appears on the card", None, None, True, seen_before=before, seen_after=after
    )
    assert verdict.verdict == "undetermined", verdict.reasoning


def test_colour_words_fit_the_colours_people_call_them() -> None:
    assert "green" in colour_names("22,163,74") and "red" in colour_names("185,28,28")
    assert "blue" in colour_names("37,99,235") and "purple" in colour_names("124,58,237")
    assert "yellow" in colour_names("250,204,21") and "orange" in colour_names("245,158,11")
    assert {"grey", "gray"} <= colour_names("128,128,128") and "black" in colour_names("17,17,17")
    assert "green" not in colour_names("245,158,11") and colour_names("x") == set()


async def test_places_adjectives_and_denials_are_not_read_as_claims(pool: PagePool, tmp_path: Path) -> None:
    # What a clause is about comes before its verb ("the card leaves the board": the card, not the
    # board); "the selected card moves" says nothing about a highlight; "no tile can move" and "a
    # bigger tile" claim no movement or size; a kind word ("red messages") need not be in the text.
    board = (
        "<h1 class=board-title>Sprint board</h1><div class=lane><h2>Doing</h2>{}</div>"
        "<div class=grid><span class=tile>2</span><span class=tile>4</span></div>"
    )
    before = await _seen(pool, tmp_path, "before", board.format("<p class=card>Fix login bug</p>"))
    after = await _seen(pool, tmp_path, "after", board.format("<p class=error>Name is required</p>"))
    states = States(before=blocks(before.runs), after=blocks(after.runs))
    for clause, ok in (
        ("the card leaves the board", True),
        ("the selected card moves over to the doing lane", False),
        ("no tile can move", False),
        ("two tiles join into one bigger tile", False),
        ("red messages appear under each field", False),
    ):
        oks, nos = check(clause, states)
        assert not nos, (clause, nos)
        assert bool(oks) == ok, (clause, oks)
