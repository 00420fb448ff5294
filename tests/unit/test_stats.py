"""Wilson intervals, bootstraps and the CLT interval (rcakit.stats)."""

from typing import NamedTuple

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from rcakit import stats


def test_wilson_matches_statsmodels_and_known_value():
    lo, hi = stats.wilson_ci(8, 10)
    assert (lo, hi) == pytest.approx(proportion_confint(8, 10, method="wilson"))
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert all(np.isnan(stats.wilson_ci(0, 0)))


def test_accuracy_with_ci():
    acc = stats.accuracy_with_ci([True, False, True, True])
    assert acc["acc"] == 0.75 and acc["n"] == 4 and acc["lo"] < 0.75 < acc["hi"]


def test_bootstrap_accuracy_ci_known_data():
    point, lo, hi = stats.bootstrap_accuracy_ci([True] * 10)
    assert (point, lo, hi) == (1.0, 1.0, 1.0)
    data = [True] * 30 + [False] * 70
    point, lo, hi = stats.bootstrap_accuracy_ci(data, n_boot=1000, seed=42)
    assert point == 0.3
    assert 0.19 < lo < 0.23 and 0.38 < hi < 0.41  # ~ ±1.96·sqrt(.3·.7/100)
    assert stats.bootstrap_accuracy_ci(data) == (point, lo, hi)  # seeded


def test_bootstrap_ci_of_a_mean_brackets_it_and_is_seeded():
    x = np.random.default_rng(0).normal(5, 1, size=200)
    point, lo, hi = stats.bootstrap_ci(x, seed=1)
    assert lo < point < hi and hi - lo == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.2)
    assert stats.bootstrap_ci(x, seed=1) == (point, lo, hi)


def test_mean_ci_normal():
    m, lo, hi = stats.mean_ci_normal([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and hi - m == pytest.approx(1.959964 * np.std([1, 2, 3, 4], ddof=1) / 2)


class _Three(NamedTuple):
    first: int
    second: int
    third: int


class _Four(NamedTuple):
    first: int
    second: int
    third: int
    fourth: int


def test_seed_streams_name_independent_draws_of_the_master_seed_and_a_new_field_keeps_the_old_ones():
    three = stats.seed_streams(7, _Three)
    assert isinstance(three, _Three) and all(type(v) is int for v in three)
    assert three == tuple(int(d) for d in np.random.default_rng(7).integers(0, 2**31, size=3))
    assert len(set(three)) == 3 and stats.seed_streams(8, _Three) != three
    assert stats.seed_streams(7, _Four)[:3] == three  # a field added at the end changes no earlier stream
