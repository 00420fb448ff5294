"""The long-trajectory schema shared by every loader, generator and locator.

A trajectory is the LongRCA record of Appendix A in typed form: an id, the
source it came from, the task, the ordered steps ``(index, name, role,
content)`` and an optional reference label ``(role, step)``. A step whose name
ends in ``X (-> Y)`` is a handoff instruction from ``X`` to ``Y`` (Appendix E).
Responsible roles are compared after :func:`normalise_role`, the LongRCA
scorer's normalisation, widened to every trailing parenthetical annotation:
Magentic-One logs (Who&When) record one agent's turns as ``Orchestrator
(thought)``, ``Orchestrator (termination condition)`` and ``Orchestrator (->
WebSurfer)``, and a label ``Orchestrator`` names all of them. An annotation
never makes a speaker another agent.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rcakit import RcakitError

_HANDOFF = re.compile(r"\(\s*->\s*([^()]*?)\s*\)\s*$")
_ANNOTATION = re.compile(r"\s*\([^()]*\)\s*$")


def split_handoff(name: str) -> tuple[str, str | None]:
    """``"Planner (-> Executor)"`` -> ``("Planner", "Executor")``; no suffix -> ``(name, None)``."""
    match = _HANDOFF.search(name)
    if match is None:
        return name.strip(), None
    return name[: match.start()].strip(), match.group(1)


def strip_annotation(name: str) -> str:
    """The agent a speaker name denotes: every trailing ``( ... )`` annotation removed.

    ``"Orchestrator (thought)"`` and ``"Orchestrator (-> WebSurfer)"`` both give
    ``"Orchestrator"``; a name that is only an annotation is kept as it is.
    """
    agent = name.strip()
    while True:
        match = _ANNOTATION.search(agent)
        if match is None or match.start() == 0:
            return agent
        agent = agent[: match.start()].rstrip()


def normalise_role(text: str | None) -> str:
    """Role normalisation: strip trailing annotations (``(-> X)``, ``(thought)``), NFKC, casefold, collapse whitespace.

    ``None`` and non-strings normalise to ``""`` (an empty role, which never scores).
    """
    if not isinstance(text, str):
        return ""
    return " ".join(unicodedata.normalize("NFKC", strip_annotation(text)).casefold().split())


@dataclass(frozen=True)
class Step:
    """One recorded step: 0-based ``index``, agent ``name``, message ``role``, ``content``.

    ``role`` is the message role as logged (``user``/``assistant``), or ``None``
    when the source records none; the workflow role of a step is its ``name``.
    """

    index: int
    name: str
    role: str | None
    content: str

    @property
    def speaker(self) -> str:
        """The agent that spoke: the name without its annotations (handoff target, ``thought``)."""
        return strip_annotation(self.name)

    @property
    def recipient(self) -> str | None:
        """The addressee of a handoff instruction, else ``None``."""
        return split_handoff(self.name)[1]


@dataclass(frozen=True)
class Label:
    """Reference responsible role and 0-based root-cause step (scored independently)."""

    role: str
    step: int
    reason: str = ""


@dataclass(frozen=True)
class Handoff:
    """A logged handoff instruction: ``sender (-> recipient)`` at ``step``."""

    step: int
    sender: str
    recipient: str


@dataclass(frozen=True)
class Trajectory:
    """A failed run: id, source, task, steps and an optional label.

    ``meta`` carries what a source records beyond the schema (for synthetic
    trajectories: the planted error kind and decoy step); locators never read it.
    """

    id: str
    source: str
    task: str
    steps: tuple[Step, ...]
    label: Label | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __len__(self) -> int:
        return len(self.steps)

    @cached_property
    def roles(self) -> frozenset[str]:
        """The recorded role set: every step name, normalised."""
        return frozenset(normalise_role(s.name) for s in self.steps) - {""}

    @cached_property
    def speakers(self) -> tuple[str, ...]:
        """The distinct speakers, one per normalised role: first spelling, sorted by normal form.

        These are the roles a locator may name; a speaker whose name
        normalises to ``""`` is left out (it never scores).
        """
        first: dict[str, str] = {}
        for s in self.steps:
            first.setdefault(normalise_role(s.speaker), s.speaker)
        return tuple(first[k] for k in sorted(first) if k)

    @cached_property
    def handoffs(self) -> tuple[Handoff, ...]:
        """Every ``X (-> Y)`` step, in order."""
        return tuple(Handoff(s.index, s.speaker, s.recipient) for s in self.steps if s.recipient is not None)

    @property
    def truth(self) -> Label:
        """The reference label, for the code that scores: an unlabelled trajectory cannot be scored."""
        if self.label is None:
            raise RcakitError(f"trajectory {self.id}: no reference label (role, step) to score against")
        return self.label

    @property
    def root_to_end(self) -> int | None:
        """``(T - 1) - r``: recorded steps after the labelled root (§4.2)."""
        return None if self.label is None else len(self.steps) - 1 - self.label.step


@dataclass(frozen=True)
class Prediction:
    """A locator's output: responsible role and root step, each possibly invalid or ``None``."""

    role: Any = None
    step: Any = None
