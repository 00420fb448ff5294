"""The claims file: verdict rules and the shape of every chapter section (data/claims.yaml)."""


import pytest

from rcakit import chapters, claims


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
