"""A delete's receipt for a real document, after a real graph build (the note of issue 30 §1).

    python bench/delete_receipt_demo.py [--docs /work/shared/data/docs] [--delete multi_page.pdf]

In a fresh data directory (embedded, offline stack): ingest three documents of the shared example set,
build the organization's graph, render page 1 of the PDF into the page cache (as the page route does),
probe every channel with the document in place (each must find it, or the probes prove nothing), then
delete it with `DocumentService.delete_with_receipt` and print the receipt as JSON, with the time the
delete and its receipt took. Last, the build the receipt names as pending is run, and the document's
graph places are counted again (all must be 0). Nothing is faked: every count is read from the stores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ORG = "receipt-demo"
FILES = ("md/docling-docs/concepts_chunking.md", "docx/word_sample.docx", "pdf/docling/multi_page.pdf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=Path("/work/shared/data/docs"))
    parser.add_argument("--delete", default="multi_page.pdf", help="the file name to delete")
    args = parser.parse_args()

    from langgraph.checkpoint.memory import InMemorySaver

    from librarian.page_cache import page_cache
    from librarian.receipts.counting import GRAPH, measure
    from librarian.settings import load_settings
    from librarian.stack import Stack
    from services.documents import DocumentService
    from services.graph_index_service import GraphIndexService
    from services.receipt_probes import probe_all
    from webapi.page_render import render_page_png

    with tempfile.TemporaryDirectory(prefix="receipt-demo-") as tmp:
        stack = Stack(load_settings(data_dir=Path(tmp) / "data"))
        checkpointer = InMemorySaver()
        documents = DocumentService(stack, checkpointer)
        for relative in FILES:
            file = args.docs / relative
            path = documents.upload(ORG, file.name, file.read_bytes())
            print(f"ingested {path}: {documents.ingest(ORG, path).status}", file=sys.stderr)
        report = GraphIndexService(stack, checkpointer).build(ORG)
        print(f"graph build: version {report.get('version')}", file=sys.stderr)
        target = f"docs/{args.delete}"
        if target.endswith(".pdf"):
            stored = stack.files.stat(ORG, target)
            assert stored is not None
            png = render_page_png(stack.files.read(ORG, target), 1, 800).png
            name = f"page-1-w800-{stored.size}-{int(stored.modified.timestamp() * 1_000_000)}.png"
            page_cache(stack).put(ORG, target, name, png)
        baseline = asyncio.run(probe_all(stack, ORG, target, measure(stack, ORG, target).texts))
        found = [p.channel for p in baseline if p.found]
        print(f"before the delete, found by {len(found)}/{len(baseline)} channels: {found}", file=sys.stderr)
        started = time.perf_counter()
        status, receipt = documents.delete_with_receipt(ORG, target)
        elapsed = time.perf_counter() - started
        print(f"{status.path}: {status.status}; delete + receipt took {elapsed:.1f} s", file=sys.stderr)
        print(json.dumps(receipt.as_dict(), indent=2, ensure_ascii=False))
        report = GraphIndexService(stack, checkpointer).build(ORG)
        left = {k: v for k, v in measure(stack, ORG, target).counts.items() if k in GRAPH}
        print(f"after the named build (version {report.get('version')}): {left}", file=sys.stderr)
    return 0 if receipt.verified else 1


if __name__ == "__main__":
    raise SystemExit(main())
