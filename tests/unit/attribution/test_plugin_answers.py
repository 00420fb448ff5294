"""Issue 48, D01 and D16: a plug-in's answer is read within the method's deadline, checked for shape and size,
and every fault is one line naming the method and the case (``rcakit.attribution.scoring.materialise``)."""

from __future__ import annotations

import itertools
import textwrap

import pytest

from rcakit import RcakitError
from rcakit.attribution import ReplayMemo, load_methods, run_method
from rcakit.attribution import testbeds as tb

ANSWERS = """
import itertools
import time

from rcakit.attribution import Attribution


def counting(case, oracle, budget=None):
    return Attribution("ranking", itertools.count())


def huge(case, oracle, budget=None):
    return Attribution("ranking", range(10**15))


def stalls(case, oracle, budget=None):
    def never():
        while True:
            time.sleep(0.05)
        yield
    return Attribution("ranking", never())


def endless_set(case, oracle, budget=None):
    return Attribution("family", [itertools.repeat(case.players[0])])


def endless_family(case, oracle, budget=None):
    return Attribution("family", ([p] for p in itertools.cycle(case.players)))


def a_number(case, oracle, budget=None):
    return Attribution("ranking", 3)


def a_list_point(case, oracle, budget=None):
    return Attribution("point", [case.players[0]])


def a_stranger(case, oracle, budget=None):
    return Attribution("point", "nobody\\nat all")


def fine(case, oracle, budget=None):
    return Attribution("family", [iter([case.players[1], case.players[0]])])
"""


@pytest.fixture(scope="module")
def case():
    return tb.rag_testbed(0, 1)[0]


@pytest.fixture
def answers(tmp_path, monkeypatch):
    name = f"answers_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(ANSWERS))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def run(answers: str, method: str, case, timeout: float = 30.0):
    [(name, found)] = load_methods(f"{answers}:{method}").items()
    return run_method(found, case, ReplayMemo(), name=method, method_timeout=timeout)


def refusal(answers, method, case, timeout: float = 30.0) -> str:
    with pytest.raises(RcakitError) as info:
        run(answers, method, case, timeout)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300, message
    assert message.startswith(f"method {method!r} on rag_hops case {case.case.case_id!r}"), message
    return message


@pytest.mark.parametrize(
    ("method", "words"),
    [
        ("counting", "answered a ranking with more than {n} entries"),
        ("huge", "answered a ranking with more than {n} entries"),
        ("endless_set", "answered a family with more than {n} entries in a set of players"),
        ("endless_family", "answered a family with more than 10000 entries in a collection of sets of players"),
        ("a_number", "answered a ranking of int, not a sequence of players"),
        ("a_list_point", "(list), not one of the case's players"),
        ("a_stranger", "answered 'nobody\\nat all' (str), not one of the case's players"),
    ],
)
def test_an_answer_of_the_wrong_shape_or_size_is_one_line_naming_method_and_case(answers, case, method, words):
    message = refusal(answers, method, case)
    assert words.format(n=len(case.case.players)) in message, message


def test_an_answer_that_never_yields_is_stopped_by_the_methods_deadline(answers, case):
    """Before, the deadline bounded the call alone: the answer was read afterwards, for ever."""
    message = refusal(answers, "stalls", case, timeout=1.0)
    assert message.endswith("stopped after 1 s (method_timeout); raise method_timeout or make the method faster")


def test_a_good_answer_is_read_into_the_players_themselves(answers, case):
    found = run(answers, "fine", case)
    first, second = case.case.players[:2]
    assert found.kind == "family" and found.answer == frozenset([frozenset([first, second])])
    assert all(type(s) is frozenset for s in found.answer)


def test_a_ranking_of_every_player_is_accepted(case):
    from rcakit.attribution import Attribution
    from rcakit.attribution.scoring import materialise

    players = case.case.players
    got = materialise(Attribution("ranking", iter(players)), players, "m")
    assert got.answer == tuple(players)
    assert materialise(Attribution("point", None), players, "m").answer is None
    with pytest.raises(RcakitError, match="^m answered a ranking with more than"):
        materialise(Attribution("ranking", itertools.chain(players, players[:1])), players, "m")
