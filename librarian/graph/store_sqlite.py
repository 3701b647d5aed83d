"""The embedded graph store engine: one SQLite file in the data directory (`{data_dir}/graph.sqlite`).

One connection per store, shared by threads under a lock (statements are short; WAL lets the CLI and
the server read while the other writes). `lower()` is replaced by Python's `str.lower` so the keyword
search is case-insensitive beyond ASCII, like PostgreSQL's.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from librarian.graph.schema import statements
from librarian.graph.sql.org_graph import SqlGraphStore

PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=OFF")


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


class _SqliteCursor:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None:
        self._conn.executemany(sql, rows)


class _SqliteEngine:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0, isolation_level=None)
        self._conn.create_function("lower", 1, _lower, deterministic=True)
        for pragma in PRAGMAS:
            self._conn.execute(pragma)
        self._lock = threading.RLock()
        with self.transaction() as cursor:
            for ddl in statements("sqlite"):
                cursor.execute(ddl, {})

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[_SqliteCursor]:
        """Writers take the write lock up front (no deadlock on upgrade); readers share a snapshot."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SqliteCursor(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class SqliteGraphStore(SqlGraphStore):
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.engine = _SqliteEngine(self.path)
        weakref.finalize(self, self.engine.close)  # a discarded Stack closes its connection
