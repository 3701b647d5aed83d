"""The audit's tally: per channel, attempts, leaks, whether the positive control held, and a status.

A channel is `passed` only when its probe ran attacks and its owner-side control saw the owner's own
data (a probe that sees nothing even for the owner proves nothing). `LEAK` wins over everything;
a channel without a probe, or whose control failed, is `untested`. The report lists every channel
of the audit's list, so a channel added to the product without a probe shows up, untested.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["passed", "LEAK", "untested"]
MAX_LISTED_LEAKS = 5


@dataclass
class ChannelResult:
    channel: str
    scope: str  # "organization" | "user" | "-" (no probe)
    attempts: int = 0
    leaks: list[str] = field(default_factory=list)
    controls: int = 0  # positive controls run
    controls_seen: int = 0  # ... of which saw the owner's own data
    note: str = ""
    seconds: float = 0.0

    @property
    def status(self) -> Status:
        if self.leaks:
            return "LEAK"
        if self.attempts and self.controls and self.controls_seen == self.controls:
            return "passed"
        return "untested"


@dataclass
class AuditReport:
    url: str
    tag: str
    organizations: list[str]
    results: list[ChannelResult]
    seconds: float = 0.0

    @property
    def leaked(self) -> bool:
        return any(r.status == "LEAK" for r in self.results)

    @property
    def complete(self) -> bool:
        """Every channel passed: nothing leaked and nothing went untested."""
        return all(r.status == "passed" for r in self.results)

    def to_dict(self) -> dict:
        channels = [asdict(r) | {"status": r.status} for r in self.results]
        return {
            "url": self.url,
            "tag": self.tag,
            "organizations": self.organizations,
            "seconds": round(self.seconds, 1),
            "attempts": sum(r.attempts for r in self.results),
            "leaks": sum(len(r.leaks) for r in self.results),
            "untested": [r.channel for r in self.results if r.status == "untested"],
            "channels": channels,
        }


def to_json(report: AuditReport) -> str:
    return json.dumps(report.to_dict(), indent=2)


def to_text(report: AuditReport) -> str:
    """A fixed-width table, then each leak (a few per channel) and each untested channel's reason."""
    width = max(len("channel"), *(len(r.channel) for r in report.results))
    lines = [
        f"leak audit of {report.url} (organizations {', '.join(report.organizations)};"
        f" {report.seconds:.0f} s)",
        f"{'channel':<{width}}  {'scope':<12}  {'attempts':>8}  {'leaks':>5}  {'control':>7}"
        f"  {'s':>4}  status",
    ]
    for r in report.results:
        control = f"{r.controls_seen}/{r.controls}"
        counts = f"{r.attempts:>8}  {len(r.leaks):>5}  {control:>7}  {r.seconds:>4.0f}"
        lines.append(f"{r.channel:<{width}}  {r.scope:<12}  {counts}  {r.status}")
    total = sum(r.attempts for r in report.results)
    leaks = sum(len(r.leaks) for r in report.results)
    untested = [r.channel for r in report.results if r.status == "untested"]
    lines.append(f"total: {total} attempts, {leaks} leaks, {len(untested)} untested channels")
    for r in report.results:
        lines += [f"LEAK {r.channel}: {leak}" for leak in r.leaks[:MAX_LISTED_LEAKS]]
        if len(r.leaks) > MAX_LISTED_LEAKS:
            lines.append(f"LEAK {r.channel}: ... and {len(r.leaks) - MAX_LISTED_LEAKS} more")
        if r.status == "untested":
            lines.append(f"untested {r.channel}: {r.note or 'the positive control never saw the owner data'}")
    return "\n".join(lines)
