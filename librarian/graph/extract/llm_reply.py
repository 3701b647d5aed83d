"""Checking a model's extraction replies against their windows, and gathering them into one payload.

Model output is evidence only once checked: relations and claims must name entities the same reply
extracted, weights are clamped, and a claim must be a verbatim sentence of one of the window's chunks.
Kept apart from `llm` (which talks to the model) so these rules can be read and tested on their own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from librarian.graph.extract.base import PAYLOAD_FORMAT, ExtractionPayload
from librarian.graph.model import ChunkRef, edge_key, normalize_name, normalize_relation


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def _clamp_weight(value: Any) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        return 1.0
    if weight != weight:  # NaN
        return 1.0
    return float(min(5.0, max(1.0, weight)))


def _chunk_of(value: Any, window: list[ChunkRef]) -> ChunkRef | None:
    """A claim's `chunk`: the 1-based label in the window, or a chunk id."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 1 <= int(value) <= len(window):
        return window[int(value) - 1]
    if isinstance(value, str):
        if value.strip().isdigit():
            return _chunk_of(int(value.strip()), window)
        for chunk in window:
            if chunk.chunk_id == value:
                return chunk
    return None


def _records(value: dict[str, Any], field: str) -> Iterable[dict[str, Any]]:
    """The reply's records of one kind; anything that is not an object is skipped."""
    return (record for record in value.get(field) or [] if isinstance(record, dict))


class ReplyMerger:
    """One document's replies, window by window, merged by entity key and entity pair.

    `stats` counts windows, fallbacks and dropped records in the order they happen (the payload keeps
    that order). Payloads of windows the local extractor did instead are appended as they are.
    """

    def __init__(self) -> None:
        self.displays: dict[str, Counter[str]] = defaultdict(Counter)
        self.types: dict[str, Counter[str]] = defaultdict(Counter)
        self.descriptions: dict[str, str] = {}
        self.entity_chunks: dict[str, list[str]] = defaultdict(list)
        self.relations: dict[tuple[str, str], dict[str, Any]] = {}
        self.claims: list[dict[str, Any]] = []
        self.stats: Counter[str] = Counter()
        self.fallback_payloads: list[ExtractionPayload] = []

    def add_reply(self, value: dict[str, Any], window: list[ChunkRef]) -> None:
        known = self._add_entities(_records(value, "entities"), window)
        self._add_relations(_records(value, "relations"), window, known)
        self._add_claims(_records(value, "claims"), window, known)

    def _add_entities(self, records: Iterable[dict[str, Any]], window: list[ChunkRef]) -> set[str]:
        """Adds the reply's entities; returns their keys (what its relations and claims may name)."""
        known: set[str] = set()
        for record in records:
            raw = str(record.get("name") or "").strip()
            key = normalize_name(raw)
            if not key:
                continue
            known.add(key)
            self.displays[key][raw] += 1
            self.types[key][str(record.get("type") or "CONCEPT").strip().upper() or "CONCEPT"] += 1
            if record.get("description") and key not in self.descriptions:
                self.descriptions[key] = str(record["description"]).strip()
            hits = [c.chunk_id for c in window if key in c.text.lower()] or [window[0].chunk_id]
            for chunk_id in hits:
                if chunk_id not in self.entity_chunks[key]:
                    self.entity_chunks[key].append(chunk_id)
        return known

    def _add_relations(
        self, records: Iterable[dict[str, Any]], window: list[ChunkRef], known: set[str]
    ) -> None:
        for record in records:
            a = normalize_name(str(record.get("source") or ""))
            b = normalize_name(str(record.get("target") or ""))
            if a not in known or b not in known or a == b:
                self.stats["relations_dropped"] += 1
                continue
            pair = edge_key(a, b)
            entry = self.relations.setdefault(
                pair,
                {"source": pair[0], "target": pair[1], "weights": Counter(), "chunks": [], "description": ""},
            )
            entry["weights"][normalize_relation(str(record.get("relation") or ""))] += _clamp_weight(
                record.get("weight")
            )
            for c in window:
                if c.chunk_id not in entry["chunks"] and (a in c.text.lower() or b in c.text.lower()):
                    entry["chunks"].append(c.chunk_id)
            if not entry["chunks"]:
                entry["chunks"].append(window[0].chunk_id)

    def _add_claims(self, records: Iterable[dict[str, Any]], window: list[ChunkRef], known: set[str]) -> None:
        for record in records:
            description = " ".join(str(record.get("description") or "").split())
            subject = normalize_name(str(record.get("subject") or ""))
            obj = normalize_name(str(record.get("object") or "")) or None
            if subject not in known or not description:
                self.stats["claims_dropped"] += 1
                continue
            home = _verbatim_home(description, _chunk_of(record.get("chunk"), window), window)
            if home is None:  # not verbatim: a paraphrase is not evidence
                self.stats["claims_dropped"] += 1
                continue
            self.claims.append(
                {
                    "subject": subject,
                    "object": obj if obj in known and obj != subject else None,
                    "description": description,
                    "chunk": home.chunk_id,
                }
            )

    def payload(self, extractor: str, chunk_count: int) -> ExtractionPayload:
        entities = self._entity_list()
        relation_list = self._relation_list()
        claims = list(self.claims)
        for extra in self.fallback_payloads:  # windows the model could not do, extracted locally
            entities.extend(extra["entities"])  # type: ignore[arg-type]
            relation_list.extend(extra["relations"])  # type: ignore[arg-type]
            claims.extend(extra["claims"])  # type: ignore[arg-type]
        return {
            "format": PAYLOAD_FORMAT,
            "extractor": extractor,
            "entities": entities,  # type: ignore[typeddict-item]
            "relations": relation_list,  # type: ignore[typeddict-item]
            "claims": claims,  # type: ignore[typeddict-item]
            "stats": {"chunks": chunk_count, **self.stats},
        }

    def _entity_list(self) -> list[dict[str, Any]]:
        return [
            {
                "name": key,
                "display": spellings.most_common(1)[0][0],
                "type": self.types[key].most_common(1)[0][0],
                "description": self.descriptions.get(key, ""),
                "mentions": len(self.entity_chunks[key]),
                "chunks": self.entity_chunks[key],
            }
            for key, spellings in sorted(self.displays.items())
        ]

    def _relation_list(self) -> list[dict[str, Any]]:
        out = []
        for pair in sorted(self.relations):
            entry = self.relations[pair]
            weights: Counter[str] = entry["weights"]
            out.append(
                {
                    "source": entry["source"],
                    "target": entry["target"],
                    "relation": weights.most_common(1)[0][0],
                    "weight": float(sum(weights.values())),
                    "description": "",
                    "chunks": entry["chunks"],
                }
            )
        return out


def _verbatim_home(description: str, cited: ChunkRef | None, window: list[ChunkRef]) -> ChunkRef | None:
    """The chunk containing the claim verbatim (whitespace and case aside): the cited one first."""
    candidates = [cited] if cited else []
    candidates += [c for c in window if c is not cited]
    return next((c for c in candidates if _squash(description) in _squash(c.text)), None)
