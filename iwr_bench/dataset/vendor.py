"""Bring the files a site loads from other origins (CDN fonts, icon sets, scripts) into the site.

A task must work offline from its own folder, so the sandbox refuses every other origin. A real
site often names a CDN: ``<link href="https://cdn.jsdelivr.net/npm/bootstrap-icons@1.11.3/...">``.
:func:`vendor_urls` fetches each refused URL from the sources it is given (folders, in order, then
the network when allowed), stores it under ``vendor/<host>/<path>`` in the site, and points the
site's HTML, CSS and scripts at the local copy. A stylesheet brought in this way has its own
``url(...)`` and ``@import`` references brought in too, so an icon font arrives with its CSS.

A folder source is searched three ways for ``https://<host>/<path>``:

- a mirror: ``<folder>/<host>/<path>`` (what ``wget -x`` writes);
- npm packages, for the npm CDNs (jsdelivr ``/npm/<name>@<version>/<file>``, unpkg
  ``/<name>@<version>/<file>``): ``<folder>/<name>/<file>`` or
  ``<folder>/node_modules/<name>/<file>``, or ``<folder>/<file>`` when the folder is that package;
- flat: ``<folder>/<file name>``.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import aiohttp
import anyio.to_thread

from iwr_bench.errors import UserError

VENDOR_DIR = "vendor"
"""Folder of the site that holds the local copies."""

NETWORK = "network"
"""The source name that allows fetching from the network."""

MAX_FILE_BYTES = 30 * 1024 * 1024
"""Largest file brought in."""

_TEXT_SUFFIXES = (".html", ".htm", ".css", ".js", ".mjs")
_CSS_REF = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")
_NPM_CDNS = {"cdn.jsdelivr.net": "/npm/", "unpkg.com": "/"}
_SAFE = re.compile(r"[^A-Za-z0-9._@+-]")
_KINDS = {"Stylesheet": "text/css", "Script": "text/javascript"}
_TYPES = {
    "text/css": ".css",
    "text/javascript": ".js",
    "application/javascript": ".js",
    "font/woff2": ".woff2",
    "font/woff": ".woff",
    "font/ttf": ".ttf",
    "image/svg+xml": ".svg",
}


@dataclass(frozen=True)
class VendorSources:
    """Where other-origin files may come from: folders (searched in order), then the network."""

    folders: tuple[Path, ...] = ()
    network: bool = False
    timeout: float = 20.0
    """Seconds allowed for one network fetch."""

    @classmethod
    def parse(cls, values: Sequence[str]) -> VendorSources:
        """``--vendor`` values: folders, and the word ``network``.

        Raises:
            UserError: when a value is neither an existing folder nor ``network``.
        """
        folders: list[Path] = []
        network = False
        for value in values:
            if value == NETWORK:
                network = True
                continue
            folder = Path(value).expanduser()
            if not folder.is_dir():
                raise UserError(f"--vendor {value}: not a folder (give a folder, or the word '{NETWORK}')")
            folders.append(folder.resolve())
        return cls(tuple(folders), network)

    def describe(self) -> str:
        """The sources in words, for messages."""
        names = [str(f) for f in self.folders] + ([NETWORK] if self.network else [])
        return ", ".join(names) or "none"


@dataclass
class Fetched:
    """One file brought in."""

    url: str
    local: str
    """Site-relative path of the copy."""
    source: str
    """Where it came from (a file path or ``network``)."""


@dataclass
class VendorReport:
    """What :func:`vendor_urls` did."""

    fetched: list[Fetched] = field(default_factory=list[Fetched])
    missing: dict[str, str] = field(default_factory=dict[str, str])
    """URL -> why it could not be brought in."""
    unreferenced: list[str] = field(default_factory=list[str])
    """URLs brought in that no site file names literally (a script builds them): still refused."""


def local_path(url: str, content_type: str = "") -> str:
    """Site-relative path of the copy of ``url``: ``vendor/<host>/<path>``, made safe.

    A query string becomes a short hash in the name (``css2?family=Inter`` -> ``css2_3f2a...``),
    and a name without a file suffix gets one from ``content_type`` so the page server types it.
    """
    parts = urlsplit(url)
    host = _SAFE.sub("_", parts.netloc.lower()) or "_"
    path = unquote(parts.path)
    if not path or path.endswith("/"):
        path += "index"
    segments = [_safe_segment(s) for s in path.split("/") if s]
    name = segments[-1]
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, ""
    if parts.query:
        stem = f"{stem}_{hashlib.sha1(parts.query.encode()).hexdigest()[:10]}"
    if not suffix:
        suffix = _TYPES.get(content_type.split(";")[0].strip().lower(), "").lstrip(".")
    segments[-1] = f"{stem}.{suffix}" if suffix else stem
    return "/".join([VENDOR_DIR, host, *segments])


def _safe_segment(segment: str) -> str:
    cleaned = _SAFE.sub("_", segment)
    return "_" if cleaned in ("", ".", "..") else cleaned


def _npm_file(url: str) -> tuple[str, str] | None:
    """(package name, file inside it) of an npm CDN URL, else None."""
    parts = urlsplit(url)
    prefix = _NPM_CDNS.get((parts.hostname or "").lower())
    if prefix is None or not parts.path.startswith(prefix):
        return None
    rest = unquote(parts.path[len(prefix) :]).rstrip("/").split("/")
    count = 2 if rest and rest[0].startswith("@") else 1  # @scope/name
    if len(rest) < count or not rest[count - 1]:
        return None
    name = "/".join(rest[:count]).rsplit("@", 1)[0] if "@" in rest[count - 1][1:] else "/".join(rest[:count])
    return name, "/".join(rest[count:])  # "" for the package itself (its entry file)


_ENTRY_FIELDS = ("jsdelivr", "unpkg", "browser", "main")
"""package.json fields the npm CDNs read, in order, for a URL that names only the package."""


def _package_entry(package_dir: Path) -> str | None:
    """The file an npm CDN serves for the bare package URL, relative to ``package_dir``."""
    try:
        meta = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for key in _ENTRY_FIELDS:
        value = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(value, str) and value.strip():
            return posixpath.normpath(value.strip()).lstrip("/")
    return "index.js"


def _inside(root: Path, rel: str) -> Path | None:
    target = (root / rel).resolve()
    return target if target.is_relative_to(root) and target.is_file() else None


def find_in_folder(folder: Path, url: str) -> Path | None:
    """The copy of ``url`` in ``folder`` (mirror, npm package or flat layout), else None."""
    parts = urlsplit(url)
    path = unquote(parts.path).lstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    candidates = [f"{host}/{path}{query}" for host in (parts.netloc, parts.hostname) if query]
    candidates += [f"{parts.netloc}/{path}", f"{parts.hostname}/{path}"]
    npm = _npm_file(url)
    if npm is not None:
        name, inner = npm
        package = folder / "package.json"
        try:
            own = json.loads(package.read_text()).get("name") if package.is_file() else None
        except (OSError, ValueError):
            own = None
        homes = [folder / name, folder / "node_modules" / name] + ([folder] if own == name else [])
        for home in homes:
            file = inner or (_package_entry(home) if home.is_dir() else None)
            if file:
                candidates.append(str((home / file).relative_to(folder)) if home != folder else file)
    if path:
        candidates.append(posixpath.basename(path))
    for rel in candidates:
        found = _inside(folder, rel) if rel and not rel.endswith("/") else None
        if found is not None:
            return found
    return None


async def _download(session: aiohttp.ClientSession, url: str) -> tuple[bytes, str]:
    """The body and content type of ``url`` (the session's timeout bounds it)."""
    async with session.get(url, allow_redirects=True) as response:
        if response.status != 200:
            raise OSError(f"HTTP {response.status}")
        body = bytearray()
        async for chunk in response.content.iter_chunked(1 << 16):
            body += chunk
            if len(body) > MAX_FILE_BYTES:
                raise OSError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        return bytes(body), response.headers.get("Content-Type", "")


class _Fetcher:
    """Brings files in from the sources, once each, following stylesheets' references."""

    def __init__(self, site: Path, sources: VendorSources, session: aiohttp.ClientSession | None) -> None:
        self.site = site
        self.sources = sources
        self.session = session
        self.report = VendorReport()
        self.done: dict[str, str] = {}

    async def get(self, url: str, kind: str = "") -> str | None:
        """Bring ``url`` in; its site-relative local path, or None (recorded as missing).

        ``kind``: what loaded it (a CDP resource type: Stylesheet, Script, ...), which types a
        copy whose name has no suffix.
        """
        url = url.split("#", 1)[0]
        if url in self.done:
            return self.done[url]
        if url.endswith("\u2026"):
            self.report.missing[url] = "the URL was cut short in the log (too long to fetch)"
            return None
        body, content_type, source = await self._load(url)
        if body is None:
            return None
        guessed = content_type or mimetypes.guess_type(urlsplit(url).path)[0] or _KINDS.get(kind, "")
        local = local_path(url, guessed)
        self.done[url] = local
        if local.endswith(".css"):
            body = (await self._css(url, local, body.decode("utf-8", "replace"))).encode()
        target = self.site / local
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        self.report.fetched.append(Fetched(url, local, source))
        return local

    async def _load(self, url: str) -> tuple[bytes | None, str, str]:
        for folder in self.sources.folders:
            found = find_in_folder(folder, url)
            if found is not None:
                if found.stat().st_size > MAX_FILE_BYTES:
                    self.report.missing[url] = f"{found} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
                    return None, "", ""
                return found.read_bytes(), "", str(found)
        if self.session is None:
            self.report.missing[url] = f"not in {self.sources.describe()}"
            return None, "", ""
        try:
            body, content_type = await _download(self.session, url)
        except (OSError, aiohttp.ClientError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            self.report.missing[url] = f"not in the folders given, and the network said: {reason}"
            return None, "", ""
        return body, content_type, NETWORK

    async def _css(self, url: str, local: str, text: str) -> str:
        """Bring in what a stylesheet names, and point it at the local copies."""
        replacements: dict[str, str] = {}
        for match in _CSS_REF.finditer(text):
            ref = (match.group(2) or match.group(4) or "").strip()
            if not ref or ref.startswith(("data:", "#", "blob:")) or ref in replacements:
                continue
            target = await self.get(urljoin(url, ref), "Stylesheet" if match.group(4) else "")
            if target is not None:
                fragment = "#" + ref.split("#", 1)[1] if "#" in ref else ""
                replacements[ref] = posixpath.relpath(target, posixpath.dirname(local)) + fragment
        for ref, new in replacements.items():
            text = text.replace(f"({ref})", f"({new})").replace(f"'{ref}'", f"'{new}'")
            text = text.replace(f'"{ref}"', f'"{new}"')
        return text


def _spellings(url: str) -> list[str]:
    """How a page's source may write ``url``: as is, HTML-escaped, protocol-relative."""
    out = [url, url.replace("&", "&amp;")]
    scheme_less = url.split(":", 1)[1] if url.startswith(("http:", "https:")) else None
    if scheme_less is not None:
        out += [scheme_less, scheme_less.replace("&", "&amp;")]
    return list(dict.fromkeys(out))


def _point_at_copies(site: Path, copies: dict[str, str]) -> set[str]:
    """Rewrite the site's own HTML, CSS and scripts to name the local copies; the URLs rewritten."""
    rewritten: set[str] = set()
    vendor = site / VENDOR_DIR
    for path in sorted(site.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in _TEXT_SUFFIXES or path.is_relative_to(vendor):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        changed = text
        here = path.parent.relative_to(site).as_posix()
        # longest first, so a URL that begins another is not replaced inside it
        for url in sorted(copies, key=len, reverse=True):
            relative = posixpath.relpath(copies[url], here if here != "." else "")
            for spelling in _spellings(url):
                for quote in ('"', "'", "(", "`"):
                    close = ")" if quote == "(" else quote
                    needle = f"{quote}{spelling}{close}"
                    if needle in changed:
                        changed = changed.replace(needle, f"{quote}{relative}{close}")
                        rewritten.add(url)
        if changed != text and path.suffix.lower() in (".html", ".htm"):
            changed = _TAG.sub(_drop_integrity, changed)
        if changed != text:
            path.write_text(changed, encoding="utf-8")
    return rewritten


_TAG = re.compile(r"<(?:link|script)\b[^>]*>", re.IGNORECASE)
_INTEGRITY = re.compile(r"""\s+integrity\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)


def _drop_integrity(match: re.Match[str]) -> str:
    """A tag naming a local copy loses its ``integrity`` hash: a stylesheet copy is pointed at its
    own copies, so its bytes differ from the CDN's and the browser would refuse it."""
    tag = match.group(0)
    return _INTEGRITY.sub("", tag) if f"{VENDOR_DIR}/" in tag else tag


async def vendor_urls(
    site: Path, urls: Iterable[str] | Mapping[str, str], sources: VendorSources
) -> VendorReport:
    """Bring ``urls`` (and what their stylesheets name) into ``site`` and point the site at them.

    ``urls`` may map each URL to what loaded it (a CDP resource type, as the sandbox logs it).
    ``site`` is changed in place: give it a copy.
    """
    kinds = dict(urls) if isinstance(urls, Mapping) else dict.fromkeys(urls, "")
    wanted = {u.split("#", 1)[0]: k for u, k in kinds.items()}
    if sources.network:
        timeout = aiohttp.ClientTimeout(total=sources.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            fetcher = _Fetcher(site, sources, session)
            for url, kind in wanted.items():
                await fetcher.get(url, kind)
    else:
        fetcher = _Fetcher(site, sources, None)
        for url, kind in wanted.items():
            await fetcher.get(url, kind)
    report = fetcher.report
    copies = {url: fetcher.done[url] for url in wanted if url in fetcher.done}
    rewritten = await anyio.to_thread.run_sync(_point_at_copies, site, copies)
    report.unreferenced = [url for url in copies if url not in rewritten]
    return report
