"""Hand-made case rows of the two RAG arms, as the case store holds them, for tests that score without a lab."""


def content_row(qid, depth, strategy, outcome, later=True, contaminated=False, hop=1):
    return {
        "qid": qid,
        "depth": depth,
        "kind": "content_corruption",
        "true_stage": "retrieval",
        "skipped": False,
        "correct": outcome == "resisted",
        "strategy": strategy,
        "outcome": outcome,
        "same_type": True,
        "has_later_query": later,
        "contaminated": contaminated,
        "diagnoses": {} if outcome == "resisted" else {"suf_regen": ["retrieval", hop, 1, "flip"]},
    }


def structural_row(qid, depth, hop, branch, kind="stale_evidence", n_hops=3, **props):
    return {
        "qid": qid,
        "depth": depth,
        "kind": kind,
        "true_stage": "retrieval",
        "skipped": False,
        "correct": False,
        "n_hops": n_hops,
        "fact_in_trace": props.get("fact_in_trace", False),
        "fact_at_hop": props.get("fact_at_hop", False),
        "downstream_intact": props.get("downstream_intact", False),
        "diagnoses": {"propagation_aware": ["retrieval", hop, 10, branch], "coverage": ["retrieval", 1, 0, "none"]},
    }
