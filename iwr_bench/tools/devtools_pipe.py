"""DevTools over a pipe: Chromium opens no debugging port at all, not even inside its jail.

With ``--remote-debugging-pipe`` Chromium reads DevTools commands from file descriptor 3 and writes
replies and events to descriptor 4, one JSON message per NUL-terminated record. Nothing listens on
a port a page could find or connect to, so the page's own server really is the only address in
the page's network. Our CDP client speaks WebSocket, so :class:`PipeBridge` serves one WebSocket
on the host's 127.0.0.1 (outside the jail, at an unguessable path) and relays every message
between it and the pipe.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from contextlib import suppress

import anyio
from aiohttp import WSMsgType, web

PIPE_FLAG = "--remote-debugging-pipe"
"""Chromium flag that makes it speak DevTools on descriptors 3 (in) and 4 (out)."""

_MAX_MESSAGE = 256 * 1024 * 1024
"""Largest message relayed (full-page screenshots are big)."""


class DevToolsPipes:
    """The two pipes: ``child_in``/``child_out`` go to Chromium as fds 3 and 4, the rest stay here."""

    def __init__(self) -> None:
        # Above 10 so that placing them at 3 and 4 in the child never overwrites one with the other.
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()
        self.child_in, self.child_out = _high(cmd_r), _high(out_w)
        self.commands, self.replies = _high(cmd_w), _high(out_r)
        for fd in (self.commands, self.replies):
            os.set_blocking(fd, False)

    def place_in_child(self) -> None:
        """``preexec_fn`` part: put the child's ends at fds 3 and 4 (inheritable, unlike the rest)."""
        os.dup2(self.child_in, 3)
        os.dup2(self.child_out, 4)

    def close_child_ends(self) -> None:
        """After the spawn: the parent keeps only its own ends. Each end is closed once and then
        forgotten: closing a number twice would close whatever reused it meanwhile (another
        browser's socket)."""
        for fd in (self.child_in, self.child_out):
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)
        self.child_in = self.child_out = -1

    def close(self) -> None:
        """Close every end still open (once)."""
        self.close_child_ends()
        for fd in (self.commands, self.replies):
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)
        self.commands = self.replies = -1


def _high(fd: int) -> int:
    """``fd`` moved to a number of at least 10 (non-inheritable)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class PipeBridge:
    """A WebSocket on 127.0.0.1 relaying to and from Chromium's DevTools pipes (one client at a time)."""

    def __init__(self, pipes: DevToolsPipes) -> None:
        self.pipes = pipes
        self.path = f"/devtools/browser/{secrets.token_hex(16)}"
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._busy = False

    async def start(self) -> str:
        """Start serving; returns the WebSocket URL for the CDP client."""
        app = web.Application()
        app.router.add_get(self.path, self._client)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self.url = f"ws://127.0.0.1:{runner.addresses[0][1]}{self.path}"
        return self.url

    async def stop(self) -> None:
        """Stop serving (the client's connection is closed with it)."""
        if self._runner is not None:
            with anyio.CancelScope(shield=True):
                await self._runner.cleanup()
            self._runner = None

    async def _client(self, request: web.Request) -> web.StreamResponse:
        if self._busy:
            return web.Response(status=409, text="DevTools pipe already has a client")
        self._busy = True
        ws = web.WebSocketResponse(max_msg_size=_MAX_MESSAGE, autoping=True)
        await ws.prepare(request)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._to_browser, ws, tg.cancel_scope)
                tg.start_soon(self._from_browser, ws, tg.cancel_scope)
        finally:
            self._busy = False
            await ws.close()
        return ws

    async def _to_browser(self, ws: web.WebSocketResponse, scope: anyio.CancelScope) -> None:
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._write(msg.data.encode() + b"\0")
                elif msg.type == WSMsgType.BINARY:
                    await self._write(bytes(msg.data) + b"\0")
        except OSError:
            pass  # the browser's end of the pipe is gone
        finally:
            scope.cancel()

    async def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.pipes.commands, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.pipes.commands)

    async def _from_browser(self, ws: web.WebSocketResponse, scope: anyio.CancelScope) -> None:
        pending = bytearray()
        try:
            while True:
                try:
                    chunk = os.read(self.pipes.replies, 1 << 20)
                except BlockingIOError:
                    await anyio.wait_readable(self.pipes.replies)
                    continue
                if not chunk:  # Chromium exited
                    return
                pending += chunk
                *messages, rest = bytes(pending).split(b"\0")
                pending = bytearray(rest)
                for message in messages:
                    await ws.send_str(message.decode("utf-8", errors="replace"))
        except (OSError, ConnectionResetError):
            pass
        finally:
            scope.cancel()
