"""`librarian graph build --org ORG` and `librarian graph status --org ORG`, kept out of the CLI file.

`librarian_cli/commands.py` wires them with `add_graph_commands(subparsers)` and dispatches `graph` to
`cmd_graph`. The build runs in this process on the configured checkpointer (thread `{org}:graph`), so
`status` reads the same last build whether it ran here or in a notebook on the same data directory.

`status` also prints the organization's cost ledger (model calls, tokens and seconds per phase), and
`build --dry-run` prints what a build would (re)extract and its token estimate without calling a model
or writing anything (`graphs.graph_index_estimate`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports this module to build its parser: keep that import light
    from librarian.stack import Stack

Progress = Callable[[str, dict[str, Any]], None]


def _stack() -> Stack:
    from librarian.settings import get_settings
    from librarian.stack import get_stack

    return get_stack(get_settings())


def graph_build(
    org: str, progress: Progress | None = None, *, force: bool = False, stack: Stack | None = None
) -> dict[str, Any]:
    """Build (or incrementally rebuild) `org`'s graph index; `progress(node, update)` sees every step."""
    from librarian.checkpoint import sync_checkpointer
    from services.graph_index_service import GraphIndexService
    from services.graph_index_status import with_costs

    stack = stack or _stack()
    with sync_checkpointer(stack.settings) as checkpointer:
        report = GraphIndexService(stack, checkpointer).build(org, force=force, on_update=progress)
    return with_costs(report, stack, org)


def graph_status(org: str, *, stack: Stack | None = None) -> dict[str, Any]:
    """Version, counts per level, last build and stale documents of `org`'s graph index."""
    from librarian.checkpoint import sync_checkpointer
    from services.graph_index_service import GraphIndexService
    from services.graph_index_status import with_costs

    stack = stack or _stack()
    with sync_checkpointer(stack.settings) as checkpointer:
        return with_costs(GraphIndexService(stack, checkpointer).status(org), stack, org)


def graph_dry_run(org: str, *, force: bool = False, stack: Stack | None = None) -> dict[str, Any]:
    """What `graph build` would (re)extract and the tokens it would cost, against the budget; no model
    call and no write."""
    from graphs.graph_index_estimate import estimate_extraction
    from librarian.costs.budget import build_budget
    from librarian.tenancy import validate_organization_id

    stack = stack or _stack()
    org = validate_organization_id(org)
    estimate = estimate_extraction(stack, org, force=force)
    limit = build_budget(stack.settings, org)
    return {**estimate, "budget": limit, "withinBudget": not limit or estimate["tokens"] <= limit}


def add_graph_commands(subparsers: Any) -> argparse.ArgumentParser:
    """`graph build` and `graph status` under the CLI's subparsers; returns the `graph` parser."""
    graph = subparsers.add_parser("graph", help="GraphRAG index: build it, or show its status")
    sub = graph.add_subparsers(dest="graph_command", required=True)
    build = sub.add_parser("build", help="build or incrementally rebuild the organization's graph index")
    build.add_argument("--force", action="store_true", help="re-extract every document")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be (re)extracted and estimate its tokens; no model call, nothing written",
    )
    status = sub.add_parser("status", help="version, counts per level, last build, stale documents")
    for p in (build, status):
        p.add_argument("--org", required=True, help="organization id (the namespace)")
        p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    return graph


class BuildProgress:
    """A rich progress bar fed by the build's node updates: documents, entities, communities."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.documents = progress.add_task("documents", total=None, info="collecting")
        self.entities = progress.add_task("entities", total=None, info="")
        self.communities = progress.add_task("communities", total=None, info="")

    def __call__(self, node: str, update: dict[str, Any]) -> None:
        p = self.progress
        if node == "collect":
            total = len(update.get("stale") or [])
            known = len(update.get("documents") or [])
            p.update(
                self.documents,
                total=max(total, 1),
                completed=0 if total else 1,
                info=f"{total} of {known} to extract",
            )
        elif node == "extract_document":
            for result in update.get("extracted") or []:
                p.advance(self.documents)
                p.update(self.documents, info=f"{result['path']}: {result['status']}")
        elif node == "merge":
            count = int(update.get("entityCount", 0))
            p.update(
                self.entities,
                total=max(count, 1),
                completed=max(count, 1),
                info=f"{count} entities, {update.get('edgeCount', 0)} edges, "
                f"{update.get('claimCount', 0)} claims",
            )
        elif node == "communities":
            levels = update.get("communitiesPerLevel") or {}
            total = sum(levels.values())
            p.update(
                self.communities,
                total=max(total, 1),
                completed=0,
                info="levels " + ", ".join(f"{k}: {v}" for k, v in sorted(levels.items())),
            )
        elif node == "summarize":
            reused, written = update.get("summariesReused", 0), update.get("summariesWritten", 0)
            p.update(
                self.communities, completed=reused + written, info=f"{written} summarised, {reused} reused"
            )
        elif node == "publish":
            p.update(self.communities, info=f"published version {update.get('publishedVersion')}")


def stale_documents(report: dict[str, Any]) -> str:
    """What the next build changes: new or changed documents, and deleted ones the graph still holds
    (`librarian delete` leaves the rebuild to `graph build`), counted together."""
    changed = list(report.get("staleDocuments") or [])
    deleted = [f"{path} (deleted)" for path in report.get("removedDocuments") or []]
    listed = changed + deleted
    return f"{len(listed)}: " + ", ".join(listed) if listed else "none"


def print_costs(costs: dict[str, Any], console: Any) -> None:
    """The cost ledger per phase, or the one line the offline defaults earn."""
    from rich.table import Table

    totals = costs.get("totals") or {}
    if not totals.get("calls"):
        console.print("costs: no model-backed calls (offline defaults)")
        return
    table = Table(title=f"Model costs of {costs['organization_id']}")
    for name in ("phase", "calls", "input tokens", "output tokens", "seconds"):
        table.add_column(name, justify="left" if name == "phase" else "right")
    for p in costs.get("phases") or []:
        table.add_row(
            p["phase"], str(p["calls"]), str(p["inputTokens"]), str(p["outputTokens"]), f"{p['seconds']:.2f}"
        )
    table.add_row(
        "total",
        str(totals["calls"]),
        str(totals["inputTokens"]),
        str(totals["outputTokens"]),
        f"{totals['seconds']:.2f}",
        style="bold",
    )
    console.print(table)


def print_dry_run(estimate: dict[str, Any], console: Any) -> None:
    """The dry run's documents to (re)extract, the estimated calls and tokens, and the budget."""

    def counted(n: int, noun: str) -> str:
        return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

    console.print(
        f"dry run for {estimate['organization_id']} ({estimate['extractor']} extractor): "
        f"{len(estimate['stale'])} of {estimate['documents']} documents, {estimate['chunks']} chunks "
        "would be (re)extracted"
    )
    for entry in estimate["stale"]:
        console.print(
            f"  {entry['path']}: {counted(entry['chunks'], 'chunk')}, {counted(entry['calls'], 'call')}, "
            f"{entry['inputTokens']} tokens in"
        )
    console.print(
        f"estimate: {estimate['calls']} model calls, {estimate['inputTokens']} input + "
        f"{estimate['outputTokens']} output = {estimate['tokens']} tokens"
    )
    budget = estimate.get("budget") or 0
    verdict = (
        "unlimited"
        if not budget
        else ("within it" if estimate["withinBudget"] else "OVER it: the build would stop")
    )
    console.print(f"budget: {budget or 'none'} ({verdict})")


def print_status(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Graph index of {report['organization_id']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    last = report.get("lastBuild") or {}
    levels = report.get("communitiesPerLevel") or {}
    rows = [
        ("version", str(report.get("version") or "none (never built)")),
        ("published", str(report.get("publishedAt") or "-")),
        ("documents", str(report.get("documents", 0))),
        (
            "entities / edges / claims",
            f"{report.get('entities', 0)} / {report.get('edges', 0)} / {report.get('claims', 0)}",
        ),
        ("communities per level", ", ".join(f"level {k}: {v}" for k, v in sorted(levels.items())) or "-"),
        ("last build", f"{last.get('status', 'never')} {last.get('updatedAt') or ''}".strip()),
        ("stale documents", stale_documents(report)),
    ]
    if last.get("reason"):
        rows.append(("last error", str(last["reason"])))
    if last.get("buildTokens"):
        rows.append(("last build tokens", str(last["buildTokens"])))
    for failed in last.get("failedDocuments") or []:
        rows.append(("not extracted", f"{failed['path']}: {failed.get('reason')}"))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    if "costs" in report:
        print_costs(report["costs"], console)


def cmd_graph(args: argparse.Namespace, console: Any = None, err_console: Any = None) -> int:
    """Run `graph build` / `graph status` from parsed arguments; returns the exit code."""
    from rich.console import Console

    from librarian.tenancy import validate_organization_id

    console = console or Console()
    err_console = err_console or Console(stderr=True)
    org = validate_organization_id(args.org)
    if args.graph_command == "status":
        report = graph_status(org)
    elif getattr(args, "dry_run", False):
        estimate = graph_dry_run(org, force=getattr(args, "force", False))
        if args.json:
            sys.stdout.write(json.dumps(estimate, indent=2, ensure_ascii=False) + "\n")
        else:
            print_dry_run(estimate, console)
        return 0
    else:
        stack = _stack()
        if not stack.files.list(org) and stack.graph_store.scope(org).published_version() is None:
            err_console.print(f"[red]error:[/] organization {org} has no documents")  # almost always a typo
            return 1
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (
            TextColumn("[bold]{task.description:<12}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
        )
        quiet = getattr(args, "quiet", False) or args.json
        with Progress(*columns, console=err_console, disable=quiet) as progress:
            report = graph_build(org, BuildProgress(progress), force=getattr(args, "force", False))
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        print_status(report, console)
    unpublished = (report.get("lastBuild") or {}).get("status") in ("failed", "stopped")  # stopped: budget
    return 1 if unpublished and args.graph_command == "build" else 0
