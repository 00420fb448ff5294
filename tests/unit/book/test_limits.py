"""Issue 48, item 2 (D03-D05, D24): one bound for every number that becomes a wait or a count
(``rcakit.deadlines``), for environment variables and parameters alike, refused in one line before anything
starts, and printed by ``rcakit list``."""

from __future__ import annotations

import io
import socket
import threading
from contextlib import redirect_stdout

import pytest

from rcakit import RcakitError
from rcakit.attribution.scoring import check_method_timeout
from rcakit.book import cli, registry
from rcakit.deadlines import MAX_COUNT, MAX_SECONDS, check_seconds, seconds_from_env
from rcakit.llm.spec import check_timeout


def test_the_largest_wait_accepted_is_one_the_platform_takes():
    """Above about 9.2e9 s, ``threading`` and ``socket`` overflow: the bound is far below, so nothing the checks
    accept can fail there."""
    assert MAX_SECONDS <= threading.TIMEOUT_MAX
    with socket.socket() as s:
        s.settimeout(MAX_SECONDS)  # no OverflowError
    threading.Event().wait(1e-6)
    assert check_seconds(MAX_SECONDS, "x") == MAX_SECONDS


@pytest.mark.parametrize("name", ["RCAKIT_FETCH_TIMEOUT", "RCAKIT_PLUGIN_TIMEOUT", "RCAKIT_DASK_TIMEOUT"])
@pytest.mark.parametrize("raw", ["1e10", "1e308", "86401"])
def test_a_wait_longer_than_a_day_in_the_environment_is_one_line(monkeypatch, name, raw):
    monkeypatch.setenv(name, raw)
    with pytest.raises(RcakitError) as info:
        seconds_from_env(name, 10.0)
    assert str(info.value) == f"{name}: {float(raw):g} s is longer than rcakit waits (at most 86400 s, a day)"


def test_the_parameters_that_set_waits_share_the_bound():
    for check, name in ((check_method_timeout, "method_timeout"), (check_timeout, "llm_timeout")):
        assert check(MAX_SECONDS, name) == MAX_SECONDS
        with pytest.raises(RcakitError, match=f"^{name}: "):
            check(1e10, name)


@pytest.mark.parametrize(
    ("chapter", "name", "value", "words"),
    [
        ("attribution-families", "method_timeout", "1e10", "is outside [0.001, 86400.0]"),  # D05
        ("car-shapley", "k_samples", "4611686018427387904", f"is outside [5, {MAX_COUNT}]"),  # D24
        ("car-shapley", "llm_timeout", "1e10", "is outside [0.1, 86400.0]"),
        ("attribution-families", "rag_cases", str(MAX_COUNT + 1), f"is outside [1, {MAX_COUNT}]"),
    ],
)
def test_a_parameter_past_the_platforms_bound_is_refused_before_a_kernel(chapter, name, value, words):
    with pytest.raises(RcakitError) as info:
        registry.validate(chapter, {name: value})
    assert str(info.value).startswith(f"{chapter}: parameter {name!r} = ") and words in str(info.value)


def test_a_seed_keeps_its_open_end_and_a_count_at_the_bound_is_valid():
    assert registry.validate("car-shapley", {"seed": 2**40})["seed"] == 2**40
    assert registry.validate("attribution-families", {"method_timeout": MAX_SECONDS})["method_timeout"] == MAX_SECONDS
    chapter = registry.get("car-shapley")
    assert registry.bounds_of(chapter, "seed")[1] is None
    assert registry.bounds_of(chapter, "k_samples") == (5, MAX_COUNT)


def test_rcakit_list_prints_the_bounds_that_are_checked():
    out = io.StringIO()
    with redirect_stdout(out):
        cli._list(None)
    text = out.getvalue()
    assert "k_samples = " in text and f"in [5, {MAX_COUNT}]" in text
    assert "in [0.001, 86400.0]" in text  # method_timeout
