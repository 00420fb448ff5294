"""The pilot's arithmetic tasks and the expressions they are made of (GCJR §Experiments, DualSolve-MAS pilot).

Tasks come in two forms. *Split*: ``(p·q ± s …) + (p'·q' ± s' …)``; the
planner gives each solver one bracket and the aggregator adds the two
results. *Dual*: one expression and the last digit of its value; both
solvers get the whole expression and the aggregator answers the first result
(B's, then C's) whose last digit matches, and B's when none does. An
expression is read left to right, without operator precedence.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from rcakit import RcakitError

FORMS = {"single": "split", "joint_and": "split", "alt_or": "dual"}  # a fault kind's task form
_EXPRESSION = re.compile(r"^\s*(\d+)((?:\s*[*+-]\s*\d+){1,3})\s*$")
_OPERATION = re.compile(r"([*+-])\s*(\d+)")

Operations = tuple[tuple[str, int], ...]


def parse_expression(text: object) -> tuple[int, Operations] | None:
    """``"12 * 7 + 5"`` -> ``(12, (("*", 7), ("+", 5)))``, read left to right; ``None`` if it does not parse."""
    match = _EXPRESSION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return int(match[1]), tuple((op, int(n)) for op, n in _OPERATION.findall(match[2]))


def apply(op: str, left: int, right: int) -> int:
    """One arithmetic step."""
    return left * right if op == "*" else left + right if op == "+" else left - right


def _parsed(text: str) -> tuple[int, Operations]:
    parsed = parse_expression(text)
    if parsed is None:
        raise RcakitError(f"expression {text!r} is not of the form '12 * 7 + 5'")
    return parsed


def operations(text: str) -> Operations:
    """The operations of an expression after its first number, e.g. ``(("*", 7), ("+", 5))``."""
    return _parsed(text)[1]


def expression_value(text: str) -> int:
    """The value of an expression, left to right."""
    value, ops = _parsed(text)
    for op, n in ops:
        value = apply(op, value, n)
    return value


@dataclass(frozen=True)
class Task:
    """An arithmetic task: its text, its form (``split`` or ``dual``), its sub-problems and answer."""

    text: str
    form: str
    parts: tuple[str, str]  # the reference split: B's and C's sub-problems
    answer: int

    @property
    def check(self) -> int:
        """The last digit a dual task states (-1 for a split task)."""
        return self.answer % 10 if self.form == "dual" else -1


def random_expression(rng: np.random.Generator) -> str:
    """``p * q`` followed by 0-2 additions or subtractions (1-3 operations)."""
    terms = [f"{int(rng.integers(2, 20))} * {int(rng.integers(2, 10))}"]
    terms += [f"{'+-'[int(rng.integers(2))]} {int(rng.integers(1, 21))}" for _ in range(int(rng.integers(0, 3)))]
    return " ".join(terms)


def hand_task(b: str, c: str | None = None) -> Task:
    """A split task ``(b) + (c)``, or with ``c`` omitted a dual task on ``b``."""
    if c is None:
        value = expression_value(b)
        return Task(f"Compute {b}. The last digit of the result is {value % 10}.", "dual", (b, b), value)
    return Task(f"Compute ({b}) + ({c}).", "split", (b, c), expression_value(b) + expression_value(c))


def make_task(form: str, rng: np.random.Generator) -> Task:
    """A split task (two brackets added) or a dual task (one expression and its last digit)."""
    if form == "split":
        return hand_task(random_expression(rng), random_expression(rng))
    if form == "dual":
        return hand_task(random_expression(rng))
    raise RcakitError(f"make_task: form = {form!r} is not split or dual")
