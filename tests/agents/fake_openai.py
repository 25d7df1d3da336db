"""A scripted fake of an OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web


@dataclass
class Reply:
    """One scripted reply."""

    text: str | None = "```html\n<html><body>ok</body></html>\n```"
    """Answer content (used when ``body`` is None and status is 200)."""
    status: int = 200
    """HTTP status."""
    body: str | None = None
    """Raw body to send instead of a completion."""
    headers: dict[str, str] = field(default_factory=dict[str, str])
    """Extra response headers."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    finish_reason: str = "stop"
    """Completion finish reason."""


@dataclass
class FakeOpenAI:
    """Serves scripted replies in order; the last one repeats."""

    replies: list[Reply] = field(default_factory=lambda: [Reply()])
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    times: list[float] = field(default_factory=list[float])
    url: str = ""

    def completion(self, reply: Reply, model: str) -> dict[str, Any]:
        """A chat completion body."""
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
        }

    async def handle(self, request: web.Request) -> web.Response:
        """Answer one chat completion request."""
        payload = await request.json()
        self.times.append(time.monotonic())
        self.requests.append(payload)
        reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        if reply.delay:
            await anyio.sleep(reply.delay)
        if reply.body is not None or reply.status != 200:
            body = reply.body if reply.body is not None else json.dumps({"error": {"message": "boom"}})
            return web.Response(
                status=reply.status, text=body, headers=reply.headers, content_type="application/json"
            )
        return web.json_response(self.completion(reply, payload.get("model", "?")), headers=reply.headers)


@asynccontextmanager
async def serve(fake: FakeOpenAI) -> AsyncIterator[FakeOpenAI]:
    """Run ``fake`` on a random port of 127.0.0.1; ``fake.url`` is its ``/v1`` base URL."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield fake
    finally:
        await runner.cleanup()
