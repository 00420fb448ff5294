"""The primer's closed forms: recorded at quick values, and a broken computation fails the run."""

import shutil

import pytest

from rcakit import chapters, results, runner
from rcakit.paths import project_root


def test_primer_records_its_closed_forms(quick_book):
    recorded = results.load("primer")
    q, r = recorded["params"]["q"], recorded["params"]["r"]
    shapley = recorded["shapley"]
    assert shapley["and_game"] == pytest.approx(0.5) and shapley["or_game"] == pytest.approx(0.5)
    assert shapley["and_run"] == pytest.approx((1 - q**2) / 2)
    assert shapley["or_run"] == pytest.approx((1 - q) ** 2 / 2)
    assert shapley["and_run_efficiency"] == pytest.approx(1 - q**2)
    assert recorded["do"]["force_no_refund"] == 0.0 and recorded["do"]["force_refund"] == 1.0
    assert recorded["contrastive"]["locus"] == 1
    assert recorded["repair"] == {"and_exact": 1, "or_exact": 1, "and_replays": r * 5, "or_replays": r * 4}
    assert recorded["rag"]["coverage_hop"] == 1 and recorded["rag"]["fault_hop"] == 3


def test_primer_is_first_and_validates_its_parameters():
    assert chapters.ORDER[0] == "primer"
    primer = chapters.get("primer")
    assert list(primer.parameters)[0] == "seed"
    chapters.validate("primer", primer.quick)
    with pytest.raises(chapters.RcakitError, match="outside"):
        chapters.validate("primer", {"q": 1.5})


def test_a_broken_do_operation_fails_the_primer_run(tmp_path, monkeypatch):
    """Forcing the action is replaced by resampling it: the asserted identity claim stops the run."""
    source = (project_root() / "notebooks" / "primer.md").read_text()
    forced = 'scm.do_force_action(1, "no_refund")'
    assert source.count(forced) == 1
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "primer.md").write_text(source.replace(forced, "scm.do_resample(1)"))
    (tmp_path / "data").mkdir()
    shutil.copy(project_root() / "data" / "claims.yaml", tmp_path / "data" / "claims.yaml")
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(runner.ChapterFailed, match=r"claims not reproduced: P\(bad \| do\(A1 = no_refund\)\) = 0"):
        runner.run_chapter("primer", quick=True, output_dir=tmp_path / "book", show_progress=False)
    assert not (tmp_path / "results" / "primer.json").exists()

