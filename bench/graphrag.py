"""GraphRAG retrieval benchmarks: local multi-hop recall and latency, global answers on a novel.

    python bench/graphrag.py local  [--data DIR] [--limit-queries N] [--reuse-index]
    python bench/graphrag.py global [--book FILE] [--reuse-index]

Everything runs through what users run: documents are uploaded and ingested by `DocumentService`
(parse, chunk, embed, upsert), the graph is built by the graph index build (`GraphIndexService`,
offline extractor and summarizer), and questions go through `librarian.graph.query.local_search.local_search`,
`tools.graph_tools.run_global` and, as the baseline in the same process, `librarian.retrieval.search.search`
(the `search_documents` path, same reranker).

local (HotpotQA dev150, BEIR files + qa.jsonl; each paragraph one document, "title\\n\\ntext"):
  joint recall@5  = share of questions with BOTH supporting paragraphs among the top 5 distinct
                    documents of the evidence sources;
  single recall@5 = share of supporting paragraphs (2 per question) found there;
  recall@2, recall@5 = the HippoRAG protocol (HippoRAG, HippoRAG 2 and the vendors comparing with them):
                    mean over questions of |supporting in top k distinct documents| / |supporting|,
                    on the pooled corpus (all questions' paragraphs, supporting and distractors, in one
                    organization), `librarian.evaluation.metrics.mean_recall_at`;
  printed for plain search and graph local, with graph/search ratios; local query p50/p90 latency
  warm (the first query, which loads the graph snapshot and models, is reported apart).
  Nothing is tuned on this set: it is a development set, and all sizes are the reference's.

global (A Christmas Carol, one document): 10 overview questions written for this benchmark (below),
  offline map/reduce; per question: status, map batches, the largest batch's prompt tokens against
  the budget, latency, communities read / cited, and whether every cited community reaches a real
  chunk (its quoted or first claims' chunks resolve through the store to path/page text).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from contextlib import contextmanager  # noqa: E402

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from evals.corpus import ORG as EVAL_ORG  # noqa: E402
from evals.corpus import ingested  # noqa: E402
from librarian.evaluation.data import Beir, doc_id_from_path, load_beir  # noqa: E402
from librarian.evaluation.metrics import mean_recall_at  # noqa: E402
from librarian.graph.query.global_citations import cited_community_ids  # noqa: E402
from librarian.graph.query.global_inputs import load_communities  # noqa: E402
from librarian.graph.query.global_search import GlobalOptions  # noqa: E402
from librarian.graph.query.local_search import local_search  # noqa: E402
from librarian.graph.query.runs import run_global  # noqa: E402
from librarian.retrieval.rerankers import make_reranker  # noqa: E402
from librarian.retrieval.search import SearchOptions, search  # noqa: E402
from librarian.settings import load_settings  # noqa: E402
from librarian.stack import Stack  # noqa: E402
from services.graph_index_service import GraphIndexService  # noqa: E402

HOTPOT = REPO.parent / "shared" / "data" / "hotpotqa-dev150"
BOOK = REPO.parent / "shared" / "data" / "christmas-carol" / "body_only.txt"
GLOBAL_QUESTIONS = [
    "What are the main themes of the story?",
    "How does Scrooge change over the course of the story?",
    "What do the three spirits show Scrooge?",
    "How is poverty portrayed across the book?",
    "What role does family play in the story?",
    "How do other characters see Scrooge at the beginning and at the end?",
    "What is the overall message about generosity and greed?",
    "How is Christmas celebrated by the different households in the book?",
    "What does the story say about memory and the past?",
    "Give an overview of the Cratchit family's situation throughout the story.",
]


@contextmanager
def corpus_stack(data: Beir, args: argparse.Namespace):
    """The ingested corpus: `evals.corpus.ingested`, or an already ingested `--data-dir`."""
    if args.data_dir is not None:
        yield Stack(load_settings().model_copy(update={"data_dir": args.data_dir}))
        return
    args.org = EVAL_ORG  # `ingested` puts the corpus in this organization
    with ingested(data, load_settings(), reuse=args.reuse_index) as stack:
        yield stack


def build_graph(stack: Stack, org: str) -> dict:
    """Build (or reuse, when the data directory already holds a published graph) the graph of `org`."""
    published = stack.graph_store.scope(org).published_version()
    if published is not None:
        print(f"reusing graph version {published.version}: {published.entities} entities")
        return {"reused": True}
    saver = SqliteSaver(
        sqlite3.connect(stack.settings.data_dir / "graph-checkpoints.sqlite", check_same_thread=False)
    )
    started = time.perf_counter()
    report = GraphIndexService(stack, saver).build(org)
    seconds = time.perf_counter() - started
    published = stack.graph_store.scope(org).published_version()
    if published is None:
        raise SystemExit(f"the graph build did not publish: {json.dumps(report)[:800]}")
    print(
        f"built graph in {seconds:.0f} s: {published.entities} entities, {published.edges} edges, "
        f"{published.claims} claims, communities per level {published.communities_per_level}"
    )
    return report


def top_documents(sources: list[dict], k: int = 5) -> list[str]:
    """The first k distinct documents of a source list (a document ranks at its best chunk)."""
    return list(dict.fromkeys(doc_id_from_path(s["path"]) for s in sources))[:k]


def load_qa(folder: Path, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in (folder / "qa.jsonl").read_text().splitlines() if line.strip()]
    return rows[:limit] if limit else rows


async def local_bench(args: argparse.Namespace) -> None:
    data = load_beir(args.data, "dev")
    qa = load_qa(args.data, args.limit_queries)
    with corpus_stack(data, args) as stack:
        build_graph(stack, args.org)
        reranker = make_reranker(stack)
        plain_joint, plain_single, graph_joint, graph_single, latencies = [], [], [], [], []
        rankings: dict[str, dict[str, list[str]]] = {"search_documents": {}, "graph local": {}}
        qrels = {row["id"]: dict.fromkeys(row["supporting_doc_ids"], 1) for row in qa}
        first_ms = None
        for i, row in enumerate(qa):
            gold = set(row["supporting_doc_ids"])
            top5 = SearchOptions.from_settings(stack, top_k=5)
            plain = search(stack, args.org, row["question"], top5, reranker)
            started = time.perf_counter()
            local = await local_search(stack, args.org, row["question"], reranker=reranker)
            elapsed = 1000 * (time.perf_counter() - started)
            if i == 0:
                first_ms = elapsed
            else:
                latencies.append(elapsed)
            rankings["search_documents"][row["id"]] = top_documents(plain["sources"])
            rankings["graph local"][row["id"]] = top_documents(local["sources"])
            for docs, joint, single in (
                (rankings["search_documents"][row["id"]], plain_joint, plain_single),
                (rankings["graph local"][row["id"]], graph_joint, graph_single),
            ):
                found = gold & set(docs)
                joint.append(float(found == gold))
                single.append(len(found) / len(gold))
        n = len(qa)
        pj, ps = statistics.fmean(plain_joint), statistics.fmean(plain_single)
        gj, gs = statistics.fmean(graph_joint), statistics.fmean(graph_single)
        print(f"\nHotpotQA dev150, {n} questions, top 5 distinct documents")
        print(f"{'':24}{'joint R@5':>10}{'single R@5':>12}")
        print(f"{'search_documents':24}{pj:>10.3f}{ps:>12.3f}")
        print(f"{'graph local':24}{gj:>10.3f}{gs:>12.3f}")
        print(f"{'graph - search':24}{gj - pj:>+10.3f}{gs - ps:>+12.3f}")
        joint_ratio, single_ratio = (gj / pj if pj else float("nan")), (gs / ps if ps else float("nan"))
        print(f"{'graph / search':24}{joint_ratio:>10.2f}{single_ratio:>12.2f}")
        print(f"\nHippoRAG protocol, pooled corpus of {len(data.corpus)} paragraphs, {n} questions")
        print(f"{'':24}{'recall@2':>10}{'recall@5':>12}")
        for name, ranked in rankings.items():
            at2, at5 = (mean_recall_at(ranked, qrels, k) for k in (2, 5))
            print(f"{name:24}{at2:>10.3f}{at5:>12.3f}")
        if latencies:
            q = statistics.quantiles(latencies, n=10) if len(latencies) > 1 else latencies * 9
            print(
                f"local latency: first {first_ms:.0f} ms (loads the graph), warm p50 "
                f"{statistics.median(latencies):.0f} ms, p90 {q[8]:.0f} ms over {len(latencies)} queries"
            )


async def global_bench(args: argparse.Namespace) -> None:
    text = args.book.read_text(encoding="utf-8-sig")
    data = Beir({"christmas-carol": text}, {}, {})
    with corpus_stack(data, args) as stack:
        build_graph(stack, args.org)
        graph = stack.graph_store.scope(args.org)
        published = graph.published_version()
        options = GlobalOptions()
        budget = options.map_budget - options.map_reserve
        rows, latencies = [], []
        for question in GLOBAL_QUESTIONS:
            started = time.perf_counter()
            result = await run_global(stack, args.org, question, options=options)
            seconds = time.perf_counter() - started
            latencies.append(seconds)
            inputs = load_communities(graph, published, options.level)
            answer_communities = result["citedCommunities"]
            cited = cited_community_ids(result["answer"])
            # sources hold only chunks the store resolved (live documents): chunk id -> communities citing it
            reached = {c for ids in result.get("sourceCommunities", {}).values() for c in ids}
            grounded = all(c in reached for c in cited)
            biggest = max((b["tokens"] for b in result["batches"]), default=0)
            rows.append(
                (
                    question,
                    result["status"],
                    len(result["batches"]),
                    biggest,
                    seconds,
                    len(inputs),
                    len(answer_communities),
                    len(cited),
                    grounded,
                )
            )
        print(f"\nA Christmas Carol: global search offline, map budget {budget} tokens per batch prompt")
        head = f"{'status':10}{'batches':>8}{'max tok':>8}{'sec':>7}{'read':>6}{'mapped':>7}{'cited':>6}"
        print(f"{head}  grounded  question")
        for q, status, batches, biggest, seconds, read, mapped, cited, grounded in rows:
            cells = f"{status:10}{batches:>8}{biggest:>8}{seconds:>7.2f}{read:>6}{mapped:>7}{cited:>6}"
            print(f"{cells}  {grounded!s:8}  {q}")
        over = [r for r in rows if r[3] > budget]
        print(
            f"latency p50 {statistics.median(latencies):.2f} s (first {latencies[0]:.2f} s, warm p50 "
            f"{statistics.median(latencies[1:]):.2f} s); batches over budget: {len(over)}; "
            f"answers with every citation grounded: {sum(r[8] for r in rows)}/{len(rows)}"
        )
        sample = await run_global(stack, args.org, GLOBAL_QUESTIONS[1], options=options)
        print("\nsample answer:", GLOBAL_QUESTIONS[1], "\n" + sample["answer"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["local", "global"])
    parser.add_argument("--data", type=Path, default=HOTPOT)
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--reuse-index", action="store_true", help="keep/reuse the ingested data under /tmp")
    parser.add_argument("--data-dir", type=Path, default=None, help="an already ingested data directory")
    parser.add_argument("--org", default=EVAL_ORG, help="its organization (with --data-dir)")
    args = parser.parse_args(argv)
    asyncio.run(local_bench(args) if args.part == "local" else global_bench(args))


if __name__ == "__main__":
    main()
