"""Results files: sorted plain JSON, and refusals of an unusable results folder (rcakit.results)."""

import numpy as np
import pandas as pd
import pytest

from rcakit import RcakitError, results


def test_record_is_sorted_plain_json(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path))
    numbers = {"b": np.float64(0.5), "a": {"arr": np.arange(3), "s": pd.Series([1.5, np.nan])}}
    assert results.record("demo", numbers, {"seed": 1}) is None  # shows nothing in a notebook
    text = results.result_path("demo").read_text()
    assert text.index('"a"') < text.index('"b"')
    back = results.load("demo")
    assert back["a"]["arr"] == [0, 1, 2] and back["a"]["s"] == [1.5, None]
    assert back["params"] == {"seed": 1} and "rcakit_version" in back
    assert results.lookup(back, "a.arr.2") == 2


def test_load_all_refuses_a_results_path_that_is_a_file_or_bad_json(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "r.json"))
    (tmp_path / "r.json").write_text("{}")
    with pytest.raises(RcakitError, match="is a file, not a folder"):
        results.load_all()
    with pytest.raises(RcakitError, match="is a file, not a folder"):
        results.record("demo", {}, {})
    folder = tmp_path / "res"
    folder.mkdir()
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(folder))
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RcakitError, match=r"deep.json: not a results file") as err:
        results.load_all()
    assert "\n" not in str(err.value)
    (folder / "deep.json").write_text("null")
    with pytest.raises(RcakitError, match="expected a JSON object"):
        results.load_all()
