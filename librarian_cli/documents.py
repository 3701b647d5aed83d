"""`librarian status`, `delete` and `reindex` (with `--migrate`): the documents already ingested.

`status` reads the run checkpoints directly instead of building the document service: its graphs'
imports alone cost about 2 s, and a status table needs none of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from librarian_cli.common import (
    EXIT_ERROR,
    CliError,
    add_json_argument,
    add_org_argument,
    console,
    document_service,
    err_console,
    load_stack,
    require_documents,
)
from librarian_cli.output import print_json, print_status_table

if TYPE_CHECKING:
    from librarian.receipts.model import Receipt
    from librarian.stack import Stack
    from services.document_status import DocumentStatus

MIGRATION_KINDS = ("reembedded", "reparsed", "reused", "missing", "skipped", "failed")


def add_document_commands(subparsers: Any) -> None:
    """`status`, `delete` and `reindex`, in the order `librarian --help` lists them."""
    status = subparsers.add_parser("status", help="documents of an organization with their latest status")
    add_org_argument(status)
    add_json_argument(status)
    delete = subparsers.add_parser(
        "delete",
        help="delete a document: vectors first, then the file; prints its receipt",
        description="Delete a document and print its receipt (every place it lived, counted before and "
        "after, and a check of every retrieval channel). With --receipts, list the organization's "
        "kept receipts instead (of PATH only, if given).",
    )
    delete.add_argument("path", nargs="?", help="docs/<name> or a file name")
    add_org_argument(delete)
    delete.add_argument(
        "--receipts", action="store_true", help="list the receipts of past deletes (newest first)"
    )
    add_json_argument(delete)
    reindex = subparsers.add_parser("reindex", help="re-embed every document from its cached parse")
    reindex_scope = reindex.add_mutually_exclusive_group(required=True)
    reindex_scope.add_argument("--org", help="organization id (the namespace)")
    reindex_scope.add_argument(
        "--migrate",
        action="store_true",
        help="convert the whole index (every organization) to the configured embedders: a new index "
        "is built beside the old one and replaces it only when every document is done",
    )


def document_path_arg(raw: str | None) -> str | None:
    """`docs/NAME` as given, or a bare file name (a path to a local file counts by its name).

    None stays None: `delete --receipts` takes no path."""
    from librarian.files.paths import DOCS_PREFIX, document_path, validate_document_path

    if raw is None:
        return None
    if raw.startswith(DOCS_PREFIX):
        return validate_document_path(raw)
    return document_path(Path(raw).name)


# --- status ------------------------------------------------------------------------------------


def read_statuses(stack: Stack, org: str) -> list[DocumentStatus]:
    """What `DocumentService.list` answers, read by the service's own `read_status`.

    Unlike the service it builds no graph: their imports alone cost about 2 s, reading a checkpoint
    needs none of them.
    """
    from librarian.checkpoint import sync_checkpointer
    from services.document_status import read_status

    with sync_checkpointer(stack.settings) as checkpointer:
        statuses = []
        for stored in stack.files.list(org):
            status = read_status(checkpointer, org, stored.path)
            status.sizeBytes = stored.size
            statuses.append(status)
    return statuses


def cmd_status(args: argparse.Namespace) -> int:
    stack = load_stack()
    require_documents(stack, args.org)
    statuses = read_statuses(stack, args.org)
    if args.json:
        print_json({"organization": args.org, "documents": [s.as_dict() for s in statuses]})
    else:
        print_status_table(statuses)
    return 0


# --- delete ------------------------------------------------------------------------------------


def cmd_delete(args: argparse.Namespace) -> int:
    """Delete and print the receipt; `--receipts` lists the kept ones. Exit 1 if a channel still
    returned the document (the receipt says which): the delete happened, its proof did not hold."""
    from librarian.checkpoint import sync_checkpointer
    from services.document_status import read_status
    from services.documents import DocumentNotFoundError

    if args.receipts:
        return list_receipts(args)
    if args.path is None:
        raise CliError("give the document to delete (docs/<name> or a file name), or --receipts")
    missing = CliError(f"no such document: {args.path} in organization {args.org}")
    stack = load_stack()
    if not stack.files.exists(args.org, args.path):  # the service's rule, checked before loading it
        with sync_checkpointer(stack.settings) as checkpointer:
            if read_status(checkpointer, args.org, args.path).status in ("not_ingested", "deleted"):
                raise missing
    with document_service(stack) as service:
        try:
            status, receipt = service.delete_with_receipt(args.org, args.path)
        except DocumentNotFoundError:
            raise missing from None
    if args.json:
        print_json({"path": status.path, "status": status.status, "receipt": receipt.as_dict()})
    else:
        console().print(f"{status.path}: {status.status} (its vectors first, then its file)")
        print_receipt(receipt)
        mention_graph(stack, args.org, status.path)
    return 0 if receipt.verified else EXIT_ERROR


def list_receipts(args: argparse.Namespace) -> int:
    """The organization's kept receipts, newest first (of one path with PATH)."""
    from services.delete_receipts import receipts_of

    receipts = receipts_of(load_stack()).list(args.org, path=args.path)
    if args.json:
        print_json({"organization": args.org, "receipts": [r.as_dict() for r in receipts]})
        return 0
    if not receipts:
        console().print(f"no delete receipts in organization {args.org}")
    for receipt in receipts:
        print_receipt(receipt)
    return 0


def print_receipt(receipt: Receipt) -> None:
    """One receipt as a table: each place with its counts, then the verdict of the probes."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"receipt {receipt.id}: {escape(receipt.path)} at {receipt.deleted_at}")
    for column in ("place", "before", "after", "action"):
        table.add_column(column, overflow="fold")
    for place in receipt.places:
        if place.before or place.after:
            table.add_row(place.place, str(place.before), str(place.after), place.action)
    console().print(table)
    checked = ", ".join(p.channel for p in receipt.probes)
    if receipt.verified:
        console().print(f"verified: no channel returns it ({checked})")
    else:
        console().print(f"[red]not verified[/]: still returned by {', '.join(receipt.found_in)}")


def mention_graph(stack: Stack, org: str, path: str) -> None:
    """Say that the published graph still holds the deleted document, and what removes it.

    The graph keeps the document's entities, claims and summaries until it is rebuilt (a build loads
    spaCy: seconds, not worth it per delete). Graph answers already skip it (the index is checked at
    query time, `librarian.graph.query.liveness`); `graph status` lists it as stale.
    """
    graph = stack.graph_store.scope(org)
    published = graph.published_version()
    if published is not None and any(d.path == path for d in graph.documents()):
        console().print(
            f"the knowledge graph (version {published.version}) still holds it; graph answers no longer "
            f"cite it, and `librarian graph build --org {org}` removes it"
        )


# --- reindex -----------------------------------------------------------------------------------


def cmd_reindex(args: argparse.Namespace) -> int:
    """Re-embed indexed documents; skipped and failed ones have no parse to reuse and keep their status.

    `--migrate` instead converts the whole index (every organization) to the configured embedders.
    """
    if args.migrate:
        return cmd_reindex_migrate()
    stack = load_stack()
    require_documents(stack, args.org)
    with document_service(stack) as service:
        statuses = [
            service.reindex(args.org, s.path) if s.status == "indexed" else s for s in service.list(args.org)
        ]
    print_status_table(statuses)
    return 0 if all(s.status != "failed" for s in statuses) else EXIT_ERROR


def cmd_reindex_migrate() -> int:
    """`reindex --migrate`: a new index beside the old one, switched to only when every document is done."""
    from rich.markup import escape

    from services.reindex_migrate import migrate_index

    stack = load_stack()
    with err_console().status("migrating the index: re-embedding every document") as spinner:
        report = migrate_index(stack, on_document=lambda o: spinner.update(f"{o.result}: {o.org}/{o.path}"))
    say = console().print
    for path in report.moved_aside:
        say(f"an old index left by an interrupted switch was kept at {escape(str(path))}", soft_wrap=True)
    if not report.needed:
        say("the index already matches the configured embedders; nothing to migrate")
        return 0
    for o in report.having("missing", "skipped", "failed"):
        colour = "red" if o.result == "failed" else "yellow"
        say(
            f"[{colour}]{o.result}[/] {escape(o.org)}/{escape(o.path)}: {escape(o.reason or '')}",
            soft_wrap=True,
        )
    counts = ", ".join(
        f"{len(report.having(kind))} {kind}" for kind in MIGRATION_KINDS if report.having(kind)
    )
    if not report.switched:
        say(
            f"not switched ({counts or 'no documents'}): the old index stays in use. Fix the failed "
            "documents and run `librarian reindex --migrate` again; finished ones are not redone.",
            soft_wrap=True,
        )
        return EXIT_ERROR
    say(
        f"migrated to {escape(report.configured.describe())} ({counts or 'no documents'}). The old "
        f"index is kept at {escape(str(report.backup))}; delete it when you no longer need it.",
        soft_wrap=True,
    )
    return 0
