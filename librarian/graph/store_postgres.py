"""The production graph store engine: the same schema on PostgreSQL (`LIBRARIAN_POSTGRES_URL`).

Statements are shared with SQLite (`librarian.graph.sql`); this module only rewrites `:name`
parameters to psycopg's `%(name)s`, pools connections, and creates the schema once under an advisory
lock (concurrent `CREATE TABLE IF NOT EXISTS` from several workers can otherwise collide).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from librarian.errors import ConfigError
from librarian.graph.schema import statements
from librarian.graph.sql.org_graph import SqlGraphStore

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_SCHEMA_LOCK_KEY = 0x4C49_4252_4752_0001  # "LIBRGR": graph schema migrations
_CONNECT_TIMEOUT_S = 10.0


def to_psycopg(sql: str) -> str:
    """`:name` → `%(name)s` (the statements contain no literal `%`)."""
    return _PARAM.sub(r"%(\1)s", sql)


class _PgCursor:
    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self._cursor.execute(to_psycopg(sql), params)
        return self._cursor.fetchall() if self._cursor.description else []

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None:
        self._cursor.executemany(to_psycopg(sql), rows)


class _PgEngine:
    def __init__(self, url: str, max_size: int = 4) -> None:
        from psycopg_pool import ConnectionPool, PoolTimeout

        from librarian.checkpoint import describe_postgres_url

        describe_postgres_url(url)
        self._pool = ConnectionPool(
            conninfo=url, kwargs={"prepare_threshold": None}, min_size=1, max_size=max_size, open=False
        )
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except PoolTimeout:
            self._pool.close()
            raise ConfigError(
                f"cannot connect to PostgreSQL at {describe_postgres_url(url)} for the graph store: "
                "check LIBRARIAN_POSTGRES_URL and that the server is running"
            ) from None
        with self.transaction() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK_KEY})", {})
            for ddl in statements("postgres"):
                cursor.execute(ddl, {})

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[_PgCursor]:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            yield _PgCursor(cursor)

    def close(self) -> None:
        self._pool.close()


class PostgresGraphStore(SqlGraphStore):
    def __init__(self, url: str) -> None:
        self.engine = _PgEngine(url)
        # a dropped store (a discarded Stack) must not keep its pool's connections and threads
        weakref.finalize(self, self.engine.close)
