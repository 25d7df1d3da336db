"""Content-addressed inputs: a page or task folder travels as its files plus a digest of them.

A worker on another node keeps what it received under ``<cache>/<digest>/`` and asks for a
folder again only when it does not hold that digest yet, so a task's assets cross the network
once per node, not once per page.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from pydantic import BaseModel


class Packed(BaseModel):
    """A folder (or one file) as data, named by the digest of its contents."""

    digest: str
    """SHA-256 over every file's relative path and bytes, in path order."""
    entry: str = ""
    """For a single packed file, its name (the page path is then ``<folder>/<entry>``); else empty."""
    files: dict[str, bytes]
    """Relative POSIX path to contents."""


def _walk(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def pack(path: Path) -> Packed:
    """``path`` (a folder, or a single file) as a :class:`Packed`."""
    if path.is_file():
        files = {path.name: path.read_bytes()}
        entry = path.name
    else:
        files = {p.relative_to(path).as_posix(): p.read_bytes() for p in _walk(path)}
        entry = ""
    digest = hashlib.sha256()
    digest.update(entry.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return Packed(digest=digest.hexdigest(), entry=entry, files=files)


def local_path(cache: Path, digest: str, entry: str = "") -> Path:
    """Where a packed folder with ``digest`` lives under ``cache`` (its file, for a single file)."""
    folder = cache / digest
    return folder / entry if entry else folder


def unpack(packed: Packed, cache: Path) -> Path:
    """Write ``packed`` under ``cache/<digest>`` (once: an existing copy is kept); its local path."""
    folder = cache / packed.digest
    if not folder.is_dir():
        staging = cache / f".{packed.digest}.{os.getpid()}"
        for name, data in packed.files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        staging.mkdir(parents=True, exist_ok=True)  # an empty folder packs to no files
        try:
            staging.rename(folder)
        except OSError:  # another worker of this node wrote it first: theirs is the same
            if not folder.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)
    return local_path(cache, packed.digest, packed.entry)
