"""What every `librarian` subcommand shares: its errors and exit codes, its consoles, and the stack.

Importing this module costs only `librarian.errors`: the parser imports every subcommand module to
register its arguments, so settings, stores and `rich` load only inside the functions that need them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from librarian.errors import LibrarianError

if TYPE_CHECKING:
    from rich.console import Console

    from librarian.stack import Stack
    from services.documents import DocumentService

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


# --- arguments shared by several subcommands ---------------------------------------------------


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_org_argument(parser: argparse.ArgumentParser) -> None:
    """One wording of `--org` everywhere, since every command acts inside one organization."""
    parser.add_argument("--org", required=True, help="organization id (the namespace)")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


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
    from librarian.checkpoint import sync_checkpointer
    from services.documents import DocumentService

    with sync_checkpointer(stack.settings) as checkpointer:
        yield DocumentService(stack, checkpointer)
