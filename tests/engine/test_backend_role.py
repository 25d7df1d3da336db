"""The execution backend as a registered role: built-in ``in-process`` and ``ray``, a plugin's own
backend picked by ``[backend] kind`` with its options, and the one-line errors for a bad one.
No browser, no Ray instance."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iwr_bench import registry
from iwr_bench.cli import main
from iwr_bench.engine.backends.base import backend_record, make_backend
from iwr_bench.engine.backends.inprocess import InProcessBackend
from iwr_bench.engine.config import RunConfig, parse_run_config
from iwr_bench.errors import UserError

WELL_FORMED = '''
from iwr_bench.engine.backends.inprocess import InProcessBackend
from iwr_bench.plugins import register


class Labelled(InProcessBackend):
    name = "test-labelled"

    def __init__(self, label, workers, config):
        super().__init__()
        self.label, self.workers, self.config = label, workers, config

    def describe(self):
        return {"kind": self.name, "label": self.label, "workers": self.workers}


@register("backend", "test-labelled")
def labelled(label: str, workers: int = 1, config=None) -> Labelled:
    """In-process, with a label."""
    return Labelled(label, workers, config)
'''

NO_REPLAY = '''
from iwr_bench.registry import register


class NoReplay:
    """Every member of a backend but ``replay``."""

    name = "test-no-replay"

    def connect(self): ...
    def describe(self): return {}
    def metrics(self, cfg, limits, timer, background): ...
    def open(self, pool): ...
    async def measure(self, task, replay, evidence, metrics, protocol): ...
    def replays_over(self): ...


@register("backend", "test-no-replay")
def no_replay() -> NoReplay:
    return NoReplay()
'''


def _plugin(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    registry.load_plugins([str(path)])
    return path


def test_in_process_is_the_default_design() -> None:
    config = RunConfig()
    backend = make_backend(config)
    assert isinstance(backend, InProcessBackend)
    record = backend_record(config, backend)
    assert record == {
        "kind": "in-process",
        "design": {
            "name": "in-process",
            "kind": "builtin",
            "module": "iwr_bench.engine.backends.designs",
            "options": {},
        },
    }
    assert {"in-process", "ray"} <= set(registry.names("backend"))
    ray = registry.describe("backend", "ray")
    assert (ray.options, ray.receives, ray.origin.kind) == ([], ["config"], "builtin")


def test_a_plugin_backend_is_built_with_its_options_and_the_run_config(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "labelled.py", WELL_FORMED)
    config = parse_run_config(
        {"backend": {"kind": "test-labelled", "options": {"label": "blue", "workers": 3}}}
    )
    backend = make_backend(config)
    assert type(backend).__name__ == "Labelled" and backend.name == "test-labelled"
    assert (backend.label, backend.workers, backend.config) == ("blue", 3, config)  # type: ignore[attr-defined]
    record = backend_record(config, backend)
    assert record["kind"] == "test-labelled" and record["label"] == "blue" and record["workers"] == 3
    design = record["design"]
    assert (design["name"], design["kind"], design["path"]) == ("test-labelled", "file", str(path))
    assert len(design["sha256"]) == 64 and design["options"] == {"label": "blue", "workers": 3}
    listed = registry.describe("backend", "test-labelled")
    assert [(o.name, o.required) for o in listed.options][:2] == [("label", True), ("workers", False)]
    assert listed.receives == ["config"] and listed.summary == "In-process, with a label."
    with pytest.raises(UserError, match=r"^bad options for backend 'test-labelled': .*'label'"):
        make_backend(parse_run_config({"backend": {"kind": "test-labelled"}}))  # label is required


def test_a_product_lacking_a_member_fails_in_one_line_naming_the_design(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "no_replay.py", NO_REPLAY)
    config = parse_run_config({"backend": {"kind": "test-no-replay"}})
    with pytest.raises(UserError) as info:
        make_backend(config)
    message = str(info.value)
    assert "\n" not in message
    assert message == (
        f"backend 'test-no-replay' (file {path}): its factory returned NoReplay, "
        "which cannot play the backend role: it has no replay"
    )


def test_an_unknown_backend_names_the_known_ones() -> None:
    config = parse_run_config({"backend": {"kind": "spark"}})
    with pytest.raises(UserError) as info:
        make_backend(config)
    assert re.fullmatch(r"unknown backend 'spark' \(known: in-process, ray(, [\w-]+)*\)", str(info.value))


def test_an_unknown_backend_stops_iwr_run_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", "--backend", "spark", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("iwr: error: unknown backend 'spark' (known: in-process, ray")
    assert not out.exists()
    assert main(["run", "--backend", "spark", "--address", "h:1", "--out", str(out), "--quiet"]) == 2
    assert "--address joins a Ray cluster: add --backend ray" in capsys.readouterr().err
    assert main(["judges", "eval", "--ray-address", "h:1", "--quiet"]) == 2
    assert "--ray-address joins a Ray cluster: add --backend ray" in capsys.readouterr().err


def test_a_resume_names_a_backend_design_that_is_gone() -> None:
    gone = {
        "name": "test-gone",
        "kind": "file",
        "module": "iwr_plugin_gone",
        "path": "/nowhere/gone.py",
        "sha256": "0" * 64,
        "options": {},
    }
    expected = r"^cannot resume: backend 'test-gone' came from file /nowhere/gone\.py"
    with pytest.raises(UserError, match=expected):
        registry.reload_recorded([], [], {"backend": gone})


def test_ray_is_imported_only_when_its_factory_runs() -> None:
    """Listing the backends and building in-process import neither Ray nor the Ray backend's
    module; building ``ray`` imports the latter (Ray itself waits for ``connect()``). In a fresh
    interpreter, since other tests may have imported Ray in this one."""
    script = textwrap.dedent(
        """
        import sys
        from iwr_bench import registry
        from iwr_bench.engine.backends.base import make_backend
        from iwr_bench.engine.config import parse_run_config

        RAY_BACKEND = "iwr_bench.engine.backends.ray_backend"
        registry.names("backend")
        registry.describe("backend", "ray")
        make_backend(parse_run_config({}))
        print(RAY_BACKEND in sys.modules, "ray" in sys.modules)
        backend = make_backend(parse_run_config({"backend": {"kind": "ray"}}))
        print(RAY_BACKEND in sys.modules, type(backend).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "False", "True", "RayBackend"]
