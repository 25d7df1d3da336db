"""The run-config options shared by ``iwr run``, ``iwr judge``, ``iwr generate`` (and, for its limits,
``iwr judges eval``), and the one function that turns them into a run config.

Every option here defaults to ``None`` (or ``False`` for a flag): "not given". :func:`apply_options`
sets only the keys the user gave, so each default comes from the settings models
(:class:`~iwr_bench.engine.config.RunConfig` and its groups), and a help text that states a
default reads it from there too.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from iwr_bench.agents.generation.config import ModelConfig
from iwr_bench.cli._common import OFFICIAL_CODE_HELP
from iwr_bench.engine.config import RunConfig, parse_only, parse_run_config, plugin_refs
from iwr_bench.errors import UserError
from iwr_bench.protocol import EvalProtocol

POLICIES = ("pass", "fail")
"""Choices of ``--judge-error-policy`` and ``--undetermined-policy``."""

_ROLES = ("grounder", "assertions", "rubric")
"""Options naming a judging role: given again, a role keeps the options its run file gave it."""

_KEYS: dict[str, tuple[str, str]] = {
    "judge_model": ("judge", "model"),
    "judge_base_url": ("judge", "base_url"),
    "judge_api_key_env": ("judge", "api_key_env"),
    "votes": ("judge", "votes"),
    "retries": ("judge", "retries"),
    "judge_error_policy": ("judge", "judge_error_policy"),
    "undetermined_policy": ("judge", "undetermined_policy"),
    "pages_at_once": ("limits", "browser_pages"),
    "metric_workers": ("limits", "metric_workers"),
    "judge_calls": ("limits", "judge_calls"),
    "model_calls": ("limits", "model_calls"),
    "concurrency": ("limits", "model_calls"),  # `iwr generate`'s name of --model-calls
    "settle": ("browser", "settle"),
}
"""Options that set one key of a settings group when given (``dest``: group, key)."""

_AT_LEAST_ONE = ("pages_at_once", "metric_workers", "judge_calls", "model_calls", "concurrency", "votes")
"""Counts that must be at least 1 (checked here, for a one-line error naming the option)."""


def defaults() -> RunConfig:
    """The run config of no run file and no option: where every default shown or used comes from."""
    return RunConfig()


def pages_help() -> str:
    """Help of ``--pages-at-once``, the same in every command: the rule and this machine's number."""
    n = defaults().limits.browser_pages
    return f"browser pages at once (default: one per core and per 1.5 GB of free memory, 1 to 8; {n} here)"


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """Which judges score the pages (``[judge]``)."""
    judge = defaults().judge
    parser.add_argument(
        "--grounder", help=f"grounder: {judge.grounder.name} (default), llm, or any from `iwr judges list`"
    )
    parser.add_argument(
        "--assertions", help=f"assertion judge: {judge.assertions.name} (default), llm, or any listed"
    )
    parser.add_argument("--judge-model", help="model of the llm grounder / assertion judge")
    parser.add_argument(
        "--rubric", metavar="MODEL", help="rubric (HVS) judge model; without it HVS is unavailable"
    )
    parser.add_argument("--judge-base-url", help="OpenAI-compatible server of the judge model(s)")
    parser.add_argument("--judge-api-key-env", help="environment variable with the judge model's key")
    parser.add_argument(
        "--votes", type=int, help=f"k-vote majority of the llm assertion judge (default {judge.votes})"
    )
    parser.add_argument(
        "--retries", type=int, help=f"retries of an unusable judge answer (default {judge.retries})"
    )
    parser.add_argument(
        "--judge-error-policy",
        choices=POLICIES,
        help=f"what a failed judgement counts as (default {judge.judge_error_policy})",
    )
    parser.add_argument(
        "--undetermined-policy",
        choices=POLICIES,
        help=f"what an undecidable assertion counts as (default {judge.undetermined_policy})",
    )
    parser.add_argument(
        "--no-judge-cache", action="store_true", help="do not reuse judge-model answers across runs"
    )


def add_pages_at_once(parser: argparse.ArgumentParser, *aliases: str) -> None:
    """``--pages-at-once`` (``[limits] browser_pages``), under any older names too."""
    parser.add_argument("--pages-at-once", *aliases, type=int, metavar="N", help=pages_help())


def add_limit_options(
    parser: argparse.ArgumentParser, *, pages: bool = True, metrics: bool = True, models: bool = True
) -> None:
    """The concurrency limits (``[limits]``): browser pages, metric batches, judge and model calls."""
    limits = defaults().limits
    if pages:
        add_pages_at_once(parser)
    if metrics:
        parser.add_argument(
            "--metric-workers",
            type=int,
            metavar="N",
            help=f"metric batches at once (default {limits.metric_workers})",
        )
    add_judge_calls(parser)
    if models:
        parser.add_argument(
            "--model-calls",
            type=int,
            metavar="N",
            help=f"generation requests at once per provider (default {limits.model_calls})",
        )


def add_judge_calls(parser: argparse.ArgumentParser) -> None:
    """``--judge-calls`` (``[limits] judge_calls``)."""
    parser.add_argument(
        "--judge-calls",
        type=int,
        metavar="N",
        help=f"judge-model requests at once (default {defaults().limits.judge_calls})",
    )


def add_metric_options(parser: argparse.ArgumentParser) -> None:
    """The metric backends (``[metrics]``)."""
    parser.add_argument("--dino", help=f"DINOv2 hub id or local folder (default {defaults().metrics.dino})")
    parser.add_argument(
        "--no-metric-cache", action="store_true", help="do not reuse metric values across runs"
    )


def add_protocol_options(
    parser: argparse.ArgumentParser, *, protocol_help: str, prompt_file: bool = False, settle: bool = False
) -> None:
    """``--protocol`` (each command says what it changes there), ``--official-code`` and, where the
    command takes them, ``--prompt-file`` and ``--settle`` (``[browser] settle``)."""
    parser.add_argument("--protocol", choices=[p.value for p in EvalProtocol], help=protocol_help)
    if prompt_file:
        parser.add_argument("--prompt-file", metavar="PATH", help="generation instructions from this file")
    parser.add_argument("--official-code", type=Path, metavar="DIR", help=OFFICIAL_CODE_HELP)
    if settle:
        parser.add_argument(
            "--settle",
            choices=["stable", "fixed"],
            help="wait for stable screenshots, or the official fixed waits "
            f"(default {defaults().browser.settle}; always fixed under --protocol official)",
        )


def add_plugin_option(parser: argparse.ArgumentParser) -> None:
    """``--plugin`` (repeatable)."""
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE_OR_FILE",
        help="import this module or .py file first (it registers designs); repeatable",
    )


def add_budget_option(parser: argparse.ArgumentParser) -> None:
    """``--budget`` (``budget_usd``)."""
    parser.add_argument(
        "--budget",
        type=float,
        metavar="USD",
        help="stop new paid generation calls past this (default: no cap)",
    )


def check_options(args: argparse.Namespace) -> None:
    """Refuse a count under 1 or a negative budget, naming the option.

    Raises:
        UserError: the first bad option.
    """
    for name in _AT_LEAST_ONE:
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1")
    budget = getattr(args, "budget", None)
    if budget is not None and budget < 0:
        raise UserError("--budget must not be negative")


def model_entries(names: Iterable[str], known: Sequence[ModelConfig]) -> list[dict[str, Any]]:
    """``--model`` names as ``[[models]]`` entries: one a run file configures keeps only the settings
    its table gave (the official preset fills the others); any other is just its name."""
    by_name = {m.name: m for m in known}
    return [
        by_name[n].model_dump(mode="json", exclude_unset=True) if n in by_name else {"name": n}
        for n in dict.fromkeys(names)
    ]


def apply_options(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a run config as data: a run file's, or empty) with the options the user gave over
    it; every key no option gave is left as it is, so its default stays the settings models' own.

    An option a command does not have counts as not given. A role (``--grounder``, ...) named again
    as the run file names it keeps the run file's options.

    Raises:
        UserError: a bad option (one line).
    """
    check_options(args)

    def given(name: str) -> Any:
        return getattr(args, name, None)

    def group(name: str) -> dict[str, Any]:
        return data.setdefault(name, {})

    if given("tasks"):
        data["tasks"] = str(given("tasks"))
    if given("only") is not None:
        data["only"] = parse_only(given("only"))
    for role in _ROLES:
        value = given(role)
        current = group("judge").get(role) if value is not None else None
        if value is not None and not (isinstance(current, dict) and current.get("name") == value):
            group("judge")[role] = value
    for name, (section, key) in _KEYS.items():
        if given(name) is not None:
            group(section)[key] = given(name)
    if given("dino"):
        group("metrics")["dino"] = given("dino")
    if given("no_metric_cache"):
        group("metrics")["cache"] = False
    if given("no_judge_cache"):
        group("judge")["cache"] = False
    if given("protocol"):
        data["protocol"] = given("protocol")
    if given("prompt_file"):
        data["prompt_file"] = str(given("prompt_file"))
    if given("official_code"):
        data["official_code"] = str(Path(given("official_code")).expanduser().resolve())
    if given("skip_invalid"):
        data["skip_invalid"] = True
    if given("plugin"):
        have: list[str] = data.get("plugins", [])
        data["plugins"] = [*have, *(r for r in plugin_refs(given("plugin"), Path.cwd()) if r not in have)]
    if given("budget") is not None:
        data["budget_usd"] = given("budget")
    return data


def run_config(
    args: argparse.Namespace, data: dict[str, Any] | None = None, where: str = "options"
) -> RunConfig:
    """The run config of ``data`` (empty: all defaults) with the given options over it.

    Raises:
        UserError: a bad option or setting (one line naming it).
    """
    return parse_run_config(apply_options(args, dict(data or {})), where)
