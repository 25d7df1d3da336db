"""Judge lab: outside designs by entry point, run file and --plugin; options per role; origins in
the manifest; ``iwr judges list``; pages and mutants as models; ``--only`` on judge and generate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import Model

from iwr_bench.agents.generation.output import write_result
from iwr_bench.agents.generation.pages import MUTANTS, PageFolderGenerator
from iwr_bench.agents.judge.llm import LLMAssertionJudge
from iwr_bench.agents.judge.records import AssertionRequest, AssertionVerdict
from iwr_bench.cli import main
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.engine.config import JudgeSettings, generator_design, parse_run_config
from iwr_bench.engine.judge_model import StoredModel
from iwr_bench.engine.judges import build_judges
from iwr_bench.engine.limits import Limits
from iwr_bench.engine.run import builtin_suite
from iwr_bench.engine.store import RunStore
from iwr_bench.errors import UserError
from iwr_bench.registry import build, origin_of, register, reload_recorded

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DIST = "iwr-lab-examples"


def _dist(
    site: Path,
    modules: dict[str, str],
    *,
    name: str = DIST,
    version: str = "0.1",
    top: str = "iwr_lab",
) -> Path:
    """An installed distribution without pip: a package, a dist-info folder with entry points."""
    package = site / top
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    lines = ["[iwr_bench.plugins]"]
    for ep_name, source in modules.items():
        module = ep_name.replace("-", "_")
        (package / f"{module}.py").write_text(source, encoding="utf-8")
        lines.append(f"{ep_name} = {top}.{module}")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", "utf-8")
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "top_level.txt").write_text(f"{top}\n", encoding="utf-8")
    return site


@pytest.fixture
def lcs_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example grounder installed as ``iwr-lab-examples 0.1`` on a temporary sys.path entry."""
    site = _dist(tmp_path / "site", {"lcs": (EXAMPLES / "lcs_grounder.py").read_text(encoding="utf-8")})
    monkeypatch.syspath_prepend(str(site))
    return site


def _limits() -> Limits:
    return Limits(
        browser_pages=1, metric_workers=1, judge_calls=2, provider_calls={}, default_provider_calls=1
    )


def _judges(data: dict[str, Any]) -> Any:
    answers: dict[str, str] = {}
    settings = JudgeSettings.model_validate(data)
    return build_judges(settings, _limits(), answers.get, lambda k, r, d: answers.__setitem__(k, d))


# -- loading and listing ----------------------------------------------------------------------


def test_entry_point_and_file_designs_are_listed_with_origin_and_options(
    lcs_dist: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_file = str(EXAMPLES / "quoted_text_judge.py")
    assert main(["judges", "list", "--plugin", judge_file, "--json"]) == 0
    listed = {(d["role"], d["name"]): d for d in json.loads(capsys.readouterr().out)}
    lcs = listed["grounder", "lcs"]
    assert lcs["origin"]["kind"] == "entry point"
    assert (lcs["origin"]["distribution"], lcs["origin"]["version"]) == (DIST, "0.1")
    assert lcs["options"] == [{"name": "min_chars", "annotation": "int", "default": 3, "required": False}]
    quoted = listed["assertions", "quoted-text"]
    assert quoted["origin"]["kind"] == "file" and quoted["origin"]["path"] == judge_file
    assert len(quoted["origin"]["sha256"]) == 64
    assert listed["assertions", "llm"]["receives"] == ["judge_model", "votes", "retries"]
    assert listed["grounder", "heuristic"]["origin"]["kind"] == "builtin"
    assert ("generator", "mutants") in listed and ("rubric", "llm") in listed
    assert main(["judges", "list", "--role", "grounder"]) == 0
    table = capsys.readouterr().out
    assert f"entry point {DIST}==0.1" in table and "min_chars: int = 3" in table
    assert "quoted-text" not in table


@pytest.mark.parametrize(
    ("plugin", "options", "message"),
    [
        (
            "broken.py",
            "",
            "plugin '{dir}/broken.py': cannot import {dir}/broken.py: RuntimeError: no GPU",
        ),
        (
            "no_such_module_xyz",
            "",
            "plugin 'no_such_module_xyz': no module named 'no_such_module_xyz' "
            "(install the package that provides it, or give the path of a .py file)",
        ),
        ("", "min_chars = 0", "bad options for grounder 'lcs': min_chars must be at least 1"),
        ("", "colour = 'red'", "bad options for grounder 'lcs': got an unexpected keyword argument 'colour'"),
    ],
)
def test_bad_plugin_or_option_is_one_line_before_any_work(
    plugin: str,
    options: str,
    message: str,
    lcs_dist: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('no GPU')\n", encoding="utf-8")
    plugins = f"plugins = [{plugin!r}]\n" if plugin else ""
    run_file = tmp_path / "run.toml"
    run_file.write_text(
        f'{plugins}[judge.grounder]\nname = "lcs"\noptions = {{ {options} }}\n', encoding="utf-8"
    )
    out = tmp_path / "run"
    assert main(["run", "-c", str(run_file), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["iwr: error: " + message.format(dir=tmp_path)]
    assert not out.exists()


def test_entry_point_that_fails_to_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    boom = {"boom": "import not_installed_dep_xyz\n"}
    site = _dist(tmp_path / "site", boom, name="iwr-boom", version="2.0", top="iwr_boom")
    monkeypatch.syspath_prepend(str(site))
    assert main(["judges", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "plugin 'boom' (entry point of iwr-boom==2.0): cannot import iwr_boom.boom" in err[0]
    assert "No module named 'not_installed_dep_xyz'" in err[0]


# -- options per role, llm judges as ordinary designs -------------------------------------------


class _ModelJudge:
    def __init__(self, model: Model, strictness: int, votes: int) -> None:
        self.model, self.strictness, self.votes = model, strictness, votes
        self.name = "takes-a-model"

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        return AssertionVerdict(verdict="yes", reasoning="not asked in these tests", judge=self.name)


@register("assertions", "takes-a-model")
def _takes_a_model(judge_model: Model, strictness: int = 1, votes: int = 1) -> _ModelJudge:
    return _ModelJudge(judge_model, strictness, votes)


def test_flat_keys_and_tables_give_the_same_settings() -> None:
    flat = JudgeSettings.model_validate(
        {"grounder": "heuristic", "grounder_options": {"semantic": False}, "rubric": "openai:gpt-4o"}
    )
    table = JudgeSettings.model_validate(
        {
            "grounder": {"name": "heuristic", "options": {"semantic": False}},
            "rubric": {"name": "llm", "model": "openai:gpt-4o"},
        }
    )
    assert flat == table
    assert JudgeSettings.model_validate({"rubric": ""}).rubric is None
    again = parse_run_config({"judge": flat.model_dump(mode="json")})  # what a manifest holds reads back
    assert again.judge == flat


def test_every_role_gets_its_options_and_the_judge_model_through_its_factory() -> None:
    base = {"model": "vllm:judge", "base_url": "http://127.0.0.1:9/v1", "votes": 3}
    judges = _judges(
        {
            **base,
            "grounder": {"name": "heuristic", "options": {"semantic": False, "threshold": 0.6}},
            "assertions": {"name": "llm", "options": {"retries": 0}},
            "rubric": {"name": "llm", "model": "vllm:rubric"},
        }
    )
    assert judges.grounder.threshold == 0.6 and judges.grounder.semantic is False
    assert isinstance(judges.assertions, LLMAssertionJudge)
    assert (judges.assertions.votes, judges.assertions.retries) == (3, 0)  # votes from [judge]
    assert isinstance(judges.assertions.model, StoredModel) and judges.assertions.model.role == "assertions"
    assert judges.rubric.model.model_name == "rubric"
    designs = judges.describe()["designs"]
    assert designs["grounder"] == {
        "name": "heuristic",
        "kind": "builtin",
        "module": "iwr_bench.agents.grounding",
        "options": {"semantic": False, "threshold": 0.6},
    }
    assert (
        designs["assertions"]["options"] == {"retries": 0} and designs["assertions"]["model"] == "vllm:judge"
    )
    custom = _judges({**base, "assertions": {"name": "takes-a-model", "options": {"strictness": 5}}})
    assert isinstance(custom.assertions, _ModelJudge) and isinstance(custom.assertions.model, StoredModel)
    assert (custom.assertions.strictness, custom.assertions.votes) == (5, 3)
    assert len(custom.models) == 1  # the engine opens and closes the model it made


def test_a_design_that_takes_a_model_needs_one() -> None:
    with pytest.raises(UserError, match="assertions 'takes-a-model' needs a judge model"):
        _judges({"assertions": "takes-a-model"})
    with pytest.raises(UserError, match="unknown grounder 'psychic'"):
        _judges({"grounder": "psychic"})


# -- pages and mutants as models -----------------------------------------------------------------


@pytest.mark.anyio
async def test_pages_and_mutants_generators(tmp_path: Path) -> None:
    tasks = {t.id: t for t in load_tasks(builtin_suite()).tasks}
    flat, nested = tmp_path / "flat", tmp_path / "nested"
    (flat / "101").mkdir(parents=True)
    (flat / "101" / "index.html").write_text("<p>flat</p>", encoding="utf-8")
    for name in ("a", "b"):
        (nested / "102" / name).mkdir(parents=True)
        (nested / "102" / name / "index.html").write_text(f"<p>{name}</p>", encoding="utf-8")
    (nested / "101" / "only").mkdir(parents=True)
    (nested / "101" / "only" / "index.html").write_text("<p>only</p>", encoding="utf-8")

    def gen(name: str) -> PageFolderGenerator:
        from iwr_bench.agents.generation import ModelConfig

        design = generator_design(ModelConfig(name=name))
        assert design is not None, name
        return build("generator", *design)[0]

    assert (await gen(f"pages:{flat}")(tasks[101])).html == "<p>flat</p>"
    assert (await gen(f"pages:{nested}")(tasks[101])).html == "<p>only</p>"  # the one page folder
    assert (await gen(f"pages:{nested}#b")(tasks[102])).html == "<p>b</p>"
    ambiguous = await gen(f"pages:{nested}")(tasks[102])  # two page folders: none is guessed
    assert ambiguous.status == "failed" and ambiguous.error is not None
    assert "no page for task 102" in ambiguous.error.message
    mutant = await gen("mutants:hours-label-changed")(tasks[101])
    assert mutant.model == "mutants:hours-label-changed" and "__PLACEHOLDER" not in mutant.html
    assert mutant.html == (MUTANTS / "101" / "hours-label-changed" / "index.html").read_text(
        encoding="utf-8"
    ).replace("__PLACEHOLDER_ASSETS_BASE_DIR__", "assets")
    assert (await gen("mutants:hours-label-changed")(tasks[102])).status == "failed"
    # A mutant of a multi-file site keeps its scripts: the edited one is written beside the page.
    multi = await gen("mutants:merge-rule-changed")(tasks[113])
    assert multi.status == "ok" and multi.page_files is not None
    written = write_result(tmp_path / "results", multi)
    assert "a > 2" in (written / "js" / "rules.js").read_text(encoding="utf-8")
    assert not (written / "mutant.json").exists()
    with pytest.raises(UserError, match="bad options for generator 'mutants': no mutant 'nope'"):
        gen("mutants:nope")
    from iwr_bench.agents.generation import ModelConfig

    assert generator_design(ModelConfig(name="openai:gpt-4o")) is None
    assert generator_design(ModelConfig(name="pages:x", base_url="http://h/v1")) is None


def test_generate_only_keeps_the_named_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pages"
    argv = ["generate", "--tasks", str(builtin_suite()), "--model", "oracle", "--out", str(out)]
    assert main([*argv, "--only", "101,103"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["101", "103"]  # beside the run store
    assert main([*argv, "--only", "999"]) == 2
    assert "task id(s) not in" in capsys.readouterr().err


# -- resume needs the designs back ---------------------------------------------------------------


def test_resume_names_the_missing_design_and_how_to_get_it(tmp_path: Path) -> None:
    gone = tmp_path / "gone.py"
    record = {"name": "never-loaded", "kind": "file", "module": "iwr_plugin_gone", "path": str(gone)}
    with pytest.raises(UserError) as info:
        reload_recorded([], [], {"grounder": record})
    assert str(info.value) == (
        f"cannot resume: grounder 'never-loaded' came from file {gone} (module iwr_plugin_gone), "
        f"which is not available: restore {gone} or point to a copy with --plugin PATH"
    )
    with pytest.raises(UserError, match=f"plugin '{gone}': cannot read"):
        reload_recorded([str(gone)], [], {})
    copy = tmp_path / "copy.py"
    source = (EXAMPLES / "lcs_grounder.py").read_text(encoding="utf-8")
    copy.write_text(source.replace('"grounder", "lcs"', '"grounder", "lcs-copy"'), encoding="utf-8")
    copied = {"grounder": {**record, "name": "lcs-copy"}}
    assert reload_recorded([str(gone)], [str(copy)], copied) == [str(copy)]  # --plugin stands in
    assert origin_of("grounder", "lcs-copy").path == str(copy)


# -- end to end: two built-in tasks and a mutant, judged by the example designs ------------------


def _env(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_example_designs_judge_the_suite_and_resume_in_a_fresh_process(
    lcs_dist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(EXAMPLES / "quoted_text_judge.py", tmp_path / "quoted_text_judge.py")
    run_file = tmp_path / "lab.toml"
    run_file.write_text(
        """
tasks = "builtin"
only = [101, 102]
plugins = ["quoted_text_judge.py"]   # next to this file

[[models]]
name = "mutants:hours-label-changed"   # task 102 has no such mutant: it is no pair of this model

[judge.grounder]
name = "lcs"                          # from the installed distribution's entry point
options = { min_chars = 4 }

[judge.assertions]
name = "quoted-text"
options = { case_sensitive = false }

[limits]
browser_pages = 1
""",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    assert main(["run", "-c", str(run_file), "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    store = RunStore.open_run(run, readonly=True)
    try:
        manifest = store.manifest()
        gen_jobs = {(j.task_id, j.model): j for j in store.jobs("gen")}
    finally:
        store.close()
    designs = manifest["judges"]["designs"]
    assert designs["grounder"] == {
        "name": "lcs",
        "kind": "entry point",
        "module": "iwr_lab.lcs",
        "distribution": DIST,
        "version": "0.1",
        "entry_point": "lcs",
        "options": {"min_chars": 4},
    }
    judge_file = tmp_path / "quoted_text_judge.py"
    assert designs["assertions"]["kind"] == "file" and designs["assertions"]["path"] == str(judge_file)
    assert designs["assertions"]["options"] == {"case_sensitive": False}
    assert manifest["config"]["plugins"] == [str(judge_file)]
    assert manifest["models"] == ["mutants_hours-label-changed"]
    assert manifest["model_tasks"] == {"mutants_hours-label-changed": [101]}
    assert (102, "mutants_hours-label-changed") not in gen_jobs  # no such mutant of 102: no job
    evaluation = json.loads(
        (run / "judged" / "101" / "mutants_hours-label-changed" / "eval.json").read_text()
    )
    actions = evaluation["replay"]["actions"]
    assert {a["grounding"]["grounder"] for a in actions if a.get("grounding")} == {"lcs(min_chars=4)"}
    assert actions[2]["status"] == "ok" and "Read the artist" in actions[2]["grounding"]["reason"]
    # The relabelled 'Show studio hours' button (action 4) is where the mutant breaks: the longest
    # common substring finds another button or none, and the hours quoted in the assertion never show.
    assert evaluation["replay"]["success_steps"] == 4
    assert actions[4]["status"] == "failed"
    if actions[4]["failure"] == "assertion_failed":
        assert actions[4]["assertion"]["judge"] == "quoted-text"
        assert "not visible" in actions[4]["assertion"]["reasoning"]
    else:
        assert actions[4]["failure"] == "element_not_found"

    # A fresh process without the distribution: one line naming the module and how to get it.
    resume = [sys.executable, "-m", "iwr_bench", "run", "--resume", str(run), "--quiet"]
    done = subprocess.run(resume, env=_env(ROOT), capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "iwr: error: cannot resume: grounder 'lcs' came from entry point iwr-lab-examples==0.1 "
        "(module iwr_lab.lcs), which is not available: install it "
        "(pip install 'iwr-lab-examples==0.1') or point to it with --plugin iwr_lab.lcs"
    ]
    # With it installed, the manifest alone continues the run.
    done = subprocess.run(
        [*resume, "--retry-failed"], env=_env(ROOT, lcs_dist), capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr
    store = RunStore.open_run(run, readonly=True)
    try:
        assert store.meta("sessions") == 2 and store.meta("status") == "completed"
        again = {(j.task_id, j.model): j for j in store.jobs("gen")}
    finally:
        store.close()
    assert (102, "mutants_hours-label-changed") not in again
    assert again[101, "mutants_hours-label-changed"].status == "done"

    # The plugin file edited between sessions: a resume refuses, naming the file, unless told to
    # go on; then the session records the change.
    source = judge_file.read_text(encoding="utf-8")
    judge_file.write_text(source + "\n# edited after the run started\n", encoding="utf-8")
    done = subprocess.run(resume, env=_env(ROOT, lcs_dist), capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, done.stderr
    refused = done.stderr.strip().splitlines()
    assert len(refused) == 1 and f"assertions 'quoted-text': file {judge_file}" in refused[0], refused
    assert "--accept-changed-plugins" in refused[0]
    done = subprocess.run(
        [*resume, "--accept-changed-plugins"],
        env=_env(ROOT, lcs_dist),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    store = RunStore.open_run(run, readonly=True)
    try:
        sessions = store.manifest()["sessions"]
    finally:
        store.close()
    assert [s["session"] for s in sessions] == [1, 2, 3]
    assert sessions[1]["designs"]["grounder"]["kind"] == "entry point"
    assert sessions[2]["designs"]["assertions"]["sha256"] != sessions[1]["designs"]["assertions"]["sha256"]
    assert len(sessions[2]["changed_designs"]) == 1 and str(judge_file) in sessions[2]["changed_designs"][0]


@pytest.mark.browser
def test_judge_only_with_a_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pages = tmp_path / "pages"
    for task_id, mutant in (("101", "story-handler-removed"), ("102", "packing-label-changed")):
        shutil.copytree(MUTANTS / task_id / mutant, pages / task_id / mutant)
    argv = ["judge", "--tasks", str(builtin_suite()), "--pages", str(pages), "--out", str(tmp_path / "out")]
    plugin = ["--plugin", str(EXAMPLES / "quoted_text_judge.py"), "--assertions", "quoted-text"]
    assert main([*argv, *plugin, "--only", "102"]) == 0
    out = capsys.readouterr().out
    judged = sorted(line.split(":")[0] for line in out.splitlines() if line.startswith("task "))
    assert judged == ["task 102 packing-label-changed"]
    evaluation = json.loads((tmp_path / "out" / "102" / "packing-label-changed" / "eval.json").read_text())
    judges = {a["assertion"]["judge"] for a in evaluation["replay"]["actions"] if a.get("assertion")}
    assert judges <= {"quoted-text"}
    assert not (tmp_path / "out" / "101").exists()


def test_readme_design_loads_and_a_role_named_again_keeps_its_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from iwr_bench.cli import build_parser
    from iwr_bench.cli.run import build_config

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Write your own judge", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) + 3 < 30  # the design and its two commands
    (tmp_path / "my_grounder.py").write_text(code, encoding="utf-8")
    run_file = tmp_path / "run.toml"
    run_file.write_text(
        'plugins = ["my_grounder.py"]\n[judge.grounder]\nname = "last-word"\noptions = { exact = true }\n',
        encoding="utf-8",
    )
    args = build_parser().parse_args(["run", "-c", str(run_file), "--grounder", "last-word"])
    config = build_config(args)
    assert config.plugins == [str(tmp_path / "my_grounder.py")]  # relative to the run file
    assert config.judge.grounder.options == {"exact": True}
    assert main(["judges", "list", "--plugin", str(tmp_path / "my_grounder.py"), "--json"]) == 0
    listed = {(d["role"], d["name"]): d for d in json.loads(capsys.readouterr().out)}
    assert listed["grounder", "last-word"]["options"][0]["name"] == "exact"
    switched = build_config(
        build_parser().parse_args(["run", "-c", str(run_file), "--grounder", "heuristic"])
    )
    assert switched.judge.grounder.options == {}


# -- a design's own bug fails its action, not the run ------------------------------------------

_FLAKY = """
from iwr_bench.plugins import Grounding, GroundingRequest, create, register


class Flaky:
    name = "flaky"

    def __init__(self) -> None:
        self.inner, _ = create("grounder", "heuristic")

    async def __call__(self, request: GroundingRequest) -> Grounding:
        if "Ridge details" in request.description:
            raise ValueError("kaboom on the ridge")
        if "Add to cart" in request.description:
            return "element 3"  # the wrong type
        return await self.inner(request)


@register("grounder", "flaky")
def flaky() -> Flaky:
    return Flaky()
"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_raising_plugin_fails_its_action_as_judge_error_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = tmp_path / "flaky_grounder.py"
    plugin.write_text(_FLAKY, encoding="utf-8")
    run = tmp_path / "run"
    argv = ["run", "--only", "101,102,103", "--model", "oracle", "--out", str(run), "--quiet"]
    assert main([*argv, "--plugin", str(plugin), "--grounder", "flaky"]) == 0
    capsys.readouterr()
    store = RunStore.open_run(run, readonly=True)
    try:
        jobs = {j.task_id: j for j in store.jobs("judge")}
    finally:
        store.close()
    # The jobs the plugin broke are recorded as judge errors, scored, with eval.json; not engine
    # errors (which would zero them); the third finishes as it would have.
    assert {t: (j.status, j.failure) for t, j in jobs.items()} == {
        101: ("done", None),
        102: ("failed", "judge_error"),
        103: ("failed", "judge_error"),
    }
    assert all((jobs[t].result or {}).get("eval") for t in (102, 103))

    def actions(task_id: int) -> list[dict[str, Any]]:
        path = run / "judged" / str(task_id) / "oracle" / "eval.json"
        return json.loads(path.read_text(encoding="utf-8"))["replay"]["actions"]

    def failed(task_id: int) -> dict[str, Any]:
        return next(a for a in actions(task_id) if a["status"] == "failed")

    raised = failed(102)
    assert raised["failure"] == "judge_error" and raised["index"] == 2
    assert raised["message"].startswith(
        f"grounder 'flaky' (file {plugin}) raised ValueError: kaboom on the ridge"
    )
    assert 'raise ValueError("kaboom on the ridge")' in raised["trace"] and str(plugin) in raised["trace"]
    wrong = failed(103)
    assert wrong["failure"] == "judge_error"
    assert wrong["message"] == f"grounder 'flaky' (file {plugin}) answered a str, not a Grounding"
    assert all(a["status"] == "ok" for a in actions(101))  # the other task: its own outcome


def test_a_plugin_importing_torchvision_at_module_level_loads(tmp_path: Path) -> None:
    """In a fresh process (torchvision not imported yet), a plugin whose first line imports
    open_clip (which imports torchvision) loads: the registry makes torchvision importable."""
    plugin = tmp_path / "vision_plugin.py"
    plugin.write_text(
        "import open_clip\nimport torchvision\nfrom iwr_bench.plugins import register\n\n"
        "@register('grounder', 'vision-probe')\ndef vision_probe():\n    return None\n",
        encoding="utf-8",
    )
    code = (
        "import sys\nfrom iwr_bench.registry import load_plugins, names\n"
        "load_plugins([sys.argv[1]])\nimport torchvision.transforms\n"
        "print('vision-probe' in names('grounder'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(plugin)], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
