"""The judge lab's statistics against values worked out by hand or by scipy."""

from __future__ import annotations

import math

import pytest

from iwr_bench.report.lab_stats import (
    Bootstrap,
    agreement_2x2,
    as_sums,
    bootstrap_ci,
    cohen_kappa,
    kappa_2x2,
    mcnemar_p,
    ratio,
)


def test_mcnemar_exact_p_matches_the_binomial_test() -> None:
    assert mcnemar_p(10, 2) == pytest.approx(158 / 4096)  # 2 * (1 + 12 + 66) / 2^12
    assert round(mcnemar_p(10, 2), 4) == 0.0386
    assert mcnemar_p(2, 10) == mcnemar_p(10, 2)
    assert mcnemar_p(0, 0) == 1.0  # no discordant case, no evidence
    assert mcnemar_p(5, 5) == 1.0
    assert mcnemar_p(0, 6) == pytest.approx(2 / 64)


def test_mcnemar_agrees_with_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for b in range(14):
        for c in range(14):
            if b + c:
                assert mcnemar_p(b, c) == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue), (b, c)


def test_kappa_of_a_known_table() -> None:
    # 50 pairs: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no; p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5.
    table = as_sums([20, 5, 10, 15])
    assert kappa_2x2(table) == pytest.approx(0.4)
    assert agreement_2x2(table) == pytest.approx(0.7)
    pairs = (
        [("pass", "pass")] * 20 + [("pass", "fail")] * 5 + [("fail", "pass")] * 10 + [("fail", "fail")] * 15
    )
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert kappa_2x2(as_sums([7, 0, 0, 0])) is None  # one answer throughout: chance agreement is 1
    assert kappa_2x2(as_sums([0, 0, 0, 0])) is None and agreement_2x2(as_sums([0, 0, 0, 0])) is None
    assert kappa_2x2(as_sums([0, 3, 3, 0])) == pytest.approx(-1.0)


def _share(correct: int, n: int) -> list[list[float]]:
    return [[1.0, 1.0]] * correct + [[0.0, 1.0]] * (n - correct)


def test_bootstrap_interval_of_a_share_is_near_the_normal_one_and_reproducible() -> None:
    units = _share(70, 100)
    boot = Bootstrap()
    ci = bootstrap_ci(units, ratio, boot)
    assert ci is not None and ci.low < 0.7 < ci.high
    half = 1.96 * math.sqrt(0.7 * 0.3 / 100)  # about 0.09: the percentile interval is close to it
    assert ci.low == pytest.approx(0.7 - half, abs=0.02) and ci.high == pytest.approx(0.7 + half, abs=0.02)
    assert bootstrap_ci(units, ratio, boot) == ci  # the same seed, the same interval
    other = bootstrap_ci(units, ratio, Bootstrap(seed=1))
    assert other is not None and other != ci
    narrow = bootstrap_ci(units, ratio, Bootstrap(level=0.5))
    assert narrow is not None and ci.low < narrow.low < 0.7 < narrow.high < ci.high


def test_bootstrap_edge_cases() -> None:
    boot = Bootstrap(resamples=200)
    assert bootstrap_ci([], ratio, boot) is None
    assert bootstrap_ci([[0.0, 0.0]] * 3, ratio, boot) is None  # never defined
    every = bootstrap_ci(_share(5, 5), ratio, boot)
    assert every is not None and (every.low, every.high) == (1.0, 1.0)  # collapses at 100 %


def test_bootstrap_resamples_whole_cases() -> None:
    # Two cases of 10 actions: one all right, one all wrong. Resampling cases gives 0, 0.5 or 1 (per
    # action resampling would cluster round 0.5): the interval spans the whole range.
    ci = bootstrap_ci([[10.0, 10.0], [0.0, 10.0]], ratio, Bootstrap())
    assert ci is not None and (ci.low, ci.high) == (0.0, 1.0)
