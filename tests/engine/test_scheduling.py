"""Browser pages go round-robin over the models, and their default number fits the machine."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from iwr_bench.engine.config import LimitSettings, default_browser_pages
from iwr_bench.engine.limits import OrderedLimit

pytestmark = pytest.mark.anyio


async def test_free_slots_go_to_the_lowest_rank_whatever_the_arrival_order() -> None:
    limit = OrderedLimit("browser pages", 1)
    order: list[tuple[int, int]] = []
    holding = anyio.Event()

    async def hold() -> None:
        async with limit.slot((-1, 0)):
            holding.set()
            await anyio.sleep(0.05)  # everyone else queues meanwhile

    async def job(rank: tuple[int, int]) -> None:
        async with limit.slot(rank):
            order.append(rank)

    # every "blank" page (model 2) arrives before the "oracle" ones (model 0), as when one
    # model generates faster
    arrivals = [(t, 2) for t in range(3)] + [(t, 0) for t in range(3)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await holding.wait()
        for rank in arrivals:
            tg.start_soon(job, rank)
            await anyio.lowlevel.checkpoint()
    assert order == [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)]
    assert limit.max_in_use == 1 and limit.in_use == 0 and limit.waiting == 0


async def test_a_waiter_cancelled_in_the_queue_leaves_the_slot_to_the_next() -> None:
    limit = OrderedLimit("browser pages", 1)
    got: list[str] = []
    first = anyio.CancelScope()

    async def take(rank: tuple[int, ...], name: str, scope: anyio.CancelScope) -> None:
        with scope:
            async with limit.slot(rank):
                got.append(name)

    async with anyio.create_task_group() as tg, limit.slot((0,)):
        tg.start_soon(take, (0,), "cancelled", first)  # would be next: the better rank
        tg.start_soon(take, (1,), "late", anyio.CancelScope())
        await anyio.sleep(0.01)
        first.cancel()
        await anyio.sleep(0.01)
        assert limit.waiting == 1
    assert got == ["late"]
    assert limit.in_use == 0 and limit.waiting == 0


def test_default_browser_pages_follow_cores_and_memory() -> None:
    assert default_browser_pages(cores=2, memory_gb=16) == 2  # 2 pages beat 1 and 4 on 2 cores
    assert default_browser_pages(cores=4, memory_gb=32) == 4
    assert default_browser_pages(cores=64, memory_gb=8) == 4  # memory-bound
    assert default_browser_pages(cores=64, memory_gb=256) == 8
    assert default_browser_pages(cores=1, memory_gb=1) == 1
    assert 1 <= LimitSettings().browser_pages <= 8


def test_streamed_text_is_coalesced_in_order() -> None:
    """Tokens become one event per 1 KB (or 100 ms); another event of the job flushes them first."""
    from iwr_bench.agents.events import ActionStarted, JudgeDelta
    from iwr_bench.engine.bus import TextCoalescer
    from iwr_bench.engine.events import Event, FromAgent, from_agent

    published: list[Event] = []
    text = TextCoalescer(published.append, every_s=60.0, max_chars=1024)

    def deltas() -> list[JudgeDelta]:
        return [e.event for e in published if isinstance(e, FromAgent) and isinstance(e.event, JudgeDelta)]

    for _ in range(300):
        text.add("judge/1/m", "assertions", "token-")  # 6 characters each: 1800 in all
    assert [len(e.text) for e in deltas()] == [1026]
    text.flush("judge/1/m")
    published.append(from_agent(ActionStarted(index=1, type="Click", description="the button"), "judge/1/m"))
    text.add("judge/2/m", "grounder", "x")
    text.flush_due()  # not yet due
    assert "".join(e.text for e in deltas()) == "token-" * 300
    assert all(e.job == "judge/1/m" for e in published) and len(published) == 3
    assert isinstance(published[-1], FromAgent) and isinstance(published[-1].event, ActionStarted)
    text.every_s = 0.0
    text.flush_due()
    assert published[-1].job == "judge/2/m" and deltas()[-1].text == "x"
