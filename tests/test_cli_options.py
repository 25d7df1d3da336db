"""The run-config options of ``iwr run``, ``iwr judge``, ``iwr generate`` and ``iwr judges eval``
have one set of defaults, the settings models', and agree with one another."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from iwr_bench.cli import build_parser, main
from iwr_bench.cli import generate as generate_cli
from iwr_bench.cli import judge as judge_cli
from iwr_bench.cli.judges_eval import config_from
from iwr_bench.cli.run import build_config
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.settings import (
    BrowserSettings,
    JudgeSettings,
    LimitSettings,
    MetricSettings,
)

SHARED = ("judge", "metrics", "limits", "browser", "protocol", "budget_usd", "skip_invalid", "plugins")
"""Keys of the run config that every command's options may set."""

GIVEN = [
    "--grounder", "llm", "--assertions", "llm", "--judge-model", "test:", "--rubric", "test:",
    "--judge-base-url", "http://judge", "--judge-api-key-env", "JUDGE_KEY", "--votes", "3",
    "--retries", "0", "--judge-error-policy", "pass", "--undetermined-policy", "fail",
    "--no-judge-cache", "--pages-at-once", "3", "--metric-workers", "2", "--judge-calls", "7",
    "--dino", "/models/dino", "--no-metric-cache", "--protocol", "official", "--settle", "fixed",
    "--skip-invalid",
]  # fmt: skip
"""Every judging option of ``iwr run`` and ``iwr judge``, each away from its default."""


def _run(tmp_path: Path, *options: str) -> RunConfig:
    return build_config(build_parser().parse_args(["run", "--tasks", str(tmp_path), *options]))


def _judge(tmp_path: Path, *options: str) -> RunConfig:
    argv = ["judge", "--tasks", str(tmp_path), "--pages", str(tmp_path), "--out", str(tmp_path), *options]
    return judge_cli._config(build_parser().parse_args(argv), [])  # pyright: ignore[reportPrivateUsage]


def _generate(tmp_path: Path, *options: str) -> RunConfig:
    argv = ["generate", "--tasks", str(tmp_path), "--model", "blank", "--out", str(tmp_path), *options]
    return generate_cli._config(build_parser().parse_args(argv))  # pyright: ignore[reportPrivateUsage]


def _shared(config: RunConfig) -> dict[str, Any]:
    data = config.model_dump(mode="json")
    return {key: data[key] for key in SHARED}


def test_no_option_gives_the_settings_models_defaults(tmp_path: Path) -> None:
    expected = _shared(RunConfig())
    for build in (_run, _judge, _generate):
        config = build(tmp_path)
        assert _shared(config) == expected, build.__name__
        assert config.judge == JudgeSettings()
        assert config.metrics == MetricSettings()
        assert config.browser == BrowserSettings()
        limits = LimitSettings().model_dump(exclude={"browser_pages"})
        assert config.limits.model_dump(exclude={"browser_pages"}) == limits
        assert (config.judge.votes, config.judge.retries, config.limits.judge_calls) == (1, 2, 4)
        assert (config.judge.judge_error_policy, config.judge.undetermined_policy) == ("fail", "pass")
        assert config.metrics.dino == "facebook/dinov2-base" and config.protocol.value == "default"
        assert config.limits.browser_pages == RunConfig().limits.browser_pages


def test_judges_eval_takes_the_runs_limits() -> None:
    config = config_from(build_parser().parse_args(["judges", "eval"]))
    limits = RunConfig().limits
    assert (config.pages_at_once, config.judge_calls) == (limits.browser_pages, limits.judge_calls)
    given = config_from(build_parser().parse_args(["judges", "eval", "--jobs", "3", "--judge-calls", "5"]))
    assert (given.pages_at_once, given.judge_calls) == (3, 5)


def test_a_given_option_wins_and_run_and_judge_agree(tmp_path: Path) -> None:
    run, judge = _run(tmp_path, *GIVEN), _judge(tmp_path, *GIVEN)
    assert _shared(run) == _shared(judge)
    j = run.judge
    assert (j.grounder.name, j.assertions.name, j.model, j.base_url, j.api_key_env) == (
        "llm", "llm", "test:", "http://judge", "JUDGE_KEY",
    )  # fmt: skip
    assert j.rubric is not None and j.rubric.model == "test:"
    assert (j.votes, j.retries, j.judge_error_policy, j.undetermined_policy, j.cache) == (
        3,
        0,
        "pass",
        "fail",
        False,
    )
    limits = run.limits
    assert (limits.browser_pages, limits.metric_workers, limits.judge_calls) == (3, 2, 7)
    assert (run.metrics.dino, run.metrics.cache, run.browser.settle) == ("/models/dino", False, "fixed")
    assert run.protocol.value == "official" and run.skip_invalid


def test_generate_and_run_agree_on_their_shared_options(tmp_path: Path) -> None:
    common = ["--protocol", "official", "--budget", "1.5", "--skip-invalid"]
    run = _run(tmp_path, *common, "--model-calls", "3")
    generate = _generate(tmp_path, *common, "--concurrency", "3")
    assert _shared(run) == _shared(generate)
    assert (generate.limits.model_calls, generate.budget_usd, generate.protocol.value) == (3, 1.5, "official")
    prompt = tmp_path / "prompt.txt"
    assert _run(tmp_path, "--prompt-file", str(prompt)).prompt_file == str(prompt)
    assert _generate(tmp_path, "--prompt-file", str(prompt)).prompt_file == str(prompt)


def test_a_run_file_stands_where_no_option_is_given(tmp_path: Path) -> None:
    run_file = tmp_path / "run.toml"
    run_file.write_text(
        "[judge]\nvotes = 5\nretries = 4\n[limits]\nbrowser_pages = 6\njudge_calls = 9\n", encoding="utf-8"
    )
    kept = _run(tmp_path, "-c", str(run_file))
    assert (kept.judge.votes, kept.judge.retries, kept.limits.browser_pages, kept.limits.judge_calls) == (
        5, 4, 6, 9,
    )  # fmt: skip
    over = _run(tmp_path, "-c", str(run_file), "--votes", "1", "--pages-at-once", "2")
    assert (over.judge.votes, over.judge.retries, over.limits.browser_pages) == (1, 4, 2)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["judge", "--pages-at-once", "0"], "--pages-at-once must be at least 1"),
        (["judge", "--judge-calls", "0"], "--judge-calls must be at least 1"),
        (["judge", "--votes", "0"], "--votes must be at least 1"),
        (["generate", "--model", "blank", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["generate", "--model", "blank", "--budget", "-1"], "--budget must not be negative"),
    ],
)
def test_a_bad_count_is_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--pages", str(tmp_path)] if argv[0] == "judge" else []
    assert main([*argv, *out, "--tasks", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"iwr: error: {message}"]
    assert not (tmp_path / "o").exists()


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return re.sub(r"\s+", " ", capsys.readouterr().out)


def test_every_command_shows_the_same_defaults(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    pages = (
        "browser pages at once (default: one per core and per 1.5 GB of free memory, 1 to 8; "
        f"{RunConfig().limits.browser_pages} here)"
    )
    helps = {cmd: _help(cmd.split(), capsys) for cmd in ("run", "judge", "judges eval", "generate")}
    for cmd in ("run", "judge", "judges eval"):
        assert pages in helps[cmd], cmd
        assert "judge-model requests at once (default 4)" in helps[cmd], cmd
    for cmd in ("run", "judge"):
        for text in (
            "k-vote majority of the llm assertion judge (default 1)",
            "retries of an unusable judge answer (default 2)",
            "what a failed judgement counts as (default fail)",
            "what an undecidable assertion counts as (default pass)",
            "DINOv2 hub id or local folder (default facebook/dinov2-base)",
            "metric batches at once (default 1)",
        ):
            assert text in helps[cmd], (cmd, text)
    assert "model requests at once per provider (default 4)" in helps["generate"]
    assert "generation requests at once per provider (default 4)" in helps["run"]
    assert "browser pages at once (default 2)" not in " ".join(helps.values())
