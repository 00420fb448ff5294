"""The textual signals that the synthetic generator writes and the locators read.

An *error signal* is an error word (``error``, ``failed``, ``mismatch``, …), a
*repair signal* a word that says an earlier error was put right (``fixed``,
``retry succeeded``, …), and *evidence* a backquoted token of 2 to 80
characters, the artifact a step is about (LongRCA Appendices D-E: an error is
traced back through the steps that quote its evidence). The generator and the
locators share these definitions so that what is planted and what is read
cannot drift apart.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re

from rcakit.trajectories.schema import Trajectory

ERROR_SIGNAL = re.compile(r"\b(error|errors|fail|fails|failed|failure|exception|traceback|incorrect|mismatch)\b", re.I)
REPAIR_SIGNAL = re.compile(r"\b(fixed|corrected|resolved|replaced|retry succeeded)\b", re.I)
EVIDENCE_TOKEN = re.compile(r"`([^`\n]{2,80})`")


def evidence_tokens(trajectory: Trajectory) -> list[set[str]]:
    """The backquoted tokens of every step, by step index."""
    return [set(EVIDENCE_TOKEN.findall(s.content)) for s in trajectory.steps]
