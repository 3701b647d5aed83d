"""The `librarian` command line: ingest folders, show status, delete, reindex, search and ask.

It lives beside `server.py` rather than in `librarian/` because it drives the services and graphs,
and `librarian/` must not import them. One module per subcommand; `commands.main` (the `librarian`
entry point in pyproject.toml) assembles them.
"""

from __future__ import annotations

from librarian_cli.commands import main

__all__ = ["main"]
