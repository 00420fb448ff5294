"""The protocol's choices are written once (rcakit.rag.settings): the RAG notebooks' parameters cells, the
lab's, agent's, corpora's and judge's keyword defaults and the chapters' protocol table all read AUTHORS."""

import ast
import inspect
from dataclasses import FrozenInstanceError, fields
from typing import get_args

import jupytext
import pytest

from rcakit.chapters import _rag
from rcakit.rag import diagnosers as dg
from rcakit.rag import interventions as I
from rcakit.rag import llm_methods as lm
from rcakit.rag import retrieval as R
from rcakit.rag import settings as S
from rcakit.rag.agent import AgentSettings
from rcakit.rag.protocol import Lab, build_lab
from rcakit.rag.readers import HEED_WARNINGS, RuleReader
from rcakit.rag.settings import AUTHORS, EARLIER
from rcakit.rag.text import TOKENIZERS
from support import ROOT

NOTEBOOKS = {"structural": "coverage_collapse.md", "content": "content_corruption.md"}  # each arm's page
KEYS = [f.name for f in fields(S.ProtocolSettings)]


def parameters_cell(notebook: str) -> dict:
    """``name -> default`` of the code cell tagged ``parameters`` in ``notebooks/<notebook>``."""
    cells = [
        c for c in jupytext.read(ROOT / "notebooks" / notebook).cells if "parameters" in c.metadata.get("tags", [])
    ]
    assert len(cells) == 1, f"{notebook}: expected one parameters cell, found {len(cells)}"
    tree = ast.parse(cells[0].source)
    return {
        target.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


@pytest.mark.parametrize("arm", sorted(NOTEBOOKS))
def test_each_rag_notebook_defaults_to_the_authors_protocol(arm):
    cell = parameters_cell(NOTEBOOKS[arm])
    other_arm = _rag.CONTENT_ONLY if arm == "structural" else _rag.STRUCTURAL_ONLY  # choices this arm never meets
    expected = {k: v for k, v in AUTHORS.as_params(arm).items() if k not in other_arm}
    assert set(expected) <= set(cell), f"{NOTEBOOKS[arm]}: no parameter for {sorted(set(expected) - set(cell))}"
    departs = {k: (cell[k], v) for k, v in expected.items() if cell[k] != v or type(cell[k]) is not type(v)}
    assert departs == {}, f"{NOTEBOOKS[arm]}: (notebook, AUTHORS) differ"
    if "heed_warnings" in cell:  # the rule reader's setting, not the authors'
        assert cell["heed_warnings"] == HEED_WARNINGS


def test_the_science_packages_keyword_defaults_read_the_authors_protocol():
    lab = inspect.signature(build_lab).parameters
    for key, value in AUTHORS.lab_params("content").items():  # build_lab's retriever is BM25, the content arm's
        assert lab[key].default == value, key
    assert lab["heed_warnings"].default == HEED_WARNINGS
    assert inspect.signature(RuleReader).parameters["heed_warnings"].default == HEED_WARNINGS
    agent = AgentSettings()
    assert (agent.top_k, agent.spare_hops, agent.reformulate) == (
        AUTHORS.top_k,
        AUTHORS.spare_hops,
        AUTHORS.reformulate,
    )
    corpora = inspect.signature(R.Corpora).parameters
    assert (corpora["kind"].default, corpora["empty_search"].default) == (AUTHORS.corpus, AUTHORS.empty_search)
    assert (corpora["retriever"].default, corpora["tokenizer"].default) == ("bm25", AUTHORS.tokenizer)
    build = inspect.signature(Lab.build).parameters
    for key in ("interventions", "intervention_set", "span_rule"):
        assert build[key].default == getattr(AUTHORS, key), key
    models = inspect.signature(lm.models_from_params).parameters
    assert (models["judge_hops"].default, models["judge_prompt"].default) == (AUTHORS.judge_hops, AUTHORS.judge_prompt)
    judge = inspect.signature(dg.LLMJudge).parameters
    assert (judge["hops"].default, judge["prompt"].default) == (AUTHORS.judge_hops, AUTHORS.judge_prompt)


def _literal(node: ast.expr) -> bool:
    """A literal other than ``None`` (``None`` means no cap, not a setting)."""
    return isinstance(node, ast.Constant) and node.value is not None


def _literal_defaults(path) -> list[tuple[int, str]]:
    """``(line, name)`` of every keyword default, class field or protocol-table row in ``path`` that writes a
    literal value for a protocol choice."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            found += [(d.lineno, a.arg) for a, d in pairs if a.arg in KEYS and _literal(d)]
        elif isinstance(node, ast.ClassDef):
            found += [
                (item.lineno, item.target.id)
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and item.target.id in KEYS
                and item.value is not None
                and _literal(item.value)
            ]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ProtocolRow":
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and name.value in KEYS and len(node.args) > 3 and _literal(node.args[3]):
                found.append((node.lineno, f"ProtocolRow {name.value}"))
    return found


def test_no_module_of_rcakit_writes_a_protocol_default_again():
    sources = sorted(p for p in (ROOT / "rcakit").rglob("*.py") if p != ROOT / "rcakit" / "rag" / "settings.py")
    restated = {str(p.relative_to(ROOT)): hits for p in sources if (hits := _literal_defaults(p))}
    assert restated == {}, "read the default from rcakit.rag.settings.AUTHORS"


def test_the_chapters_protocol_table_and_runs_read_the_settings():
    for row in _rag.PROTOCOL_ROWS:
        if row.default is None:
            continue
        if isinstance(row.default, dict):
            assert row.default == {arm: AUTHORS.retriever_for(arm) for arm in NOTEBOOKS}
        else:
            assert row.default == getattr(AUTHORS, row.name), row.name
    assert _rag.authors_protocol("structural") == {**AUTHORS.as_params("structural"), "heed_warnings": HEED_WARNINGS}
    kept = _rag._authors({"retriever": "bm25", "top_k": 9, "corpus": "global", "heed_warnings": 1.0})
    assert kept == {**AUTHORS.as_params(), "retriever": "bm25", "heed_warnings": 1.0}  # retriever and heed kept


def test_the_settings_are_frozen_and_their_choices_are_the_modules_own():
    with pytest.raises(FrozenInstanceError):
        AUTHORS.top_k = 3  # type: ignore[misc]
    assert get_args(S.Corpus) == R.CORPUS_KINDS and get_args(S.EmptySearch) == R.EMPTY_SEARCH
    assert get_args(S.RetrieverName) == R.RETRIEVERS and get_args(S.Tokenizer) == TOKENIZERS
    assert get_args(S.Style) == I.STYLES and get_args(S.SpanRule) == I.SPAN_RULES
    assert get_args(S.InterventionSet) == tuple(I.INTERVENTION_SETS)
    assert get_args(S.JudgeHops) == dg.JUDGE_HOPS and get_args(S.JudgePrompt) == dg.JUDGE_PROMPTS
    assert EARLIER.retriever_for("structural") == EARLIER.retriever_for("content") == "bm25"
    assert "retriever" not in AUTHORS.as_params() and EARLIER.as_params()["retriever"] == "bm25"
    assert set(EARLIER.lab_params()) == set(KEYS) - set(S.JUDGE_CHOICES)


def test_the_restatement_check_finds_a_planted_default(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "class S:\n    top_k: int = 5\n    max_probes: int | None = None\n\n\n"
        "def f(x, *, corpus='question', spare_hops=0, world='synthetic'):\n    pass\n\n\n"
        "ROW = ProtocolRow('top_k', 'top_k', '5', 5, 'n', 'e')\n"
    )
    assert _literal_defaults(planted) == [(2, "top_k"), (6, "corpus"), (6, "spare_hops"), (10, "ProtocolRow top_k")]
