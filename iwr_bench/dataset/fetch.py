"""Download the official IWR-Bench dataset (needs internet)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

from iwr_bench.errors import UserError

DEFAULT_REPO = os.environ.get("IWR_DATASET_REPO", "IWR-Bench/IWR-Bench")
"""The hub dataset the authors publish (about 2.7 GB: ``data.jsonl``, ``data/`` and a loader
script); override with ``--repo`` or ``IWR_DATASET_REPO`` if they move it."""


def hub_endpoint() -> str:
    """The hub base URL huggingface_hub will use (``HF_ENDPOINT`` or the public hub)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def check_reachable(endpoint: str, timeout: float = 5.0) -> None:
    """Fail fast, with one clear line, when the hub cannot be reached.

    Raises:
        UserError: when the host does not resolve or does not accept a connection.
    """
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        raise UserError("HF_HUB_OFFLINE is set; unset it to download the dataset")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot reach {endpoint} ({exc.__class__.__name__}: {exc}); "
            "this machine seems offline: download the dataset elsewhere and pass its folder to --tasks"
        ) from exc


def fetch_dataset(dest: Path, repo: str = DEFAULT_REPO, revision: str | None = None) -> Path:
    """Download the dataset snapshot into ``dest`` and return the folder holding ``data.jsonl``.

    Raises:
        UserError: when offline, or when the download fails.
    """
    endpoint = hub_endpoint()
    check_reachable(endpoint)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    try:
        folder = snapshot_download(repo_id=repo, repo_type="dataset", revision=revision, local_dir=dest)
    except (HfHubHTTPError, OSError) as exc:
        raise UserError(f"download of {repo} from {endpoint} failed: {exc}") from exc
    root = Path(folder)
    found = sorted(root.rglob("data.jsonl"))
    if not found:
        raise UserError(f"{repo} downloaded to {root} but holds no data.jsonl")
    return found[0].parent
