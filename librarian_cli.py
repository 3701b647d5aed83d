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
from rich.text import Text

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


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a development token; production tokens come from the identity provider."""
    from librarian.auth import mint_token
    from librarian.settings import Settings

    secret = Settings().auth_secret
    if not secret:
        raise LibrarianError("LIBRARIAN_AUTH_SECRET is not set; it signs the token")
    orgs = [o for o in (args.orgs or "").split(",") if o]
    print(mint_token(secret, args.user, args.org, orgs=orgs, role=args.role, ttl_s=args.ttl))
    return 0


def print_sources_table(sources: Sequence, title: str = "Sources") -> None:
    """Each source with its place in the document and why it ranked there (channel scores)."""
    table = Table(title=title)
    table.add_column("#", no_wrap=True)
    table.add_column("file", overflow="fold")
    for column in ("page", "score", "dense", "sparse", "fused", "rerank"):
        table.add_column(column, no_wrap=True, justify="right")
    table.add_column("excerpt", overflow="fold")

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    for n, s in enumerate(sources, start=1):
        scores = s["scores"]
        excerpt = " ".join(s["text"].split())
        table.add_row(
            str(n),
            s["filename"],
            str(s["page"]),
            number(s["score"]),
            number(scores["dense"]),
            number(scores["sparse"]),
            number(scores["fused"]),
            number(scores["rerank"]),
            Text(excerpt[:80] + ("…" if len(excerpt) > 80 else "")),
        )
    console.print(table)


def cmd_search(args, stack, checkpointer) -> int:
    """The agent's retrieval (same options, same reranker), shown as a table instead of a tool result."""
    from tools.rerankers import make_reranker
    from tools.retrieval import SearchOptions, search

    options = SearchOptions.from_settings(stack, top_k=args.top_k)
    result = search(stack, args.org, args.query, options, make_reranker(stack))
    if not result["sources"]:
        console.print("no relevant excerpts in this organization's documents")
        return 0
    print_sources_table(result["sources"])
    return 0


def cmd_ask(args, stack, checkpointer) -> int:
    """One question to the agent (chat model if configured, else extractive) with its citations."""
    import re

    from langchain_core.messages import HumanMessage

    from graphs.agent import build_agent

    state = build_agent(lambda: stack).invoke(
        {"messages": [HumanMessage(args.question)]}, context={"organization_id": args.org}
    )
    answer = state["messages"][-1]
    console.print(Text(str(answer.content)))
    sources = state.get("sources") or []
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", str(answer.content))})
    table = Table(title="Citations")
    for column in ("#", "file", "page", "path"):
        table.add_column(column)
    for n in cited:
        if 1 <= n <= len(sources):
            s = sources[n - 1]
            table.add_row(f"[{n}]", s["filename"], str(s["page"]), s["path"])
        else:
            table.add_row(f"[{n}]", Text("no such source", style="red"), "", "")
    if cited:
        console.print(table)
    return 0


COMMANDS = {
    "ingest": cmd_ingest,
    "status": cmd_status,
    "delete": cmd_delete,
    "reindex": cmd_reindex,
    "search": cmd_search,
    "ask": cmd_ask,
}


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
    search = sub.add_parser("search", help="search an organization's documents; show scores per source")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=None, help="sources to show (default LIBRARIAN_TOP_K)")
    ask = sub.add_parser("ask", help="ask the agent a question; show the answer and its citations")
    ask.add_argument("question")
    for p in (ingest, status, delete, reindex, search, ask):
        p.add_argument("--org", required=True, help="organization id (the namespace)")
    tok = sub.add_parser("token", help="mint a development bearer token (LIBRARIAN_AUTH_SECRET)")
    tok.add_argument("--user", required=True, help="the token's subject")
    tok.add_argument("--org", required=True, help="active organization")
    tok.add_argument("--orgs", help="further memberships, comma-separated")
    tok.add_argument("--role", default="member", choices=("member", "admin", "reader"))
    tok.add_argument("--ttl", type=int, default=3600, help="seconds until it expires (default 3600)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        if args.command == "token":  # needs no stack and no checkpointer
            return cmd_token(args)
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
