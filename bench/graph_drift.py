"""DRIFT search against local and global search on one real document, offline, in one process.

    python bench/graph_drift.py [--book FILE] [--data-dir DIR] [--reuse-index]

The document (default: A Christmas Carol) is ingested and its graph built offline exactly as users do
(`bench/graphrag.py`'s `corpus_stack` / `build_graph`); then each "reach" question below (broad, about
one named thing: the questions DRIFT is for) is asked in local, global and DRIFT mode through
`librarian.graph.query.runs`. Per mode: status, latency (warm: every mode's first question is
reported apart), sources, answer length, and the share of quoted sentences that are found verbatim
in the source they cite (a DRIFT or local quote must be; a global one may quote a community report).
DRIFT's latency is printed as a ratio to local search's, measured in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.graphrag import BOOK, build_graph, corpus_stack  # noqa: E402
from librarian.answers.modes import local_answer  # noqa: E402
from librarian.evaluation.data import Beir  # noqa: E402
from librarian.graph.query.drift_search import DriftOptions  # noqa: E402
from librarian.graph.query.global_search import GlobalSearchError  # noqa: E402
from librarian.graph.query.runs import run_drift, run_global, run_local  # noqa: E402

REACH_QUESTIONS = [
    "How does Scrooge affect the Cratchit family?",
    "What role does Marley play in the rest of the story?",
    "How does Fezziwig influence the young Scrooge?",
    "How does Tiny Tim affect Scrooge and the rest of the story?",
    "What impact does Fred have on Scrooge?",
    "How does the Ghost of Christmas Yet to Come shape the story's ending?",
]
QUOTE = re.compile(r'"([^"]{20,})"\s*((?:\[\d+\])+)')


def verbatim_share(answer: str, sources: list[dict]) -> tuple[int, int]:
    """(quotes found verbatim in a source they cite, quotes citing a source)."""
    found = total = 0
    for text, markers in QUOTE.findall(answer):
        cited = [int(n) for n in re.findall(r"\d+", markers) if 1 <= int(n) <= len(sources)]
        if not cited:
            continue
        total += 1
        squashed = " ".join(text.split())
        found += any(squashed in " ".join(sources[n - 1]["text"].split()) for n in cited)
    return found, total


async def ask(stack, org: str, mode: str, question: str) -> dict:
    started = time.perf_counter()
    if mode == "local":
        result = await run_local(stack, org, question)
        answer = (await local_answer(stack, question, result, None)).text
    elif mode == "global":
        try:
            result = await run_global(stack, org, question)
            answer = result["answer"]
        except GlobalSearchError:
            result, answer = {"status": "failed", "sources": []}, ""
    else:
        result = await run_drift(stack, org, question, options=DriftOptions.from_settings(stack.settings))
        answer = result["answer"]
    seconds = time.perf_counter() - started
    found, total = verbatim_share(answer, result["sources"])
    return {
        "status": result["status"],
        "seconds": seconds,
        "sources": len(result["sources"]),
        "chars": len(answer),
        "verbatim": (found, total),
        "steps": len(result.get("followUps") or []),
    }


async def main(args: argparse.Namespace) -> None:
    text = args.book.read_text(encoding="utf-8-sig")
    data = Beir({args.book.stem: text}, {}, {})
    with corpus_stack(data, args) as stack:
        build_graph(stack, args.org)
        rows: dict[str, list[dict]] = {"local": [], "global": [], "drift": []}
        for question in REACH_QUESTIONS:
            for mode in rows:
                rows[mode].append(await ask(stack, args.org, mode, question))
        print(f"\n{args.book.name}: {len(REACH_QUESTIONS)} reach questions, offline, per mode")
        head = f"{'mode':8}{'completed':>10}{'first s':>9}{'warm p50 s':>11}{'sources':>8}{'chars':>7}"
        print(f"{head}  verbatim")
        for mode, found in rows.items():
            done = sum(r["status"] in ("completed", "partial") for r in found)
            warm = statistics.median(r["seconds"] for r in found[1:])
            verbatim = sum(r["verbatim"][0] for r in found), sum(r["verbatim"][1] for r in found)
            sources = statistics.median(r["sources"] for r in found)
            chars = statistics.median(r["chars"] for r in found)
            print(
                f"{mode:8}{done:>7}/{len(found):<2}{found[0]['seconds']:>9.2f}{warm:>11.2f}{sources:>8.0f}"
                f"{chars:>7.0f}  {verbatim[0]}/{verbatim[1]}"
            )
        local_warm = statistics.median(r["seconds"] for r in rows["local"][1:])
        drift_warm = statistics.median(r["seconds"] for r in rows["drift"][1:])
        steps = statistics.median(r["steps"] for r in rows["drift"])
        print(
            f"DRIFT warm p50 / local warm p50 = {drift_warm / local_warm:.1f}x "
            f"(median {steps:.0f} local follow-ups per DRIFT question)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--org", default="bench")
    parser.add_argument("--reuse-index", action="store_true")
    asyncio.run(main(parser.parse_args()))
