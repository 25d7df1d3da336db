"""Build the real-app suite: open-source web apps, fetched from npm, recorded from our own scripts.

The project commits no third-party code or pages. Each app under ``real-apps/<slug>/`` holds only
what we wrote: ``source.yaml`` (the npm package pinned by version and sha512 integrity, its
licence, and how its files make a site), ``task.yaml`` (the action script) and ``mutants.yaml``.
``python -m iwr_bench.suites.real_apps`` (``make real-suite``) downloads each package from the npm
registry into the cache (once; the integrity is checked every time), lays out the site, records
and proves the task, and writes the mutants, all under ``~/.cache/iwr-bench/real-apps/``
(``$IWR_BENCH_CACHE_DIR``). ``--fetch-only`` stops after the downloads (set-up runs that, so
that everything later works offline). Judge the result with::

    iwr judges eval --tasks ~/.cache/iwr-bench/real-apps/tasks --cases ~/.cache/iwr-bench/real-apps/mutants
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import yaml
from pydantic import BaseModel, Field, ValidationError

from iwr_bench.agents.proof import OracleProver
from iwr_bench.dataset.layout import REFERENCE_DIR
from iwr_bench.dataset.recorder import RecordConfig, RecordError, record
from iwr_bench.dataset.script import load_script
from iwr_bench.dataset.vendor import VendorSources
from iwr_bench.errors import UserError
from iwr_bench.metrics.cache import default_cache_dir
from iwr_bench.suites.build import write_mutants
from iwr_bench.tools.pool import PagePool, PoolConfig

HERE = Path(__file__).resolve().parent
APPS = HERE / "real-apps"
DEFAULT_REGISTRY = "https://registry.npmjs.org"


def registry() -> str:
    """Where packages are downloaded from: ``$IWR_BENCH_NPM_REGISTRY`` (a mirror), else npm's."""
    return os.environ.get("IWR_BENCH_NPM_REGISTRY") or DEFAULT_REGISTRY


MAX_TARBALL = 64 * 1024 * 1024


def default_out() -> Path:
    """``<cache>/real-apps``: tasks, mutants, packages and laid-out sites."""
    return default_cache_dir() / "real-apps"


class Package(BaseModel):
    """One npm package, pinned."""

    name: str = Field(pattern=r"^(@[a-z0-9._-]+/)?[a-z0-9._-]+$")
    version: str = Field(pattern=r"^[0-9A-Za-z.+-]+$")
    integrity: str = Field(pattern=r"^sha512-[A-Za-z0-9+/=]+$")
    """The registry's ``dist.integrity``: every download is checked against it."""

    @property
    def tarball_url(self) -> str:
        base = self.name.rsplit("/", 1)[-1]
        return f"{registry().rstrip('/')}/{self.name}/-/{base}-{self.version}.tgz"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


class Source(BaseModel):
    """Where an app comes from and how its files make a site (``source.yaml``)."""

    package: Package
    license: str
    """The package's licence, as its package.json states it."""
    homepage: str
    """Where the project lives, for credit."""
    root: str = ""
    """Folder of the package the site is copied from."""
    entry: str = "index.html"
    """The page, relative to ``root``, that becomes the site's ``index.html``."""
    files: dict[str, str] = Field(default_factory=dict)
    """Further files: site path -> package path (files the page reaches outside ``root``)."""
    drop_hosts: list[str] = Field(default_factory=list)
    """Hosts of trackers and social widgets: ``<script>`` and ``<iframe>`` elements of the entry
    page that load from them, or inline scripts that name them, are removed (no task needs them,
    and the sandbox would refuse them)."""
    vendor: list[Package] = Field(default_factory=list)
    """npm packages the page loads from a CDN; recording brings those files in from them."""


@dataclass(frozen=True)
class App:
    """One app folder of the real-app suite."""

    slug: str
    folder: Path
    source: Source


def load_apps(apps: Path = APPS, only: set[str] | None = None) -> list[App]:
    """The apps under ``apps`` (folders with ``source.yaml``), or those named in ``only``.

    Raises:
        UserError: when a ``source.yaml`` is invalid, or ``only`` names an app that is not there.
    """
    found: list[App] = []
    for folder in sorted(p for p in apps.iterdir() if (p / "source.yaml").is_file()):
        try:
            source = Source.model_validate(
                yaml.safe_load((folder / "source.yaml").read_text(encoding="utf-8"))
            )
        except (yaml.YAMLError, ValidationError) as exc:
            raise UserError(f"{folder / 'source.yaml'}: {exc}") from exc
        found.append(App(folder.name, folder, source))
    if only:
        missing = only - {a.slug for a in found}
        if missing:
            raise UserError(
                f"no such real app: {', '.join(sorted(missing))} (have {', '.join(a.slug for a in found)})"
            )
        found = [a for a in found if a.slug in only]
    return found


def integrity(data: bytes) -> str:
    """The npm ``dist.integrity`` string of ``data`` (sha512, base64)."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _download(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read(MAX_TARBALL + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise OSError(f"HTTP {exc.code}") from None
    if len(data) > MAX_TARBALL:
        raise OSError(f"larger than {MAX_TARBALL // (1024 * 1024)} MiB")
    return data


def fetch_package(package: Package, store: Path, timeout: float = 60.0) -> Path:
    """The unpacked package (its ``package/`` folder), downloaded into ``store`` when not there.

    The tarball is kept; it is checked against ``package.integrity`` whenever it is unpacked, and a
    cached one that does not match is downloaded again.

    Raises:
        UserError: when the download fails or the bytes do not match the pinned integrity.
    """
    folder = store / package.label.replace("/", "+")
    tarball = store / f"{folder.name}.tgz"
    unpacked = folder / "package"
    if unpacked.is_dir() and (folder / ".verified").is_file():
        return unpacked
    data = tarball.read_bytes() if tarball.is_file() else b""
    if integrity(data) != package.integrity:
        try:
            data = _download(package.tarball_url, timeout)
        except OSError as exc:
            raise UserError(
                f"cannot download {package.label} from {package.tarball_url}: {exc} "
                "(set-up downloads it while the npm registry answers; IWR_BENCH_NPM_REGISTRY names a mirror)"
            ) from exc
        if integrity(data) != package.integrity:
            raise UserError(
                f"{package.label}: the download does not match the pinned integrity {package.integrity}"
            )
        store.mkdir(parents=True, exist_ok=True)
        partial = tarball.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(tarball)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        archive.extractall(folder, filter="data")
    if not unpacked.is_dir():
        raise UserError(f"{package.label}: the tarball has no package/ folder")
    (folder / ".verified").write_text(package.integrity + "\n")
    return unpacked


def _package_file(package_dir: Path, rel: str, what: str) -> Path:
    path = (package_dir / rel).resolve()
    if not path.is_relative_to(package_dir.resolve()) or not path.exists():
        raise UserError(f"{what}: {rel} is not in the package")
    return path


_TAG = re.compile(r"<(script|iframe)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def drop_hosts(html: str, hosts: list[str]) -> tuple[str, int]:
    """``html`` without the script and iframe elements that load from or name one of ``hosts``."""
    if not hosts:
        return html, 0
    dropped = 0

    def keep(match: re.Match[str]) -> str:
        nonlocal dropped
        if any(host in match.group(0) for host in hosts):
            dropped += 1
            return ""
        return match.group(0)

    return _TAG.sub(keep, html), dropped


def lay_out(app: App, package_dir: Path, site: Path) -> Path:
    """Write ``app``'s site into ``site`` from its unpacked package; returns ``site``.

    Raises:
        UserError: when a named file or folder is not in the package, or a host to drop is not
            found (the recipe no longer fits the package).
    """
    source = app.source
    root = _package_file(package_dir, source.root or ".", app.slug)
    entry = _package_file(root, source.entry, app.slug)
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(root, site, symlinks=False)
    for dest, rel in source.files.items():
        target = (site / dest).resolve()
        if not target.is_relative_to(site.resolve()):
            raise UserError(f"{app.slug}: site path {dest} leaves the site")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_package_file(package_dir, rel, app.slug), target)
    html = entry.read_text(encoding="utf-8")
    html, dropped = drop_hosts(html, source.drop_hosts)
    if source.drop_hosts and not dropped:
        raise UserError(f"{app.slug}: no element of {source.entry} loads from {', '.join(source.drop_hosts)}")
    (site / "index.html").write_text(html, encoding="utf-8")
    return site


@dataclass
class Built:
    """What :func:`build` made of one app."""

    slug: str
    task_id: int
    mutants: int
    ifs: float
    lowest_checkpoint: float


async def build(
    out: Path,
    only: set[str] | None = None,
    fetch_only: bool = False,
    apps: Path = APPS,
    store: Path | None = None,
) -> list[Built]:
    """Fetch every app's packages, then (unless ``fetch_only``) record and prove it and write its mutants.

    Tasks go to ``out/tasks`` (official layout), mutants to ``out/mutants/<id>/<name>``, packages to
    ``store`` (default ``out/npm``).

    Raises:
        UserError: when a package cannot be had, or an app does not record and prove itself.
    """
    chosen = load_apps(apps, only)
    store = store or out / "npm"
    fetched: dict[str, tuple[Path, list[Path]]] = {}
    for app in chosen:
        main = await anyio.to_thread.run_sync(fetch_package, app.source.package, store)
        extra = [await anyio.to_thread.run_sync(fetch_package, p, store) for p in app.source.vendor]
        fetched[app.slug] = (main, extra)
    if fetch_only:
        return []
    tasks, mutants = out / "tasks", out / "mutants"
    built: list[Built] = []
    failed: list[str] = []
    prover = OracleProver()
    async with PagePool(PoolConfig(size=1, settle=RecordConfig().settle)) as pool:
        for app in chosen:
            main, extra = fetched[app.slug]
            site = await anyio.to_thread.run_sync(lay_out, app, main, out / "sites" / app.slug)
            script = load_script(app.folder / "task.yaml")
            vendor = VendorSources(tuple(extra)) if extra else None
            try:
                done = await record(
                    site,
                    script,
                    tasks,
                    pool=pool,
                    prove=prover,
                    vendor=vendor,
                    progress=lambda line, slug=app.slug: print(f"  {slug}: {line}", flush=True),
                )
            except RecordError as exc:
                failed.append(app.slug)
                print(f"{app.slug}: error: {exc}", file=sys.stderr, flush=True)
                continue
            shutil.rmtree(mutants / str(script.id), ignore_errors=True)
            n = write_mutants(app.folder, script.id, done.folder / REFERENCE_DIR, mutants)
            proof = done.proof
            low = min(proof.checkpoint_scores.values(), default=1.0) if proof else 1.0
            item = Built(app.slug, script.id, n, proof.ifs * 100 if proof else 0.0, low)
            built.append(item)
            print(
                f"{app.slug} ({app.source.package.label}, {app.source.license}): task {script.id}, "
                f"{n} mutants; oracle IFS {item.ifs:.0f}, lowest checkpoint {low:.3f}",
                flush=True,
            )
            for warning in done.warnings:
                print(f"  warning: {warning}", flush=True)
    if failed:
        raise UserError(f"{len(failed)} real app(s) did not record and prove: {', '.join(failed)}")
    return built


def main(argv: list[str] | None = None) -> int:
    """``python -m iwr_bench.suites.real_apps [--only SLUG ...] [--fetch-only] [--out DIR]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="*", default=None, help="these apps only (folder names)")
    parser.add_argument("--fetch-only", action="store_true", help="download the packages and stop")
    parser.add_argument("--out", type=Path, default=None, help="where to build (default <cache>/real-apps)")
    args = parser.parse_args(argv)
    out = (args.out or default_out()).expanduser().resolve()
    try:
        anyio.run(build, out, set(args.only) if args.only else None, args.fetch_only)
    except UserError as exc:
        print(f"real-apps: error: {exc}", file=sys.stderr)
        return 2
    if not args.fetch_only:
        print(f"judge them: iwr judges eval --tasks {out / 'tasks'} --cases {out / 'mutants'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
