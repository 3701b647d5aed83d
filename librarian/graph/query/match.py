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

Precision (issue 27; `MatchPrecision`, `LEGACY_PRECISION` is the behaviour before it). On manuals the
reference's channels matched 33 entities for "What does read.table do in R?" ("TABLE", "Alabama", ...):
- a word glued to an identifier by `.`, `_`, `/`, `-` or `:` is part of it: "read.table" names neither
  "read" nor "table", "/var/spool" does not name "var";
- fuzzy needs a share of the entity name's content tokens in the question (`fuzzy_min_coverage`), so one
  common token ("standard") no longer pulls in "standard deviations"; plurals count as their singular;
- a one-word entity that is a common English word (wordfreq Zipf >= `generic_zipf`: "table", "files")
  counts only when the question names it as a proper noun (capitalised, not as the first word) or the
  query parse names it: otherwise any question using the word would match it;
- an exact match inside a longer exact match is dropped ("christmas" inside "ghost of christmas past");
- semantic keeps at most `semantic_top_k` names above a stricter `semantic_threshold`;
- the fused list is capped at `limit`. The settings are scored in `bench/graph_match_precision.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from wordfreq import zipf_frequency

from librarian.embeddings.text_terms import STOPWORDS
from librarian.graph.query.fusion import RRF_K, rrf_scores

FUZZY_THRESHOLD = 0.4
SEMANTIC_THRESHOLD = 0.7
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_GLUE = r"[._/:\-]"  # joins the parts of one identifier: "read.table", "/var/spool", "en_core"


@dataclass(frozen=True)
class MatchPrecision:
    """How strict matching is (see the module docstring); `None` turns a cap off."""

    limit: int | None = 6  # matched entities kept after fusion, best first
    fuzzy_min_coverage: float = 0.67  # share of the name's content tokens the question must contain
    generic_zipf: float | None = 4.0  # one-word names at least this common need a proper-noun mention
    drop_subsumed: bool = True  # an exact match inside a longer exact match does not count
    glued_words: bool = False  # whether "read.table" names "table" (the reference: yes)
    semantic_threshold: float = 0.85
    semantic_top_k: int | None = 3


LEGACY_PRECISION = MatchPrecision(
    limit=None,
    fuzzy_min_coverage=0.0,
    generic_zipf=None,
    drop_subsumed=False,
    glued_words=True,
    semantic_threshold=SEMANTIC_THRESHOLD,
    semantic_top_k=None,
)
DEFAULT_PRECISION = MatchPrecision()


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


def _phrase_pattern(needle: str, glued_words: bool) -> str:
    if glued_words:
        return r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])"
    return rf"(?<![a-z0-9])(?<![a-z0-9]{_GLUE})" + re.escape(needle) + rf"(?![a-z0-9])(?!{_GLUE}[a-z0-9])"


def phrase_spans(normalised_query: str, phrase: str, *, glued_words: bool = True) -> list[tuple[int, int]]:
    """Where `phrase` occurs in the query as whole words (`glued_words=False`: not inside an identifier)."""
    needle = normalise(phrase)
    if not needle:
        return []
    return [m.span() for m in re.finditer(_phrase_pattern(needle, glued_words), normalised_query)]


def contains_phrase(
    normalised_query: str,
    phrase: str,
    query_tokens: frozenset[str] | None = None,
    *,
    glued_words: bool = True,
) -> bool:
    """`phrase` occurs in the query with no letter or digit glued to either end.

    With the query's tokens given, a phrase with a token the query lacks is rejected before any
    regular expression runs (most entities, most of the time).
    """
    if query_tokens is not None and not token_set(phrase) <= query_tokens:
        return False
    return bool(phrase_spans(normalised_query, phrase, glued_words=glued_words))


def _ranked(scored: list[tuple[EntityRef, float]]) -> list[tuple[EntityRef, float]]:
    order = {id(e): i for i, (e, _) in enumerate(scored)}
    return sorted(scored, key=lambda item: (-item[1], -len(item[0].name), order[id(item[0])]))


def match_exact(
    query: str, entities: Sequence[EntityRef], *, glued_words: bool = True
) -> list[tuple[EntityRef, float]]:
    q, qt = normalise(query), frozenset(tokens(query))
    return _ranked([(e, 1.0) for e in entities if contains_phrase(q, e.name, qt, glued_words=glued_words)])


def match_alias(
    query: str, entities: Sequence[EntityRef], *, glued_words: bool = True
) -> list[tuple[EntityRef, float]]:
    q, qt = normalise(query), frozenset(tokens(query))
    hits = [
        (e, 1.0)
        for e in entities
        if any(contains_phrase(q, a, qt, glued_words=glued_words) for a in e.aliases)
    ]
    return _ranked(hits)


def _singular(token: str) -> str:
    """A token's plain plural folded ("paths" → "path"), so coverage does not miss a plural."""
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def match_fuzzy(
    query: str,
    entities: Sequence[EntityRef],
    threshold: float = FUZZY_THRESHOLD,
    min_coverage: float = 0.0,
) -> list[tuple[EntityRef, float]]:
    """The reference's per-token Jaccard; with `min_coverage`, also that share of the name's tokens
    (plurals folded) must be in the question: "standard" does not name "standard deviations", and
    "Cratchit" does not name every "X Cratchit" (a rare shared word let "/var/lock" name "var/preserve")."""
    query_tokens = {t for t in tokens(query) if t not in STOPWORDS}
    folded_query = {_singular(t) for t in tokens(query)}
    hits = []
    for entity in entities:
        name_tokens = token_set(entity.name)
        if not name_tokens or not (name_tokens & query_tokens):
            continue  # Jaccard with a single token is 0 unless the token is in the name
        best = max(token_jaccard(entity.name, t) for t in query_tokens)
        if best < threshold:
            continue
        if min_coverage > 0:
            name_words = {_singular(t) for t in name_tokens}  # "Most user" is not named by "user"
            if len(name_words & folded_query) / len(name_words) < min_coverage:
                continue
        hits.append((entity, best))
    return _ranked(hits)


def match_semantic(
    query_vector: Sequence[float] | np.ndarray | None,
    entities: Sequence[EntityRef],
    name_vectors: np.ndarray | None,
    threshold: float = SEMANTIC_THRESHOLD,
    top_k: int | None = None,
) -> list[tuple[EntityRef, float]]:
    """Cosine against each entity's name vector (row i of `name_vectors` is `entities[i]`), best first."""
    if query_vector is None or name_vectors is None or not len(entities):
        return []
    q = np.asarray(query_vector, dtype=np.float32)
    m = np.asarray(name_vectors, dtype=np.float32)
    if m.shape[0] != len(entities):
        raise ValueError("one name vector per entity is required")
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    cosines = (m @ q) / np.where(norms == 0, 1.0, norms)
    picked = np.nonzero(cosines >= threshold)[0]
    ranked = _ranked([(entities[i], float(cosines[i])) for i in picked])
    return ranked if top_k is None else ranked[:top_k]


def name_lookup(entities: Sequence[EntityRef]) -> dict[str, EntityRef]:
    """Normalised name or alias -> entity; the canonical name wins a clash with another's alias."""
    lookup: dict[str, EntityRef] = {}
    for entity in entities:
        for name in entity.aliases:
            lookup[normalise(name)] = entity
    for entity in entities:
        lookup[normalise(entity.name)] = entity
    return lookup


def is_generic_word(name: str, zipf: float) -> bool:
    """A one-word name that is a common English word ("table", "files"): wordfreq Zipf >= `zipf`."""
    words = tokens(name)
    return len(words) == 1 and zipf_frequency(words[0], "en") >= zipf


def _named_as_proper_noun(query: str, entity: EntityRef) -> bool:
    """The question spells the name capitalised somewhere other than as its first word."""
    first = re.match(r"\W*\w+", query)
    start = first.end() if first else 0
    for phrase in (entity.name, *entity.aliases):
        needle = normalise(phrase)
        if not needle:
            continue
        for begin, _end in phrase_spans(query.lower(), needle, glued_words=False):
            if begin >= start and query[begin].isupper():
                return True
    return False


def _subsumed(query: str, found: Sequence[EntityRef]) -> set[str]:
    """Ids of exact/alias matches whose every occurrence lies inside a longer match's occurrence."""
    q = normalise(query)
    spans = {
        e.id: [sp for phrase in (e.name, *e.aliases) for sp in phrase_spans(q, phrase, glued_words=False)]
        for e in found
    }
    inside: set[str] = set()
    for e in found:
        mine = spans[e.id]
        if mine and all(
            any(
                a <= b0 and b1 <= c and (c - a) > (b1 - b0)
                for o, other in spans.items()
                if o != e.id
                for a, c in other
            )
            for b0, b1 in mine
        ):
            inside.add(e.id)
    return inside


def match_entities(
    query: str,
    entities: Sequence[EntityRef],
    *,
    query_vector: Sequence[float] | np.ndarray | None = None,
    name_vectors: np.ndarray | None = None,
    intent_entities: Sequence[str] = (),
    k: int = RRF_K,
    fuzzy_threshold: float = FUZZY_THRESHOLD,
    semantic_threshold: float | None = None,
    lookup: dict[str, EntityRef] | None = None,
    precision: MatchPrecision = DEFAULT_PRECISION,
) -> list[MatchedEntity]:
    """All four channels, fused; then intent entities that exactly name an entity (or alias).

    `precision` decides what counts (module docstring); `semantic_threshold`, when given, overrides
    its threshold.
    """
    p = precision
    glued = p.glued_words
    channels = {
        "exact": match_exact(query, entities, glued_words=glued),
        "alias": match_alias(query, entities, glued_words=glued),
        "fuzzy": match_fuzzy(query, entities, fuzzy_threshold, p.fuzzy_min_coverage),
        "semantic": match_semantic(
            query_vector,
            entities,
            name_vectors,
            p.semantic_threshold if semantic_threshold is None else semantic_threshold,
            p.semantic_top_k,
        ),
    }
    by_id = {e.id: e for hits in channels.values() for e, _ in hits}
    if intent_entities and lookup is None:
        lookup = name_lookup(entities)
    intents = {
        e.id: e for e in (lookup.get(normalise(n)) for n in intent_entities) if lookup is not None and e
    }
    dropped: set[str] = set()
    if p.drop_subsumed:
        named = {e.id: e for name in ("exact", "alias") for e, _ in channels[name]}
        dropped |= _subsumed(query, list(named.values())) - set(intents)
    if not glued:  # a one-word name only fuzzy found is a word glued into an identifier ("/var/spool")
        named = {e.id for name in ("exact", "alias") for e, _ in channels[name]}
        dropped |= {e.id for e, _ in channels["fuzzy"] if e.id not in named and len(token_set(e.name)) == 1}
    if p.generic_zipf is not None:
        dropped |= {
            i
            for i, e in by_id.items()
            if i not in intents
            and is_generic_word(e.name, p.generic_zipf)
            and not _named_as_proper_noun(query, e)
        }
    fused = rrf_scores(([e.id for e, _ in hits if e.id not in dropped] for hits in channels.values()), k)
    matched: dict[str, MatchedEntity] = {}
    for entity_id, score in sorted(fused.items(), key=lambda item: -item[1]):
        entity = by_id[entity_id]
        found = {name: s for name, hits in channels.items() for e, s in hits if e.id == entity_id}
        matched[entity_id] = MatchedEntity(entity.id, entity.name, next(iter(found)), score, found)
    for entity in intents.values():
        if entity.id not in matched:
            matched[entity.id] = MatchedEntity(entity.id, entity.name, "intent", 1.0, {"intent": 1.0})
    ranked = list(matched.values())
    if p.limit is not None and len(ranked) > p.limit:
        # intent entities the question names outright come first, then the fused order
        ranked = sorted(ranked, key=lambda m: m.id not in intents)[: p.limit]
        ranked = [m for m in matched.values() if m in ranked]
    return ranked
