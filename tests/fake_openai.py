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
    """Seconds to wait before answering (with ``gather``: the most to wait)."""
    gather: int = 0
    """Hold the answer until this many requests have been in flight at once, or ``delay`` passes."""
    finish_reason: str = "stop"
    """Completion finish reason."""
    tool_call: tuple[str, str] | None = None
    """Answer with one tool call (name, JSON arguments) instead of text (e.g. pydantic-ai's output tool)."""


@dataclass
class FakeOpenAI:
    """Serves scripted replies in order; the last one repeats."""

    replies: list[Reply] = field(default_factory=lambda: [Reply()])
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    times: list[float] = field(default_factory=list[float])
    url: str = ""
    in_flight: int = 0
    """Requests being answered right now."""
    max_in_flight: int = 0
    """Most requests ever answered at once (to check concurrency limits)."""
    gathered: dict[int, anyio.Event] = field(default_factory=dict[int, anyio.Event])
    """Set once that many requests have been in flight at once (see ``Reply.gather``)."""

    def message(self, reply: Reply) -> tuple[dict[str, Any], str]:
        """The assistant message of a reply, and its finish reason."""
        if reply.tool_call is None:
            return {"role": "assistant", "content": reply.text}, reply.finish_reason
        name, arguments = reply.tool_call
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"

    async def stream(self, request: web.Request, reply: Reply, model: str) -> web.StreamResponse:
        """The reply as server-sent chunks, content split in a few pieces (``stream: true``)."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await response.prepare(request)
        message, finish = self.message(reply)
        base = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion.chunk", "model": model}
        base["created"] = int(time.time())

        async def send(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> None:
            chunk = {
                **base,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                **extra,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if "tool_calls" in message:
            call = message["tool_calls"][0]
            args = call["function"]["arguments"]
            head = {**call, "index": 0, "function": {"name": call["function"]["name"], "arguments": ""}}
            await send({"tool_calls": [head]})
            for i in range(0, len(args), 16):
                await send({"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + 16]}}]})
        else:
            text = message["content"] or ""
            for i in range(0, len(text), 16):
                await send({"content": text[i : i + 16]})
        usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
        await send({}, finish, usage=usage)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def completion(self, reply: Reply, model: str) -> dict[str, Any]:
        """A chat completion body."""
        message, finish = self.message(reply)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
        }

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one chat completion request."""
        payload = await request.json()
        self.times.append(time.monotonic())
        self.requests.append(payload)
        reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for count, reached in self.gathered.items():
                if self.max_in_flight >= count:
                    reached.set()
            if reply.gather:
                if self.max_in_flight < reply.gather:
                    reached = self.gathered.setdefault(reply.gather, anyio.Event())
                    with anyio.move_on_after(reply.delay):
                        await reached.wait()
            elif reply.delay:
                await anyio.sleep(reply.delay)
        finally:
            self.in_flight -= 1
        if reply.body is not None or reply.status != 200:
            body = reply.body if reply.body is not None else json.dumps({"error": {"message": "boom"}})
            return web.Response(
                status=reply.status, text=body, headers=reply.headers, content_type="application/json"
            )
        if payload.get("stream"):
            return await self.stream(request, reply, payload.get("model", "?"))
        return web.json_response(self.completion(reply, payload.get("model", "?")), headers=reply.headers)


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Run ``app`` on a random port of 127.0.0.1; yields its base URL (``http://127.0.0.1:PORT``)."""
    runner = web.AppRunner(app, shutdown_timeout=0.2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def serve(fake: FakeOpenAI) -> AsyncIterator[FakeOpenAI]:
    """Run ``fake`` on a random port of 127.0.0.1; ``fake.url`` is its ``/v1`` base URL."""
    app = web.Application(client_max_size=512 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", fake.handle)
    async with serve_app(app) as base:
        fake.url = f"{base}/v1"
        yield fake
