"""The `librarian eval` command line: `retrieval` on a BEIR folder, `answers` on a QA file.

    librarian eval retrieval --data DIR [--split test] [--folds 5] [--no-rerank] [--json] [--html FILE]
    librarian eval answers --qa FILE [--data DIR] [--graph] [--json] [--html FILE]
    librarian eval gate --org ORG [--questions FILE] [--accept]   # librarian_cli/eval_gate.py
    librarian eval leaks --url URL [--secret S] [--json]        # librarian_cli/eval_leaks.py
    python -m librarian_cli.eval retrieval ...       # the same without the `librarian` entry point

Only argparse is imported until a command runs, so adding these subcommands costs the CLI nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """`retrieval` and `answers` under `parser` (the `eval` subcommand or a standalone program)."""
    sub = parser.add_subparsers(dest="eval_command", required=True)
    retrieval = sub.add_parser("retrieval", help="nDCG@10, Recall@100, MRR@10 on a BEIR folder")
    retrieval.add_argument(
        "--data", type=Path, required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/"
    )
    retrieval.add_argument("--split", default="test", help="qrels/SPLIT.tsv (default: test)")
    retrieval.add_argument("--folds", type=int, default=5, help="k of the k-fold by query (default: 5)")
    retrieval.add_argument("--no-rerank", action="store_true", help="skip the hybrid + local rerank baseline")
    retrieval.add_argument("--limit-queries", type=int, default=None)
    retrieval.add_argument(
        "--limit-docs", type=int, default=None, help="keep the judged documents plus random others up to N"
    )
    answers = sub.add_parser(
        "answers", help="answer EM/F1, supporting sources cited, citation precision/recall"
    )
    answers.add_argument(
        "--qa", type=Path, required=True, help="JSONL {question, answers, supporting_doc_ids}"
    )
    answers.add_argument(
        "--data", type=Path, default=None, help="BEIR folder of the corpus (default: the QA file's)"
    )
    answers.add_argument("--limit", type=int, default=None, help="answer only the first N questions")
    answers.add_argument(
        "--graph",
        action="store_true",
        help="build the corpus's GraphRAG index first, so the agent may answer from the graph "
        "(as it does for an organization that has one); default: search only",
    )
    from librarian_cli.eval_gate import add_gate_command  # `gate`: an organization's regression gate

    add_gate_command(sub)
    from librarian_cli.eval_leaks import add_leaks_command  # `leaks`: the cross-tenant leak audit

    add_leaks_command(sub)
    for p in (retrieval, answers):
        p.add_argument(
            "--reuse-index", action="store_true", help="keep/reuse the ingested corpus under the temp dir"
        )
        p.add_argument("--json", action="store_true", help="print the report as JSON")
        p.add_argument("--html", type=Path, default=None, help="also write a self-contained HTML report here")


def add_eval_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Register `eval` on the `librarian` command's subparsers; dispatch with `run_eval(args)`."""
    parser = subparsers.add_parser("eval", help="measure retrieval and answers on your own judged data")
    add_eval_arguments(parser)
    return parser


def run_eval(args: argparse.Namespace) -> int:
    """Run the chosen evaluation and print its report; 2 on unreadable data (message, no traceback)."""
    if args.eval_command == "gate":
        from librarian_cli.eval_gate import run_gate_command

        return run_gate_command(args)
    if args.eval_command == "leaks":
        from librarian_cli.eval_leaks import run_leaks_command

        return run_leaks_command(args)
    from evals.answers import evaluate_answers
    from evals.corpus import ingested
    from evals.retrieval import evaluate_retrieval
    from librarian.evaluation.data import EvalDataError, load_beir, load_qa
    from librarian.evaluation.report import to_html, to_json, to_text
    from librarian.settings import load_settings

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    settings = load_settings()
    try:
        if args.eval_command == "retrieval":
            data = load_beir(
                args.data, args.split, limit_queries=args.limit_queries, limit_docs=args.limit_docs
            )
            with ingested(data, settings, reuse=args.reuse_index, progress=progress) as stack:
                report = evaluate_retrieval(
                    stack, data, folds=args.folds, rerank=not args.no_rerank, progress=progress
                )
        else:
            items = load_qa(args.qa)[: args.limit] if args.limit else load_qa(args.qa)
            folder = args.data or args.qa.parent
            split = next((p.stem for p in sorted((folder / "qrels").glob("*.tsv"))), "test")
            corpus = load_beir(folder, split)
            with ingested(corpus, settings, reuse=args.reuse_index, progress=progress) as stack:
                if args.graph:
                    build_graph(stack, progress)
                report = evaluate_answers(
                    stack, items, name=args.qa.name, progress=progress, graph_routing=args.graph
                )
    except EvalDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(to_json(report) if args.json else to_text(report))
    if args.html:
        args.html.write_text(to_html(report), encoding="utf-8")
        progress(f"wrote {args.html}")
    return 0


def build_graph(stack: Any, progress: Callable[[str], None]) -> None:
    """Build (or refresh) the evaluation organization's graph index, so answers may route to it."""
    from evals.corpus import ORG
    from librarian_cli.graph import graph_build

    started = time.perf_counter()
    report = graph_build(ORG, stack=stack)
    progress(
        f"graph index: {report.get('entities')} entities, communities per level "
        f"{report.get('communitiesPerLevel')}, in {time.perf_counter() - started:.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="librarian eval", description=__doc__.splitlines()[0])
    add_eval_arguments(parser)
    return run_eval(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
