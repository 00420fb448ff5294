"""Preflight checks and the kernels the runner starts (rcakit.book.runner, rcakit.book.kernel)."""

import os

import pytest

from rcakit import RcakitError
from rcakit.book import kernel, registry


def test_preflight_checks_a_store_parameter_under_the_results_folder(tmp_path, monkeypatch):
    from rcakit.book import runner

    toy = registry.Chapter(
        "toy", None, "toy", registry.parse_parameters("store = 'cases'  # s\n"), paths={"store": "store"}
    )
    registry.check_declarations(toy)
    monkeypatch.setattr(registry, "get", lambda cid: toy)
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    runner.preflight("toy", {"store": "cases"})  # the folder need not exist yet
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "cases").write_text("a file")
    with pytest.raises(RcakitError, match=rf"toy: parameter 'store': {tmp_path}/results/cases is a file"):
        runner.preflight("toy", {"store": "cases"})
    runner.preflight("toy", {"store": str(tmp_path / "elsewhere")})  # an absolute folder is taken as it is


def test_each_kernel_gets_private_sockets_so_runs_from_one_folder_cannot_collide(tmp_path, monkeypatch):

    monkeypatch.chdir(tmp_path)
    manager = kernel.ipc_kernel_manager(None)
    first, second = manager(), manager()
    assert first.transport == "ipc"
    assert first.ip != second.ip
    assert not first.ip.startswith(str(tmp_path)) and os.path.isdir(os.path.dirname(first.ip))
    for made in (first, second):
        os.rmdir(made._sockets)
