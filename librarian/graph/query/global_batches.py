"""Community texts packed into map batches whose whole prompt fits the map budget.

As the reference (`summaryBatcher.ts`): shuffle with a seed (so a run is reproducible), pack greedily
in order, and split a summary too large for one batch into parts, each labelled
`[Community ID: x | summary part n]` so the model (and the offline mapper) knows whose text it
reads. Tokens are counted with a real tokenizer (`librarian.graph.tokens`), and every part is
re-counted after splitting, because re-encoding a slice can differ from it by a token.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from librarian.graph.tokens import count_tokens, split_tokens


@dataclass
class SummaryPart:
    community_id: str
    part: int
    text: str

    def formatted(self) -> str:
        return f"{part_header(self.community_id, self.part)}{self.text}"


@dataclass
class MapBatch:
    index: int
    parts: list[SummaryPart]
    tokens: int  # of the whole map prompt (skeleton + content)

    @property
    def content(self) -> str:
        return "\n".join(part.formatted() for part in self.parts)

    @property
    def community_ids(self) -> list[str]:
        return list(dict.fromkeys(part.community_id for part in self.parts))


def part_header(community_id: str, part: int) -> str:
    return f"[Community ID: {community_id} | summary part {part}]\n"


def prompt_tokens(skeleton: str, content: str) -> int:
    """Tokens of the prompt the model would get: skeleton, newline, content (as the reference)."""
    return count_tokens(f"{skeleton}\n{content}")


def seeded_shuffle(items: Sequence[Any], seed: int) -> list[Any]:
    """Fisher-Yates with a seeded generator: the order varies with the seed, not between runs."""
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def split_summary(community_id: str, text: str, skeleton: str, budget: int) -> list[SummaryPart]:
    """One part if the labelled summary fits a batch alone, else as many labelled parts as needed."""
    if prompt_tokens(skeleton, SummaryPart(community_id, 1, text).formatted()) <= budget:
        return [SummaryPart(community_id, 1, text)]
    overhead = prompt_tokens(skeleton, part_header(community_id, 9_999_999))
    room = budget - overhead
    if room <= 0:
        raise ValueError(f"the map budget cannot fit even a label for community {community_id}")
    parts: list[SummaryPart] = []
    for piece in split_tokens(text, room):
        parts.append(SummaryPart(community_id, len(parts) + 1, piece))
    for part in parts:  # re-encoding a piece can differ from the slice by a token: check, never trust
        if prompt_tokens(skeleton, part.formatted()) > budget:
            raise ValueError(f"a part of community {community_id} does not fit the map budget")
    return parts


def build_batches(
    summaries: Sequence[tuple[str, str]], skeleton: str, budget: int, seed: int = 0
) -> list[MapBatch]:
    """Shuffle `(community id, text)` pairs, split oversized ones, pack parts greedily in order."""
    if prompt_tokens(skeleton, "") > budget:
        raise ValueError("the map budget cannot fit the map prompt itself")
    parts = [
        part
        for community_id, text in seeded_shuffle(summaries, seed)
        for part in split_summary(community_id, text, skeleton, budget)
    ]
    batches: list[MapBatch] = []
    current: list[SummaryPart] = []
    current_tokens = 0
    for part in parts:
        candidate = [*current, part]
        tokens = prompt_tokens(skeleton, "\n".join(p.formatted() for p in candidate))
        if current and tokens > budget:
            batches.append(MapBatch(len(batches), current, current_tokens))
            candidate = [part]
            tokens = prompt_tokens(skeleton, part.formatted())
        current, current_tokens = candidate, tokens
    if current:
        batches.append(MapBatch(len(batches), current, current_tokens))
    return batches
