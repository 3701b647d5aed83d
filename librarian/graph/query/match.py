"""Which graph entities a question names: four channels (exact, alias, fuzzy, semantic) fused by RRF.

Reference behaviour (graphrag-ts `entityMatcher.ts`), kept:
- exact: the normalised question contains the entity's normalised name (score 1);
- alias: the same test against each alias (the reference passes an empty alias list; we pass the
  aliases the build merged, e.g. "Ebenezer Scrooge" and "Mr. Scrooge" for "Scrooge");
- fuzzy: for each question token, the token Jaccard between the entity name and that token, the max
  kept if >= 0.4 (tokens: runs of `[a-z0-9]` and single CJK characters);
- semantic: cosine(question embedding, entity-name embedding) >= 0.7;
- fusion: RRF `Σ 1/(k + rank + 1)`, k = 80, rank 0-based, over the four channel lists;
- intent entities (from query parsing) that exactly name a known entity join with score 1.

Where we deliberately differ, and why:
- "contains" is tested on word boundaries, not raw substrings: a raw substring lets an entity named
  "Al" match "always" and "Tim" match "time".
- fuzzy skips stop-word question tokens: with them, "the" gives every two-word name starting with
  "The" a Jaccard of 0.5 and drags unrelated entities into the 2-hop recall.
- each channel list is ordered by its score (ties: longer name first, then store order), because RRF
  reads ranks and the reference's lists were in store order, which made fusion depend on row order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from librarian.embeddings.text_terms import STOPWORDS
from librarian.graph.query.fusion import RRF_K, rrf_scores

FUZZY_THRESHOLD = 0.4
SEMANTIC_THRESHOLD = 0.7
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


@dataclass(frozen=True)
class EntityRef:
    """What matching needs of an entity: its id, its canonical name and its aliases."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass
class MatchedEntity:
    id: str
    name: str
    match_type: str  # exact | alias | fuzzy | semantic | intent (the best channel that found it)
    score: float  # fused RRF score (intent-only entities: 1.0, as in the reference)
    channels: dict[str, float] = field(default_factory=dict)  # channel -> its own score


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def tokens(text: str) -> list[str]:
    """The reference's tokens: lower-cased `[a-z0-9]+` runs and single CJK characters."""
    return _TOKEN.findall(text.lower())


@lru_cache(maxsize=500_000)
def token_set(text: str) -> frozenset[str]:
    """Tokens of a name, cached: entity names are matched against every question."""
    return frozenset(tokens(text))


def token_jaccard(a: str, b: str) -> float:
    """Jaccard of the token sets; two token-less strings are identical (1.0), as in the reference."""
    left, right = token_set(a), token_set(b)
    if not left and not right:
        return 1.0
    union = len(left | right)
    return len(left & right) / union if union else 0.0


def contains_phrase(normalised_query: str, phrase: str, query_tokens: frozenset[str] | None = None) -> bool:
    """`phrase` occurs in the query with no letter or digit glued to either end.

    With the query's tokens given, a phrase with a token the query lacks is rejected before any
    regular expression runs (most entities, most of the time).
    """
    if query_tokens is not None and not token_set(phrase) <= query_tokens:
        return False
    needle = normalise(phrase)
    if not needle:
        return False
    pattern = r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])"
    return re.search(pattern, normalised_query) is not None


def _ranked(scored: list[tuple[EntityRef, float]]) -> list[tuple[EntityRef, float]]:
    order = {id(e): i for i, (e, _) in enumerate(scored)}
    return sorted(scored, key=lambda item: (-item[1], -len(item[0].name), order[id(item[0])]))


def match_exact(query: str, entities: Sequence[EntityRef]) -> list[tuple[EntityRef, float]]:
    q, qt = normalise(query), frozenset(tokens(query))
    return _ranked([(e, 1.0) for e in entities if contains_phrase(q, e.name, qt)])


def match_alias(query: str, entities: Sequence[EntityRef]) -> list[tuple[EntityRef, float]]:
    q, qt = normalise(query), frozenset(tokens(query))
    hits = [(e, 1.0) for e in entities if any(contains_phrase(q, a, qt) for a in e.aliases)]
    return _ranked(hits)


def match_fuzzy(
    query: str, entities: Sequence[EntityRef], threshold: float = FUZZY_THRESHOLD
) -> list[tuple[EntityRef, float]]:
    query_tokens = {t for t in tokens(query) if t not in STOPWORDS}
    hits = []
    for entity in entities:
        name_tokens = token_set(entity.name)
        if not name_tokens or not (name_tokens & query_tokens):
            continue  # Jaccard with a single token is 0 unless the token is in the name
        best = max(token_jaccard(entity.name, t) for t in query_tokens)
        if best >= threshold:
            hits.append((entity, best))
    return _ranked(hits)


def match_semantic(
    query_vector: Sequence[float] | np.ndarray | None,
    entities: Sequence[EntityRef],
    name_vectors: np.ndarray | None,
    threshold: float = SEMANTIC_THRESHOLD,
) -> list[tuple[EntityRef, float]]:
    """Cosine against each entity's name vector (row i of `name_vectors` is `entities[i]`)."""
    if query_vector is None or name_vectors is None or not len(entities):
        return []
    q = np.asarray(query_vector, dtype=np.float32)
    m = np.asarray(name_vectors, dtype=np.float32)
    if m.shape[0] != len(entities):
        raise ValueError("one name vector per entity is required")
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    cosines = (m @ q) / np.where(norms == 0, 1.0, norms)
    picked = np.nonzero(cosines >= threshold)[0]
    return _ranked([(entities[i], float(cosines[i])) for i in picked])


def name_lookup(entities: Sequence[EntityRef]) -> dict[str, EntityRef]:
    """Normalised name or alias -> entity; the canonical name wins a clash with another's alias."""
    lookup: dict[str, EntityRef] = {}
    for entity in entities:
        for name in entity.aliases:
            lookup[normalise(name)] = entity
    for entity in entities:
        lookup[normalise(entity.name)] = entity
    return lookup


def match_entities(
    query: str,
    entities: Sequence[EntityRef],
    *,
    query_vector: Sequence[float] | np.ndarray | None = None,
    name_vectors: np.ndarray | None = None,
    intent_entities: Sequence[str] = (),
    k: int = RRF_K,
    fuzzy_threshold: float = FUZZY_THRESHOLD,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
    lookup: dict[str, EntityRef] | None = None,
) -> list[MatchedEntity]:
    """All four channels, fused; then intent entities that exactly name an entity (or alias)."""
    channels = {
        "exact": match_exact(query, entities),
        "alias": match_alias(query, entities),
        "fuzzy": match_fuzzy(query, entities, fuzzy_threshold),
        "semantic": match_semantic(query_vector, entities, name_vectors, semantic_threshold),
    }
    by_id = {e.id: e for hits in channels.values() for e, _ in hits}
    fused = rrf_scores(([e.id for e, _ in hits] for hits in channels.values()), k)
    matched: dict[str, MatchedEntity] = {}
    for entity_id, score in sorted(fused.items(), key=lambda item: -item[1]):
        entity = by_id[entity_id]
        found = {name: s for name, hits in channels.items() for e, s in hits if e.id == entity_id}
        matched[entity_id] = MatchedEntity(entity.id, entity.name, next(iter(found)), score, found)
    if intent_entities and lookup is None:
        lookup = name_lookup(entities)
    for name in intent_entities:
        entity = lookup.get(normalise(name))
        if entity is not None and entity.id not in matched:
            matched[entity.id] = MatchedEntity(entity.id, entity.name, "intent", 1.0, {"intent": 1.0})
    return list(matched.values())
