"""Offline global answers quote the documents (issue 27), on the embedded stack: real ingest, spaCy,
Leiden, MiniLM and the real citation check.

The fast test builds a graph over a small manual whose table of contents has dot leaders and whose
reference section is a pipe table, so the debris the issue saw on the FHS is in the chunks. The slow
ones build the FHS 3.0 manual (the coverage goal: its chapters and sections, read from the HTML's
own headings) and all of `data/docs` (no theme with dot leaders or table rows).
"""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.graph.query.global_offline import OFFLINE_NOTICE
from services.ask import answer_with_mode
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService

ORG = "manuals"
OVERVIEW = "What are the main topics of this library?"
DEBRIS = re.compile(r"\.{5,}|\|")
QUOTE = re.compile(r'^- "(.*)" \[Community ID: [^\]]+\]((?:\[\d+\])+)$')

MANUAL = b"""# Port of Aldmouth Operations Manual

## Contents

1. Mooring at Aldmouth ........................ 2
2. Cargo at North Quay ......................... 4
3. Pilotage with the Aldmouth Pilot Service .... 6

## 1. Mooring at Aldmouth

Ingrid Sorensen assigns every vessel of the Kestrel Line a berth at Aldmouth before it enters the basin.
Ingrid Sorensen inspects the mooring lines of the Kestrel Line ferries at Aldmouth every four hours.
The Kestrel Line must double its mooring lines at Aldmouth when the Met Office forecasts gales.

## 2. Cargo at North Quay

Container cranes at North Quay lift cargo from Baltic Freight vessels onto the Aldmouth stacking yard.
Baltic Freight must declare dangerous cargo to Ingrid Sorensen two days before arriving at North Quay.
The Aldmouth stacking yard keeps refrigerated Baltic Freight containers on shore power at North Quay.

| Quay | Cranes | Depth |
| --- | --- | --- |
| North Quay | 6 | 14 m |
| South Quay | 2 | 9 m |

## 3. Pilotage with the Aldmouth Pilot Service

The Aldmouth Pilot Service boards every Kestrel Line vessel longer than eighty metres at the Fairway Buoy.
Captain Tomas Reyes of the Aldmouth Pilot Service guides vessels between the breakwaters of Aldmouth.
Ingrid Sorensen dispatches Captain Tomas Reyes from the Aldmouth Pilot Service station on South Quay.
"""


def _services(stack: Any) -> tuple[DocumentService, GraphIndexService]:
    saver = InMemorySaver()
    return DocumentService(stack, saver), GraphIndexService(stack, saver)


def _build(stack: Any, files: dict[str, bytes]) -> None:
    docs, graphs = _services(stack)
    for name, data in files.items():
        assert docs.ingest(ORG, docs.upload(ORG, name, data)).status == "indexed", name
    assert graphs.build(ORG)["lastBuild"]["status"] == "published"


def _quotes(answer: str) -> list[tuple[str, list[int]]]:
    """(quoted sentence, its [n] markers) of each quote line of an offline global answer."""
    found = []
    for line in answer.splitlines()[1:]:
        match = QUOTE.match(line.strip())
        if match:
            found.append((match.group(1), [int(n) for n in re.findall(r"\d+", match.group(2))]))
    return found


def _words(text: str) -> str:
    return " ".join(re.sub(r"[`*]", "", text).split())


async def test_offline_global_answer_quotes_document_sentences_cited_to_their_chunks(stack: Any) -> None:
    _build(stack, {"harbour.md": MANUAL})
    communities = stack.graph_store.scope(ORG).communities()
    assert communities
    for community in communities:
        assert not DEBRIS.search(community.title + "\n" + community.summary), community.title
        assert "related entities" not in community.summary  # no synthetic lead line
        assert (
            not community.summary
            or community.summary.strip() in _words(MANUAL.decode())
            or all(_words(s) in _words(MANUAL.decode()) for s in re.split(r"(?<=\.) ", community.summary))
        )  # the summary is the manual's own sentences

    result = await answer_with_mode(stack, ORG, "What does the harbour manual say about vessels?", "global")
    assert result["status"] == "completed"
    answer = result["answer"]
    assert answer.startswith(OFFLINE_NOTICE)
    quotes = _quotes(answer)
    lines = [line for line in answer.splitlines()[1:] if line.strip()]
    assert quotes and len(quotes) == len(lines), answer  # every line is a cited quote
    sources = result["sources"]
    for sentence, markers in quotes:
        assert not DEBRIS.search(sentence)
        assert _words(sentence) in _words(MANUAL.decode())  # a sentence of the document, verbatim
        cited = [sources[n - 1] for n in markers]
        assert any(_words(sentence) in _words(s["text"]) for s in cited)  # ... in a chunk it cites
        assert all(s["path"] and s.get("page") for s in cited)
    records = [r for r in result["details"]["citations"] if r["markers"]]
    assert len(records) == len(quotes)
    assert all(r["supported"] and r["action"] == "kept" for r in records)


# --- slow: real manuals ----------------------------------------------------------------------------


def fhs_sections(path: Path) -> list[tuple[str, str, str]]:
    """(chapter, section, letters and digits of its text) per h1/h2 part of the FHS HTML, in order;
    text under a chapter heading before its first section counts as section "N"."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    out: list[tuple[str, str, str]] = []
    chapter = section = ""
    for part in re.split(r"(<h[12][^>]*>.*?</h[12]>)", raw, flags=re.S):
        heading = re.match(r"<h[12][^>]*>(.*?)</h[12]>", part, re.S)
        if heading:
            title = " ".join(html.unescape(re.sub(r"<[^>]+>", "", heading.group(1))).split())
            number = re.match(r"(?:Chapter\s+)?(\d+)\.(?:(\d+)\.)?", title)
            if number:
                chapter = number.group(1)
                section = f"{chapter}.{number.group(2)}" if number.group(2) else chapter
            continue
        out.append((chapter, section, _letters(html.unescape(re.sub(r"<[^>]+>", " ", part)))))
    return out


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


@pytest.fixture(scope="module")
def fhs_answer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The offline global answer to OVERVIEW over a graph of the FHS 3.0 HTML, with where each quote
    sits in the manual: {"result", "found": {quote: (chapter, section) or None}}."""
    from librarian.settings import load_settings
    from librarian.stack import Stack
    from tests.conftest import DOCS_DIR

    fhs = DOCS_DIR / "html" / "fhs-3.0.html"
    if not fhs.is_file():
        pytest.skip(f"{fhs} not found (set LIBRARIAN_SHARED_DIR)")
    sections = fhs_sections(fhs)
    assert len({c for c, _, _ in sections if c}) == 7  # fewer than the 8 chapters: count sections
    stack = Stack(load_settings(data_dir=tmp_path_factory.mktemp("fhs") / "data"))
    _build(stack, {"fhs-3.0.html": fhs.read_bytes()})
    result = asyncio.run(answer_with_mode(stack, ORG, OVERVIEW, "global"))
    found = {
        sentence: next(((c, s) for c, s, text in sections if _letters(sentence) in text), None)
        for sentence, _markers in _quotes(result["answer"])
    }
    chapters = {f[0] for f in found.values() if f}
    parts = {f[1] for f in found.values() if f}
    print(f"FHS overview: {len(found)} quotes, {len(chapters)}/7 chapters, {len(parts)} sections")
    return {"result": result, "found": found, "path": fhs, "stack": stack}


def quotable_chapters(stack: Any) -> set[int]:
    """Chapters of the built manual with at least one claim the offline map could quote: the most an
    overview built from claims can cover by quoting (`global_inputs.load_outlines` places them)."""
    from librarian.graph.query.global_inputs import load_communities, load_outlines
    from librarian.graph.query.global_offline import _quotable

    graph = stack.graph_store.scope(ORG)
    published = graph.published_version()
    inputs = load_communities(graph, published, None)
    outlines = load_outlines(graph, published.version, inputs)
    return {section[0] for (_, line), section in outlines.sections.items() if section and _quotable(line)}


@pytest.mark.slow
def test_fhs_overview_quotes_only_supported_sentences_of_the_manual(fhs_answer: dict[str, Any]) -> None:
    found = fhs_answer["found"]
    assert len(found) >= 6 and all(found.values()), found  # every quote is a sentence of the manual
    records = [r for r in fhs_answer["result"]["details"]["citations"] if r["markers"]]
    assert len(records) >= len(found)
    assert [r["sentence"] for r in records if not r["supported"]] == []


@pytest.mark.slow
def test_fhs_overview_covers_every_chapter_it_can_quote_with_supported_quotes(
    fhs_answer: dict[str, Any],
) -> None:
    """The issue's goal: the overview covers the manual's chapters (as `bench/graphrag_quality.py`
    counts them: `chapter_covered` over the manual's own table of contents), and every quoted
    sentence passes the citation check. Quotes are community claims, and the HTML's chapter 1 has
    none that reads as a sentence (its two are bullet lists run together), so the test asks for
    every chapter with a quotable claim and at least 6 of 7. Before slots went to distinct sections
    (`global_breadth`), strata gave one to the front matter and the manual missed a quotable chapter."""
    from bench.graphrag_quality import chapter_covered, manual_text, read_toc_chapters, source_headings

    result = fhs_answer["result"]
    chapters = read_toc_chapters(manual_text(fhs_answer["path"]))
    assert len(chapters) == 7
    citations = result["details"]["citations"]
    cited_ids = {i for c in citations for i in c.get("source_ids", [])}
    headings = source_headings([s for s in result["sources"] if s.get("id") in cited_ids])
    covered = {n for n, title in chapters if chapter_covered(n, title, result["answer"], headings)}
    quotable = quotable_chapters(fhs_answer["stack"]) & {n for n, _ in chapters}
    assert len(quotable) >= 6, quotable
    assert quotable <= covered and len(covered) >= 6, (covered, quotable)
    assert citations and all(c["supported"] for c in citations), citations


@pytest.mark.slow
def test_no_theme_of_all_example_documents_has_dot_leaders_or_table_rows(stack: Any, docs_dir: Path) -> None:
    files = {
        str(p.relative_to(docs_dir)).replace("/", "__"): p.read_bytes()
        for p in sorted(docs_dir.rglob("*"))
        if p.is_file() and p.suffix != ".txt" and p.name != "README.md" and "scanned" not in p.name
    }
    _build(stack, files)
    communities = stack.graph_store.scope(ORG).communities()
    assert len(communities) > 50
    bad = [c.title for c in communities if DEBRIS.search(c.title + "\n" + c.summary)]
    assert bad == []
    assert not any("related entities" in c.summary for c in communities)
