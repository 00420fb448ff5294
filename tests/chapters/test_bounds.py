"""No valid parameter value fails a chapter: every chapter at each end of each parameter's range (``make bounds``).

A parameter's declared range (``bounds`` in the chapter's front matter) and
its ``choices`` promise that every value inside runs and builds. The values a
reader is likeliest to try, and a chapter's prose likeliest to miss, are the
ends: no noise at all, a reader that misses every fact, one case, a budget of
zero. A run is one chapter at its quick values with one parameter moved to
one end of its range (a list parameter to a one-element list at that end), or
to one of its other choices; it fails when it exits non-zero or its page
quotes a glued number that is missing or does not format. A value that needs
another parameter set (a model for ``agent = llm``) is left out here: ``rcakit
run`` refuses it with exit 2, which the bad-input tests check. There is one
test per chapter, its runs spread over ``RCAKIT_SEED_WORKERS`` processes
(default 2).

Like the seeds sweep this is slow, so ``make test`` leaves it out.
"""

from __future__ import annotations

from typing import Any

import pytest

from rcakit import RcakitError
from rcakit.book import registry
from support.quick_runs import sweep


def _moves(chapter: registry.Chapter) -> list[tuple[str, Any]]:
    """(parameter, value): each finite end of each range, and the ends of each list of choices."""
    moves = []
    for name, ends in chapter.bounds.items():
        default = chapter.defaults[name]
        for end in ends:
            value = [end] if isinstance(default, list) else end
            if end is not None and value not in (default, chapter.quick.get(name, default)):
                moves.append((name, value))
    for name, options in chapter.choices.items():
        default = chapter.defaults[name]
        ends = options if len(options) <= 3 else [options[0], options[1], options[-1]]  # of eight: three
        moves += [(name, [o] if isinstance(default, list) else o) for o in ends if o != default and [o] != default]
    return moves


def _refused(chapter_id: str, name: str, value: Any) -> bool:
    try:
        registry.validate(chapter_id, {name: value})
    except RcakitError:
        return True
    return False


MOVES = {cid: _moves(registry.get(cid)) for cid in registry.ORDER}
CASES = [(cid, n, v) for cid, moves in MOVES.items() for n, v in moves if not _refused(cid, n, v)]


@pytest.mark.bounds
@pytest.mark.parametrize("chapter_id", sorted({c for c, _, _ in CASES}, key=registry.ORDER.index))
def test_a_chapter_runs_and_builds_at_each_end_of_each_parameter(chapter_id, tmp_path):
    failed = sweep(chapter_id, {f"-p {n} {v}": {n: v} for c, n, v in CASES if c == chapter_id}, tmp_path)
    assert failed == {}, f"{chapter_id}: values that fail: {failed}"


def test_the_sweep_leaves_out_only_values_that_need_another_parameter():
    """A value inside its range is refused only by a ``requires`` rule (``agent = llm`` needs a provider)."""
    left_out = {(cid, n, str(v)) for cid, moves in MOVES.items() for n, v in moves} - {
        (c, n, str(v)) for c, n, v in CASES
    }
    assert left_out, "no value needs another parameter: the filter is not exercised"
    for cid, name, value in left_out:
        assert f"{name}={value}" in registry.get(cid).requires, f"{cid}: {name} = {value} is in range but refused"
