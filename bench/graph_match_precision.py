"""Precision of graph entity matching: which entities a question names, before vs after issue 27.

    python bench/graph_match_precision.py [--questions tests/fixtures/graph_match_questions.jsonl]
                                          [--cache /tmp/graph-match-cache] [--folds 5]

Two graphs are built the way the graph index build builds them, minus the store: the documents of
`data/docs` (parsed and chunked by `LocalParser` as ingest does) and A Christmas Carol, each run through
the offline extractor (`LocalExtractor`) and merged (`merge_extractions`). Entity names are embedded by
the configured dense model, as the build does. The parsed chunks, merged entities and name vectors are
cached under `--cache` (delete it after changing the extractor or the merge).

Each labelled question (written before any tuning; `expected` = the entities the question names) goes
through `match_entities` with the rule-parsed intent entities, as local search calls it, twice in the
same process: with `LEGACY_PRECISION` (the matching before issue 27) and with the shipped defaults. A
matched entity is correct when an expected name is its key or one of its aliases. Printed: micro
precision, recall over the expected names the graph has, mean matched count, and the ratios; then the
shipped precision settings scored by k-fold over questions (each fold's setting picked on the others
from a small grid, scored on the held-out questions) so the defaults are not judged only in sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from librarian.graph.extract.local import LocalExtractor, load_model  # noqa: E402
from librarian.graph.merge import merge_extractions  # noqa: E402
from librarian.graph.model import ChunkRef, normalize_name  # noqa: E402
from librarian.graph.query.match import (  # noqa: E402
    DEFAULT_PRECISION,
    LEGACY_PRECISION,
    EntityRef,
    MatchPrecision,
    match_entities,
)
from librarian.graph.query.parse import parse_rules  # noqa: E402

SHARED = Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared"))
QUESTIONS = REPO / "tests" / "fixtures" / "graph_match_questions.jsonl"
SUFFIXES = {".pdf", ".docx", ".html", ".md"}


@dataclass
class Graph:
    refs: list[EntityRef]
    names: dict[str, set[str]]  # key → {key, *aliases}
    vectors: np.ndarray


def parsed_chunks(corpus: str, cache: Path) -> list[tuple[str, list[str]]]:
    """(document path, chunk texts) per document of `corpus`, parsed once and cached."""
    target = cache / f"{corpus}-chunks.json"
    if target.exists():
        return [tuple(x) for x in json.loads(target.read_text())]  # type: ignore[misc]
    from librarian.parsing.local import LocalParser

    parser = LocalParser()
    if corpus == "carol":
        files = [(SHARED / "data" / "christmas-carol" / "body_only.txt", "carol.md")]
    else:
        root = SHARED / "data" / "docs"
        files = [(p, p.name) for p in sorted(root.rglob("*")) if p.suffix.lower() in SUFFIXES]
    out = []
    for path, name in files:
        result = parser.parse(path.read_bytes(), name, "")
        out.append((str(path.name), [c["content"] for c in result["chunks"]]))
        print(f"  parsed {path.name}: {len(out[-1][1])} chunks", flush=True)
    target.write_text(json.dumps(out))
    return out


def build_graph(corpus: str, cache: Path, embed: Any) -> Graph:
    """Extract, merge and embed `corpus` (cached): what a published graph's snapshot holds."""
    target = cache / f"{corpus}-entities.json"
    if not target.exists():
        extractor = LocalExtractor(load_model())
        payloads = []
        for path, texts in parsed_chunks(corpus, cache):
            chunks = [ChunkRef(f"{path}:{i}", path, i, 1, None, t) for i, t in enumerate(texts)]
            payloads.append((path, extractor.extract(chunks)))
        merged = merge_extractions(payloads)
        rows = [{"name": e.name, "display": e.display_name, "aliases": e.aliases} for e in merged.entities]
        target.write_text(json.dumps(rows))
        np.save(
            cache / f"{corpus}-vectors.npy", np.asarray(embed([r["display"] for r in rows]), dtype=np.float32)
        )
    rows = json.loads(target.read_text())
    refs = [
        EntityRef(r["name"], r["display"], tuple(dict.fromkeys([r["name"], *r["aliases"]]))) for r in rows
    ]
    vectors = np.load(cache / f"{corpus}-vectors.npy")
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return Graph(refs, {r["name"]: {r["name"], *r["aliases"]} for r in rows}, vectors)


@dataclass
class Score:
    correct: int = 0
    matched: int = 0
    found: int = 0
    expected: int = 0
    questions: int = 0

    def add(self, other: Score) -> None:
        for name in ("correct", "matched", "found", "expected", "questions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def precision(self) -> float:
        return self.correct / self.matched if self.matched else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0

    @property
    def mean_matched(self) -> float:
        return self.matched / self.questions if self.questions else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score_question(row: dict[str, Any], graph: Graph, qvec: np.ndarray, precision: MatchPrecision) -> Score:
    expected = {normalize_name(n) for n in row["expected"]}
    present = {n for n in expected if any(n in names for names in graph.names.values())}
    matched = match_entities(
        row["question"],
        graph.refs,
        query_vector=qvec,
        name_vectors=graph.vectors,
        intent_entities=parse_rules(row["question"]).entities,
        precision=precision,
    )
    hit = [m for m in matched if graph.names[m.id] & expected]
    found = {n for m in hit for n in graph.names[m.id] & present}
    return Score(len(hit), len(matched), len(found), len(present), 1)


def evaluate(
    rows: list[dict[str, Any]],
    graphs: dict[str, Graph],
    qvecs: list[np.ndarray],
    p: MatchPrecision,
    memo: dict[tuple[str, MatchPrecision], Score] | None = None,
) -> Score:
    """Summed scores of `rows` under `p` (`memo`: per question and setting, the k-fold reuses them)."""
    memo = {} if memo is None else memo
    total = Score()
    for row, qvec in zip(rows, qvecs, strict=True):
        key = (row["question"], p)
        if key not in memo:
            memo[key] = score_question(row, graphs[row["corpus"]], qvec, p)
        total.add(memo[key])
    return total


GRID = [
    replace(DEFAULT_PRECISION, limit=limit, fuzzy_min_coverage=cov, semantic_threshold=sem)
    for limit, cov, sem in itertools.product((4, 6, 8), (0.5, 0.67, 1.0), (0.7, 0.8, 0.85, 0.9))
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/graph-match-cache"))
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    from librarian.settings import load_settings
    from librarian.stack import Stack

    dense = Stack(load_settings()).dense
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    graphs = {
        c: build_graph(c, args.cache, dense.embed_documents) for c in sorted({r["corpus"] for r in rows})
    }
    for corpus, graph in graphs.items():
        print(f"{corpus}: {len(graph.refs)} entities")
    qvecs = [np.asarray(dense.embed_query(r["question"]), dtype=np.float32) for r in rows]

    before = evaluate(rows, graphs, qvecs, LEGACY_PRECISION)
    after = evaluate(rows, graphs, qvecs, DEFAULT_PRECISION)
    print(f"\n{len(rows)} questions, {before.expected} expected names present in the graphs")
    print(f"{'':10} {'precision':>9} {'recall':>7} {'matched/q':>9}")
    for label, s in (("before", before), ("after", after)):
        print(f"{label:10} {s.precision:9.3f} {s.recall:7.3f} {s.mean_matched:9.2f}")
    print(
        f"{'after/bef':10} {after.precision / max(before.precision, 1e-9):9.2f} "
        f"{after.recall / max(before.recall, 1e-9):7.2f} "
        f"{after.mean_matched / max(before.mean_matched, 1e-9):9.2f}"
    )
    for row, qvec in zip(rows, qvecs, strict=True):
        graph = graphs[row["corpus"]]
        shown = match_entities(
            row["question"],
            graph.refs,
            query_vector=qvec,
            name_vectors=graph.vectors,
            intent_entities=parse_rules(row["question"]).entities,
        )
        print(f"  {row['question'][:60]:60} → {[m.name for m in shown]}")

    # k-fold over questions: is the shipped setting what held-out questions would pick?
    folds = [rows[i :: args.folds] for i in range(args.folds)]
    vec_folds = [qvecs[i :: args.folds] for i in range(args.folds)]
    held = Score()
    shipped = Score()
    memo: dict[tuple[str, MatchPrecision], Score] = {}
    for i in range(args.folds):
        train_rows = [r for j, f in enumerate(folds) if j != i for r in f]
        train_vecs = [v for j, f in enumerate(vec_folds) if j != i for v in f]
        best = max(GRID, key=lambda p: evaluate(train_rows, graphs, train_vecs, p, memo).f1)
        held.add(evaluate(folds[i], graphs, vec_folds[i], best))
        shipped.add(evaluate(folds[i], graphs, vec_folds[i], DEFAULT_PRECISION))
        print(
            f"fold {i}: picked limit={best.limit} coverage={best.fuzzy_min_coverage} "
            f"semantic={best.semantic_threshold}"
        )
    print(
        f"{args.folds}-fold held-out (grid pick): precision {held.precision:.3f} recall {held.recall:.3f} "
        f"matched/q {held.mean_matched:.2f}"
    )
    print(
        f"{args.folds}-fold held-out (shipped):   precision {shipped.precision:.3f} "
        f"recall {shipped.recall:.3f}"
    )


if __name__ == "__main__":
    main()
