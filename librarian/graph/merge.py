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
4. Name variants of one thing are grouped *before* rules 2-3: surface forms whose keys are equal once the
   head noun (the last word) is singular ("absolute paths" / "absolute path", "spirits" / "spirit"), the
   surface forms an extractor filed under one key (an older payload's lemma key "7.3.1 loading datum"),
   and a record's optional `variant` key (the extractor's own plural-folded key). The group is named by
   its most frequent surface form (ties: the longer, then alphabetical). Person names are not folded
   ("Jones" is not "Jone").
The canonical entity is the longest untitled name of the group; every other key becomes an alias of it.

**Name rule** (the invariant every reader relies on): an entity's key is `normalize_name(display_name)`.
Keys are computed from the surface form (`display`), never from a lemma, so a page that has only the
display name (or an alias) resolves the same entity as one that has the key (`graph.resolve_names`).

**Keep rule** (which extracted names become entities; `is_noise`). A variant group is dropped when:
1. it is a noun phrase (type NOUN_PHRASE, local extractor) named only once in the whole organization (all
   the spellings of the group together);
2. every word of it is an English stop word ("without", "this") unless written in capitals ("US", "IT"):
   the extractor's junk rule already drops those among named entities, but a word in backticks or bold
   (type CODE) reached the graph ("**without**");
3. it is a code literal ("True", "False", "None", "null"): a value, not a thing a reader looks up;
4. it is citation-shaped: names joined by "&" with a year, or followed by "et al." ("Laudet & Hänni 2002",
   "McHugh & de Kloet 1988"): an in-text reference to a paper, not an author and not the work. Without a
   year, "X & Y" is a citation only when named in a single chunk ("Bruner & Berrett" in a reference list);
   a firm named "Procter & Gamble" across chunks stays. Paths, code and identifiers are never citations.
Otherwise named entities are kept, however rarely named: on the labelled samples a support rule (drop a
non-technical named entity named in one chunk, by one spelling, unless a multi-word proper name or an
acronym) cost 7-10 points of keep recall for 1-4 points of precision ("Goudie", "Cornwall", "Loulou"
are named once), so it is not applied (`bench/graph_entity_precision_built.py` prints both).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from librarian.graph.model import Claim, Edge, Entity, Provenance, claim_id, edge_key, normalize_name

FOLDED_TITLES = ("mr", "mr.", "mister", "sir", "dr", "dr.", "doctor")
KEPT_TITLES = frozenset({"mrs", "mrs.", "miss", "ms", "ms.", "lady"})
MIN_NOUN_PHRASE_MENTIONS = 2
DOMINANCE = 2.0
PERSON = "PERSON"
NOUN_PHRASE = "NOUN_PHRASE"
TECHNICAL_TYPES = frozenset({"PATH", "CODE", "IDENTIFIER"})
CODE_LITERALS = frozenset({"true", "false", "none", "null", "nil"})
# "Smith et al.", "Smith et al. 2002", "Laudet & Hänni 2002", "Jones 1988a": an in-text reference
_ET_AL = re.compile(r"\bet al\b\.?(?:\s+(?:1[5-9]|20)\d\d[a-z]?)?$")
_YEAR = re.compile(r"\s(?:1[5-9]|20)\d\d[a-z]?$")
_AMPERSAND_PAIR = re.compile(r"\w\s+&\s+\w")
_TITLE = re.compile(r"^(?:" + "|".join(re.escape(t) for t in FOLDED_TITLES) + r")\s+(.+)$")


_POSSESSIVE_DISPLAY = re.compile(r"(?:'s|’s)$")
_IRREGULAR_PLURALS = {"men": "man", "women": "woman", "children": "child", "feet": "foot", "teeth": "tooth"}
_SIBILANT_ES = ("sses", "shes", "xes", "zes")


def _clean_display(text: str) -> str:
    """A display as it reads in text, minus edge punctuation and a possessive ("Scrooge's" → "Scrooge")."""
    value = re.sub(r"^[\W_]+|[\W_]+$", "", " ".join(text.split()))
    return re.sub(r"[\W_]+$", "", _POSSESSIVE_DISPLAY.sub("", value))


def fold_title(key: str) -> str:
    """ "mr. scrooge" → "scrooge"; other keys unchanged."""
    match = _TITLE.match(key)
    return match.group(1) if match else key


def singular_candidates(word: str) -> list[str]:
    """Spellings `word` could be the plural of, most likely first ("caches" → ["cach", "cache"]).

    Candidates, not answers: the merge only joins two names when the candidate is itself a name it saw,
    so a wrong guess ("cach") never invents anything.
    """
    if word in _IRREGULAR_PLURALS:
        return [_IRREGULAR_PLURALS[word]]
    if len(word) < 4 or not word.isalpha() or word.endswith(("ss", "us", "is")):
        return []
    found = []
    if word.endswith("ies") and len(word) > 4:
        found.append(word[:-3] + "y")
    if word.endswith("es"):
        found.append(word[:-2])
    if word.endswith("s"):
        found.append(word[:-1])
    return found


def plural_fold(key: str) -> str:
    """The key with its head noun (last word) singular when that is unambiguous, else the key itself.

    "absolute paths" → "absolute path", "policies" → "policy", "boxes" → "box"; "caches" stays (is it
    "cach"+"es" or "cache"+"s"?), as do "status" and "analysis".
    """
    head, _, last = key.rpartition(" ")
    if last in _IRREGULAR_PLURALS:
        single = _IRREGULAR_PLURALS[last]
    elif len(last) < 4 or not last.isalpha() or last.endswith(("ss", "us", "is")) or not last.endswith("s"):
        return key
    elif last.endswith("ies") and len(last) > 4:
        single = last[:-3] + "y"
    elif last.endswith(_SIBILANT_ES):
        single = last[:-2]
    elif last.endswith("es") and last[-3] in "aeiouchs":
        return key  # "caches", "shoes", "databases": the -s/-es split is a guess
    else:
        single = last[:-1]
    return f"{head} {single}" if head else single


def _variant_keys(key: str) -> list[str]:
    """Keys `key` could be a plural variant of: the same words with the head noun singular."""
    head, _, last = key.rpartition(" ")
    return [f"{head} {s}" if head else s for s in singular_candidates(last)]


@dataclass
class _Acc:
    displays: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)
    descriptions: list[str] = field(default_factory=list)
    mentions: int = 0
    sources: set[Provenance] = field(default_factory=set)
    variants: set[str] = field(default_factory=set)  # other surface keys grouped into this one

    def kind(self) -> str:
        return self.types.most_common(1)[0][0] if self.types else ""

    def absorb(self, other: _Acc) -> None:
        self.displays.update(other.displays)
        self.types.update(other.types)
        self.descriptions.extend(other.descriptions)
        self.mentions += other.mentions
        self.sources |= other.sources
        self.variants |= other.variants


@dataclass
class MergedGraph:
    entities: list[Entity]
    edges: list[Edge]
    claims: list[Claim]
    aliases: dict[str, str]  # alias key → canonical key


def _canonical_map(acc: Mapping[str, _Acc]) -> dict[str, str]:
    """key → canonical key, by the alias rule in the module docstring."""
    kind = {k: a.kind() for k, a in acc.items()}
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
    surfaces, record_keys = _accumulate_entities(docs)
    grouped, group_of = _group_variants(surfaces, record_keys)
    kept = _drop_noise(grouped)
    groups: dict[str, list[str]] = defaultdict(list)
    for key, target in _canonical_map(kept).items():
        groups[target].append(key)
    entities = {target: _merged_entity(members, kept) for target, members in groups.items()}
    names = {e.name for e in entities.values()}
    for entity in entities.values():  # an alias never shadows another entity's key
        entity.aliases = [a for a in entity.aliases if a not in names]
    resolve = _resolver(groups, entities)
    for surface, name in group_of.items():  # every spelling seen, and the keys payloads refer to
        if name in resolve:
            resolve.setdefault(surface, resolve[name])
    for record_key, spellings in record_keys.items():
        final = next((resolve[s] for s in sorted(spellings) if s in resolve), None)
        if final is not None:
            resolve.setdefault(record_key, final)
    return MergedGraph(
        entities=sorted(entities.values(), key=lambda e: e.name),
        edges=_merge_edges(docs, resolve),
        claims=sorted(_merge_claims(docs, resolve).values(), key=lambda c: c.id),
        aliases={a: n for a, n in resolve.items() if a != n},
    )


def _accumulate_entities(docs: list[Document]) -> tuple[dict[str, _Acc], dict[str, set[str]]]:
    """Every document's entity records, summed per *surface* key `normalize_name(display)`.

    Also returns, per record key (what the payload's relations and claims name), the surface keys filed
    under it: an older payload keyed "7.3.1 Loading data" as "7.3.1 loading datum".
    """
    acc: dict[str, _Acc] = defaultdict(_Acc)
    record_keys: dict[str, set[str]] = defaultdict(set)
    for path, payload in docs:
        for record in payload.get("entities") or []:
            record_key = normalize_name(str(record.get("name") or ""))
            display = _clean_display(str(record.get("display") or record.get("name") or ""))
            key = normalize_name(display) or record_key
            if not key:
                continue
            record_keys[record_key or key].add(key)
            a = acc[key]
            mentions = int(record.get("mentions") or 1)
            a.mentions += mentions
            a.displays[display or key] += mentions
            a.types[str(record.get("type") or "CONCEPT").upper()] += mentions
            variant = normalize_name(str(record.get("variant") or ""))
            if variant and variant != key:
                a.variants.add(variant)
            if record.get("description"):
                a.descriptions.append(str(record["description"]))
            a.sources.update(Provenance(path, str(c)) for c in record.get("chunks") or [])
    return acc, record_keys


def _group_variants(
    surfaces: Mapping[str, _Acc], record_keys: Mapping[str, set[str]]
) -> tuple[dict[str, _Acc], dict[str, str]]:
    """Surface keys of one name grouped (plural/singular head noun, one record key, a `variant` hint).

    Returns the groups keyed by their most frequent surface key, and every surface key → its group.
    """
    parent = {k: k for k in surfaces}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: str, b: str) -> None:
        if a in parent and b in parent:
            parent[find(a)] = find(b)

    for spellings in record_keys.values():
        first, *rest = sorted(spellings)
        for other in rest:
            union(other, first)
    by_hint: dict[str, str] = {}
    for key, a in surfaces.items():
        if a.kind() == PERSON:
            continue  # "Jones" is not the plural of "Jone"
        for hint in a.variants:  # two spellings the extractor folded to one variant are one name
            union(key, by_hint.setdefault(hint, key))
        for candidate in [*_variant_keys(key), *sorted(a.variants)]:
            if candidate in surfaces and surfaces[candidate].kind() != PERSON:
                union(key, candidate)
    members: dict[str, list[str]] = defaultdict(list)
    for key in surfaces:
        members[find(key)].append(key)
    grouped: dict[str, _Acc] = {}
    group_of: dict[str, str] = {}
    for keys in members.values():
        name = max(keys, key=lambda k: (surfaces[k].mentions, len(k), k))
        merged = _Acc()
        for key in sorted(keys, key=lambda k: k != name):  # the name's own descriptions first
            merged.absorb(surfaces[key])
            group_of[key] = name
        merged.variants = (merged.variants | set(keys) | {plural_fold(k) for k in keys}) - {name}
        if merged.kind() == PERSON:
            merged.variants -= {plural_fold(k) for k in keys} - set(keys)
        grouped[name] = merged
    return grouped, group_of


@cache
def _stop_words() -> frozenset[str]:
    """spaCy's English stop words (the extractor's junk rule uses the same list); loaded on first use."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def is_citation_name(key: str, chunks: int) -> bool:
    """Keep rule 4: "smith et al.", "laudet & hänni 2002"; "x & y" without a year only in one chunk.

    A year alone is not enough ("windows 2000" is a product), nor is "&" across chunks ("procter & gamble").
    """
    if _ET_AL.search(key):
        return True
    return bool(_AMPERSAND_PAIR.search(key)) and (chunks <= 1 or bool(_YEAR.search(key)))


def names_nothing(key: str, display: str) -> bool:
    """Keep rules 2-3: only stop words (unless `display` is in capitals: "US"), or a code literal."""
    words = key.split()
    stop_words_only = bool(words) and all(w in _stop_words() for w in words) and not display.isupper()
    return stop_words_only or key in CODE_LITERALS


def is_noise(key: str, acc: _Acc) -> bool:
    """True when the keep rule of the module docstring drops the variant group `key`."""
    kind = acc.kind()
    if kind == NOUN_PHRASE and acc.mentions < MIN_NOUN_PHRASE_MENTIONS:
        return True
    display = max(acc.displays, key=lambda d: (acc.displays[d], d)) if acc.displays else key
    if names_nothing(key, display):
        return True
    return kind not in TECHNICAL_TYPES and is_citation_name(key, len(acc.sources) or 1)


def _drop_noise(acc: Mapping[str, _Acc]) -> dict[str, _Acc]:
    """The variant groups the keep rule (module docstring) keeps."""
    return {k: a for k, a in acc.items() if not is_noise(k, a)}


def _display_for(name: str, displays: Counter[str]) -> str:
    """The most frequent spelling that *is* `name` (normalises to it): the name rule's guarantee."""
    for display, _count in sorted(displays.items(), key=lambda item: (-item[1], item[0])):
        if normalize_name(display) == name:
            return display
    return name


def _merged_entity(members: list[str], kept: Mapping[str, _Acc]) -> Entity:
    """One entity from an alias group, named by its longest untitled key; the other keys become aliases."""
    # canonical key: the longest name without a title (ties: most mentions, then alphabetical)
    name = max(members, key=lambda k: (fold_title(k) == k, len(k.split()), kept[k].mentions, k))
    parts = [kept[k] for k in members]
    displays: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for p in parts:
        displays.update(p.displays)
        types.update(p.types)
    descriptions = kept[name].descriptions + [d for k in members if k != name for d in kept[k].descriptions]
    sources = sorted({s for p in parts for s in p.sources})
    variants = {v for p in parts for v in p.variants}
    aliases = sorted(({*members, *variants} | {fold_title(k) for k in members}) - {name, ""})
    return Entity(
        name=name,
        display_name=_display_for(name, displays),
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
        for key in members:
            resolve[key] = entities[target].name
    for entity in entities.values():
        resolve[entity.name] = entity.name
    for entity in entities.values():
        for alias in entity.aliases:
            resolve.setdefault(alias, entity.name)
    return resolve


def _resolve(resolve: Mapping[str, str], raw: object) -> str | None:
    """The entity a relation or claim names: by its key, else by the key with its head noun singular."""
    key = normalize_name(str(raw or ""))
    return resolve.get(key) or resolve.get(plural_fold(key)) if key else None


def _merge_edges(docs: list[Document], resolve: Mapping[str, str]) -> list[Edge]:
    """One undirected edge per entity pair: weights summed, the heaviest named relation kept."""
    edge_weight: Counter[tuple[str, str]] = Counter()
    edge_relations: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    edge_sources: dict[tuple[str, str], set[Provenance]] = defaultdict(set)
    edge_descriptions: dict[tuple[str, str], str] = {}
    for path, payload in docs:
        for record in payload.get("relations") or []:
            a = _resolve(resolve, record.get("source"))
            b = _resolve(resolve, record.get("target"))
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
            subject = _resolve(resolve, record.get("subject"))
            obj = _resolve(resolve, record.get("object"))
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
