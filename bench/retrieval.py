"""Retrieval quality on a BEIR folder: a thin wrapper over `librarian eval retrieval` (librarian_cli/eval.py).

    python bench/retrieval.py --data DIR [--split train] [--folds 5] [--limit-docs N] [--reuse-index]

Prints nDCG@10, Recall@100 and MRR@10 for the configured pipeline and its baselines (dense only,
sparse only, hybrid, hybrid + local rerank, bm25s), and k-fold-by-query figures for everything
fitted (alpha, the local reranker's weights). See evals/retrieval.py for what each row measures.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from librarian_cli.eval import main

if __name__ == "__main__":
    raise SystemExit(main(["retrieval", *sys.argv[1:]]))
