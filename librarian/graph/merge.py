"""Merge per-document extractions into one graph, keeping every source of every item (DESIGN §10).

The graph is recomputed from the cached extractions of the documents that are indexed *now*, so a
deleted or replaced document's contribution is gone by construction: nothing is subtracted from an old
graph, and an entity, edge or claim that no remaining document supports simply is not produced.

**Alias rule** (applied across documents; documented in the README):
1. Keys are `normalize_name` (case, spacing, edge punctuation and possessive folded: "SCROOGE'S" → "scrooge").
2. Titles that keep the person are folded: "Mr. Scrooge", "Mister Scrooge", "Sir X", "Dr. X" → the key without
   the title. "Mrs.", "Miss", "Ms." and "Lady" are *not* folded: "Mrs. Cratchit" is usually not "Cratchit".
3. A one-word person name that is the first or last word of longer person names ("Scrooge" in "Ebenezer
   Scrooge") is merged into the longer name with the most mentions, provided it has at least twice the
   mentions of the next candidate (so an ambiguous surname shared by several people stays separate).
   Both must be person entities (their most frequent type is PERSON), and the longer name must not
   start with a kept title ("Fezziwig" is not merged into "Mrs. Fezziwig").
The canonical entity is the longest name of the group; every other key becomes an alias of it.

Noun phrases (type NOUN_PHRASE, local extractor) named only once in the whole organization are dropped
as noise; named entities are always kept.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from librarian.graph.model import Claim, Edge, Entity, Provenance, claim_id, edge_key, normalize_name

FOLDED_TITLES = ("mr", "mr.", "mister", "sir", "dr", "dr.", "doctor")
KEPT_TITLES = frozenset({"mrs", "mrs.", "miss", "ms", "ms.", "lady"})
MIN_NOUN_PHRASE_MENTIONS = 2
DOMINANCE = 2.0
PERSON = "PERSON"
NOUN_PHRASE = "NOUN_PHRASE"
_TITLE = re.compile(r"^(?:" + "|".join(re.escape(t) for t in FOLDED_TITLES) + r")\s+(.+)$")


def _clean_display(text: str) -> str:
    return re.sub(r"^[\W_]+|[\W_]+$", "", " ".join(text.split()))


def fold_title(key: str) -> str:
    """ "mr. scrooge" → "scrooge"; other keys unchanged."""
    match = _TITLE.match(key)
    return match.group(1) if match else key


@dataclass
class _Acc:
    displays: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)
    descriptions: list[str] = field(default_factory=list)
    mentions: int = 0
    sources: set[Provenance] = field(default_factory=set)


@dataclass
class MergedGraph:
    entities: list[Entity]
    edges: list[Edge]
    claims: list[Claim]
    aliases: dict[str, str]  # alias key → canonical key


def _canonical_map(acc: Mapping[str, _Acc]) -> dict[str, str]:
    """key → canonical key, by the alias rule in the module docstring."""
    kind = {k: a.types.most_common(1)[0][0] if a.types else "" for k, a in acc.items()}
    mapping: dict[str, str] = {}
    # rule 2: titles
    for key in acc:
        base = fold_title(key)
        mapping[key] = base if base != key else key
    groups: dict[str, int] = Counter()
    for key, a in acc.items():
        groups[mapping[key]] += a.mentions
    # rule 3: one-word person names into longer person names
    persons = {b for k, b in mapping.items() if kind.get(k) == PERSON or kind.get(b) == PERSON}
    # a name under a kept title is never a merge target: "Fezziwig" is not "Mrs. Fezziwig"
    long_names = [b for b in persons if " " in b and b.split()[0] not in KEPT_TITLES]
    by_part: dict[str, list[str]] = defaultdict(list)
    for name in long_names:
        words = name.split()
        by_part[words[0]].append(name)
        if words[-1] != words[0]:
            by_part[words[-1]].append(name)
    redirect: dict[str, str] = {}
    for short in persons:
        if " " in short or short not in by_part:
            continue
        candidates = sorted(by_part[short], key=lambda n: (-groups.get(n, 0), n))
        best = candidates[0]
        runner_up = groups.get(candidates[1], 0) if len(candidates) > 1 else 0
        if groups.get(best, 0) >= DOMINANCE * runner_up and groups.get(best, 0) > 0:
            redirect[short] = best
    return {key: redirect.get(base, base) for key, base in mapping.items()}


Document = tuple[str, Mapping[str, Any]]  # (document path, extraction payload)


def merge_extractions(payloads: Iterable[Document]) -> MergedGraph:
    """Merge `(document path, extraction payload)` pairs into entities, edges and claims with provenance."""
    docs = list(payloads)
    kept = _drop_noise(_accumulate_entities(docs))
    groups: dict[str, list[str]] = defaultdict(list)
    for key, target in _canonical_map(kept).items():
        groups[target].append(key)
    entities = {entity.name: entity for entity in (_merged_entity(t, m, kept) for t, m in groups.items())}
    resolve = _resolver(groups, entities)
    return MergedGraph(
        entities=sorted(entities.values(), key=lambda e: e.name),
        edges=_merge_edges(docs, resolve),
        claims=sorted(_merge_claims(docs, resolve).values(), key=lambda c: c.id),
        aliases={a: n for a, n in resolve.items() if a != n},
    )


def _accumulate_entities(docs: list[Document]) -> dict[str, _Acc]:
    """Every document's entity records, summed per normalised key (mentions weigh displays and types)."""
    acc: dict[str, _Acc] = defaultdict(_Acc)
    for path, payload in docs:
        for record in payload.get("entities") or []:
            key = normalize_name(str(record.get("name") or ""))
            if not key:
                continue
            a = acc[key]
            mentions = int(record.get("mentions") or 1)
            a.mentions += mentions
            a.displays[str(record.get("display") or record.get("name") or key)] += mentions
            a.types[str(record.get("type") or "CONCEPT").upper()] += mentions
            if record.get("description"):
                a.descriptions.append(str(record["description"]))
            a.sources.update(Provenance(path, str(c)) for c in record.get("chunks") or [])
    return acc


def _drop_noise(acc: Mapping[str, _Acc]) -> dict[str, _Acc]:
    """Noun phrases named fewer than MIN_NOUN_PHRASE_MENTIONS times go; named entities always stay."""
    return {
        k: a
        for k, a in acc.items()
        if not (a.types.most_common(1)[0][0] == NOUN_PHRASE and a.mentions < MIN_NOUN_PHRASE_MENTIONS)
    }


def _merged_entity(target: str, members: list[str], kept: Mapping[str, _Acc]) -> Entity:
    """One entity from an alias group, named by its longest untitled key; the other keys become aliases."""
    # canonical key: the longest name without a title (ties: most mentions, then alphabetical)
    name = max(
        [target, *members],
        key=lambda k: (fold_title(k) == k, len(k.split()), kept[k].mentions if k in kept else 0, k),
    )
    parts = [kept[k] for k in members]
    displays: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for p in parts:
        displays.update(p.displays)
        types.update(p.types)
    own = kept.get(name)
    display = _clean_display((own.displays if own else displays).most_common(1)[0][0]) or name
    descriptions = (own.descriptions if own else []) + [d for p in parts for d in p.descriptions]
    sources = sorted({s for p in parts for s in p.sources})
    aliases = sorted({k for k in [target, *members] if k != name} | {fold_title(k) for k in members} - {name})
    return Entity(
        name=name,
        display_name=display,
        type=types.most_common(1)[0][0],
        description=descriptions[0] if descriptions else "",
        aliases=aliases,
        sources=sources,
        mentions=sum(p.mentions for p in parts),
    )


def _resolver(groups: Mapping[str, list[str]], entities: Mapping[str, Entity]) -> dict[str, str]:
    """Every key and alias → the name of its entity, so relations and claims land on merged entities."""
    resolve: dict[str, str] = {}
    for target, members in groups.items():
        final = next(e for e in entities.values() if target == e.name or target in e.aliases)
        for key in members:
            resolve[key] = final.name
    for entity in entities.values():
        resolve[entity.name] = entity.name
        for alias in entity.aliases:
            resolve.setdefault(alias, entity.name)
    return resolve


def _merge_edges(docs: list[Document], resolve: Mapping[str, str]) -> list[Edge]:
    """One undirected edge per entity pair: weights summed, the heaviest named relation kept."""
    edge_weight: Counter[tuple[str, str]] = Counter()
    edge_relations: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    edge_sources: dict[tuple[str, str], set[Provenance]] = defaultdict(set)
    edge_descriptions: dict[tuple[str, str], str] = {}
    for path, payload in docs:
        for record in payload.get("relations") or []:
            a = resolve.get(normalize_name(str(record.get("source") or "")))
            b = resolve.get(normalize_name(str(record.get("target") or "")))
            if not a or not b or a == b:
                continue
            pair = edge_key(a, b)
            weight = float(record.get("weight") or 1.0)
            edge_weight[pair] += weight
            edge_relations[pair][str(record.get("relation") or "related_to")] += weight
            edge_sources[pair].update(Provenance(path, str(c)) for c in record.get("chunks") or [])
            if record.get("description") and pair not in edge_descriptions:
                edge_descriptions[pair] = str(record["description"])
    edges = []
    for pair in sorted(edge_weight):
        named = [(w, r) for r, w in edge_relations[pair].items() if r != "related_to"]
        relation = max(named)[1] if named else "related_to"
        edges.append(
            Edge(
                source=pair[0],
                target=pair[1],
                relation=relation,
                weight=edge_weight[pair],
                description=edge_descriptions.get(pair, ""),
                sources=sorted(edge_sources[pair]),
            )
        )
    return edges


def _merge_claims(docs: list[Document], resolve: Mapping[str, str]) -> dict[str, Claim]:
    """Claims by id (subject + description): the same claim from several chunks keeps every source."""
    claims: dict[str, Claim] = {}
    for path, payload in docs:
        for record in payload.get("claims") or []:
            description = str(record.get("description") or "").strip()
            subject = resolve.get(normalize_name(str(record.get("subject") or "")))
            obj_raw = record.get("object")
            obj = resolve.get(normalize_name(str(obj_raw))) if obj_raw else None
            if subject is None and obj is not None:
                subject, obj = obj, None
            if subject is None or not description:
                continue
            if obj == subject:
                obj = None
            source = Provenance(path, str(record.get("chunk") or ""))
            cid = claim_id(subject, description)
            if cid in claims:
                _add_claim_source(claims[cid], source, obj)
                continue
            claims[cid] = Claim(cid, subject, obj, description, source.chunk_id, source.path, [source])
    return claims


def _add_claim_source(claim: Claim, source: Provenance, obj: str | None) -> None:
    if source not in claim.sources:
        claim.sources.append(source)
        claim.sources.sort()
    if claim.object is None and obj is not None:
        claim.object = obj
