"""The claims file: verdict rules and the shape of every chapter section (data/claims.yaml)."""

import pytest

from rcakit import claims
from rcakit.book import registry


def _car(gap: float, q: float = 0.3) -> dict:
    """car-shapley's numbers as recorded: phi_1's interval misses its analytic value, phi_0's holds it."""
    half = (1 - q**2) / 2
    return {
        "interaction": {
            "phi": [0.46, 0.45, 0.0],
            "phi_ci": [[0.43, 0.49], [0.40, 0.44], [-0.1, 0.1]],
            "analytic_phi": [half, half, 0.0],
            "efficiency": 0.95,
            "analytic_efficiency": 1 - q**2,
            "efficiency_ci_from_v_empty": [0.9, 0.92],
            "efficiency_gap": gap,
            "contrastive_abs_sum": 1.6,
            "coverage": {"car_phi_0": 0.9, "car_phi_0_ci": [0.85, 0.93]},
        },
        "pivotal": {"locus": 1, "effects": [-0.2, -0.7, 0.0]},
        "support_agent": {"locus": 2, "action_match_rate": 1.0},
    }


def test_compare_verdicts_and_assert_holds():
    table = claims.compare("car-shapley", _car(gap=0.0), {"q": 0.3}).set_index("claim")
    verdict = {name.split(":")[0]: v for name, v in table["verdict"].items()}
    assert verdict["Shapley $\\phi_0$, two-step interaction SCM"] == "agrees"  # 0.455 in [0.43, 0.49]
    assert verdict["Shapley $\\phi_1$, two-step interaction SCM"] == "differs"  # 0.455 outside [0.40, 0.44]
    assert (
        verdict[
            "CAR's 95% interval for $\\phi_0$ holds the analytic value in 95% of reruns at the paper's setting "
            "(80 permutations $\\times$ 12 rollouts)"
        ]
        == "other parameters"
    )  # no setting given: not the paper's
    claims.assert_holds(table.reset_index())  # a Monte-Carlo interval that misses is a verdict, never an exception
    broken = claims.compare("car-shapley", _car(gap=1e-3), {"q": 0.3})
    with pytest.raises(AssertionError, match=r"Efficiency sum \$= 1 - "):  # an exact identity is asserted
        claims.assert_holds(broken)


def test_an_identity_is_checked_at_any_parameters_against_its_own_expected_value():
    name = "Replay reduction $1 - \\text{GCJR}/\\text{exhaustive}$ equals what the cost formulas give on these graphs"
    held = claims.compare("gcjr-ablations", {"replay_reduction": 0.7, "cost": {"formula_reduction": 0.7}}, {"q": 1})
    broken = claims.compare("gcjr-ablations", {"replay_reduction": 0.7, "cost": {"formula_reduction": 0.6}}, {"q": 1})
    assert held.set_index("claim").loc[name, "verdict"] == "holds"  # q = 1 is not the paper's: checked all the same
    assert broken.set_index("claim").loc[name, "verdict"] == "fails"
    with pytest.raises(AssertionError, match=r"Replay reduction \$1 - \\text\{GCJR\}/\\text\{exhaustive\}\$ equals"):
        claims.assert_holds(broken)
    at_half = claims.compare("car-shapley", _car(gap=0.0, q=0.5), {"q": 0.5}).set_index("claim")
    phi_0 = next(v for name, v in at_half["verdict"].items() if name.startswith("Shapley $\\phi_0$"))
    assert phi_0 == "other parameters"  # a statistical claim against the paper's number, at the paper's q only
    missing = claims.compare("car-shapley", {}, {"q": 0.3, "provider": "llamacpp:smollm2"})
    assert set(missing["verdict"]) == {"not measured"}


def test_no_identity_rests_on_an_interval_a_seed_can_miss():
    """An identity holds at every seed: a claim whose rule is a 95% interval is statistical, never one."""
    for cid in registry.ORDER:
        if cid == "claims":
            continue
        for claim in claims.chapter_claims(cid)["claims"]:
            if claim.get("kind") == "identity":
                assert "ci" not in claim, f"{cid}: {claim['claim']!r} is an identity with an interval rule"


def test_every_claims_section_is_well_formed():
    for cid in registry.ORDER:
        if cid == "claims":
            continue
        for claim in claims.chapter_claims(cid)["claims"]:
            assert {"claim", "source", "paper", "measured"} <= set(claim), claim
            assert len({"expect", "ci", "tolerance"} & set(claim)) <= 1, claim
