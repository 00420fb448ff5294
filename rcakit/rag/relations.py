"""The synthetic world's relations: who they link, how they are asked, how a paragraph states them.

A ``Relation`` is also what ``rcakit.rag.musique`` builds for each MuSiQue
hop, so the agent and the readers see one kind of relation on either world.
The eight relations of ``RELATIONS`` link the synthetic world's six entity
types (``rcakit.rag.entities``); each has a noun phrase the agent's sub-query
is built from, a cue a sentence stating it contains, and the templates a
paragraph states it in.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Relation:
    """A relation: subject and object types, its noun phrase, cue words and sentence templates."""

    name: str
    subject_type: str
    object_type: str
    phrase: str  # "the director of {}"
    cue: str  # regex fragment a sentence stating the relation contains
    templates: tuple[str, ...]  # with {s} subject, {o} object, {p} pronoun, {y} year
    ask: str = ""  # the sub-question with {} for the subject; empty: "what is <phrase>?"

    def sub_question(self, subject: str) -> str:
        """The hop's sub-question for ``subject``, as a reader is asked it."""
        return self.ask.format(subject) if self.ask else f"what is {self.phrase.format(subject)}?"


RELATIONS = {
    r.name: r
    for r in [
        Relation(
            "directed_by",
            "film",
            "person",
            "the director of {}",
            r"direct",
            (
                "{s} was directed by {o} and premiered in {y}.",
                "{o} directed {s} on a modest budget.",
                "The film's director was {o}.",
            ),
        ),
        Relation(
            "produced_by",
            "film",
            "company",
            "the studio that produced {}",
            r"produc",
            ("{s} was produced by {o}.", "Production of {s} was handled by {o} in {y}.", "{o} produced the picture."),
        ),
        Relation(
            "born_in",
            "person",
            "city",
            "the birthplace of {}",
            r"\bborn\b",
            (
                "{s} was born in {o} in {y}.",
                "Born in {o}, {p} moved abroad at the age of 19.",
                "{p_cap} was born and raised in {o}.",
            ),
        ),
        Relation(
            "educated_at",
            "person",
            "university",
            "the university attended by {}",
            r"studied|graduated",
            ("{s} studied at {o}.", "{p_cap} graduated from {o} in {y}.", "After school, {s} studied law at {o}."),
        ),
        Relation(
            "founded_by",
            "company",
            "person",
            "the founder of {}",
            r"founded|established",
            ("{s} was founded by {o} in {y}.", "{o} established {s} in {y}.", "The company was founded by {o}."),
        ),
        Relation(
            "headquartered_in",
            "company",
            "city",
            "the headquarters city of {}",
            r"headquarter|offices",
            (
                "{s} is headquartered in {o}.",
                "The main offices of {s} are in {o}.",
                "Its headquarters moved to {o} in {y}.",
            ),
        ),
        Relation(
            "located_in",
            "university",
            "city",
            "the city where {} is located",
            r"located|campus",
            ("{s} is located in {o}.", "The campus of {s} lies in {o}.", "Its main campus is located in {o}."),
        ),
        Relation(
            "in_country",
            "city",
            "country",
            "the country of {}",
            r"city in|part of|province",
            (
                "{s} is a city in {o}.",
                "Administratively, {s} is part of {o}.",
                "{s} is a province capital and a city in {o}.",
            ),
        ),
    ]
}
