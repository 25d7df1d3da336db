"""Statistics of the judge lab: bootstrap intervals, McNemar's exact test and Cohen's kappa.

Pure functions of counts; nothing here knows a case or a design.

A *unit* is what is resampled: one case, carrying a short vector of counts (``(correct, 1)`` for a
case's accuracy, ``(actions right, actions counted)`` for per-action accuracy, a 2x2 table for
kappa). :func:`bootstrap_ci` draws ``resamples`` samples of the units with replacement (numpy's
PCG64 generator, seeded), sums each sample's vectors, applies the statistic to the sums, and
returns the percentile interval of the values it defines. Resampling whole cases keeps the actions
of a case together, since they are not independent of each other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from math import comb

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

Sums = NDArray[np.float64]
"""The summed count vectors of one resample (or of the whole sample)."""
Statistic = Callable[[Sums], float | None]
"""A number from summed counts, None where it is undefined (a ratio over zero)."""


class Bootstrap(BaseModel):
    """How the report's confidence intervals are drawn."""

    method: str = "percentile bootstrap over cases"
    """How: resample the cases a number is computed over, with replacement, as many as there are;
    recompute the number; take the percentiles. Resamples where it is undefined are left out."""
    resamples: int = Field(default=2000, ge=100, le=1_000_000)
    """Resamples drawn per interval."""
    seed: int = Field(default=0, ge=0)
    """Seed of every interval's generator (each interval starts from it: the same input gives the
    same interval, whatever else the report holds)."""
    level: float = Field(default=0.95, gt=0.0, lt=1.0)
    """Coverage: 0.95 gives the 2.5th and 97.5th percentiles."""


class Interval(BaseModel):
    """A confidence interval of a share or coefficient (same units as the number it bounds)."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""


def as_sums(values: Sequence[float]) -> Sums:
    """A count vector as a statistic takes it (the whole sample's sums, for the point estimate)."""
    return np.asarray(values, dtype=np.float64)


def ratio(sums: Sums) -> float | None:
    """``sums[0] / sums[1]``; None when the denominator is 0."""
    return None if sums[1] == 0 else float(sums[0] / sums[1])


def bootstrap_ci(units: Sequence[Sequence[float]], statistic: Statistic, boot: Bootstrap) -> Interval | None:
    """Percentile interval of ``statistic`` over resamples of ``units`` (module doc).

    Returns:
        None when there is no unit or no resample defines the statistic.
    """
    if not units:
        return None
    data = np.asarray(units, dtype=np.float64)
    n = len(data)
    rng = np.random.default_rng(boot.seed)
    draws = rng.multinomial(n, np.full(n, 1.0 / n), size=boot.resamples)  # times each unit is drawn
    sums = draws.astype(np.float64) @ data
    values = [v for row in sums if (v := statistic(row)) is not None]
    if not values:
        return None
    tail = (1.0 - boot.level) / 2
    low, high = np.quantile(np.asarray(values), [tail, 1.0 - tail])
    return Interval(low=float(low), high=float(high))


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: the binomial test of ``b`` in ``b + c`` at 1/2.

    ``b``: pairs only the first got right; ``c``: pairs only the second got right. The p-value is
    twice the smaller tail, at most 1; 1 when ``b + c`` is 0 (no discordant pair, no evidence).
    Computed in exact fractions (as ``scipy.stats.binomtest(b, b + c).pvalue``).
    """
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels (None when there are none or chance agreement is 1).

    ``(p_o - p_e) / (1 - p_e)``: ``p_o`` the share of pairs that match, ``p_e`` the sum over labels
    of the product of the two raters' shares.
    """
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(x == y for x, y in pairs) / n
    a, b = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    expected = sum(a[k] * b[k] for k in a.keys() | b.keys()) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def kappa_2x2(sums: Sums) -> float | None:
    """Cohen's kappa of a 2x2 table ``(pass/pass, pass/fail, fail/pass, fail/fail)``, first rater first.

    None when the table is empty or chance agreement is 1.
    """
    pp, pf, fp, ff = (float(x) for x in sums[:4])
    n = pp + pf + fp + ff
    if n == 0:
        return None
    observed = (pp + ff) / n
    expected = ((pp + pf) * (pp + fp) + (fp + ff) * (pf + ff)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def agreement_2x2(sums: Sums) -> float | None:
    """Share of matching pairs in a 2x2 table laid out as for :func:`kappa_2x2`."""
    n = float(sums[:4].sum())
    return None if n == 0 else float((sums[0] + sums[3]) / n)
