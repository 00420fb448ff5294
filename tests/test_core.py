"""The shared core: stats, the case store, results files, claims, the registry."""

import json
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from rcakit import RcakitError, chapters, claims, results, stats
from rcakit.store import CaseStore


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


def _square(x):
    return {"x": x, "y": x * x}


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


def _killed_sweep(path):
    store = CaseStore(path)

    def work(i):
        if i == 4:
            os._exit(9)  # killed mid-sweep
        return _square(i)

    store.run([(str(i), i) for i in range(8)], work)


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


def test_compare_verdicts_and_assert_holds():
    measured = {"interaction": {"phi": [0.46, 0.45, 0.0], "phi_ci": [[0.43, 0.49], [0.40, 0.44], [-0.1, 0.1]],
                                "efficiency": 0.95, "contrastive_abs_sum": 1.6},
                "pivotal": {"locus": 1}, "support_agent": {"locus": 2, "action_match_rate": 1.0}}
    table = claims.compare("car-shapley", measured, {"q": 0.3}).set_index("claim")
    verdicts = table["verdict"].to_dict()
    assert verdicts["Shapley phi_0, two-step interaction SCM"] == "agrees"
    assert verdicts["Shapley phi_1, two-step interaction SCM"] == "differs"  # 0.45 outside [0.40, 0.44]
    assert verdicts["Efficiency sum vs analytic 1 - q^2 = 0.91"] == "differs"  # |0.95 - 0.909| > 0.03
    with pytest.raises(AssertionError, match="Efficiency"):
        claims.assert_holds(table.reset_index())
    other = claims.compare("car-shapley", measured, {"q": 0.5})
    assert "other parameters" in set(other["verdict"])
    claims.assert_holds(other)  # the paper's setting does not apply at q = 0.5
    missing = claims.compare("car-shapley", {}, {"q": 0.3, "provider": "llamacpp:smollm2"})
    assert set(missing["verdict"]) == {"not measured"}


def test_every_claims_section_is_well_formed():
    for cid in chapters.ORDER:
        if cid == "claims":
            continue
        for claim in claims.chapter_claims(cid)["claims"]:
            assert {"claim", "source", "paper", "measured"} <= set(claim), claim
            assert len({"expect", "ci", "tolerance"} & set(claim)) <= 1, claim


def test_parse_parameters_reads_literals_and_comments():
    params = chapters.parse_parameters("q = 0.3  # prob\nname = 'x'\nseed = 0  # the seed\n")
    assert params["q"].default == 0.3 and params["q"].comment == "prob"
    assert params["name"].default == "x" and params["seed"].comment == "the seed"
    with pytest.raises(RcakitError, match="line 1"):
        chapters.parse_parameters("import os\n")


def test_validate_coerces_and_rejects():
    assert chapters.validate("car-shapley", {"q": "0.5", "seed": "3"})["q"] == 0.5
    assert chapters.validate("car-shapley", {"seed": 1, "budget": 0})["budget"] == 0
    toy = chapters.Chapter("toy", None, "toy",
                           {"x": chapters.Parameter("x", 0.5), "on": chapters.Parameter("on", True)})
    assert chapters.coerce(toy, "x", 2) == 2.0 and isinstance(chapters.coerce(toy, "x", 2), float)
    assert chapters.coerce(toy, "on", "false") is False
    with pytest.raises(RcakitError, match="expects bool"):
        chapters.coerce(toy, "on", 1)
    for bad, match in [({"q": "abc"}, "expects float"), ({"seed": "1.5"}, "expects int"),
                       ({"qq": 1}, "unknown parameter 'qq'"), ({"q": 1.2}, "outside"),
                       ({"n_permutations": 1}, "outside")]:
        with pytest.raises(RcakitError, match=match):
            chapters.validate("car-shapley", bad)
    with pytest.raises(RcakitError, match="unknown chapter"):
        chapters.get("no-such-chapter")


def test_every_chapter_has_a_seed_first_and_valid_quick_values():
    closing = chapters.ORDER[-1]
    for chapter in chapters.all_chapters():
        if chapter.id == closing:  # the closing page only reads results: no parameters, no unused seed
            assert chapter.parameters == {} and chapters.validate(closing, {}) == {}
            continue
        assert list(chapter.parameters)[:1] == ["seed"], chapter.id
        assert all(p.comment for p in chapter.parameters.values()), chapter.id
        chapters.validate(chapter.id, chapter.quick)


def test_a_page_without_a_parameters_cell_takes_none_and_two_cells_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    monkeypatch.setattr(chapters, "ORDER", ["toy"])
    (tmp_path / "notebooks").mkdir()
    page = tmp_path / "notebooks" / "toy.md"
    cell = "```{code-cell} ipython3\n:tags: [parameters]\n\nseed = 0  # s\n```\n"
    head = (Path(__file__).parents[1] / "notebooks" / "claims.md").read_text().split("\n---\n")[0] + "\n---\n"
    page.write_text(head + "# Toy\n\n" + cell.replace("[parameters]", "[hide-input]"))
    assert chapters.get("toy").parameters == {}
    with pytest.raises(RcakitError, match="unknown parameter 'seed'"):
        chapters.validate("toy", {"seed": 1})
    page.write_text(head + cell + "\n" + cell)
    os.utime(page, ns=(1, 10**18))  # a new modification time: the page is read again
    with pytest.raises(RcakitError, match="at most one cell tagged 'parameters', found 2"):
        chapters.get("toy")


def test_toc_lists_every_chapter_in_order():
    import yaml

    from rcakit.paths import project_root

    toc = yaml.safe_load((project_root() / "book" / "_toc.yml").read_text())
    files = [entry["file"] for entry in toc["chapters"] if entry["file"].startswith("chapters/")]
    assert files == [f"chapters/{cid.replace('-', '_')}" for cid in chapters.ORDER]


def test_environment_yml_mirrors_pyproject_lower_bounds():
    import re
    import tomllib

    import yaml

    from rcakit.paths import project_root

    project = tomllib.loads((project_root() / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [d for k, v in project["optional-dependencies"].items()
                                          if k != "local-llm" for d in v]
    env = yaml.safe_load((project_root() / "environment.yml").read_text())["dependencies"]
    pins = [d for d in env if isinstance(d, str)] + next(d["pip"] for d in env if isinstance(d, dict))
    for requirement in declared:
        name = re.split(r"[<>=]", requirement)[0]
        mirrored = [p for p in pins if re.split(r"[<>=]", p)[0] == name]
        assert mirrored == [requirement], f"{requirement} is not mirrored in environment.yml"


def _lines(n):
    return "".join(json.dumps({"key": str(i), "value": _square(i)}) + "\n" for i in range(n))


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
    path.write_text(_lines(1) + "[" * 100_000 + "]" * 100_000 + "\n" + _lines(3)[len(_lines(1)):])
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
    path.write_text(_lines(1) + "not json\n" + _lines(2)[len(_lines(1)):])
    CaseStore(path)
    assert capsys.readouterr().err == ""  # nothing on the kernel's stderr, so nothing in the notebook
    assert log.read_text() == f"rcakit: warning: {path}:2: corrupt line skipped (not JSON); the case is recomputed\n"


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


def _toy_chapter(params: str, meta: str = "") -> chapters.Chapter:
    nb_meta = {"title": "toy", **(__import__("yaml").safe_load(meta) or {})}
    return chapters.Chapter("toy", "toy.md", "toy", chapters.parse_parameters(params),
                            bounds=dict(nb_meta.get("bounds", {})), choices=dict(nb_meta.get("choices", {})),
                            paths=dict(nb_meta.get("paths", {})), requires=dict(nb_meta.get("requires", {})))


def test_declarations_refuse_a_numeric_parameter_without_bounds():
    chapters.check_declarations(_toy_chapter("seed = 0  # s\nname = 'x'  # n\n", "bounds: {seed: [0, null]}"))
    for params, meta, match in [
        ("seed = 0  # s\n", "", "numeric parameter 'seed' has no bounds"),
        ("seed = 0  # s\nrates = [0.1, 0.2]  # r\n", "bounds: {seed: [0, null]}", "numeric parameter 'rates'"),
        ("seed = 0  # s\nxs = []  # x\n", "bounds: {seed: [0, null]}", "needs a non-empty default"),
        ("s = 'a'  # s\n", "paths: {s: folder}", "paths: 's'"),
        ("s = 'a'  # s\n", "requires: {'agent=llm': [s]}", "requires: 'agent=llm'"),
    ]:
        with pytest.raises(RcakitError, match=match):
            chapters.check_declarations(_toy_chapter(params, meta))


def test_every_numeric_parameter_of_every_chapter_has_bounds():
    for chapter in chapters.all_chapters():  # check_declarations runs on load; this names the chapter
        missing = [n for n, p in chapter.parameters.items()
                   if chapters.is_numeric(p.default) and n not in chapter.bounds]
        assert missing == [], chapter.id
        if chapter.parameters:  # the closing page has none
            assert chapter.bounds["seed"][0] == 0, chapter.id


def test_list_parameters_are_checked_element_by_element():
    toy = _toy_chapter("r_values = [1, 3]  # r\nnoise = [0.0, 0.1]  # n\n",
                       "bounds: {r_values: [1, 50], noise: [0.0, 1.0]}")
    assert chapters.coerce(toy, "r_values", "[2, 9]") == [2, 9]
    assert chapters.coerce(toy, "noise", "[0, 1]") == [0.0, 1.0]
    assert isinstance(chapters.coerce(toy, "noise", [0])[0], float)
    bad = [("r_values", "[1,'a']", "element 1 expects int, got 'a'"),
           ("r_values", "[]", "non-empty list of int"),
           ("r_values", "[5.0]", "element 0 expects int"),
           ("r_values", "[1, 51]", "element 1 = 51 is outside"),
           ("r_values", "3", "non-empty list"),
           ("noise", "[True]", "element 0 expects float"),
           ("noise", "[1e999]", "not a finite"),
           ("r_values", "[" * 60_000 + "]" * 60_000, "expects list of int")]
    for name, value, match in bad:
        with pytest.raises(RcakitError, match=match):
            chapters.coerce(toy, name, value)


def test_requires_rule_and_provider_specs_are_checked_without_a_kernel():
    toy = _toy_chapter("agent = 'rule'  # a\nprovider = 'none'  # p\njudge_provider = 'none'  # j\n",
                       "requires: {'agent=llm': [provider]}")
    chapters.check_rules(toy, {"agent": "rule", "provider": "none", "judge_provider": "none"})
    with pytest.raises(RcakitError, match="'agent' = 'llm' needs 'provider' to be set"):
        chapters.check_rules(toy, {"agent": "llm", "provider": "none", "judge_provider": "none"})
    with pytest.raises(RcakitError, match="toy: judge_provider: unknown provider"):
        chapters.check_rules(toy, {"agent": "rule", "provider": "none", "judge_provider": "gpt-4"})


def test_llm_timeout_environment_variable_sets_the_default_but_not_an_explicit_value(monkeypatch):
    from rcakit import runner

    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "7")
    assert runner.run_parameters("car-shapley")["llm_timeout"] == 7.0
    assert runner.run_parameters("car-shapley", {"llm_timeout": "3"})["llm_timeout"] == 3.0
    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "soon")
    with pytest.raises(RcakitError, match="RCAKIT_LLM_TIMEOUT"):
        runner.run_parameters("car-shapley")


def _package(root, name, files):
    """A throwaway package ``name`` under ``root`` with ``files`` (relative path -> source)."""
    for rel, text in files.items():
        path = root / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


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
    for change in [lambda: (tmp_path / "pkg_a" / "sub" / "two.py").write_text("W = 4\n"),  # a nested module
                   lambda: (tmp_path / "pkg_a" / "sub" / "three.py").write_text(""),  # a new module
                   lambda: (tmp_path / "pkg_a" / "one.py").rename(tmp_path / "pkg_a" / "uno.py"),  # a rename
                   lambda: (tmp_path / "mod_c.py").write_text("Z = 4\n")]:  # a single-module entry
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
    shapes = {"torn": good + '{"key": "3", "va', "nul": good + "\0" * 64, "corrupt": good + "{oops\n" + good,
              "fingerprint": json.dumps({"__fingerprint__": {"seed": 1}}) + "\n" + good, "empty": ""}
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


LINT = Path(__file__).parents[1] / "scripts" / "lint.py"


def _lint(*paths):
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(LINT), *map(str, paths)], capture_output=True, text=True)


def test_make_test_runs_the_lint_gate_before_pytest():
    import re

    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    recipe = [line.strip() for line in re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()]
    lint = recipe.index("$(PY) scripts/lint.py")  # the entry point the tests below run
    first_pytest = min(i for i, line in enumerate(recipe) if "pytest" in line)
    assert lint < first_pytest  # under .SHELLFLAGS -e a lint finding stops the target before any test runs
    assert "-eo pipefail" in makefile


def test_lint_gate_fails_on_an_unused_import_in_code_and_in_a_chapter(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("import os\n\nprint(os.sep)\n")
    assert _lint(clean).returncode == 0
    dirty = tmp_path / "dirty.py"
    dirty.write_text("import os\nimport sys\n\nprint(os.sep)\n")
    proc = _lint(clean, dirty)
    assert proc.returncode == 1 and f"{dirty}:2:8: F401" in proc.stdout and "`sys` imported but unused" in proc.stdout
    head = (Path(__file__).parents[1] / "notebooks" / "claims.md").read_text().split("\n---\n")[0] + "\n---\n"
    cell = "```{{code-cell}} ipython3\n{}\n```\n\n"
    chapter = tmp_path / "toy.md"
    body = "# Toy\n\n" + cell.format(":tags: [parameters]\n\nseed = 0  # s")
    body += cell.format("import math\n\nmath.pi * seed")  # an import atop a later cell is not E402
    chapter.write_text(head + body)  # the last expression of a cell is its output, not B018
    assert _lint(chapter).returncode == 0, _lint(chapter).stdout
    chapter.write_text(head + body + cell.format("import json\n\nseed"))
    proc = _lint(tmp_path)  # a folder: its .py files and its chapters
    assert proc.returncode == 1
    assert f"{chapter}:cell 4:1:8: F401 [*] `json` imported but unused" in proc.stdout
    assert f"{dirty}:2:8: F401" in proc.stdout and "`math`" not in proc.stdout


def _script(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compare_results_names_the_differing_keys_and_passes_only_identical_or_expected(tmp_path):
    cmp = _script("compare_results")
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    tree = {"a": {"phi": [0.5, 0.25], "n": 3}, "params": {"seed": 0, "store": "results/cases"}}
    (base / "x.json").write_text(json.dumps(tree, sort_keys=True, indent=2) + "\n")
    (head / "x.json").write_text(json.dumps(tree, sort_keys=True, indent=2) + "\n")
    assert cmp.compare("x", base, head, set()) == (True, "x: byte-identical")
    moved = {**tree, "params": {"seed": 0, "store": "cases"}}
    (head / "x.json").write_text(json.dumps(moved, sort_keys=True, indent=2) + "\n")
    assert cmp.compare("x", base, head, set()) == (False, "x: differs at params.store")
    assert cmp.compare("x", base, head, {"params.store"}) == (True, "x: identical except the expected keys "
                                                                     "params.store")
    changed = {"a": {"phi": [0.5, 0.26], "n": 3.0, "new": 1}, "params": moved["params"]}
    (head / "x.json").write_text(json.dumps(changed, sort_keys=True, indent=2) + "\n")
    ok, line = cmp.compare("x", base, head, {"params.store"})
    assert not ok and line == "x: differs at a.n, a.new (only in head), a.phi.1"  # 3 and 3.0 are other bytes
    assert cmp.compare("x", base, head, {"params.store", "a.new"}) == (False, "x: differs at a.n, a.phi.1")
    (head / "x.json").write_text(json.dumps(tree, sort_keys=True) + "\n")  # same values, other layout
    assert cmp.compare("x", base, head, set())[0] is False
    assert cmp.compare("y", base, head, set()) == (False, f"y: no results file in the base run ({base / 'y.json'})")
    assert cmp.differing_keys([1, 2], [1, 2, 3]) == ["(whole file)"]


def test_preflight_checks_a_store_parameter_under_the_results_folder(tmp_path, monkeypatch):
    from rcakit import runner

    toy = chapters.Chapter("toy", None, "toy", chapters.parse_parameters("store = 'cases'  # s\n"),
                           paths={"store": "store"})
    chapters.check_declarations(toy)
    monkeypatch.setattr(chapters, "get", lambda cid: toy)
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    runner.preflight("toy", {"store": "cases"})  # the folder need not exist yet
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "cases").write_text("a file")
    with pytest.raises(RcakitError, match=rf"toy: parameter 'store': {tmp_path}/results/cases is a file"):
        runner.preflight("toy", {"store": "cases"})
    runner.preflight("toy", {"store": str(tmp_path / "elsewhere")})  # an absolute folder is taken as it is


def test_each_kernel_gets_private_sockets_so_runs_from_one_folder_cannot_collide(tmp_path, monkeypatch):
    from rcakit import runner

    monkeypatch.chdir(tmp_path)
    manager = runner._ipc_kernel_manager(None)
    first, second = manager(), manager()
    assert first.transport == "ipc"
    assert first.ip != second.ip
    assert not first.ip.startswith(str(tmp_path)) and os.path.isdir(os.path.dirname(first.ip))
    for made in (first, second):
        os.rmdir(made._sockets)


def test_api_page_lists_every_public_module_and_is_up_to_date():
    api = _script("api_page")
    page = api.page()
    assert (Path(__file__).parents[1] / "book" / "api.md").read_text(encoding="utf-8") == page
    for name in ("rcakit.scm", "rcakit.shapley", "rcakit.repair", "rcakit.rag", "rcakit.trajectories",
                 "rcakit.llm", "rcakit.stats", "rcakit.claims"):
        assert f".. automodule:: {name}\n   :members:" in page
    assert api.source_of("rcakit.no_such_module") is None
