"""The `librarian` command line: ingest folders, show status, delete, reindex, search and ask.

It lives beside `server.py` rather than in `librarian/` because it drives the graphs, and
`librarian/` must not import `graphs` or `tools`.

Every command first checks its arguments (organization id, paths, an empty query) with nothing but
the standard library and `librarian`'s light modules, and only then loads settings, the stores, the
graphs and the models, each when the command needs it: a typo costs a fraction of a second, and
`status` never loads a model. Exit codes: 0 done, 1 an error the message explains, 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from librarian.errors import LibrarianError

if TYPE_CHECKING:
    from rich.console import Console

    from services.documents import DocumentService, DocumentStatus
    from librarian.stack import Stack

EXIT_ERROR = 1


class CliError(LibrarianError):
    """A request the CLI refuses with a message (bad argument, nothing to act on)."""

    code = "cli_error"


@cache
def console() -> Console:
    from rich.console import Console

    return Console()


@cache
def err_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def print_json(value: Any) -> None:
    """Machine-readable output on stdout: one JSON document, nothing else."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


# --- argument checks (no settings, no stores, no models) ---------------------------------------


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


def document_name(prefix: str, file: Path) -> str:
    return f"docs/{prefix}{file.name}"


def document_path_arg(raw: str) -> str:
    """`docs/NAME` as given, or a bare file name (a path to a local file counts by its name)."""
    from librarian.files.paths import DOCS_PREFIX, document_path, validate_document_path

    if raw.startswith(DOCS_PREFIX):
        return validate_document_path(raw)
    return document_path(Path(raw).name)


def check_args(args: argparse.Namespace) -> None:
    """Refuse bad arguments before anything is loaded."""
    from librarian.tenancy import validate_organization_id

    if getattr(args, "org", None) is not None:
        validate_organization_id(args.org)
    if args.command in ("search", "ask") and not args.query.strip():
        raise CliError("the query is empty")
    if args.command == "delete":
        args.path = document_path_arg(args.path)
    if args.command == "ingest":
        args.plan = plan_ingest(args.paths, args.prefix)
        if not args.plan.files and not args.plan.rejected:
            raise CliError(f"no files to ingest in {', '.join(args.paths)} (hidden files are ignored)")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


# --- loading -----------------------------------------------------------------------------------


def load_stack() -> Stack:
    from librarian.settings import get_settings
    from librarian.stack import get_stack

    return get_stack(get_settings())


def require_documents(stack: Stack, org: str) -> None:
    """An organization without documents is almost always a typo: say so instead of finding nothing."""
    if not stack.files.list(org):
        raise CliError(f"organization {org} has no documents")


@contextmanager
def document_service(stack: Stack) -> Iterator[DocumentService]:
    from services.documents import DocumentService
    from librarian.checkpoint import sync_checkpointer

    with sync_checkpointer(stack.settings) as checkpointer:
        yield DocumentService(stack, checkpointer)


# --- output ------------------------------------------------------------------------------------

STATUS_COLOURS = {"indexed": "green", "skipped": "yellow", "failed": "red", "deleted": "dim"}


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


def print_sources_table(sources: Sequence[dict[str, Any]], title: str = "Sources") -> None:
    """Each source with its place in the document and why it ranked there (channel scores), then its
    excerpt on lines of its own, so that both read at 80 columns (`--json` has the whole text)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    table.add_column("#", no_wrap=True)
    table.add_column("file", overflow="fold")
    for column in ("page", "score", "dense", "sparse", "fused", "rerank"):
        table.add_column(column, no_wrap=True, justify="right")

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    for n, s in enumerate(sources, start=1):
        scores = s["scores"]
        table.add_row(
            str(n),
            Text(s["filename"]),
            str(s["page"]),
            number(s["score"]),
            number(scores["dense"]),
            number(scores["sparse"]),
            number(scores["fused"]),
            number(scores["rerank"]),
        )
    console().print(table)
    for n, s in enumerate(sources, start=1):
        excerpt = " ".join(s["text"].split())
        excerpt = excerpt[:240] + ("…" if len(excerpt) > 240 else "")
        console().print(Text.assemble((f"[{n}] ", "bold"), excerpt))


# --- commands ----------------------------------------------------------------------------------


def cmd_ingest(args: argparse.Namespace) -> int:
    from rich.markup import escape

    plan: IngestPlan = args.plan
    note = err_console().print
    for dropped, kept in plan.replaced:
        note(
            f"[yellow]replaced[/] {escape(str(dropped))} is not ingested: {escape(str(kept))} has the "
            f"same name and replaces it (both would be {escape(document_name(args.prefix, kept))}; "
            "ingest their folders separately with different --prefix values to keep both)",
            soft_wrap=True,
        )
    stack = load_stack()
    results: list[DocumentStatus] = []
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
    for file, reason in rejected:
        note(f"[red]rejected[/] {escape(str(file))}: {escape(reason)}", soft_wrap=True)
    counts = {status: sum(r.status == status for r in results) for status in ("indexed", "skipped", "failed")}
    chunks = sum(r.chunkCount for r in results if r.status == "indexed")
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
        problems = [r for r in results if r.status != "indexed"]
        if problems:
            print_status_table(problems, title="Not indexed")
        parts = [f"{n} {status}" for status, n in counts.items()]
        parts += [f"{len(rejected)} rejected"] if rejected else []
        parts += [f"{len(plan.replaced)} replaced by a same-named file"] if plan.replaced else []
        console().print(
            f"{len(results)} file{'' if len(results) == 1 else 's'} ingested into {args.org}: "
            f"{', '.join(parts)}; "
            f"{chunks} chunks in {elapsed:.1f}s. `librarian status --org {args.org}` lists every document.",
            soft_wrap=True,
        )
    return EXIT_ERROR if rejected or counts["failed"] else 0


def ingest_all(service: DocumentService, stack: Stack, args: argparse.Namespace, paths: list[str]):
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


def read_statuses(stack: Stack, org: str) -> list[DocumentStatus]:
    """What `DocumentService.list` answers, read by the service's own `read_status`.

    Unlike the service it builds no graph: their imports alone cost about 2 s, reading a checkpoint
    needs none of them.
    """
    from services.documents import read_status
    from librarian.checkpoint import sync_checkpointer

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


def cmd_delete(args: argparse.Namespace) -> int:
    from services.documents import DocumentNotFoundError, read_status
    from librarian.checkpoint import sync_checkpointer

    missing = CliError(f"no such document: {args.path} in organization {args.org}")
    stack = load_stack()
    if not stack.files.exists(args.org, args.path):  # the service's rule, checked before loading it
        with sync_checkpointer(stack.settings) as checkpointer:
            if read_status(checkpointer, args.org, args.path).status in ("not_ingested", "deleted"):
                raise missing
    with document_service(stack) as service:
        try:
            status = service.delete(args.org, args.path)
        except DocumentNotFoundError:
            raise missing from None
    console().print(f"{status.path}: {status.status} (its vectors first, then its file)")
    # The published graph keeps the document's entities, claims and summaries until it is rebuilt
    # (a build loads spaCy: seconds, not worth it per delete). Graph answers already skip it (the
    # index is checked at query time, `librarian.graph.query.liveness`); `graph status` lists it as stale.
    graph = stack.graph_store.scope(args.org)
    published = graph.published_version()
    if published is not None and any(d.path == status.path for d in graph.documents()):
        console().print(
            f"the knowledge graph (version {published.version}) still holds it; graph answers no longer "
            f"cite it, and `librarian graph build --org {args.org}` removes it"
        )
    return 0


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
        f"{len(report.having(kind))} {kind}"
        for kind in ("reembedded", "reparsed", "reused", "missing", "skipped", "failed")
        if report.having(kind)
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


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a development token; production tokens come from the identity provider."""
    from librarian.auth import mint_token
    from librarian.settings import Settings

    settings = Settings()
    secret = settings.auth_secret
    if not secret:
        raise CliError("LIBRARIAN_AUTH_SECRET is not set; it signs the token")
    if not 0 < args.ttl <= settings.auth_max_token_lifetime_s:
        # the server refuses longer-lived shared-secret tokens: say so now, not at the first request
        raise CliError(
            f"--ttl must be between 1 and {settings.auth_max_token_lifetime_s} seconds "
            "(LIBRARIAN_AUTH_MAX_TOKEN_LIFETIME_S)"
        )
    orgs = [o for o in (args.orgs or "").split(",") if o]
    print(mint_token(secret, args.user, args.org, orgs=orgs, role=args.role, ttl_s=args.ttl))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """The agent's retrieval (same options, same reranker), shown as a table instead of a tool result."""
    stack = load_stack()
    require_documents(stack, args.org)
    from librarian.retrieval.rerankers import make_reranker
    from librarian.retrieval.search import SearchOptions, search

    options = SearchOptions.from_settings(stack, top_k=args.top_k)
    result = search(stack, args.org, args.query, options, make_reranker(stack))
    if args.json:
        print_json({"organization": args.org, "query": args.query, **result})
    elif not result["sources"]:
        console().print(f"no relevant excerpts in the documents of {args.org}")
    else:
        print_sources_table(result["sources"])
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """One question (chat model if configured, else extractive) with its citations, by --mode:
    search (the agent), graph local, graph global, or auto (chosen from the question)."""
    import asyncio
    import re

    stack = load_stack()
    require_documents(stack, args.org)
    from services.ask import answer_with_mode

    result = asyncio.run(answer_with_mode(stack, args.org, args.query, args.mode))
    state = {"citations": result["details"].get("citations") or []}
    answer = result["answer"]
    sources = result["sources"]
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer)})
    citations = []  # [n] cites sources[n - 1]; a number without a source is shown as such
    for n in cited:
        source = sources[n - 1] if 1 <= n <= len(sources) else None
        citations.append({"n": n, **({k: source[k] for k in ("filename", "page", "path")} if source else {})})
    if args.json:
        print_json(
            {
                "organization": args.org,
                "question": args.query,
                "mode": result["mode"],
                "modeChosenBy": result["chosenBy"],
                "status": result["status"],
                "answer": answer,
                "citations": citations,
                "sources": sources,
                "verification": state.get("citations") or [],
            }
        )
        return 0
    from rich.table import Table
    from rich.text import Text

    console().print(Text(f"mode: {result['mode']} (chosen by {result['chosenBy']})", style="dim"))
    console().print(Text(answer))
    records = state.get("citations") or []
    backs: dict[int, bool] = {}  # [n] → does that source support a sentence citing it (librarian.answers.citations)
    for record in records:
        for evidence in record["evidence"]:
            backs[evidence["marker"]] = backs.get(evidence["marker"], False) or evidence["supported"]
    if citations:
        table = Table(title="Citations")
        table.add_column("#", no_wrap=True)
        for column in ("file", "page", "path", "supports"):
            table.add_column(column, overflow="fold")
        for c in citations:
            verdict = {True: Text("yes"), False: Text("no", style="red")}.get(backs.get(c["n"]), Text(""))
            if "path" in c:
                table.add_row(f"[{c['n']}]", Text(c["filename"]), str(c["page"]), Text(c["path"]), verdict)
            else:
                table.add_row(f"[{c['n']}]", Text("no such source", style="red"), "", "", verdict)
        console().print(table)
    flagged = [r for r in records if r["action"] != "kept"]
    if flagged:
        action = flagged[0]["action"]
        console().print(f"{len(flagged)} sentence(s) not supported by their cited sources were {action}.")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """`librarian eval retrieval|answers` (librarian_cli/eval.py): quality on the user's judged data."""
    from librarian_cli.eval import run_eval

    return run_eval(args)


def cmd_graph(args: argparse.Namespace) -> int:
    """`graph build` / `graph status`: the logic lives in librarian_cli/graph.py."""
    from librarian_cli.graph import cmd_graph as run_graph

    return run_graph(args, console(), err_console())


COMMANDS = {
    "graph": cmd_graph,
    "ingest": cmd_ingest,
    "status": cmd_status,
    "delete": cmd_delete,
    "reindex": cmd_reindex,
    "search": cmd_search,
    "ask": cmd_ask,
    "token": cmd_token,
    "eval": cmd_eval,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="librarian", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ingest = sub.add_parser("ingest", help="upload and index files and folders")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--prefix",
        default="",
        help="put this before every file name of this run (a document is named by its file name, "
        "so two files named alike replace each other; ingest their folders with different prefixes)",
    )
    status = sub.add_parser("status", help="documents of an organization with their latest status")
    delete = sub.add_parser("delete", help="delete a document: vectors first, then the file")
    delete.add_argument("path", help="docs/<name> or a file name")
    reindex = sub.add_parser("reindex", help="re-embed every document from its cached parse")
    reindex_scope = reindex.add_mutually_exclusive_group(required=True)
    reindex_scope.add_argument("--org", help="organization id (the namespace)")
    reindex_scope.add_argument(
        "--migrate",
        action="store_true",
        help="convert the whole index (every organization) to the configured embedders: a new index "
        "is built beside the old one and replaces it only when every document is done",
    )
    search = sub.add_parser("search", help="search an organization's documents; show scores per source")
    search.add_argument("query")
    search.add_argument(
        "--top-k", type=positive_int, default=None, help="sources to show (default LIBRARIAN_TOP_K)"
    )
    ask = sub.add_parser("ask", help="ask the agent a question; show the answer and its citations")
    ask.add_argument("query", metavar="question")
    ask.add_argument(
        "--mode",
        choices=["auto", "search", "local", "global"],
        default="auto",
        help="search: the agent; local/global: GraphRAG; auto (default): chosen from the question",
    )
    for p in (ingest, status, delete, search, ask):
        p.add_argument("--org", required=True, help="organization id (the namespace)")
    for p in (ingest, status, search, ask):
        p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    from librarian_cli.eval import add_eval_commands  # argparse only: the evaluation loads when it runs

    add_eval_commands(sub)
    tok = sub.add_parser("token", help="mint a development bearer token (LIBRARIAN_AUTH_SECRET)")
    tok.add_argument("--user", required=True, help="the token's subject")
    tok.add_argument("--org", required=True, help="active organization")
    tok.add_argument("--orgs", help="further memberships, comma-separated")
    tok.add_argument("--role", default="member", choices=("member", "admin", "reader"))
    tok.add_argument("--ttl", type=int, default=3600, help="seconds until it expires (default 3600)")
    from librarian_cli.graph import add_graph_commands  # light: argparse only

    add_graph_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        check_args(args)
        return COMMANDS[args.command](args)
    except LibrarianError as exc:
        from rich.markup import escape

        err_console().print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
        return EXIT_ERROR
    except KeyboardInterrupt:
        err_console().print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
