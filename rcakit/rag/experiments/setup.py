"""The protocol a RAG chapter ran, the world behind its numbers, and the protocol's side-by-side runs.

The authors' protocol (the authors' code, ``anote-ai/Research-AgenticRAG``) is a set of choices, each a
chapter parameter whose default is the authors' setting; :func:`setup_section`
says which this run used, which world produced the numbers, and how the clean
agent did, and :func:`protocol_comparison` and :func:`heed_comparison` show
how much the protocol alone, or the rule reader's reaction to a warning,
moves each cell (AgenticRAG-FP §6).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rcakit.book import registry
from rcakit.rag.experiments.arm import (
    AUTHORS_RETRIEVER,
    CHAPTERS,
    JUDGE_CHOICES,
    ArmRun,
    authors_protocol,
    heed_runs,
    protocol_runs,
)
from rcakit.rag.musique import SYNTHETIC
from rcakit.rag.outcomes import outcome_shares
from rcakit.rag.protocol import Lab
from rcakit.rag.protocol import protocol_record as lab_protocol
from rcakit.rag.text import OUTCOMES
from rcakit.sections import Section


def protocol_record(run: ArmRun) -> dict[str, Any]:
    """The protocol the run used (``rcakit.rag.protocol.protocol_record``), the judge's hop range and prompt."""
    return {**lab_protocol(run.lab), **{k: run.params[k] for k in JUDGE_CHOICES}}


def world_record(lab: Lab) -> dict[str, Any]:
    """Which world produced the numbers: its name, and for MuSiQue the selection counts (§6)."""
    return {
        "name": lab.world.name,
        "questions": len(lab.world.questions),
        "paragraphs": len(lab.world.corpus),
        **lab.selection,
    }


def describe_world(lab: Lab) -> str:
    """One sentence naming the world behind the chapter's numbers."""
    record = world_record(lab)
    if record["name"] == SYNTHETIC:
        return (
            f"The synthetic world (seeded, every hop fact certified by construction) holds "
            f"{record['questions']} questions and {record['paragraphs']:,} paragraphs"
        )
    return (
        f"The MuSiQue world holds {record['selected']} answerable questions with the chosen number of hops "
        f"(of {record['read']} read, {record['with_hops']} with that many hops, {record['answerable']} "
        f"of them answerable) and {record['paragraphs']:,} paragraphs; hops whose supporting paragraph "
        f"does not name the hop's answer: {record['uncertified_hops']}"
    )


@dataclass(frozen=True)
class ProtocolRow:
    """One choice of the authors' protocol (anote-ai/Research-AgenticRAG): its label, the chapter parameter,
    the authors' setting, the parameter's value that matches it (``None``: no parameter of the authors' to
    match; a dict by arm: it differs by arm), what the other values do, and where the page
    measures the effect of departing."""

    label: str
    name: str
    authors: str | dict[str, str]
    default: object
    note: str
    effect: str


EARLIER = "the Explore table's 'targeted variant' column, with the variant's other choices"
RERUN = "not measured on this page; rerun with another value"
PROTOCOL_ROWS = (
    ProtocolRow(
        "corpus",
        "corpus",
        "each question's own paragraphs (MuSiQue's 20)",
        "question",
        "global searches one index over the whole world",
        EARLIER,
    ),
    ProtocolRow(
        "retriever",
        "retriever",
        {
            "structural": "dense: all-MiniLM-L6-v2 cosine, the sweep behind Table 2",
            "content": "BM25: the four runs behind Tables 3 and 4",
        },
        AUTHORS_RETRIEVER,
        "bm25 ranks by Okapi BM25; dense by the cosine of all-MiniLM-L6-v2 embeddings of 'title: text', "
        "clamped at 0, so the first-two fallback almost never fires",
        RERUN + " (the quick run takes BM25)",
    ),
    ProtocolRow(
        "hop budget",
        "spare_hops",
        "3 hops for a 3-hop question, then a forced answer",
        0,
        "the budget is the question's hops plus spare_hops",
        EARLIER,
    ),
    ProtocolRow(
        "retrievals per hop",
        "reformulate",
        "one; no reformulation inside a hop",
        False,
        "reformulate adds a second search after a failed read",
        EARLIER,
    ),
    ProtocolRow("top_k", "top_k", "5", 5, "paragraphs per retrieval", EARLIER),
    ProtocolRow(
        "search where nothing scores",
        "empty_search",
        "the corpus's first two paragraphs",
        "first_two",
        "nothing returns no paragraph",
        EARLIER,
    ),
    ProtocolRow(
        "structural interventions",
        "interventions",
        "generic texts that name no wrong object",
        "generic",
        "targeted plants a wrong object of the right type and drifts to a look-alike",
        EARLIER,
    ),
    ProtocolRow(
        "intervention set",
        "intervention_set",
        "four: empty retrieval, irrelevant documents, false premise, stale evidence (Table 2's live set)",
        "authors",
        "all adds query drift and early termination, which the authors implement but do not run by default; "
        "a single kind runs alone",
        "the Explore table's 'all six interventions' column",
    ),
    ProtocolRow(
        "probe budget",
        "max_probes",
        "no cap in the content runs; 4 in the dense Table 2 runs, 2 in the BM25 structural runs",
        0,
        "0 probes every hop; a cap k repairs hops 1..k only, so with 2 hop 3 is never probed",
        "the probe-budget table (the authors' caps, derived from this run's cases)",
    ),
    ProtocolRow(
        "tokens",
        "tokenizer",
        "lower().split() over 'title: text' for BM25, coverage and the fallback; Jaccard < 0.05 grounding",
        "authors",
        "normalised splits with the answer normaliser (articles and punctuation dropped), coverage and the "
        "fallback over the text alone",
        EARLIER,
    ),
    ProtocolRow(
        "continue-retrieving probe",
        "spare_hops",
        "resumes at hop n+1 within the budget",
        0,
        "on a full trace it is a plain re-answer",
        EARLIER,
    ),
    ProtocolRow(
        "LLM judge's hops",
        "judge_hops",
        "any hop >= 0, n+1 included",
        "any",
        "trace keeps the judge to hops 1..n",
        "not measurable offline: the judge is a language model",
    ),
    ProtocolRow(
        "LLM judge's prompt",
        "judge_prompt",
        "asks for the earliest wrong hop (stage retrieval, answer_generation or none; hop from 1, or 0), every "
        "document in full, up to 256 tokens",
        "authors",
        "rcakit's says the answer is wrong, offers hop n+1 in words, cuts documents at 600 characters and "
        "replies in 32 tokens",
        "not measurable offline: the judge is a language model",
    ),
    ProtocolRow(
        "content span",
        "span_rule",
        "the gold answer if present (not yes/no or under 3 characters), else a bridge entity, else the most "
        "salient span, ranked by tokens, occurrences and length over all the hop's documents; any number is "
        "perturbed; invented names when no other answer fits",
        "authors",
        "first_mention takes the first bridge mention and a salient span of the top document only, perturbs "
        "only salient numbers and skips a case no answer fits",
        "the span-rule table below (both rules on the same cases)",
    ),
    ProtocolRow(
        "reader's reaction to a warning",
        "heed_warnings",
        "the language model's own",
        None,
        "the rule reader cannot read a warning; it abstains on one with this probability, chosen once (0.5) "
        "before any attribution number was seen",
        "the Explore section's heed_warnings sweep",
    ),
    ProtocolRow(
        "agent's reader",
        "agent",
        "a language model that may answer before its budget is spent",
        None,
        "no model is reachable offline: the rule reader, which always takes every hop, or agent llm with a "
        "provider (traces too short for a depth are skipped there and counted)",
        "not measurable offline: the agent is a language model",
    ),
    ProtocolRow(
        "questions",
        "world",
        "answerable 3-hop MuSiQue questions",
        None,
        "MuSiQue is not reachable here: a synthetic world with certified hop facts (world musique when fetched)",
        "not measurable offline: MuSiQue needs agent llm",
    ),
)


def _setting_text(value: object) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


STRUCTURAL_ONLY = ("interventions", "intervention_set", "heed_warnings")  # choices only the structural arm meets
CONTENT_ONLY = ("span_rule",)  # a choice only the content arm meets


def protocol_table(params: Mapping[str, Any], arm: str = "structural") -> pd.DataFrame:
    """The chapter's protocol table: per choice, the authors' setting, this run's (its parameter and value),
    why, and where the effect of a departure is measured; a run that departs from the authors' says so. The
    content arm leaves out the structural interventions and the reader's reaction to their warnings."""
    params = {**authors_protocol(arm), "agent": "rule", "world": SYNTHETIC, **params}
    rows = []
    for row in PROTOCOL_ROWS:
        authors, default = row.authors, row.default
        if isinstance(authors, dict) and isinstance(default, dict):  # an authors' setting that differs by arm
            authors, default = authors[arm], default[arm]
        if (arm != "structural" and row.name in STRUCTURAL_ONLY) or (arm != "content" and row.name in CONTENT_ONLY):
            continue
        value = params.get(row.name)
        if default is None:
            why = row.note
        elif value == default:
            why = f"the authors' setting; {row.note}"
        else:
            why = f"departs from the authors' ({_setting_text(default)}); {row.note}"
        rows.append(
            {
                "choice": row.label,
                "authors' protocol": authors,
                "this chapter": f"{row.name} = {_setting_text(value)}",
                "why": why,
                "effect measured in": row.effect,
            }
        )
    return pd.DataFrame(rows).set_index("choice")


def protocol_cells(runs: Mapping[str, ArmRun], names: Sequence[str], level: str = "protocol") -> pd.DataFrame:
    """Per injected hop and protocol run (rows ``(injected hop, level)``; ``runs``: label -> run): exact-hop
    accuracy of ``names``, failed n and recovery, so a reader sees how much the protocol alone moves each
    cell, in a table as narrow as the text column."""
    rows = {}
    for label, run in runs.items():
        for d in run.depths:
            cells = {name: run.result["accuracy"].get(name, {}).get(str(d), {}).get("point") for name in names}
            rows[(d, label)] = {
                **cells,
                "failed n": run.result["failed_n"][str(d)],
                "recovery": run.result["recovery"][str(d)],
            }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(list(rows), names=["injected hop", level])
    return frame.sort_index(level=0, sort_remaining=False)


def setup_section(run: ArmRun) -> Section:
    """The protocol table (the authors' setting, this run's, and why), with the protocol, the world and the
    clean agent's accuracy recorded and quoted; the structural arm records its eligible questions per depth
    and the correct clean traces skipped there for being too short (an LLM agent that answered early),
    the content arm the injected cases and those skipped for want of a certifiable span. The facts also
    hold the arm's chapter's ``quick`` values (``quick_<name>``), which the page's setting note quotes."""
    lab, cases = run.lab, run.cases
    protocol = protocol_record(run)
    numbers: dict[str, Any] = {"protocol": protocol, "clean_accuracy": lab.clean_accuracy, "world": world_record(lab)}
    facts: dict[str, Any] = {"protocol": protocol, "clean_accuracy": lab.clean_accuracy}
    facts["world_description"] = describe_world(lab)
    facts["quick"] = registry.get(CHAPTERS[run.arm]).quick  # the values the page's setting note names
    if run.arm == "structural":
        numbers["eligible_questions"] = lab.eligible_questions(run.depths)
        numbers["short_traces_skipped"] = lab.short_traces(run.depths)
    else:
        numbers["skipped"] = facts["skipped"] = int(cases["skipped"].sum())
        facts["injected"] = int(len(cases))
    return Section(table=protocol_table(run.params, arm=run.arm), numbers=numbers, facts=facts)


def protocol_comparison(arm: str, params: Mapping[str, Any], names: Sequence[str]) -> Section:
    """The arm under the authors' protocol beside rcakit's targeted variant (:func:`protocol_runs`): per
    injected hop, exact-hop accuracy of ``names``, failed n and recovery, and for the content arm the outcome
    shares first, in place of the recovery (which is the resisted share: a resisted answer is a correct one)."""
    runs = protocol_runs(arm, params)
    frame = protocol_cells(runs, names)
    if arm == "content":
        frame = frame.drop(columns="recovery")
        shares = pd.concat({label: outcome_shares(r.cases)[list(OUTCOMES)] for label, r in runs.items()})
        assert isinstance(shares.index, pd.MultiIndex), "one level per protocol run"
        shares.index = shares.index.swaplevel().set_names(frame.index.names)
        frame = pd.concat([shares, frame], axis=1).loc[frame.index].rename_axis(["corrupted hop", "protocol"])
    return Section(table=frame, decimals=2)


def heed_comparison(params: Mapping[str, Any], names: Sequence[str]) -> Section:
    """The structural arm under the authors' protocol at three rule-reader ``heed_warnings`` values
    (:func:`heed_runs`), per injected hop: exact-hop accuracy of ``names``, failed n and recovery."""
    return Section(table=protocol_cells(heed_runs(params), names, level="heed warnings"), decimals=2)
