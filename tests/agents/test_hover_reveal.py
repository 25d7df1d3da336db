"""A control a page shows only on hover is found as a person finds it: by moving the mouse there.
A control that stays invisible is never acted on."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_site import write_page

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.records import ActionRecord
from iwr_bench.dataset.models import Action
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

LIST = """<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif } li { display: flex; gap: 12px; padding: 6px; width: 300px }
li .del { opacity: 0 } li:hover .del { opacity: 1 } .ghost { opacity: 0 }
.todo .destroy { display: none } .todo:hover .destroy { display: inline-block }
</style></head><body><h1>Shopping</h1><ul>
<li><span>Bread</span><button class=del aria-label="Delete Bread">&#10005;</button></li>
<li><span>Milk</span><button class=del aria-label="Delete Milk">&#10005;</button></li>
</ul><ul><li class=todo><span>Walk the dog</span>
<button class=destroy aria-label="Remove todo">x</button></li></ul>
<div class=ghost><button>Archive everything</button></div>
<script>
document.querySelectorAll('.del, .destroy').forEach((b) => b.onclick = () => b.parentElement.remove());
document.querySelector('.ghost button').onclick = () => document.body.append('archived');
</script></body></html>"""


def _action(description: str) -> tuple[Action, ActionRecord]:
    action = Action.model_validate({"type": "Click", "parameters": {"description": description}})
    return action, ActionRecord(index=0, type="Click", description=description, status="ok")


async def test_a_hover_revealed_button_is_hovered_then_clicked(pool: PagePool, tmp_path: Path) -> None:
    page = write_page(tmp_path / "list", LIST)
    executor = Executor(pool, HeuristicGrounder(semantic=False), HeuristicAssertionJudge())
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        hidden = [e for e in (await tools.observe()).elements if e.hidden]
        # listed, as not drawn: faded out, not displayed (at its row's place), in a faded container
        assert {e.name for e in hidden} == {"Delete Bread", "Delete Milk", "Remove todo", None}
        action, record = _action("the delete button of the 'Milk' row")
        await executor._perform(tools, action, record)  # pyright: ignore[reportPrivateUsage]
        assert any(call.startswith("hover(") for call in record.tool_calls), record.tool_calls
        text = (await tools.observe()).text
    assert "Milk" not in text and "Bread" in text
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        action, record = _action("the remove button of the 'Walk the dog' todo")
        await executor._perform(tools, action, record)  # pyright: ignore[reportPrivateUsage]
        assert any(call.startswith("hover(") for call in record.tool_calls), record.tool_calls
        assert "Walk the dog" not in (await tools.observe()).text


async def test_a_control_that_stays_invisible_is_not_clicked(pool: PagePool, tmp_path: Path) -> None:
    page = write_page(tmp_path / "ghost", LIST)
    executor = Executor(pool, HeuristicGrounder(semantic=False), HeuristicAssertionJudge())
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=640, height=400))) as tools:
        action, record = _action("the 'Archive everything' button")
        with pytest.raises(Exception, match="not drawn and hovering did not show it"):
            await executor._perform(tools, action, record)  # pyright: ignore[reportPrivateUsage]
        assert "archived" not in (await tools.observe()).text
