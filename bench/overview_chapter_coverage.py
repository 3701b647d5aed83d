"""How many chapters of a manual the offline overview answer covers, and how many quotes hold.

Builds the manual alone into a fresh data directory (embedded stack), asks "What are the main topics
of this library?" in global mode and counts chapters as `graphrag_quality.chapter_covered` does.

    .venv/bin/python bench/overview_chapter_coverage.py /work/shared/data/docs/pdf/fhs-3.0.pdf
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.graphrag_quality import (
    GLOBAL_QUESTION,
    chapter_covered,
    manual_text,
    read_toc_chapters,
    source_headings,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manual", type=Path)
    args = parser.parse_args()
    if not args.manual.is_file():
        parser.error(f"{args.manual} is not a file")
    from langgraph.checkpoint.memory import InMemorySaver

    from librarian.settings import load_settings
    from librarian.stack import Stack
    from services.ask import answer_with_mode
    from services.documents import DocumentService
    from services.graph_index_service import GraphIndexService

    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(load_settings(data_dir=Path(tmp) / "data"))
        docs, graphs = DocumentService(stack, InMemorySaver()), GraphIndexService(stack, InMemorySaver())
        docs.ingest("manual", docs.upload("manual", args.manual.name, args.manual.read_bytes()))
        graphs.build("manual")
        result = asyncio.run(answer_with_mode(stack, "manual", GLOBAL_QUESTION, "global"))
    chapters = read_toc_chapters(manual_text(args.manual))
    citations = result["details"]["citations"]
    cited_ids = {i for c in citations for i in c.get("source_ids", [])}
    headings = source_headings([s for s in result["sources"] if s.get("id") in cited_ids])
    covered = [n for n, title in chapters if chapter_covered(n, title, result["answer"], headings)]
    print(result["answer"])
    supported = sum(bool(c["supported"]) for c in citations)
    print(
        f"chapters covered: {len(covered)}/{len(chapters)} {covered}; "
        f"quotes supported {supported}/{len(citations)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
