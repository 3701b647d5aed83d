"""The verdict: each metric of this run against the last accepted run, within stated tolerances.

Quality metrics (nDCG, recall, citation precision, the unsupported-sentence rate, answers
contained) are fractions and get an absolute tolerance: the run regresses when a metric is worse by
more than it. Latency is noisy on shared machines, so it gets a generous relative tolerance plus an
absolute slack (a 5 ms search taking 12 ms is not a regression): it regresses only when it is slower
by more than both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from librarian.evaluation.gate.defaults import DEFAULT_LATENCY_TOLERANCE, DEFAULT_TOLERANCE, LATENCY_SLACK_MS
from librarian.evaluation.gate.scores import LATENCY, LOWER_IS_BETTER, METRICS

Verdict = Literal["ok", "improved", "REGRESSED", "new", "n/a", "not run"]


@dataclass(frozen=True)
class Tolerances:
    """How much worse than the accepted run a metric may get before the gate fails."""

    quality: float = DEFAULT_TOLERANCE
    latency: float = DEFAULT_LATENCY_TOLERANCE
    latency_slack_ms: float = LATENCY_SLACK_MS

    def __post_init__(self) -> None:
        if not (0 <= self.quality <= 1):
            raise ValueError(f"the quality tolerance must be within 0 and 1, got {self.quality}")
        if self.latency < 0 or self.latency_slack_ms < 0:
            raise ValueError("latency tolerances must not be negative")

    def describe(self, metric: str) -> str:
        if metric in LATENCY:
            return f"+{self.latency:.0%} and +{self.latency_slack_ms:g} ms"
        sign = "+" if metric in LOWER_IS_BETTER else "-"
        return f"{sign}{self.quality:g}"


@dataclass(frozen=True)
class Row:
    metric: str
    accepted: float | None
    now: float | None
    tolerance: str
    verdict: Verdict

    @property
    def delta(self) -> float | None:
        if self.accepted is None or self.now is None:
            return None
        return self.now - self.accepted

    def cells(self) -> list[object]:
        return [self.metric, self.accepted, self.now, self.delta, self.tolerance, self.verdict]


COLUMNS = ["metric", "accepted", "now", "delta", "tolerance", "verdict"]


def judge(metric: str, accepted: float | None, now: float | None, tolerances: Tolerances) -> Verdict:
    """One metric's verdict. A metric the accepted run had but this run cannot score (no citation at
    all any more, say) is a regression: losing a measurement must not pass the gate."""
    if accepted is None:
        return "n/a" if now is None else "new"
    if now is None:
        return "REGRESSED"
    worse = (now - accepted) if metric in LOWER_IS_BETTER else (accepted - now)
    if metric in LATENCY:
        allowed = max(accepted * tolerances.latency, tolerances.latency_slack_ms)
        if worse > allowed:
            return "REGRESSED"
        return "ok"
    if worse > tolerances.quality + 1e-12:
        return "REGRESSED"
    return "improved" if worse < -tolerances.quality else "ok"


def compare(
    accepted: dict[str, float | None],
    now: dict[str, float | None],
    tolerances: Tolerances,
    not_run: frozenset[str] = frozenset(),
) -> list[Row]:
    """A row per metric either run has, in the gate's order. Metrics in `not_run` were deliberately
    not measured this time (`--no-answers`): shown as such, never a regression."""
    rows = []
    for m in METRICS:
        before, after = accepted.get(m), now.get(m)
        if before is None and after is None:
            continue
        verdict: Verdict = "not run" if m in not_run else judge(m, before, after, tolerances)
        rows.append(Row(m, before, after, tolerances.describe(m), verdict))
    return rows


def regressed(rows: list[Row]) -> list[str]:
    return [r.metric for r in rows if r.verdict == "REGRESSED"]
