"""Precision of the *built* graph's entities on every labelled sample, per keep rule of the merge step.

    python bench/graph_entity_precision_built.py [--docs $LIBRARIAN_SHARED_DIR/data/docs] [--cache FILE]

`bench/graph_entity_precision.py` scores the extractor per mention; what a reader meets is the graph the
merge step keeps (`librarian.graph.merge`, keep rule). This bench parses and extracts every document of
`--docs` the way ingest and `graph build` do (`LocalParser`, `LocalExtractor`; `--cache` keeps the
payloads in a JSON file so a second run skips the ~1 min of extraction), merges them once per keep rule
and prints, for each label file of `evals/graph_entities/`, the goal-1 figures of
`bench/graphrag_quality.py` (`label_precision`: a labelled name is *present* when its key is an entity key
or alias; precision = present keep rows / present sample rows; keep recall = present keep rows, sample and
expected, / keep rows) and how many of the hand-written *expected* names are present.

Keep rules compared in the same process (ratios against the first):
- `baseline`: the keep rule before round 3 (noun phrases named once go, every named entity stays);
- `shipped`: `merge.is_noise` (adds stop-word-only names, code literals, citation-shaped names);
- `shipped+support`: also drops a non-technical named entity named in one chunk by one spelling unless it
  is a multi-word proper name or an acronym (the evidence rule considered and rejected: see merge.py).

Which files are in sample: rounds 1 and 2 and `labelled_after_tuning.jsonl` chose the rule; round 3 was
scored only after it was fixed (its error *kinds* were known from the per-mention bench, see the report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.graphrag_quality import label_keys, label_precision, load_labels  # noqa: E402
from librarian.graph import merge  # noqa: E402

LABEL_DIR = REPO / "evals" / "graph_entities"
LABEL_FILES = (
    "labelled.jsonl",
    "labelled_after_tuning.jsonl",
    "labelled_round2.jsonl",
    "labelled_round3.jsonl",
)
OUT_OF_SAMPLE = "labelled_round3.jsonl"
SUFFIXES = {".txt", ".md", ".html", ".pdf", ".docx"}
SHIPPED_NOISE = merge.is_noise  # before `keep_rule` swaps it
NAME_PARTICLES = {"of", "the", "and", "de", "del", "von", "van", "der", "to", "&"}


def extract_folder(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(relative path, extraction payload) per document, parsed and chunked as ingest does."""
    from librarian.graph.extract.local import LocalExtractor
    from librarian.graph.model import ChunkRef
    from librarian.parsing.local import LocalParser

    parser, extractor = LocalParser(), LocalExtractor()
    payloads = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES):
        rel = str(path.relative_to(folder))
        chunks = parser.parse(path.read_bytes(), path.name, "")["chunks"]
        refs = [ChunkRef(f"{rel}:{i}", rel, i, 0, None, c["content"]) for i, c in enumerate(chunks)]
        payloads.append((rel, dict(extractor.extract(refs))))
    return payloads


def baseline_noise(key: str, acc: Any) -> bool:
    """The keep rule before round 3: only noun phrases named once are dropped."""
    return acc.kind() == merge.NOUN_PHRASE and acc.mentions < merge.MIN_NOUN_PHRASE_MENTIONS


def support_noise(key: str, acc: Any) -> bool:
    """Shipped rule plus a support rule: one chunk, one spelling, no strong name shape → dropped."""
    if SHIPPED_NOISE(key, acc):
        return True
    if acc.kind() in merge.TECHNICAL_TYPES or acc.kind() == merge.NOUN_PHRASE:
        return False
    if len({s.chunk_id for s in acc.sources}) > 1 or len(acc.displays) > 1:
        return False
    display = next(iter(acc.displays), key)
    words = display.split()
    proper = len(words) > 1 and all(w[:1].isupper() or w.lower() in NAME_PARTICLES for w in words)
    acronym = display.isupper() and len(display) > 1
    return not (proper or acronym)


RULES: dict[str, Callable[[str, Any], bool]] = {
    "baseline": baseline_noise,
    "shipped": SHIPPED_NOISE,
    "shipped+support": support_noise,
}


@contextmanager
def keep_rule(noise: Callable[[str, Any], bool]) -> Iterator[None]:
    """Run the merge with another keep rule (the bench compares rules; the merge has one on purpose)."""
    shipped = merge.is_noise
    merge.is_noise = noise
    try:
        yield
    finally:
        merge.is_noise = shipped


def known_names(
    payloads: list[tuple[str, dict[str, Any]]], noise: Callable[[str, Any], bool]
) -> tuple[set[str], int]:
    """Entity keys and aliases of the graph merged with `noise` as keep rule, and its entity count."""
    with keep_rule(noise):
        graph = merge.merge_extractions(payloads)
    return {e.name for e in graph.entities} | set(graph.aliases), len(graph.entities)


def main() -> None:
    shared = Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=Path, default=shared / "data" / "docs")
    parser.add_argument("--cache", type=Path, help="JSON file of extraction payloads (written if missing)")
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        payloads = [tuple(p) for p in json.loads(args.cache.read_text())]
    else:
        payloads = extract_folder(args.docs)
        if args.cache:
            args.cache.write_text(json.dumps(payloads))
    labels = {name: load_labels(LABEL_DIR / name) for name in LABEL_FILES if (LABEL_DIR / name).exists()}
    expected = [r for rows in labels.values() for r in rows if r.get("row") == "expected"]
    first: dict[str, float] = {}
    for rule, noise in RULES.items():
        names, count = known_names(payloads, noise)
        found = sum(bool(label_keys(r["name"]) & names) for r in expected)
        print(f"{rule}: {count} entities; expected names present {found}/{len(expected)}")
        for name, rows in labels.items():
            result = label_precision(rows, names)
            precision, recall = result["precision"] or 0.0, result["keepRecall"] or 0.0
            first.setdefault(f"{name}:p", precision)
            first.setdefault(f"{name}:r", recall)
            tag = "out of sample" if name == OUT_OF_SAMPLE else "tuning"
            p_ratio, r_ratio = precision / first[f"{name}:p"], recall / first[f"{name}:r"]
            print(
                f"  {name:30} {tag:13} precision {precision:6.1%} "
                f"({result['presentKeep']}/{result['present']}) x{p_ratio:.2f}  "
                f"keep recall {recall:6.1%} x{r_ratio:.2f}"
            )
            if name == OUT_OF_SAMPLE:
                print(f"    drop-labelled present: {result['droppedPresent']}")


if __name__ == "__main__":
    main()
