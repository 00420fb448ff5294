"""A scripted LLM reader for the RAG agent: the oracle the reader, provider and parallel tests share."""

import json
import re

from rcakit.rag.relations import RELATIONS


def oracle(world, search_first=()):
    """A scripted reader that answers from the world's facts when the subject's paragraph was retrieved.

    For subjects in ``search_first`` it first asks to search with its own query.
    """
    phrases = [
        (re.compile("^" + re.escape(r.phrase).replace(r"\{\}", "(.+)") + "$"), r.name) for r in RELATIONS.values()
    ]
    asked = set()

    def respond(messages):
        text = messages[-1]["content"]
        ask = re.match(r"Sub-question: what is (.+)\?\n", text).group(1)
        subject, rel = next((m.group(1), name) for rx, name in phrases if (m := rx.match(ask)))
        if subject in search_first and subject not in asked:
            asked.add(subject)
            return json.dumps({"action": "search", "query": f"{subject} biography facts"})
        if f"] {subject}: " not in text:
            return json.dumps({"action": "search", "query": subject})
        return json.dumps({"action": "answer", "answer": world.facts[subject][rel]})

    return respond
