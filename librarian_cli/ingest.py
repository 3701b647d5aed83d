"""`librarian ingest PATHS --org ORG`: upload files and folders, then index them in parallel.

The plan (which file becomes which document) is made from the paths alone, before anything loads,
so a typo or a folder of hidden files is refused in a fraction of a second.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from librarian.errors import LibrarianError
from librarian_cli.common import (
    EXIT_ERROR,
    CliError,
    add_json_argument,
    add_org_argument,
    console,
    document_service,
    err_console,
    load_stack,
)
from librarian_cli.output import print_json, print_status_table

if TYPE_CHECKING:
    from librarian.stack import Stack
    from services.document_status import DocumentStatus
    from services.documents import DocumentService

INGESTED = ("indexed", "skipped", "failed")


def add_ingest_command(subparsers: Any) -> argparse.ArgumentParser:
    ingest = subparsers.add_parser("ingest", help="upload and index files and folders")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--prefix",
        default="",
        help="put this before every file name of this run (a document is named by its file name, "
        "so two files named alike replace each other; ingest their folders with different prefixes)",
    )
    add_org_argument(ingest)
    add_json_argument(ingest)
    return ingest


# --- the plan (no settings, no stores, no models) ----------------------------------------------


def iter_files(paths: Iterable[str]) -> list[Path]:
    """Files named directly, plus every non-hidden file under named folders, in a stable order."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.is_file():
            found.append(path)
        else:
            raise CliError(f"no such file or folder: {raw}")
    return found


@dataclass
class IngestPlan:
    """What `ingest` will upload: one file per document name, and what it left out and why."""

    files: dict[str, Path] = field(default_factory=dict)  # document name -> the file uploaded as it
    replaced: list[tuple[Path, Path]] = field(default_factory=list)  # (left out, the later file kept)
    rejected: list[tuple[Path, str]] = field(default_factory=list)  # (file, why its name is refused)


def plan_ingest(paths: Iterable[str], prefix: str = "") -> IngestPlan:
    """Name each file `prefix + file name`; of two files with one name, the later one is the document.

    A document's identity is its name (`docs/{name}`), so `a/x.pdf` and `b/x.pdf` would be one
    document, the later upload replacing the earlier. Only the later one is uploaded, and the plan
    keeps the pair so the user is told, rather than finding one version silently gone.
    """
    from librarian.files.paths import sanitize_filename

    plan = IngestPlan()
    for file in iter_files(paths):
        try:
            name = sanitize_filename(prefix + file.name)
        except LibrarianError as exc:
            plan.rejected.append((file, str(exc)))
            continue
        if name in plan.files:
            plan.replaced.append((plan.files.pop(name), file))
        plan.files[name] = file
    return plan


def check_ingest_args(args: argparse.Namespace) -> None:
    """Make the plan now: refusing an empty one must not wait for the stack to load."""
    args.plan = plan_ingest(args.paths, args.prefix)
    if not args.plan.files and not args.plan.rejected:
        raise CliError(f"no files to ingest in {', '.join(args.paths)} (hidden files are ignored)")


def document_name(prefix: str, file: Path) -> str:
    return f"docs/{prefix}{file.name}"


# --- the command -------------------------------------------------------------------------------


def cmd_ingest(args: argparse.Namespace) -> int:
    plan: IngestPlan = args.plan
    warn_replaced(plan, args.prefix)
    stack = load_stack()
    rejected = list(plan.rejected)
    started = time.perf_counter()
    with document_service(stack) as service:
        uploaded: list[str] = []
        for name, file in plan.files.items():
            try:
                uploaded.append(service.upload(args.org, name, file.read_bytes()))
            except LibrarianError as exc:
                rejected.append((file, str(exc)))
        results = ingest_all(service, stack, args, uploaded)
    elapsed = time.perf_counter() - started
    report_rejected(rejected)
    counts = {status: sum(r.status == status for r in results) for status in INGESTED}
    if args.json:
        print_json(
            {
                "organization": args.org,
                "documents": [r.as_dict() for r in results],
                "rejected": [{"file": str(f), "reason": why} for f, why in rejected],
                "replaced": [{"file": str(d), "replacedBy": str(k)} for d, k in plan.replaced],
                "seconds": round(elapsed, 2),
            }
        )
    else:
        print_ingest_summary(args.org, results, counts, rejected, plan, elapsed)
    return EXIT_ERROR if rejected or counts["failed"] else 0


def warn_replaced(plan: IngestPlan, prefix: str) -> None:
    """Said before the upload starts, so that a long ingest does not hide which file lost."""
    from rich.markup import escape

    for dropped, kept in plan.replaced:
        err_console().print(
            f"[yellow]replaced[/] {escape(str(dropped))} is not ingested: {escape(str(kept))} has the "
            f"same name and replaces it (both would be {escape(document_name(prefix, kept))}; "
            "ingest their folders separately with different --prefix values to keep both)",
            soft_wrap=True,
        )


def report_rejected(rejected: list[tuple[Path, str]]) -> None:
    from rich.markup import escape

    for file, reason in rejected:
        err_console().print(f"[red]rejected[/] {escape(str(file))}: {escape(reason)}", soft_wrap=True)


def print_ingest_summary(
    org: str,
    results: list[DocumentStatus],
    counts: dict[str, int],
    rejected: list[tuple[Path, str]],
    plan: IngestPlan,
    elapsed: float,
) -> None:
    """Only the documents that need attention as a table, then one line of counts."""
    problems = [r for r in results if r.status != "indexed"]
    if problems:
        print_status_table(problems, title="Not indexed")
    chunks = sum(r.chunkCount for r in results if r.status == "indexed")
    parts = [f"{n} {status}" for status, n in counts.items()]
    parts += [f"{len(rejected)} rejected"] if rejected else []
    parts += [f"{len(plan.replaced)} replaced by a same-named file"] if plan.replaced else []
    console().print(
        f"{len(results)} file{'' if len(results) == 1 else 's'} ingested into {org}: "
        f"{', '.join(parts)}; "
        f"{chunks} chunks in {elapsed:.1f}s. `librarian status --org {org}` lists every document.",
        soft_wrap=True,
    )


def ingest_all(
    service: DocumentService, stack: Stack, args: argparse.Namespace, paths: list[str]
) -> list[DocumentStatus]:
    """Ingest the uploaded paths in parallel (LIBRARIAN_INGEST_CONCURRENCY) behind a progress bar."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    chunks = 0
    columns = (
        TextColumn("[bold]ingest[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[chunks]} chunks"),
        TimeElapsedColumn(),
    )
    results = []
    with Progress(*columns, console=err_console(), disable=args.quiet or args.json) as progress:
        task = progress.add_task("ingest", total=len(paths), chunks=0)

        def on_update(node: str, value: dict) -> None:
            nonlocal chunks
            if node == "upsert_batch":
                chunks += int(value.get("indexedCount", 0))
                progress.update(task, chunks=chunks)

        workers = max(1, stack.settings.ingest_concurrency)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(service.ingest, args.org, path, on_update=on_update) for path in paths]
            for future in as_completed(futures):
                results.append(future.result())
                progress.advance(task)
    order = {path: n for n, path in enumerate(paths)}
    return sorted(results, key=lambda r: order.get(r.path, len(order)))
