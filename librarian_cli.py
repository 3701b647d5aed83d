"""The `librarian` command line: ingest folders, show status, delete, reindex, search and ask.

It lives beside `server.py` rather than in `librarian/` because it drives the graphs, and
`librarian/` must not import `graphs` or `tools`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from librarian.errors import LibrarianError

console = Console()
err_console = Console(stderr=True)


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
            raise LibrarianError(f"no such file or folder: {raw}")
    return found


def _service(stack, checkpointer):
    from graphs.documents import DocumentService

    return DocumentService(stack, checkpointer)


def cmd_ingest(args: argparse.Namespace, stack, checkpointer) -> int:
    service = _service(stack, checkpointer)
    files = iter_files(args.paths)
    names: dict[str, Path] = {}
    uploaded: list[str] = []
    rejected: list[tuple[str, str]] = []
    for file in files:
        if file.name in names:
            err_console.print(
                f"[yellow]note[/] {file} has the same name as {names[file.name]}: same document"
            )
        names[file.name] = file
        try:
            uploaded.append(service.upload(args.org, file.name, file.read_bytes()))
        except LibrarianError as exc:
            rejected.append((str(file), str(exc)))
    uploaded = list(dict.fromkeys(uploaded))
    chunks = 0
    started = time.perf_counter()
    columns = (
        TextColumn("[bold]ingest[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[chunks]} chunks"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, disable=args.quiet) as progress:
        task = progress.add_task("ingest", total=len(uploaded), chunks=0)

        def on_update(node: str, value: dict) -> None:
            nonlocal chunks
            if node == "upsert_batch":
                chunks += int(value.get("indexedCount", 0))
                progress.update(task, chunks=chunks)

        workers = max(1, stack.settings.ingest_concurrency)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(service.ingest, args.org, path, on_update=on_update) for path in uploaded]
            for future in as_completed(futures):
                future.result()
                progress.advance(task)
    elapsed = time.perf_counter() - started
    for name, reason in rejected:
        err_console.print(f"[red]rejected[/] {name}: {reason}")
    print_status_table(service.list(args.org))
    err_console.print(f"{len(uploaded)} files, {chunks} chunks in {elapsed:.1f}s")
    return 1 if rejected else 0


def print_status_table(statuses: Sequence) -> None:
    table = Table(title="Documents")
    for column in ("path", "status", "chunks", "reason", "updated"):
        table.add_column(column)
    colours = {"indexed": "green", "skipped": "yellow", "failed": "red"}
    for s in statuses:
        colour = colours.get(s.status, "white")
        table.add_row(
            s.path, f"[{colour}]{s.status}[/]", str(s.chunkCount), s.reason or "", s.updatedAt or ""
        )
    console.print(table)


def cmd_status(args, stack, checkpointer) -> int:
    print_status_table(_service(stack, checkpointer).list(args.org))
    return 0


def cmd_delete(args, stack, checkpointer) -> int:
    from librarian.files.paths import document_path

    service = _service(stack, checkpointer)
    path = args.path if args.path.startswith("docs/") else document_path(Path(args.path).name)
    existed = service.delete(args.org, path)
    console.print(f"deleted {path}" if existed else f"{path} had no file; its vectors were removed")
    return 0


def cmd_reindex(args, stack, checkpointer) -> int:
    """Re-embed indexed documents; skipped and failed ones have no parse to reuse and keep their status."""
    service = _service(stack, checkpointer)
    statuses = [
        service.reindex(args.org, s.path) if s.status == "indexed" else s for s in service.list(args.org)
    ]
    print_status_table(statuses)
    return 0 if all(s.status != "failed" for s in statuses) else 1


COMMANDS = {"ingest": cmd_ingest, "status": cmd_status, "delete": cmd_delete, "reindex": cmd_reindex}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="librarian", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ingest = sub.add_parser("ingest", help="upload and index files and folders")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    status = sub.add_parser("status", help="documents of an organization with their latest status")
    delete = sub.add_parser("delete", help="delete a document: vectors first, then the file")
    delete.add_argument("path", help="docs/<name> or a file name")
    reindex = sub.add_parser("reindex", help="re-embed every document from its cached parse")
    for p in (ingest, status, delete, reindex):
        p.add_argument("--org", required=True, help="organization id (the namespace)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        from librarian.checkpoint import sync_checkpointer
        from librarian.settings import get_settings
        from librarian.stack import get_stack

        settings = get_settings()
        stack = get_stack(settings)
        with sync_checkpointer(settings) as checkpointer:
            return COMMANDS[args.command](args, stack, checkpointer)
    except LibrarianError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
