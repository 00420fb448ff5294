"""A seeded long-horizon benchmark with planted, labelled root causes.

Each synthetic trajectory is a failed workflow run: a planner (or a group-chat
orchestrator) hands subgoals to executors with ``X (-> Y)`` instructions, a
tool answers, a verifier reports back. One decisive error is planted:

- ``handoff``: the instruction at step ``r`` already names a wrong artifact
  and the executor carries it out (label: the planner's role, step ``r``);
- ``executor``: the instruction is right and the executor departs from it at
  step ``r`` (label: the executor's role, step ``r``).

Optionally an earlier *decoy* error is made and then repaired (not the root),
a non-decisive *distractor* error and transient timeouts with a successful
retry appear, and a verifier may pass the broken result (missed
verification). Symptoms come late: error reports near the end and a failed
final evaluation. Labels follow LongRCA Appendix D by construction.

The erroneous artifact is a backquoted token. ``signal_clarity`` is the
probability that a symptom (or a repair) quotes the token it is about, and
that an executor-introduced error carries an explicit error message at its own
step; lower clarity leaves fewer textual traces for any locator to follow.

Calibration (default ``length_scale=1``): the length is drawn from a piecewise
linear quantile function through LongRCA's published points (minimum ~20;
Table 7's bin counts 393/467/238/42 at 100, 200, 400; median 145, P90 268,
max 728, §4.2). The root sits at fraction ``f ~ Beta(1/2, 1/2)`` of the
trajectory, independent of length; this arcsine law was picked by a grid
search of Beta(a, b) against the published root-step median (55) and the
root-to-end median, P90 and bin shares (48, 183; Table 8 counts), once, before
any locator was run. :func:`calibration_table` shows what a sample achieves.
The error, repair and evidence markup it writes is defined once, in
:mod:`rcakit.trajectories.signals`, for the generator and the locators alike.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.trajectories.schema import Label, Step, Trajectory
from rcakit.trajectories.signals import ERROR_SIGNAL

# (cumulative share, length) points of the published length distribution.
LENGTH_QUANTILES = (
    (0.0, 20),
    (393 / 1140, 100),
    (0.5, 145),
    (860 / 1140, 200),
    (0.9, 268),
    (1098 / 1140, 400),
    (1.0, 728),
)
ROOT_FRACTION_BETA = (0.5, 0.5)
MIN_ROOT = 2  # step 0 is the task, step 1 the first handoff

PUBLISHED_SHAPE = {  # LongRCA §4.2 and Tables 7-8
    "length_median": 145,
    "length_p90": 268,
    "length_max": 728,
    "length_mean": 156.3,
    "root_step_median": 55,
    "root_step_p90": 179,
    "root_to_end_median": 48,
    "root_to_end_p90": 183,
    "share_root_to_end_gt50": 0.490,
    "share_root_to_end_gt100": 0.284,
    "share_root_to_end_gt200": 0.077,
}

_VERBS = ("collect", "filter", "rank", "book", "patch", "parse", "merge", "price", "verify", "summarise")
_NOUNS = ("flights", "hotels", "records", "tests", "orders", "pages", "files", "routes", "tickets", "rows")
_ARTIFACTS = (
    "is_sequence",
    "fare_total",
    "sort_key",
    "page_id",
    "date_from",
    "cache_dir",
    "retry_limit",
    "city_code",
    "user_id",
    "price_cap",
    "api_v2",
    "tmp_path",
)
_PIPELINE = {"planner": "Planner", "executors": ("Executor",), "verifier": "Verifier"}
_GROUP = {"planner": "Orchestrator", "executors": ("WebSurfer", "Coder", "FileSurfer"), "verifier": "Critic"}


@dataclass(frozen=True)
class GeneratorConfig:
    """The generator's knobs (see the module docstring)."""

    n: int = 1140
    handoff_share: float = 0.5
    decoy_rate: float = 0.3
    distractor_rate: float = 0.2
    signal_clarity: float = 0.6
    noise_rate: float = 0.01
    group_chat_share: float = 0.3
    length_scale: float = 1.0

    def __post_init__(self) -> None:
        shares = ("handoff_share", "decoy_rate", "distractor_rate", "signal_clarity", "noise_rate", "group_chat_share")
        for name in shares:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise RcakitError(f"generator: {name} = {value!r} is outside [0, 1]")
        if self.n < 1:
            raise RcakitError(f"generator: n = {self.n!r} must be at least 1")
        if self.length_scale <= 0:
            raise RcakitError(f"generator: length_scale = {self.length_scale!r} must be positive")


def sample_shape(rng: np.random.Generator, length_scale: float = 1.0) -> tuple[int, int]:
    """One ``(length T, root step r)`` from the calibrated distribution."""
    shares, lengths = zip(*LENGTH_QUANTILES, strict=True)
    T = max(5, int(round(np.interp(rng.random(), shares, lengths) * length_scale)))
    r = MIN_ROOT + int(np.floor(rng.beta(*ROOT_FRACTION_BETA) * (T - MIN_ROOT)))
    return T, min(r, T - 1)


@dataclass(frozen=True)
class _Context:
    """What an ordinary step's text depends on: its position, the current executor and
    subgoal token, the run's verifier, the noun drawn for it, and the decoy and distractor tokens."""

    j: int
    executor: str
    verifier: str
    token: str
    noun: str
    decoy: str
    distractor: str


class _Builder:
    """Lays out one trajectory: a skeleton of step kinds, then their text."""

    def __init__(self, rng: np.random.Generator, index: int, cfg: GeneratorConfig) -> None:
        self.rng, self.cfg, self.index = rng, cfg, index
        self.T, self.r = sample_shape(rng, cfg.length_scale)
        self.crew = _GROUP if rng.random() < cfg.group_chat_share else _PIPELINE
        self.kind = "handoff" if (rng.random() < cfg.handoff_share and self.r < self.T - 1) else "executor"
        self.tokens = (f"{_ARTIFACTS[int(rng.integers(len(_ARTIFACTS)))]}_{k}" for k in itertools.count(1))
        self.bad = next(self.tokens)
        self.layout: list[str] = ["task"]
        style = "group" if self.crew is _GROUP else "pipeline"
        self.meta: dict[str, Any] = {"kind": self.kind, "style": style, "artifact": self.bad}

    def clear(self) -> bool:
        return bool(self.rng.random() < self.cfg.signal_clarity)

    # -- skeleton
    def skeleton(self) -> None:
        T, r, rng = self.T, self.r, self.rng
        layout = ["act"] * T
        layout[0] = "task"
        h = 1
        while h < T - 1:
            layout[h] = "handoff"
            if h > 2 and rng.random() < 0.4:
                layout[h - 1] = "verify"
            for j in range(h + 2, min(h + 16, T), 2):
                layout[j] = "obs"
            h += int(rng.integers(4, 16))
        layout[T - 1] = "final"
        layout[r] = "root"
        self.layout = layout
        self._symptoms()
        self._decoy()
        self._distractor()
        self._noise()

    def _free(self, lo: int, hi: int) -> list[int]:
        """Ordinary act/obs/verify positions in ``[lo, hi]``."""
        return [j for j in range(max(lo, 1), min(hi, self.T - 2) + 1) if self.layout[j] in ("act", "obs", "verify")]

    def _symptoms(self) -> None:
        d = self.T - 1 - self.r
        window = self._free(max(self.r + 1, self.T - 1 - max(3, d // 5)), self.T - 2)
        if window:
            k = min(len(window), int(self.rng.integers(1, 4)))
            for j in self.rng.choice(window, size=k, replace=False):
                self.layout[j] = "symptom"

    def _decoy(self) -> None:
        if self.rng.random() >= self.cfg.decoy_rate:
            return
        ordinary = ("act", "obs", "verify")
        starts = [e for e in self._free(2, self.r - 3) if all(self.layout[e + i] in ordinary for i in (1, 2))]
        if starts:
            e = int(self.rng.choice(starts))
            self.layout[e : e + 3] = ["decoy", "decoy_fail", "decoy_fix"]
            self.meta["decoy_step"] = e

    def _distractor(self) -> None:
        if self.rng.random() >= self.cfg.distractor_rate:
            return
        spots = self._free(2, self.T - 3)
        if len(spots) >= 2:
            p, q = sorted(int(x) for x in self.rng.choice(spots, size=2, replace=False))
            self.layout[p], self.layout[q] = "distract_set", "distract_err"
            self.meta["distractor_step"] = p

    def _noise(self) -> None:
        for j in self._free(2, self.T - 3):
            pair = self.layout[j] == "act" and self.layout[j + 1] in ("act", "obs")
            if pair and self.rng.random() < self.cfg.noise_rate:
                self.layout[j], self.layout[j + 1] = "noise", "retry_ok"

    # -- text
    def steps(self) -> tuple[list[Step], Label]:
        crew, rng = self.crew, self.rng
        planner, verifier = crew["planner"], crew["verifier"]
        executor, token, goal = crew["executors"][0], self.bad, 0
        decoy, distractor = next(self.tokens), next(self.tokens)
        out: list[Step] = []
        for j, kind in enumerate(self.layout):
            noun = _NOUNS[int(rng.integers(len(_NOUNS)))]
            if kind in ("handoff",) or (kind == "root" and self.kind == "handoff"):
                executor = crew["executors"][int(rng.integers(len(crew["executors"])))]
                token = self.bad if kind == "root" else next(self.tokens)
                goal += 1
                verb = _VERBS[int(rng.integers(len(_VERBS)))]
                name = f"{planner} (-> {executor})"
                text = f"Subgoal {goal}: {verb} the {noun} with `{token}` and report back."
            elif kind == "root":
                token = self.bad
                alarm = " The tool returned an error; ignoring it." if self.clear() else ""
                name, text = executor, f"Proceeding with `{self.bad}` for the {noun}.{alarm}"
            else:
                name, text = self._ordinary(kind, _Context(j, executor, verifier, token, noun, decoy, distractor))
            out.append(Step(j, name, "user" if j == 0 else "assistant", text))
        role = planner if self.kind == "handoff" else out[self.r].name
        reason = f"{self.kind} error introduces `{self.bad}` at step {self.r}"
        return out, Label(role=role, step=self.r, reason=reason)

    def _quote(self, token: str, plain: str) -> str:
        """The backquoted token with probability ``signal_clarity``, else the plain words."""
        return f"`{token}`" if self.clear() else plain

    def _repair(self, token: str) -> str:
        """A repair that names the token with probability ``signal_clarity``."""
        return f"replaced `{token}` and reran" if self.clear() else "reran the previous step"

    def _ordinary(self, kind: str, c: _Context) -> tuple[str, str]:
        quote, noun, decoy, distractor = self._quote, c.noun, c.decoy, c.distractor
        carried = self.bad if (c.j > self.r and self.rng.random() < 0.15) else c.token
        text = {
            "task": lambda: f"Task {self.index}: find and report the best {noun} for the user.",
            "act": lambda: f"Calling `{carried}` on the {noun}.",
            "obs": lambda: f"Returned {int(self.rng.integers(1, 50))} {noun}.",
            "verify": lambda: f"PASS: subgoal output for the {noun} looks complete.",
            "symptom": lambda: f"Error: check failed on {quote(self.bad, 'the')} output.",
            "final": lambda: f"Final evaluation: task failed; last output used {quote(self.bad, 'the current plan')}.",
            "decoy": lambda: f"Applying `{decoy}` to the {noun}.",
            "decoy_fail": lambda: f"FAIL: {quote(decoy, 'that step')} produced wrong {noun}.",
            "decoy_fix": lambda: f"Fixed: {self._repair(decoy)}.",
            "distract_set": lambda: f"Loaded `{distractor}` from the cache.",
            "distract_err": lambda: f"Error: `{distractor}` is deprecated; continuing anyway.",
            "noise": lambda: "Error: request timed out; retrying.",
            "retry_ok": lambda: "Retry succeeded.",
        }[kind]()
        name = {
            "task": "User",
            "obs": "Tool",
            "verify": f"{c.verifier} (-> {self.crew['planner']})",
            "decoy_fail": c.verifier,
            "final": c.verifier,
        }.get(kind, c.executor)
        return name, text


def generate_trajectory(rng: np.random.Generator, index: int, cfg: GeneratorConfig = GeneratorConfig()) -> Trajectory:
    """One labelled synthetic trajectory drawn with ``rng``."""
    builder = _Builder(rng, index, cfg)
    builder.skeleton()
    steps, label = builder.steps()
    return Trajectory(
        id=f"synthetic-{index:05d}",
        source=builder.meta["style"],
        task=steps[0].content,
        steps=tuple(steps),
        label=label,
        meta=builder.meta,
    )


def generate_benchmark(seed: int, cfg: GeneratorConfig = GeneratorConfig()) -> list[Trajectory]:
    """``cfg.n`` trajectories; trajectory ``i`` depends only on ``(seed, i)``."""
    return [generate_trajectory(np.random.default_rng([seed, i]), i, cfg) for i in range(cfg.n)]


def planted_features(trajectories: list[Trajectory]) -> pd.DataFrame:
    """What was planted in each synthetic trajectory, to explain a locator's hits and misses.

    ``quoted_symptom``: some step after the root carries an error signal and
    quotes the planted artifact (the evidence a tracing rule needs);
    ``trap_before_root``: a decoy or a distractor was planted before the root.
    """
    rows = []
    for t in trajectories:
        quote = f"`{t.meta['artifact']}`"
        after = t.steps[t.truth.step + 1 :]
        traps = [t.meta.get(k) for k in ("decoy_step", "distractor_step")]
        rows.append(
            {
                "id": t.id,
                "kind": t.meta["kind"],
                "length": len(t),
                "root_to_end": t.root_to_end,
                "quoted_symptom": any(quote in s.content and ERROR_SIGNAL.search(s.content) for s in after),
                "trap_before_root": any(k is not None and k < t.truth.step for k in traps),
            }
        )
    return pd.DataFrame(rows)


def shape_statistics(trajectories: list[Trajectory]) -> dict[str, Any]:
    """The §4.2 statistics of a labelled set, keyed like :data:`PUBLISHED_SHAPE`."""
    T = np.array([len(t) for t in trajectories])
    r = np.array([t.truth.step for t in trajectories])
    d = T - 1 - r
    return {
        "length_median": float(np.median(T)),
        "length_p90": float(np.percentile(T, 90)),
        "length_max": int(T.max()),
        "length_mean": float(T.mean()),
        "root_step_median": float(np.median(r)),
        "root_step_p90": float(np.percentile(r, 90)),
        "root_to_end_median": float(np.median(d)),
        "root_to_end_p90": float(np.percentile(d, 90)),
        "share_root_to_end_gt50": float(np.mean(d > 50)),
        "share_root_to_end_gt100": float(np.mean(d > 100)),
        "share_root_to_end_gt200": float(np.mean(d > 200)),
    }


CALIBRATION_ROWS = {  # each statistic of PUBLISHED_SHAPE as a reader's row label; shares shown in percent
    "length_median": "length \\(T\\), median",
    "length_p90": "length \\(T\\), 90th percentile",
    "length_max": "length \\(T\\), longest",
    "length_mean": "length \\(T\\), mean",
    "root_step_median": "root step \\(r^*\\), median",
    "root_step_p90": "root step \\(r^*\\), 90th percentile",
    "root_to_end_median": "root-to-end \\(d\\), median",
    "root_to_end_p90": "root-to-end \\(d\\), 90th percentile",
    "share_root_to_end_gt50": "share with \\(d > 50\\) (%)",
    "share_root_to_end_gt100": "share with \\(d > 100\\) (%)",
    "share_root_to_end_gt200": "share with \\(d > 200\\) (%)",
}


def calibration_table(trajectories: list[Trajectory]) -> pd.DataFrame:
    """Published shape statistics (LongRCA §4.2) beside those of ``trajectories``, rows labelled in words
    (:data:`CALIBRATION_ROWS`), the shares of root-to-end distances in percent."""
    measured = shape_statistics(trajectories)
    rows = {}
    for key, label in CALIBRATION_ROWS.items():
        scale = 100 if key.startswith("share_") else 1
        rows[label] = {"published": scale * PUBLISHED_SHAPE[key], "synthetic": scale * measured[key]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("statistic")
