"""Draw the round-2 out-of-sample labelling set: mentions the rules of version 5 produce, unseen names only.

    python -m evals.graph_entities.sample_round2 [--round 2|3] [--docs DIR] [--size 120]

The rules were tuned on `labelled.jsonl` and `labelled_after_tuning.jsonl`, so their precision on those is
in-sample. This draws (chunk, mention) pairs with a new seed from every document of `data/docs`, the way
`sample.py` does (an equal share per document, the rest in proportion to size), leaving out any mention
whose name (match key) was labelled before, and writes `candidates_round2.jsonl` and
`chunks_round2.jsonl` (the drawn chunks' text) to `--out`. `labelled_round2.jsonl` is that file labelled
by hand per `GUIDELINE.md` before any precision was computed on it. `--round 3` (seed 2028) draws the
same way for the rules tuned on round 2 too, leaving out every name of `labelled*.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from evals.graph_entities.sample import document_chunks, mentions

SEED = 2027
HERE = Path(__file__).resolve().parent
SEEN = ("labelled.jsonl", "labelled_after_tuning.jsonl", "labelled_round2.jsonl")


def match_key(name: str) -> str:
    """The bench's matching form: lower case, single spaces, no leading "the "."""
    value = " ".join(name.split()).lower()
    return value[4:] if value.startswith("the ") else value


def seen_keys(round_: int) -> set[str]:
    """Match keys of every name labelled in an earlier round (those are tuning data now)."""
    keys: set[str] = set()
    for name in SEEN[:round_]:
        for line in (HERE / name).read_text().splitlines():
            if line.strip():
                keys.add(match_key(json.loads(line)["name"]))
    return keys


def main() -> None:
    shared = Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=Path, default=shared / "data" / "docs")
    parser.add_argument("--size", type=int, default=120)
    parser.add_argument("--round", type=int, default=2, choices=(2, 3))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or Path(f"/tmp/graph_entities_round{args.round}")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED + args.round - 2)
    seen = seen_keys(args.round)
    docs = document_chunks(args.docs)
    pools = {}
    for name, texts in docs.items():
        pools[name] = [m for m in mentions(texts) if match_key(m[2]) not in seen]
        print(f"{name}: {len(texts)} chunks, {len(pools[name])} unseen mentions")
    floor = args.size // (2 * len(pools))
    quota = {name: min(len(pool), floor) for name, pool in pools.items()}
    total = sum(len(p) for p in pools.values())
    rest = args.size - sum(quota.values())
    for name, pool in pools.items():
        quota[name] = min(len(pool), quota[name] + round(rest * len(pool) / total))
    rows, chunk_rows = [], {}
    for name, pool in sorted(pools.items()):
        for index, key, display, kind in sorted(rng.sample(pool, quota[name])):
            chunk_id = f"{name}:{index}"
            chunk_rows[chunk_id] = {"document": name, "chunk_id": chunk_id, "text": docs[name][index]}
            rows.append(
                {
                    "row": f"round{args.round}",
                    "document": name,
                    "chunk_id": chunk_id,
                    "name": display,
                    "key": key,
                    "extracted_type": kind,
                }
            )
    suffix = f"round{args.round}.jsonl"
    (out / f"chunks_{suffix}").write_text("".join(json.dumps(r) + "\n" for r in chunk_rows.values()))
    (out / f"candidates_{suffix}").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} mentions drawn from {len(chunk_rows)} chunks")


if __name__ == "__main__":
    main()
