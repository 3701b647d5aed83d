"""The `librarian` command: its parser, the checks made before anything loads, and the dispatch.

Every command first checks its arguments (organization id, paths, an empty query) with nothing but
the standard library and `librarian`'s light modules, and only then loads settings, the stores, the
graphs and the models, each when the command needs it: a typo costs a fraction of a second, and
`status` never loads a model. Exit codes: 0 done, 1 an error the message explains, 2 a usage error.
Each subcommand module registers its own arguments (argparse only), so building the parser stays light.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from librarian import tracing
from librarian.errors import LibrarianError
from librarian_cli.ask import add_ask_command, cmd_ask
from librarian_cli.common import EXIT_ERROR, CliError, console, err_console
from librarian_cli.dev_token import add_token_command, cmd_token
from librarian_cli.documents import (
    add_document_commands,
    cmd_delete,
    cmd_reindex,
    cmd_status,
    document_path_arg,
)
from librarian_cli.graph import add_graph_commands
from librarian_cli.graph import cmd_graph as run_graph
from librarian_cli.ingest import add_ingest_command, check_ingest_args, cmd_ingest
from librarian_cli.search import add_search_command, cmd_search

DESCRIPTION = "The `librarian` command line: ingest folders, show status, delete, reindex, search and ask."
EXIT_INTERRUPTED = 130
# bad arguments (argparse's own code): never 1, which `eval gate` and `graph build` use for a verdict
EXIT_USAGE = 2


def cmd_graph(args: argparse.Namespace) -> int:
    """`graph build` / `graph status` print on the CLI's consoles (librarian_cli/graph.py)."""
    return run_graph(args, console(), err_console())


def cmd_eval(args: argparse.Namespace) -> int:
    """`librarian eval retrieval|answers` (librarian_cli/eval.py): quality on the user's judged data."""
    from librarian_cli.eval import run_eval

    return run_eval(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
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
    """Subcommands in the order `librarian --help` lists them."""
    parser = argparse.ArgumentParser(prog="librarian", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    add_ingest_command(sub)
    add_document_commands(sub)
    add_search_command(sub)
    add_ask_command(sub)
    # Imported here, not at the top: `python -m librarian_cli.eval` imports this package first, and
    # runpy warns when the module it is about to run is already loaded.
    from librarian_cli.eval import add_eval_commands

    add_eval_commands(sub)
    add_token_command(sub)
    add_graph_commands(sub)
    return parser


def check_args(args: argparse.Namespace) -> None:
    """Refuse bad arguments before anything is loaded."""
    from librarian.tenancy import validate_organization_id

    if getattr(args, "org", None) is not None:
        validate_organization_id(args.org)
    if args.command in ("search", "ask") and not args.query.strip():
        raise CliError("the query is empty")
    if args.command in ("search", "ask") and getattr(args, "paths", None):
        from librarian.retrieval.path_filter import normalise_search_paths

        args.paths = normalise_search_paths(args.paths)  # `--in ../x` is refused before anything loads
    if args.command == "delete":
        args.path = document_path_arg(args.path)
    if args.command == "ingest":
        check_ingest_args(args)


TRACED_AS_ONE_RUN = ("search", "ask")  # one root run named after the command, the query as input


def command_trace(args: argparse.Namespace) -> AbstractContextManager[None]:
    """With tracing on, the command's runs carry its organization (`librarian.tracing`); `search` and
    `ask` become one root run each, so a question's retrieval and answer are one trace."""
    org = getattr(args, "org", None)
    if org is None:
        return nullcontext()
    if args.command in TRACED_AS_ONE_RUN:
        return tracing.trace_scope(org, name=f"librarian {args.command}", inputs={"query": args.query})
    return tracing.trace_scope(org)


def _say_error(exc: Exception) -> None:
    from rich.markup import escape

    err_console().print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        check_args(args)
    except LibrarianError as exc:  # refused before anything ran: a usage error, as argparse's own are
        _say_error(exc)
        return EXIT_USAGE
    try:
        with command_trace(args):
            return COMMANDS[args.command](args)
    except LibrarianError as exc:
        _say_error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        err_console().print("interrupted")
        return EXIT_INTERRUPTED
    finally:
        if tracing.tracing_enabled():
            tracing.flush()  # the process ends here: send the finished runs first
