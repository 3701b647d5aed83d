"""Reciprocal Rank Fusion exactly as graphrag-ts computes it: `Σ 1 / (k + rank + 1)`, rank 0-based.

RRF fuses lists whose scores are not comparable (a cosine, a set ratio, a sum of edge weights) by
rank alone. The reference's k is 80 (`rrfK`), and its rank is 0-based, so the first item of a list
contributes 1/81, not 1/80: the unit tests pin both.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

RRF_K = 80

K = TypeVar("K", bound=Hashable)


def rrf_scores(rankings: Iterable[Sequence[K]], k: int = RRF_K) -> dict[K, float]:
    """Fused score per key over ranked lists (best first); a key absent from a list gains nothing.

    A key listed twice in one list counts at its best rank only.
    """
    scores: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for rank, key in enumerate(ranking):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank + 1)
    return scores


def rrf_fuse(rankings: Iterable[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Keys by fused score, best first; ties keep first-appearance order (stable, deterministic)."""
    scores = rrf_scores(rankings, k)
    return sorted(scores.items(), key=lambda item: -item[1])


def rank_by(scores: dict[K, float], minimum: float | None = None) -> list[K]:
    """A ranked list from per-key scores (best first, stable), dropping keys below `minimum`."""
    kept = [(key, s) for key, s in scores.items() if minimum is None or s >= minimum]
    return [key for key, _ in sorted(kept, key=lambda item: -item[1])]
