"""The backend seam without a browser or a cluster: settings, content-addressed folders, and a
lost worker recorded as ``worker_lost``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iwr_bench.engine.backends.base import WorkerLost, make_backend
from iwr_bench.engine.backends.content import pack, unpack
from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.lifecycle import Recorder
from iwr_bench.engine.store import RunStore
from iwr_bench.errors import UserError


def test_the_default_backend_is_in_process_and_needs_no_ray() -> None:
    config = parse_run_config({})
    assert config.backend.kind == "in-process"
    backend = make_backend(config)
    backend.connect()
    assert backend.describe() == {"kind": "in-process"}
    script = (
        "import sys; from iwr_bench.engine.run import Engine; from iwr_bench.engine.backends.base "
        "import make_backend; from iwr_bench.engine.config import parse_run_config; "
        "make_backend(parse_run_config({})).connect(); print('ray' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"  # the engine and the default backend never import Ray


def test_backend_settings_are_checked() -> None:
    config = parse_run_config({"backend": {"kind": "ray", "address": "head:6379", "tries": 2}})
    assert (config.backend.kind, config.backend.address, config.backend.tries) == ("ray", "head:6379", 2)
    with pytest.raises(UserError, match="backend"):
        parse_run_config({"backend": {"kind": "ray", "tries": 0}})
    spark = parse_run_config({"backend": {"kind": "spark"}})  # any name: a plugin may register it
    with pytest.raises(UserError, match=r"^unknown backend 'spark' \(known: in-process, ray"):
        make_backend(spark)


def test_folders_travel_by_content_digest(tmp_path: Path) -> None:
    page = tmp_path / "page"
    (page / "img").mkdir(parents=True)
    (page / "index.html").write_text("<p>hi</p>", encoding="utf-8")
    (page / "img" / "a.png").write_bytes(b"\x89PNG")
    packed = pack(page)
    assert pack(page).digest == packed.digest
    cache = tmp_path / "cache"
    local = unpack(packed, cache)
    assert local == cache / packed.digest and (local / "img" / "a.png").read_bytes() == b"\x89PNG"
    assert unpack(packed, cache) == local and len(list(cache.iterdir())) == 1  # kept, not rewritten
    (page / "index.html").write_text("<p>changed</p>", encoding="utf-8")
    assert pack(page).digest != packed.digest
    single = pack(page / "index.html")
    assert unpack(single, cache) == cache / single.digest / "index.html"


def test_a_lost_worker_is_recorded_as_worker_lost(tmp_path: Path) -> None:
    store = RunStore.open_run(tmp_path)
    try:
        recorder = Recorder(store, EventBus(store), tmp_path, retry_failed=False)
        jid, todo = recorder.open("judge", 101, "oracle")
        assert todo
        with recorder.job("judge", 101, "oracle") as handle:
            handle.started()
            raise ExceptionGroup("metric batch", [WorkerLost("the metric worker died 3 times")])
        row = store.job(jid)
        assert row is not None and row.status == "failed" and row.failure == "worker_lost"
        assert "died 3 times" in row.message
    finally:
        store.close()


def test_remote_tools_take_what_page_tools_take() -> None:
    """The Ray backend's proxy has every public tool of :class:`PageTools`, with the same
    parameters and defaults (a new parameter added to one and not the other broke Ray runs)."""
    import inspect

    from iwr_bench.engine.backends.ray_remote import RemoteTools
    from iwr_bench.tools.tools import PageTools

    def params(fn: object) -> list[tuple[str, object]]:
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]

    for name, fn in inspect.getmembers(PageTools, inspect.iscoroutinefunction):
        if not name.startswith("_"):
            assert params(getattr(RemoteTools, name)) == params(fn), name
