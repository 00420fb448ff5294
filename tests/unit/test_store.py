"""The append-only case store and the code digest it is keyed by (rcakit.store)."""

import json
import multiprocessing
import os

import pytest

from rcakit import RcakitError
from rcakit.store import CaseStore


def _square(x):
    return {"x": x, "y": x * x}


def _lines(n):
    return "".join(json.dumps({"key": str(i), "value": _square(i)}) + "\n" for i in range(n))


def _killed_sweep(path):
    store = CaseStore(path)

    def work(i):
        if i == 4:
            os._exit(9)  # killed mid-sweep
        return _square(i)

    store.run([(str(i), i) for i in range(8)], work)


def _package(root, name, files):
    """A throwaway package ``name`` under ``root`` with ``files`` (relative path -> source)."""
    for rel, text in files.items():
        path = root / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_store_resumes_and_ignores_torn_tail(tmp_path):
    path = tmp_path / "cases.jsonl"
    store = CaseStore(path)
    store.run([(str(i), i) for i in range(3)], _square)
    with path.open("a") as fh:
        fh.write('{"key": "3", "val')  # a writer killed mid-line
    calls = []
    again = CaseStore(path)
    assert len(again) == 3
    out = again.run([(str(i), i) for i in range(5)], lambda i: calls.append(i) or _square(i))
    assert calls == [3, 4]
    assert [o["y"] for o in out] == [0, 1, 4, 9, 16]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_killed_sweep_resumes_to_the_same_result(tmp_path):
    proc = multiprocessing.get_context("fork").Process(target=_killed_sweep, args=(tmp_path / "a.jsonl",))
    proc.start()
    proc.join()
    assert proc.exitcode == 9
    resumed = CaseStore(tmp_path / "a.jsonl")
    assert len(resumed) == 4
    full = CaseStore(tmp_path / "b.jsonl").run([(str(i), i) for i in range(8)], _square)
    assert resumed.run([(str(i), i) for i in range(8)], _square) == full


def test_store_refuses_other_parameters(tmp_path):
    CaseStore(tmp_path / "s.jsonl", fingerprint={"seed": 1}).put("a", {})
    with pytest.raises(RcakitError, match="other parameters"):
        CaseStore(tmp_path / "s.jsonl", fingerprint={"seed": 2})


def test_store_skips_a_corrupt_middle_line_keeps_later_cases_and_never_rewrites_on_open(tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    good = _lines(10).splitlines(keepends=True)
    path.write_text("".join(good[:4]) + '{"key": "4", "val\n' + "".join(good[5:]))
    before = path.read_bytes()
    store = CaseStore(path)
    assert path.read_bytes() == before  # opening only reads
    assert len(store) == 9 and "4" not in store and store["9"] == _square(9)
    warning = capsys.readouterr().err.strip().splitlines()
    assert warning == [f"rcakit: warning: {path}:5: corrupt line skipped (not JSON); the case is recomputed"]
    calls = []
    out = store.run([(str(i), i) for i in range(10)], lambda i: calls.append(i) or _square(i))
    assert calls == [4] and [o["y"] for o in out] == [i * i for i in range(10)]


def test_store_treats_deep_nesting_as_a_corrupt_line(tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    path.write_text(_lines(1) + "[" * 100_000 + "]" * 100_000 + "\n" + _lines(3)[len(_lines(1)) :])
    assert len(CaseStore(path)) == 3
    assert ":2: corrupt line skipped" in capsys.readouterr().err


@pytest.mark.parametrize("row", ["null", "[1, 2]", '{"value": 1}', "3"])
def test_store_refuses_a_line_that_is_not_a_case(tmp_path, row):
    path = tmp_path / "cases.jsonl"
    path.write_text(_lines(2) + row + "\n" + _lines(1))
    before = path.read_bytes()
    with pytest.raises(RcakitError, match=rf"^{path}:3: not a case") as err:
        CaseStore(path)
    assert "\n" not in str(err.value) and path.read_bytes() == before


@pytest.mark.parametrize("tail", [b'{"key": "3", "va', b"\0" * 4096, b"\0" * 100 + b"\n" + b"\0" * 50])
def test_store_torn_or_nul_tail_is_cut_only_by_the_next_append(tmp_path, tail, capsys):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(_lines(3).encode() + tail)
    store = CaseStore(path)
    assert len(store) == 3 and path.read_bytes().endswith(tail)  # not rewritten on open
    store.run([(str(i), i) for i in range(5)], _square)
    assert path.read_text() == _lines(5) and capsys.readouterr().err == ""


def test_store_warning_inside_a_runner_kernel_goes_to_the_warnings_file(tmp_path, monkeypatch, capsys):
    from rcakit.progress import WARNINGS_ENV

    log = tmp_path / "warnings.log"
    monkeypatch.setenv(WARNINGS_ENV, str(log))
    path = tmp_path / "cases.jsonl"
    path.write_text(_lines(1) + "not json\n" + _lines(2)[len(_lines(1)) :])
    CaseStore(path)
    assert capsys.readouterr().err == ""  # nothing on the kernel's stderr, so nothing in the notebook
    assert log.read_text() == f"rcakit: warning: {path}:2: corrupt line skipped (not JSON); the case is recomputed\n"


def test_code_digest_changes_with_any_module_of_the_packages_and_nothing_else(tmp_path, monkeypatch):
    from rcakit.store import code_digest

    monkeypatch.syspath_prepend(str(tmp_path))
    _package(tmp_path, "pkg_a", {"__init__.py": "", "one.py": "X = 1\n", "sub/__init__.py": "", "sub/two.py": ""})
    _package(tmp_path, "pkg_b", {"__init__.py": "Y = 2\n"})
    (tmp_path / "mod_c.py").write_text("Z = 3\n")
    base = code_digest(["pkg_a", "pkg_b", "mod_c"])
    assert base == code_digest(["mod_c", "pkg_b", "pkg_a", "pkg_a"])  # a set of modules: order is irrelevant
    assert len(base) == 12 and base != code_digest(["pkg_a", "pkg_b"])
    (tmp_path / "pkg_a" / "__pycache__").mkdir()
    (tmp_path / "pkg_a" / "__pycache__" / "one.cpython-311.pyc").write_bytes(b"\0compiled")
    (tmp_path / "pkg_a" / "notes.txt").write_text("not code")
    assert code_digest(["pkg_a", "pkg_b", "mod_c"]) == base  # only .py sources count
    digests = {base}
    for change in [
        lambda: (tmp_path / "pkg_a" / "sub" / "two.py").write_text("W = 4\n"),  # a nested module
        lambda: (tmp_path / "pkg_a" / "sub" / "three.py").write_text(""),  # a new module
        lambda: (tmp_path / "pkg_a" / "one.py").rename(tmp_path / "pkg_a" / "uno.py"),  # a rename
        lambda: (tmp_path / "mod_c.py").write_text("Z = 4\n"),
    ]:  # a single-module entry
        change()
        digests.add(code_digest(["pkg_a", "pkg_b", "mod_c"]))
    assert len(digests) == 5
    with pytest.raises(ValueError, match="no module or package named 'pkg_missing'"):
        code_digest(["pkg_missing"])


def test_case_stores_live_in_the_results_folder_keyed_by_parameters_and_code(tmp_path, monkeypatch):
    from rcakit import store

    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    a = store.open_case_store("demo", {"seed": 1, "depths": (1, 2)}, ["rcakit.store", "rcakit.stats"])
    assert a.path.parent == tmp_path / "results" / "cases" and a.path.name.startswith("demo-")
    assert not a.path.exists()  # opening creates nothing
    a.run([("k", 3)], _square)
    again = store.open_case_store("demo", {"depths": [1, 2], "seed": 1}, ["rcakit.stats", "rcakit.store"])
    assert again.path == a.path and again["k"] == _square(3)  # same parameters and code: resumed
    other = store.open_case_store("demo", {"seed": 2, "depths": [1, 2]}, ["rcakit.store", "rcakit.stats"])
    assert other.path != a.path and len(other) == 0
    wider = store.open_case_store("demo", {"seed": 1, "depths": [1, 2]}, ["rcakit.store", "rcakit.stats", "rcakit.io"])
    assert wider.path != a.path  # other code, another store
    assert store.store_folder("mine").as_posix() == (tmp_path / "results" / "mine").as_posix()
    assert store.store_folder(tmp_path / "abs") == tmp_path / "abs"
    monkeypatch.setattr(store, "code_digest", lambda packages: "edited-code")
    with pytest.raises(RcakitError, match="other parameters"):  # a store renamed over another code's store
        store.CaseStore(a.path, fingerprint={"params": {"seed": 1, "depths": [1, 2]}, "code": "edited-code"})


def test_opening_a_store_never_writes_it_whatever_it_holds(tmp_path):
    good = _lines(3)
    shapes = {
        "torn": good + '{"key": "3", "va',
        "nul": good + "\0" * 64,
        "corrupt": good + "{oops\n" + good,
        "fingerprint": json.dumps({"__fingerprint__": {"seed": 1}}) + "\n" + good,
        "empty": "",
    }
    for name, text in shapes.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text)
        os.utime(path, ns=(10**18, 10**18))
        before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size)
        for fingerprint in (None, {"seed": 1}, {"seed": 2}):
            try:
                store = CaseStore(path, fingerprint=fingerprint)
                assert len(store) >= 0 and ("0" in store) == (name != "empty")
            except RcakitError as err:  # the other parameters' store: refused, and left as it was
                assert name == "fingerprint" and fingerprint == {"seed": 2}, err
            assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size) == before, name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.jsonl" for n in shapes)  # no temp files
    CaseStore(tmp_path / "never" / "s.jsonl")
    assert not (tmp_path / "never").exists()
