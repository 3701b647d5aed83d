"""Draw the labelling sample: today's offline extractor over the chunks of `data/docs`.

    python -m evals.graph_entities.sample [--docs $LIBRARIAN_SHARED_DIR/data/docs] [--size 300] [--out DIR]

Each document is parsed and chunked the way ingest does (`LocalParser`, 1,000-character chunks, the
index text is the chunk's `content`), every chunk is run through `LocalExtractor`, and (chunk, entity)
mentions are drawn with a fixed seed: an equal share per document (capped by what it has), the rest
spread in proportion to size. Writes `chunks.jsonl` (the drawn chunks' text, so the precision bench
needs no parser) and `candidates.jsonl` (unlabelled rows) to `--out` (default: a scratch folder, so a
re-run never overwrites the committed sample). `labelled.jsonl` is `candidates.jsonl` of the run of
2026-12-07 (rules version 3, parser of that day) labelled by hand per `GUIDELINE.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from librarian.graph.extract.local import LocalExtractor, load_model
from librarian.parsing.local import LocalParser

SUFFIXES = {".pdf", ".docx", ".html", ".md"}
SEED = 27


def document_chunks(root: Path) -> dict[str, list[str]]:
    """Relative path → chunk texts, for every parseable document under `root`."""
    parser = LocalParser()
    out: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES):
        result = parser.parse(path.read_bytes(), path.name, "")
        out[str(path.relative_to(root))] = [c["content"] for c in result["chunks"]]
    return out


def mentions(texts: list[str]) -> list[tuple[int, str, str, str]]:
    """(chunk index, key, display, type) of every distinct mention per chunk."""
    extractor = LocalExtractor(load_model())
    found = []
    for index, doc in enumerate(extractor.nlp.pipe(texts, batch_size=16)):
        seen = extractor._observe(doc)
        for key, display, kind, *_ in seen["mentions"]:
            found.append((index, key, display, kind))
    return found


def main() -> None:
    shared = Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=Path, default=shared / "data" / "docs")
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("/tmp/graph_entities_draw"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    docs = document_chunks(args.docs)
    pools = {name: mentions(texts) for name, texts in docs.items()}
    for name, pool in pools.items():
        print(f"{name}: {len(docs[name])} chunks, {len(pool)} mentions")
    floor = args.size // (2 * len(pools))
    quota = {name: min(len(pool), floor) for name, pool in pools.items()}
    total = sum(len(p) for p in pools.values())
    rest = args.size - sum(quota.values())
    for name, pool in pools.items():
        quota[name] = min(len(pool), quota[name] + round(rest * len(pool) / total))
    rows, chunk_rows = [], {}
    for name, pool in sorted(pools.items()):
        drawn = rng.sample(pool, quota[name])
        for index, key, display, kind in sorted(drawn):
            chunk_id = f"{name}:{index}"
            chunk_rows[chunk_id] = {"document": name, "chunk_id": chunk_id, "text": docs[name][index]}
            rows.append(
                {"document": name, "chunk_id": chunk_id, "name": display, "key": key, "extracted_type": kind}
            )
    (args.out / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk_rows.values()))
    (args.out / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} mentions drawn from {len(chunk_rows)} chunks")


if __name__ == "__main__":
    main()
