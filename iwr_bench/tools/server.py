"""Serve one page folder over HTTP on 127.0.0.1, with the task's assets beside it.

Generated HTML refers to assets as ``__PLACEHOLDER_ASSETS_BASE_DIR__/<file>``; relative to the page
that resolves to ``/__PLACEHOLDER_ASSETS_BASE_DIR__/<file>`` on this server, which is answered from
the assets folder, as is the clean ``/assets/<file>``. Everything else comes from the page's own
folder. Paths that escape either folder are refused with 404.

Pages written by the official generator point at their assets with a path relative to the page
folder (``../../../data/data/<id>/assets/<file>``), which a browser normalises to
``/data/data/<id>/assets/<file>`` on this server. A request whose normalised path ends in
``assets/<file>`` and that the page folder cannot answer is therefore answered from the assets
folder too (the part after an ``assets`` segment, under the same no-traversal rule).

With ``file_paths`` (``PageSpec.loading="file"``, the official protocol) the server behaves as a
``file://`` load does instead: the page's URL path is its absolute file path, every request path is
read as an absolute file path, and it is answered only when that file lies in the page's folder or
the assets folder. No placeholder or ``assets/`` fallback applies, so a wrong asset path shows no
image, as it does when the official scripts open the page.

Responses carry nothing that tells the real time: ``Last-Modified`` and ``ETag`` (which encodes the
file's modification time) are dropped, and ``Date`` reads the page's own clock when one is given, so
a page cannot compare its pinned ``Date.now()`` with the server's and learn that it is being judged.
"""

from __future__ import annotations

import mimetypes
import posixpath
import socket
import time
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from aiohttp import web

from iwr_bench.tools.errors import ToolError

ASSET_PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
"""Prefix the generated HTML uses for asset paths."""

_ASSET_PREFIXES = (f"/{ASSET_PLACEHOLDER}/", "/assets/")


def resolve_inside(root: Path, rel: str) -> Path | None:
    """Return ``root/rel`` if it is a file inside ``root``, else ``None`` (refuses traversal)."""
    if "\x00" in rel or rel.startswith(("/", "\\")):
        return None
    try:
        candidate = (root / rel).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate


def locate_page(page: str | Path) -> tuple[Path, str]:
    """Split a page path into (folder to serve, file name); a folder means its ``index.html``."""
    path = Path(page).expanduser().resolve()
    if path.is_dir():
        index = path / "index.html"
        if not index.is_file():
            raise ToolError(f"{path} has no index.html")
        return path, "index.html"
    if not path.is_file():
        raise ToolError(f"page not found: {path}")
    return path.parent, path.name


class PageServer:
    """An aiohttp server on 127.0.0.1 (ephemeral port) for one page; an async context manager."""

    def __init__(
        self,
        page: str | Path,
        assets_dir: str | Path | None = None,
        listen: Callable[[], Awaitable[socket.socket]] | None = None,
        clock_start_ms: int | None = None,
        file_paths: bool = False,
    ) -> None:
        """``clock_start_ms``, when given, is the page clock's start: ``Date`` headers then read that
        clock (advancing with real time from the server's start) instead of the machine's.
        ``file_paths``: serve as a ``file://`` load resolves (see the module's docstring)."""
        self.root, self.entry = locate_page(page)
        self.file_paths = file_paths
        self._clock_start_ms = clock_start_ms
        self._started = time.monotonic()
        self._listen = listen
        self.assets: Path | None = Path(assets_dir).expanduser().resolve() if assets_dir else None
        if self.assets is not None and not self.assets.is_dir():
            raise ToolError(f"assets folder not found: {self.assets}")
        self.requests: list[str] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """URL of the page itself."""
        if self.file_paths:
            return f"{self.origin}{quote((self.root / self.entry).as_posix())}"
        return f"{self.origin}/{self.entry}"

    def _lookup(self, path: str) -> Path | None:
        if self.file_paths:
            return self._as_file(path)
        for prefix in _ASSET_PREFIXES:
            if path.startswith(prefix):
                if self.assets is None:
                    return None
                return resolve_inside(self.assets, path[len(prefix) :])
        rel = path.lstrip("/") or self.entry
        found = resolve_inside(self.root, rel)
        if found is None and self.assets is not None:
            found = self._relative_asset(path)
        return found

    def _as_file(self, path: str) -> Path | None:
        """The file a ``file://`` URL with this path names, if it lies in the page's folder or the
        task's assets folder (a ``file://`` page could read more; the sandbox answers no more)."""
        if "\x00" in path:
            return None
        try:
            found = Path(posixpath.normpath(path)).resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        roots = (self.root, *((self.assets,) if self.assets is not None else ()))
        if not any(found.is_relative_to(root) for root in roots) or not found.is_file():
            return None
        return found

    def _relative_asset(self, path: str) -> Path | None:
        """An asset named by a page-relative path (``.../assets/<file>``), after URL normalisation."""
        assert self.assets is not None
        parts = posixpath.normpath("/" + path.lstrip("/")).split("/")
        for i in range(len(parts) - 2, -1, -1):
            if parts[i] == "assets":
                found = resolve_inside(self.assets, "/".join(parts[i + 1 :]))
                if found is not None:
                    return found
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405)
        target = self._lookup(request.path)
        if target is None:
            if request.path == "/favicon.ico":
                return web.Response(status=204)
            return web.Response(status=404, text="not found")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        headers = {"Cache-Control": "no-store", "Content-Type": ctype}
        return web.FileResponse(target, headers=headers)

    async def _scrub_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        """Drop headers that reveal the real time; date the response by the page's clock."""
        del request
        for name in ("Last-Modified", "ETag"):
            response.headers.popall(name, None)
        if self._clock_start_ms is not None:
            now_ms = self._clock_start_ms + (time.monotonic() - self._started) * 1000
            response.headers["Date"] = formatdate(now_ms / 1000, usegmt=True)

    async def start(self) -> None:
        """Bind the server to an ephemeral port on 127.0.0.1 (or serve the socket ``listen`` gives)."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_response_prepare.append(self._scrub_headers)
        self._started = time.monotonic()
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        # A browser in a network namespace hands over a socket made there (see tools/jail.py).
        site = (
            web.SockSite(runner, await self._listen())
            if self._listen is not None
            else web.TCPSite(runner, "127.0.0.1", 0)
        )
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Shut the server down."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> PageServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
