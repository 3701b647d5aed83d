"""Entity counts of a folder after extraction and merge (the offline extractor), for before/after checks.

    python -m evals.graph_entities.corpus_counts $LIBRARIAN_SHARED_DIR/data/christmas-carol

Parses and chunks every .txt/.md/.html/.pdf/.docx file the way ingest does (`LocalParser`), extracts
each document with `LocalExtractor` and merges them (`merge_extractions`); prints raw (per-document)
entity records, merged entities by type and the largest entities, so a rule change can be compared with
the previous code on the same data (run the same module from a checkout of the old code).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from librarian.graph.extract.local import LocalExtractor
from librarian.graph.merge import merge_extractions
from librarian.graph.model import ChunkRef
from librarian.parsing.local import LocalParser

SUFFIXES = {".txt", ".md", ".html", ".pdf", ".docx"}


def main(folder: Path) -> None:
    parser, extractor = LocalParser(), LocalExtractor()
    payloads = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES):
        result = parser.parse(path.read_bytes(), path.name, "")
        chunks = [
            ChunkRef(f"{path.name}:{i}", path.name, i, 0, None, c["content"])
            for i, c in enumerate(result["chunks"])
        ]
        payloads.append((path.name, extractor.extract(chunks)))
    raw = sum(len(p["entities"]) for _, p in payloads)
    graph = merge_extractions(payloads)
    types = Counter(e.type for e in graph.entities)
    print(
        f"{folder}: {raw} entity records, {len(graph.entities)} entities after merge, "
        f"{len(graph.edges)} edges"
    )
    print("  by type: " + ", ".join(f"{t} {n}" for t, n in types.most_common()))
    top = sorted(graph.entities, key=lambda e: -e.mentions)[:20]
    print("  most named: " + ", ".join(f"{e.display_name} ({e.mentions})" for e in top))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
