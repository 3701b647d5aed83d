"""What one probe request returned, and how a victim's evidence is recognised in it.

A leak is the victim's data in a response to someone else. A marker counts only when the caller did
not send it themselves (a refusal may echo the name or query it was given); a binary body counts when
it is byte-for-byte the victim's (page images); a measured number counts when it moved because of the
victim (corpus statistics).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

SCORE_TOLERANCE = 1e-6  # relative: scores printed by the server round-trip through JSON floats


@dataclass(frozen=True)
class Reading:
    """One request of a probe: what was sent, the status, and what came back."""

    request: str  # "METHOD /path" (ids shortened), for the report
    sent: str  # the URL and body as sent
    status: int  # 0 when the request failed before an answer
    text: str
    digest: str | None = None  # sha256 of a binary body (page images)
    value: float | None = None  # a measured number (sparse statistics)
    baseline: float | None = None  # the same number before the owner's change


def markers_found(reading: Reading, markers: Iterable[str]) -> list[str]:
    """The markers in the response that the caller did not send (case-insensitive)."""
    text, sent = reading.text.casefold(), reading.sent.casefold()
    return [m for m in markers if m and m.casefold() in text and m.casefold() not in sent]


def served_for(reading: Reading, org: str) -> list[str]:
    """'served for <org>' when a successful JSON answer labels itself as `org`'s (`organization_id`).

    For records that carry no text of their own (a cost ledger is all zeros offline), the route's
    own label is the evidence: an answer for `org` given to a non-member is that organization's."""
    if not 200 <= reading.status < 300:
        return []
    try:
        body = json.loads(reading.text)
    except ValueError:
        return []
    if isinstance(body, dict) and body.get("organization_id") == org:
        return [f"served for {org}"]
    return []


def digest_found(reading: Reading, digests: Iterable[str]) -> list[str]:
    """'page image' when the body is exactly one of the owner's images."""
    return ["page image"] if reading.digest is not None and reading.digest in set(digests) else []


def value_moved(reading: Reading) -> list[str]:
    """A note when the measured value differs from its baseline beyond rounding."""
    if reading.value is None or reading.baseline is None:
        return []
    scale = max(1.0, abs(reading.baseline))
    if abs(reading.value - reading.baseline) <= SCORE_TOLERANCE * scale:
        return []
    return [f"score moved {reading.baseline:.6f} -> {reading.value:.6f}"]
