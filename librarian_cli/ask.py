"""`librarian ask QUESTION --org ORG [--mode]`: one answer with its citations and their verification.

The answer comes from `services.ask.answer_with_mode`, the path the API's `ask` takes too; this
module only shows it: which `[n]` markers point at which source, and whether each source supports
the sentences that cite it.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from librarian_cli.common import add_json_argument, add_org_argument, console, load_stack, require_documents
from librarian_cli.output import print_json
from librarian_cli.search import add_in_argument, searched_paths

MODES = ["auto", "search", "local", "global", "drift"]
CITED_FIELDS = ("filename", "page", "path")


def add_ask_command(subparsers: Any) -> argparse.ArgumentParser:
    ask = subparsers.add_parser("ask", help="ask the agent a question; show the answer and its citations")
    ask.add_argument("query", metavar="question")
    ask.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="search: the agent; local/global/drift: GraphRAG (drift: a primer over community reports, "
        "then local follow-ups; LIBRARIAN_GRAPH_DRIFT_*); auto (default): chosen from the question",
    )
    budgets = ask.add_argument_group(
        "global search (--mode global)",
        "per-question budgets and map concurrency, within the server's LIBRARIAN_GRAPH_GLOBAL_MAX_* limits",
    )
    for flag, key, what in GLOBAL_FLAGS:
        budgets.add_argument(flag, dest=key, type=int, metavar="N", help=what)
    ask.add_argument(
        "--details",
        action="store_true",
        help="also show what the answer stands on: matched entities, communities, all the evidence",
    )
    add_in_argument(ask)
    add_org_argument(ask)
    add_json_argument(ask)
    return ask


GLOBAL_FLAGS = (
    ("--map-budget", "mapBudget", "tokens of one map prompt (default 8000)"),
    ("--map-reserve", "mapReserve", "of those, kept for the map's output (default 512)"),
    ("--reduce-budget", "reduceBudget", "tokens of the reduce prompt (default 8000)"),
    ("--reduce-reserve", "reduceReserve", "of those, kept for the reduce's output (default 1024)"),
    ("--map-concurrency", "concurrency", "map calls in flight at once (default 4)"),
)


def global_overrides(args: argparse.Namespace) -> dict[str, int] | None:
    """The global search options given on the command line, under graphrag-ts's names."""
    given = {key: getattr(args, key) for _, key, _ in GLOBAL_FLAGS if getattr(args, key, None) is not None}
    return given or None


def cmd_ask(args: argparse.Namespace) -> int:
    """One question (chat model if configured, else extractive) with its citations, by --mode:
    search (the agent), graph local, graph global, graph DRIFT, or auto (chosen from the question)."""
    import asyncio

    stack = load_stack()
    require_documents(stack, args.org)
    from services.ask import answer_with_mode

    overrides = global_overrides(args)
    paths = searched_paths(stack, args.org, getattr(args, "paths", None))
    result = asyncio.run(
        answer_with_mode(stack, args.org, args.query, args.mode, global_overrides=overrides, paths=paths)
    )
    records = result["details"].get("citations") or []
    citations = cited_sources(result["answer"], result["sources"])
    if args.json:
        print_json(
            {
                "organization": args.org,
                "question": args.query,
                "mode": result["mode"],
                "modeChosenBy": result["chosenBy"],
                "status": result["status"],
                "answer": result["answer"],
                "citations": citations,
                "sources": result["sources"],
                "verification": records,
                **({"details": result["details"]} if args.details else {}),
            }
        )
        return 0
    print_answer(result, citations, records)
    if args.details:
        print_details(result["details"])
    return 0


def print_details(details: dict[str, Any]) -> None:
    """The answer's details on request (`--details`): a short answer first, what it stands on after."""
    from rich.text import Text

    entities = [e.get("displayName") or e.get("name", "") for e in details.get("matchedEntities") or []]
    if entities:
        console().print(Text(f"Matched entities: {', '.join(entities)}", style="dim"))
    for community in details.get("communities") or []:
        console().print(Text(f"Community {community['id']}: {community['title']}", style="dim"))
    for n, item in enumerate(details.get("evidence") or [], start=1):
        console().print(Text(f"Evidence {n} ({item.get('kind', '')}): {item.get('text', '')}", style="dim"))


def cited_sources(answer: str, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every `[n]` in the answer with the source it cites (`sources[n - 1]`), in number order.

    A number without a source is kept with its number alone, so the table can show it as such
    instead of hiding a citation that points nowhere.
    """
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer)})
    citations = []
    for n in cited:
        source = sources[n - 1] if 1 <= n <= len(sources) else None
        citations.append({"n": n, **({k: source[k] for k in CITED_FIELDS} if source else {})})
    return citations


def supported_markers(records: list[dict[str, Any]]) -> dict[int, bool]:
    """[n] -> does that source support a sentence citing it (librarian.answers.citations)."""
    backs: dict[int, bool] = {}
    for record in records:
        for evidence in record["evidence"]:
            backs[evidence["marker"]] = backs.get(evidence["marker"], False) or evidence["supported"]
    return backs


def print_answer(result: Any, citations: list[dict[str, Any]], records: list[dict[str, Any]]) -> None:
    from rich.text import Text

    console().print(Text(f"mode: {result['mode']} (chosen by {result['chosenBy']})", style="dim"))
    console().print(Text(result["answer"]))
    if citations:
        print_citations_table(citations, supported_markers(records))
    flagged = [r for r in records if r["action"] != "kept"]
    if flagged:
        action = flagged[0]["action"]
        console().print(f"{len(flagged)} sentence(s) not supported by their cited sources were {action}.")


def print_citations_table(citations: list[dict[str, Any]], backs: dict[int, bool]) -> None:
    from rich.table import Table
    from rich.text import Text

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
