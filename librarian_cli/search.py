"""`librarian search QUERY --org ORG`: the agent's retrieval, shown as a table of scored sources.

Same options and reranker as the agent's search tool (`librarian.retrieval.search`), so what a user
sees here is what the agent would have read.
"""

from __future__ import annotations

import argparse
from typing import Any

from librarian_cli.common import (
    CliError,
    add_json_argument,
    add_org_argument,
    console,
    load_stack,
    positive_int,
    require_documents,
)
from librarian_cli.output import print_json, print_sources_table


def add_search_command(subparsers: Any) -> argparse.ArgumentParser:
    search = subparsers.add_parser(
        "search", help="search an organization's documents; show scores per source"
    )
    search.add_argument("query")
    search.add_argument(
        "--top-k", type=positive_int, default=None, help="sources to show (default LIBRARIAN_TOP_K)"
    )
    add_in_argument(search)
    add_org_argument(search)
    add_json_argument(search)
    return search


def add_in_argument(parser: argparse.ArgumentParser) -> None:
    """`--in PATH` (repeatable): search only these documents of the organization."""
    parser.add_argument(
        "--in",
        dest="paths",
        action="append",
        metavar="PATH",
        default=None,
        help="only search this document (docs/NAME or NAME) of the organization; repeat for several",
    )


def searched_paths(stack: Any, org: str, raw: list[str] | None) -> list[str] | None:
    """The `--in` paths, canonical; a bad or unknown one stops the command with a message naming it."""
    from librarian.retrieval.path_filter import normalise_search_paths, unknown_paths, unknown_paths_message

    paths = normalise_search_paths(raw)
    unknown = unknown_paths(stack.files, org, paths) if paths else []
    if unknown:
        raise CliError(unknown_paths_message(unknown))
    return paths


def cmd_search(args: argparse.Namespace) -> int:
    """The agent's retrieval (same options, same reranker), shown as a table instead of a tool result."""
    stack = load_stack()
    require_documents(stack, args.org)
    from librarian.retrieval.rerankers import make_reranker
    from librarian.retrieval.search import SearchOptions, search

    paths = searched_paths(stack, args.org, args.paths)
    options = SearchOptions.from_settings(stack, top_k=args.top_k, paths=paths)
    result = search(stack, args.org, args.query, options, make_reranker(stack))
    if args.json:
        print_json({"organization": args.org, "query": args.query, **result})
    elif not result["sources"]:
        console().print(f"no relevant excerpts in the documents of {args.org}")
    else:
        print_sources_table(result["sources"])
    return 0
