"""The MuSiQue world: decomposition mapping, selection, strict eligibility, an intervention and a
diagnosis end to end with a scripted LLM reader, and the chapter run against the fake Ollama server.

The fixture (tests/fixtures/musique) holds invented questions in MuSiQue's JSONL layout.
"""

import json
import os
import random
import re
import subprocess
import sys

import pytest

from rcakit import RcakitError
from rcakit.book import registry
from rcakit.llm import MethodUsage, ResponseCache, cached
from rcakit.rag import diagnosers as dg
from rcakit.rag import protocol as P
from rcakit.rag.interventions import inject
from rcakit.rag.musique import build_musique_world, hop_phrase, read_records, select
from rcakit.rag.settings import EARLIER
from support import FIXTURES
from support.llm_servers import FakeOllamaServer, ScriptedProvider

FIXTURE = FIXTURES / "musique" / "musique_fixture.jsonl"
CHAIN = "3hop1__9001_9002_9003"


@pytest.fixture(scope="module")
def world():
    return build_musique_world(FIXTURE, n_questions=80)


def gold_answers(world):
    """``{sub-question as the reader is asked it for the gold bridge: hop answer}`` over every question."""
    out = {}
    for q in world.questions:
        bridge = q.start
        for g in q.hops:
            out[world.relations[g.relation].sub_question(bridge)] = g.object
            bridge = g.object
    return out


def reader_model(world, wrong=()):
    """A model that reads like a gullible reader: a post's claim first, else the gold answer when a
    document states it, else it asks to search. Sub-questions in ``wrong`` get a wrong answer."""
    answers = gold_answers(world)

    def respond(messages):
        if "diagnose" in messages[0]["content"]:
            return json.dumps({"stage": "retrieval", "hop": 1})
        text = messages[-1]["content"]
        ask = re.match(r"Sub-question: (.+)\n", text).group(1)
        claim = re.search(r"The answer is ([^.]+)\.", text)
        if claim:
            return json.dumps({"action": "answer", "answer": claim.group(1)})
        gold = answers.get(ask)
        if ask in wrong:
            return json.dumps({"action": "answer", "answer": "Nobody In Particular"})
        if gold and gold in text.split("Documents:", 1)[1]:
            return json.dumps({"action": "answer", "answer": gold})
        return json.dumps({"action": "search", "query": ask})

    return respond


def musique_lab(world, tmp_path, wrong=()):
    """The fixture's lab with all six interventions: the scripted reader ignores warning texts, so the
    authors' four alone may leave no failed case."""
    raw = ScriptedProvider(reader_model(world[0], wrong), model="script")
    chat = cached(raw, cache=ResponseCache(tmp_path / "cache"), accounting=MethodUsage())
    lab = P.build_lab(0, n_questions=80, hops=3, reader_chat=chat, world=str(FIXTURE), intervention_set="all")
    return lab, raw


# --- the mapping ------------------------------------------------------------------------------------


def test_selection_keeps_answerable_three_hop_questions_in_file_order(world):
    made, selection = world
    assert [q.id for q in made.questions] == [
        CHAIN,
        "3hop1__9011_9012_9013",
        "3hop2__9021_9022_9023",
        "3hop1__9031_9032_9033",
    ]
    assert (selection.read, selection.with_hops, selection.answerable, selection.selected) == (6, 5, 4, 4)
    assert selection.uncertified_hops == 0
    records = read_records(FIXTURE)
    assert [r["id"] for r in select(records, 2, 10)[0]] == ["2hop__9051_9052"]
    assert len(select(records, 3, 2)[0]) == 2


def test_decomposition_maps_to_certified_hop_facts(world):
    made, _ = world
    q = made.questions[0]
    assert q.start == "The Lantern Orchard" and q.answer == "Doravia"
    assert [(g.subject, g.object) for g in q.hops] == [
        ("The Lantern Orchard", "Ilsa Varnholt"),
        ("Ilsa Varnholt", "Kestrelmoor"),
        ("Kestrelmoor", "Doravia"),
    ]
    for g in q.hops:  # each hop's supporting paragraph is titled by its subject and names its answer
        paragraph = made.corpus[g.paragraph_id]
        assert paragraph.title == g.subject and g.object in paragraph.text
        assert dg.states_fact([paragraph], g.subject, g.object)
    phrases = [made.relations[g.relation].phrase for g in q.hops]
    assert phrases == ["Who directed {}?", "Where was {} born?", "country of {}"]
    assert made.relations[q.hops[2].relation].sub_question("Kestrelmoor") == "What is the country of Kestrelmoor?"
    assert made.facts["Ilsa Varnholt"][q.hops[1].relation] == "Kestrelmoor"
    assert made.home["Ilsa Varnholt"] == q.hops[1].paragraph_id


def test_references_other_than_the_bridge_take_that_hops_gold_answer():
    answers = ["Vennacourt", "Selm River", "1763"]
    assert (
        hop_phrase("When did surveyors of #1 first map #2?", 3, answers, "Ostrovia")
        == "When did surveyors of Vennacourt first map {}?"
    )
    assert hop_phrase("Quiet Harbour Tales >> publisher", 1, answers, "Quiet Harbour Tales") == "publisher of {}"
    assert hop_phrase("What is {x} in #1?", 2, answers, "S") == "What is {{x}} in {}?"
    with pytest.raises(RcakitError, match="refers to #3"):
        hop_phrase("#3 >> country", 2, answers, "S")


def test_pooled_corpus_keeps_a_repeated_paragraph_once_and_ids_are_positions(world):
    made, _ = world
    assert [p.id for p in made.corpus] == list(range(len(made.corpus)))
    assert sum(p.title == "Kestrelmoor" for p in made.corpus) == 1
    assert made.questions[0].hops[2].paragraph_id == made.questions[3].hops[0].paragraph_id


def test_malformed_lines_and_empty_selections_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q"}\n')
    with pytest.raises(RcakitError, match=r"line 1: not a MuSiQue question \(missing field 'answer'\)"):
        read_records(bad)
    two = tmp_path / "two.jsonl"
    two.write_text(FIXTURE.read_text().splitlines()[-1] + "\n")
    with pytest.raises(RcakitError, match="no answerable 3-hop question"):
        build_musique_world(two, 10)


def test_the_rule_reader_alone_is_refused():
    with pytest.raises(RcakitError, match="rule reader cannot read natural text"):
        P.build_lab(0, n_questions=10, world=str(FIXTURE))


# --- the protocol on MuSiQue ------------------------------------------------------------------------


def test_strict_eligibility_on_musique(world, tmp_path):
    made, _ = world
    wrong_ask = made.relations[made.questions[1].hops[2].relation].sub_question("Teodor Aschel")
    lab, raw = musique_lab(world, tmp_path, wrong={wrong_ask})
    correct = {qid: t.correct for qid, t in lab.clean.items()}
    assert correct == {
        CHAIN: True,
        "3hop1__9011_9012_9013": False,
        "3hop2__9021_9022_9023": True,
        "3hop1__9031_9032_9033": True,
    }
    assert lab.world.name == "musique" and raw.calls
    wrong = lab.clean["3hop1__9011_9012_9013"]
    assert len(wrong.hops) == 3 and not P.eligible(wrong, 1)  # reaches every hop, answers wrong: never eligible
    assert all(P.eligible(lab.clean[q], 3) for q in (CHAIN, "3hop2__9021_9022_9023"))


def test_false_premise_at_hop_2_fails_and_propagation_aware_names_it(world, tmp_path):
    """The earlier, targeted false premise (a planted wrong object) under the targeted variant."""
    raw = ScriptedProvider(reader_model(world[0]), model="script")
    chat = cached(raw, cache=ResponseCache(tmp_path / "cache"), accounting=MethodUsage())
    lab = P.build_lab(
        0,
        n_questions=80,
        hops=3,
        reader_chat=chat,
        world=str(FIXTURE),
        **EARLIER.lab_params(),
    )
    clean = lab.clean[CHAIN]
    assert clean.correct and [h.entity for h in clean.hops] == ["Ilsa Varnholt", "Kestrelmoor", "Doravia"]
    injected = inject(lab.agent, clean, 2, "false_premise", random.Random(1), "targeted")
    assert injected.hops[1].docs[0].text.startswith("A widely shared post claims: Where was Ilsa Varnholt born?")
    assert injected.hops[1].entity != "Kestrelmoor" and not injected.correct
    found = dg.propagation_aware(lab.agent, injected)
    assert (found.hop, found.branch) == (2, "flip") and found.cost > 0
    # the false post sits beside the true paragraph at hop 2, so the first certified fact missing is hop 3's
    assert dg.oracle_gold_hop(injected).hop == 3
    case = P.structural_case(lab, CHAIN, 2, "false_premise")
    assert not case["correct"] and case["diagnoses"]["propagation_aware"][1::2] == [2, "flip"]


def test_a_structural_sweep_runs_and_resumes_on_musique(world, tmp_path):
    lab, _ = musique_lab(world, tmp_path)
    store = P.case_store("musique-test", {"world": "fixture"}, tmp_path / "cases")
    cases = P.sweep(lab, "structural", [1, 2, 3], store, progress=None)
    assert len(cases) == len(lab.kinds) * 3 * sum(P.eligible(t, 1) for t in lab.clean.values())
    assert (~cases["correct"]).any() and cases["reader_usage"].map(lambda u: u["calls"] >= 0).all()
    again = P.sweep(lab, "structural", [1, 2, 3], store, progress=None)
    assert again.drop(columns="reader_usage").equals(cases.drop(columns="reader_usage"))


# --- the chapter's rule and an end-to-end run -------------------------------------------------------


def test_world_other_than_synthetic_needs_the_llm_agent_and_a_provider():
    chapter = registry.get("coverage-collapse")
    base = {**{n: p.default for n, p in chapter.parameters.items()}, "world": str(FIXTURE)}
    with pytest.raises(RcakitError, match=r"'world' = '.*' needs 'agent' = 'llm', got 'rule'"):
        registry.check_rules(chapter, base)
    with pytest.raises(RcakitError, match="needs 'provider' to be set"):
        registry.check_rules(chapter, {**base, "agent": "llm"})
    registry.check_rules(chapter, {**base, "agent": "llm", "provider": "ollama:fake"})
    registry.check_rules(chapter, {**base, "world": "synthetic"})


@pytest.mark.slow
def test_cli_refuses_musique_without_the_llm_agent_before_any_work(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rcakit", "run", "coverage-collapse", "--quick", "-p", "world", str(FIXTURE)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "RCAKIT_BOOK_DIR": str(tmp_path / "book"), "RCAKIT_RESULTS_DIR": str(tmp_path / "results")},
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs 'agent' = 'llm'" in lines[0]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


@pytest.mark.chapters
def test_coverage_collapse_runs_end_to_end_on_the_fixture_against_the_fake_server(world, tmp_path):
    results = tmp_path / "results"
    with FakeOllamaServer(reader_model(world[0])) as server:
        env = {
            **os.environ,
            "OLLAMA_HOST": server.url,
            "RCAKIT_LLM_CACHE": str(tmp_path / "llm"),
            "RCAKIT_BOOK_DIR": str(tmp_path / "book"),
            "RCAKIT_RESULTS_DIR": str(results),
        }
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "rcakit.book.cli",
                "run",
                "coverage-collapse",
                "--quick",
                "-p",
                "world",
                str(FIXTURE),
                "-p",
                "agent",
                "llm",
                "-p",
                "provider",
                "ollama:fake",
                "-p",  # the fake reader ignores the warning texts: the authors' four alone fail too few cases
                "intervention_set",
                "all",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=1500,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert server.requests
    record = json.loads((results / "coverage-collapse.json").read_text())
    numbers = record.get("numbers", record)
    assert numbers["world"]["name"] == "musique" and numbers["world"]["selected"] == 4
    assert numbers["llm_cost"]["llm_reader"]["calls"] > 0
    assert record["params"]["world"] == str(FIXTURE)


def test_lines_split_on_newline_only_and_a_leading_bom_is_read(tmp_path):
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["paragraphs"][3]["paragraph_text"] += "\u2028a line separator inside a string"
    path = tmp_path / "separators.jsonl"
    path.write_bytes(
        "\ufeff".encode()
        + json.dumps(record, ensure_ascii=False).encode()
        + b"\n"
        + "\n".join(lines[1:]).encode()
        + b"\n"
    )
    assert [r["id"] for r in read_records(path)] == [json.loads(line)["id"] for line in lines]
    made, selection = build_musique_world(path, n_questions=80)
    assert selection.selected == 4 and any("\u2028" in p.text for p in made.corpus)
