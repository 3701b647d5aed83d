"""How subcommands print: one JSON document for scripts, or rich tables that read at 80 columns."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from librarian_cli.common import console

if TYPE_CHECKING:
    from services.document_status import DocumentStatus

STATUS_COLOURS = {"indexed": "green", "skipped": "yellow", "failed": "red", "deleted": "dim"}
EXCERPT_CHARS = 240


def print_json(value: Any) -> None:
    """Machine-readable output on stdout: one JSON document, nothing else."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def print_status_table(statuses: Sequence[DocumentStatus], title: str = "Documents") -> None:
    """Every column wraps (fold) instead of cutting text off, so the table reads at 80 columns."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, expand=True)
    table.add_column("path", overflow="fold", ratio=3)
    table.add_column("status", no_wrap=True)
    table.add_column("chunks", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=2)
    table.add_column("updated", no_wrap=True)  # date over time: a 10-character column
    any_reason = any(s.reason for s in statuses)
    for s in statuses:
        colour = STATUS_COLOURS.get(s.status, "white")
        updated = (s.updatedAt or "")[:19].replace("T", "\n")  # to the second; --json has it in full
        table.add_row(
            Text(s.path), Text(s.status, style=colour), str(s.chunkCount), Text(s.reason or ""), updated
        )
    if not any_reason:
        table.columns[3].ratio = None  # an empty column takes no room from the paths
    console().print(table)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def print_sources_table(sources: Sequence[dict[str, Any]], title: str = "Sources") -> None:
    """Each source with its place in the document and why it ranked there (channel scores), then its
    excerpt on lines of its own, so that both read at 80 columns (`--json` has the whole text)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    table.add_column("#", no_wrap=True)
    table.add_column("file", overflow="fold")
    semantic = any("semantic" in s["scores"] for s in sources)  # Mastra's weighted rerank only
    columns = ("page", "score", "dense", "sparse", "fused", "rerank") + (("semantic",) if semantic else ())
    for column in columns:
        table.add_column(column, no_wrap=True, justify="right")
    for n, s in enumerate(sources, start=1):
        scores = s["scores"]
        table.add_row(
            str(n),
            Text(s["filename"]),
            str(s["page"]),
            _number(s["score"]),
            _number(scores["dense"]),
            _number(scores["sparse"]),
            _number(scores["fused"]),
            _number(scores["rerank"]),
            *((_number(scores.get("semantic")),) if semantic else ()),
        )
    console().print(table)
    for n, s in enumerate(sources, start=1):
        excerpt = " ".join(s["text"].split())
        excerpt = excerpt[:EXCERPT_CHARS] + ("…" if len(excerpt) > EXCERPT_CHARS else "")
        console().print(Text.assemble((f"[{n}] ", "bold"), excerpt))
