"""Fixtures shared by the tests of rcakit.book."""

import pytest

from support.bad_inputs import TOY_CHAPTER


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """A project whose car-shapley chapter is the three-case toy, with a scratch book and results."""
    (tmp_path / "root" / "notebooks").mkdir(parents=True)
    (tmp_path / "root" / "notebooks" / "car_shapley.md").write_text(TOY_CHAPTER)
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path
