"""The order the test workers take the heaviest test files in (see :data:`HEAVIEST_FIRST`)."""

from __future__ import annotations

HEAVIEST_FIRST = (
    "tests/agents/test_visible_judging.py",
    "tests/engine/test_robustness.py",
    "tests/agents/test_looks.py",
    "tests/dataset/test_recorder.py",
    "tests/engine/test_engine.py",
    "tests/tui/test_tui.py",
    "tests/suites/test_suite_judging.py",
    "tests/suites/test_real_apps.py",
    "tests/tools/test_contain.py",
    "tests/agents/test_judge_lab.py",
    "tests/test_plugins.py",
    "tests/tools/test_hostile.py",
    "tests/suites/test_gaming.py",
    "tests/report/test_official_aggregation.py",
    "tests/engine/test_ray_backend.py",
    "tests/agents/test_judge.py",
    "tests/agents/test_official_protocol.py",
    "tests/agents/test_agent_judge.py",
    "tests/engine/test_stages.py",
    "tests/agents/test_llm_judges.py",
    "tests/engine/test_judge_calls_resume.py",
    "tests/agents/test_grounding.py",
    "tests/metrics/test_ocr_runtime.py",
    "tests/tools/test_tools.py",
)
"""The test files that take longest all told (worker seconds, from `--durations=0` on 2 cores,
2026-12-07: together 82% of the time), heaviest first. The workers take files in this order and
the rest after them (`--no-loadscope-reorder` in scripts/test.sh), so no long file starts last
and keeps one worker busy while the others idle; xdist's own order (most tests first) put the
one-test files of whole runs (a real app, gaming, Ray) at the end."""
