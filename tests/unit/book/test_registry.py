"""The chapter registry: parameters cells, validation, bounds, rules, the table of contents (rcakit.book.registry)."""

import os

import pytest

from rcakit import RcakitError
from rcakit.book import registry
from support import ROOT


def _toy_chapter(params: str, meta: str = "") -> registry.Chapter:
    nb_meta = {"title": "toy", **(__import__("yaml").safe_load(meta) or {})}
    return registry.Chapter(
        "toy",
        "toy.md",
        "toy",
        registry.parse_parameters(params),
        bounds=dict(nb_meta.get("bounds", {})),
        choices=dict(nb_meta.get("choices", {})),
        paths=dict(nb_meta.get("paths", {})),
        requires=dict(nb_meta.get("requires", {})),
    )


def test_parse_parameters_reads_literals_and_comments():
    params = registry.parse_parameters("q = 0.3  # prob\nname = 'x'\nseed = 0  # the seed\n")
    assert params["q"].default == 0.3 and params["q"].comment == "prob"
    assert params["name"].default == "x" and params["seed"].comment == "the seed"
    with pytest.raises(RcakitError, match="line 1"):
        registry.parse_parameters("import os\n")


def test_validate_coerces_and_rejects():
    assert registry.validate("car-shapley", {"q": "0.5", "seed": "3"})["q"] == 0.5
    assert registry.validate("car-shapley", {"seed": 1, "budget": 0})["budget"] == 0
    toy = registry.Chapter(
        "toy", None, "toy", {"x": registry.Parameter("x", 0.5), "on": registry.Parameter("on", True)}
    )
    assert registry.coerce(toy, "x", 2) == 2.0 and isinstance(registry.coerce(toy, "x", 2), float)
    assert registry.coerce(toy, "on", "false") is False
    with pytest.raises(RcakitError, match="expects bool"):
        registry.coerce(toy, "on", 1)
    for bad, match in [
        ({"q": "abc"}, "expects float"),
        ({"seed": "1.5"}, "expects int"),
        ({"qq": 1}, "unknown parameter 'qq'"),
        ({"q": 1.2}, "outside"),
        ({"n_permutations": 1}, "outside"),
    ]:
        with pytest.raises(RcakitError, match=match):
            registry.validate("car-shapley", bad)
    with pytest.raises(RcakitError, match="unknown chapter"):
        registry.get("no-such-chapter")


def test_every_chapter_has_a_seed_first_and_valid_quick_values():
    closing = registry.ORDER[-1]
    for chapter in registry.all_chapters():
        if chapter.id == closing:  # the closing page only reads results: no parameters, no unused seed
            assert chapter.parameters == {} and registry.validate(closing, {}) == {}
            continue
        assert list(chapter.parameters)[:1] == ["seed"], chapter.id
        assert all(p.comment for p in chapter.parameters.values()), chapter.id
        registry.validate(chapter.id, chapter.quick)


def test_a_page_without_a_parameters_cell_takes_none_and_two_cells_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    monkeypatch.setattr(registry, "PAGES", ["toy"])
    (tmp_path / "notebooks").mkdir()
    page = tmp_path / "notebooks" / "toy.md"
    cell = "```{code-cell} ipython3\n:tags: [parameters]\n\nseed = 0  # s\n```\n"
    head = (ROOT / "notebooks" / "claims.md").read_text().split("\n---\n")[0] + "\n---\n"
    page.write_text(head + "# Toy\n\n" + cell.replace("[parameters]", "[hide-input]"))
    assert registry.get("toy").parameters == {}
    with pytest.raises(RcakitError, match="takes no parameters, got 'seed'"):
        registry.validate("toy", {"seed": 1})
    page.write_text(head + cell + "\n" + cell)
    os.utime(page, ns=(1, 10**18))  # a new modification time: the page is read again
    with pytest.raises(RcakitError, match="at most one cell tagged 'parameters', found 2"):
        registry.get("toy")


def test_toc_lists_every_chapter_in_order():
    import yaml

    from rcakit.paths import project_root

    toc = yaml.safe_load((project_root() / "book" / "_toc.yml").read_text())
    files = [entry["file"] for entry in toc["chapters"] if entry["file"].startswith("chapters/")]
    assert files == [f"chapters/{cid.replace('-', '_')}" for cid in registry.ORDER]


def test_declarations_refuse_a_numeric_parameter_without_bounds():
    registry.check_declarations(_toy_chapter("seed = 0  # s\nname = 'x'  # n\n", "bounds: {seed: [0, null]}"))
    for params, meta, match in [
        ("seed = 0  # s\n", "", "numeric parameter 'seed' has no bounds"),
        ("seed = 0  # s\nrates = [0.1, 0.2]  # r\n", "bounds: {seed: [0, null]}", "numeric parameter 'rates'"),
        ("seed = 0  # s\nxs = []  # x\n", "bounds: {seed: [0, null]}", "needs a non-empty default"),
        ("s = 'a'  # s\n", "paths: {s: folder}", "paths: 's'"),
        ("s = 'a'  # s\n", "requires: {'agent=llm': [s]}", "requires: 'agent=llm'"),
    ]:
        with pytest.raises(RcakitError, match=match):
            registry.check_declarations(_toy_chapter(params, meta))


def test_every_numeric_parameter_of_every_chapter_has_bounds():
    for chapter in registry.all_chapters():  # check_declarations runs on load; this names the chapter
        missing = [
            n for n, p in chapter.parameters.items() if registry.is_numeric(p.default) and n not in chapter.bounds
        ]
        assert missing == [], chapter.id
        if chapter.parameters:  # the closing page has none
            assert chapter.bounds["seed"][0] == 0, chapter.id


def test_list_parameters_are_checked_element_by_element():
    toy = _toy_chapter(
        "r_values = [1, 3]  # r\nnoise = [0.0, 0.1]  # n\n", "bounds: {r_values: [1, 50], noise: [0.0, 1.0]}"
    )
    assert registry.coerce(toy, "r_values", "[2, 9]") == [2, 9]
    assert registry.coerce(toy, "noise", "[0, 1]") == [0.0, 1.0]
    assert isinstance(registry.coerce(toy, "noise", [0])[0], float)
    bad = [
        ("r_values", "[1,'a']", "element 1 expects int, got 'a'"),
        ("r_values", "[]", "non-empty list of int"),
        ("r_values", "[5.0]", "element 0 expects int"),
        ("r_values", "[1, 51]", "element 1 = 51 is outside"),
        ("r_values", "3", "non-empty list"),
        ("noise", "[True]", "element 0 expects float"),
        ("noise", "[1e999]", "not a finite"),
        ("r_values", "[" * 60_000 + "]" * 60_000, "expects list of int"),
    ]
    for name, value, match in bad:
        with pytest.raises(RcakitError, match=match):
            registry.coerce(toy, name, value)


def test_car_shapley_budget_rule_reads_samples_per_eval_in_the_cli_and_in_the_kernel():
    """The chapter layer's rule (``rcakit.chapters._checks.RULES``) holds where the command checks a run's
    parameters (``runner.run_parameters``) and where the kernel does (``rcakit.book.check_params``)."""
    from rcakit import book
    from rcakit.book import runner

    runner.run_parameters("car-shapley", {"budget": 0})
    runner.run_parameters("car-shapley", {"budget": 192})  # two permutations at 12 rollouts: 2 * 2 * 4 * 12
    runner.run_parameters("car-shapley", {"budget": 50, "samples_per_eval": 3})  # 48 at 3 per evaluation
    with pytest.raises(RcakitError, match=r"car-shapley: parameter 'budget': 191 rollouts .*\(192 rollouts\)"):
        runner.run_parameters("car-shapley", {"budget": 191})
    kernel = {**registry.get("car-shapley").defaults, "budget": 50, "samples_per_eval": 4}
    with pytest.raises(RcakitError, match=r"at samples_per_eval 4 \(64 rollouts\)"):
        book.check_params("car-shapley", kernel)
    assert registry.check_params("car-shapley", kernel).budget == 50  # the registry alone knows no chapter rule


def test_requires_rule_and_provider_specs_are_checked_without_a_kernel():
    toy = _toy_chapter(
        "agent = 'rule'  # a\nprovider = 'none'  # p\njudge_provider = 'none'  # j\n",
        "requires: {'agent=llm': [provider]}",
    )
    registry.check_rules(toy, {"agent": "rule", "provider": "none", "judge_provider": "none"})
    with pytest.raises(RcakitError, match="'agent' = 'llm' needs 'provider' to be set"):
        registry.check_rules(toy, {"agent": "llm", "provider": "none", "judge_provider": "none"})
    with pytest.raises(RcakitError, match="toy: judge_provider: unknown provider"):
        registry.check_rules(toy, {"agent": "rule", "provider": "none", "judge_provider": "gpt-4"})


def test_llm_timeout_environment_variable_sets_the_default_but_not_an_explicit_value(monkeypatch):
    from rcakit.book import runner

    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "7")
    assert runner.run_parameters("car-shapley")["llm_timeout"] == 7.0
    assert runner.run_parameters("car-shapley", {"llm_timeout": "3"})["llm_timeout"] == 3.0
    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "soon")
    with pytest.raises(RcakitError, match="RCAKIT_LLM_TIMEOUT"):
        runner.run_parameters("car-shapley")
