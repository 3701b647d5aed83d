"""Checkpointer factory: SQLite by default, PostgreSQL when `LIBRARIAN_POSTGRES_URL` is set (DESIGN §3).

Ingest status is the latest checkpoint of a document's thread (DESIGN §2.5), so the checkpointer is
the documents table. Every factory is a context manager because each saver owns connections that
must be closed, and `.setup()` is always run so a fresh database works on first use.

Schema migrations are serialised with a PostgreSQL advisory lock: the server's workers, the CLI and
tests all call `.setup()` at start-up, and the library's migrations are not safe to run concurrently.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from librarian.errors import ConfigError
from librarian.settings import Settings

# Arbitrary constant naming "librarian checkpoint migrations" among advisory locks.
_SETUP_LOCK_KEY = 0x4C49_4252_4350_0001
_CONNECT_TIMEOUT_S = 10.0
_MIGRATION_WAIT_S = 300.0  # index builds on a large existing table can take minutes
_MIGRATION_POLL_S = 0.05


def _pool_kwargs() -> dict[str, Any]:
    """What `PostgresSaver` needs from pooled connections.

    Autocommit because its migrations run `CREATE INDEX CONCURRENTLY`; no prepared statements so it
    works behind pgbouncer; dict rows because its queries read columns by name.
    """
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def describe_postgres_url(url: str) -> str:
    """`user@host:port/db` without the password, for error messages and logs."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except ProgrammingError:
        raise ConfigError("LIBRARIAN_POSTGRES_URL is not a valid PostgreSQL connection string") from None
    user, host = parts.get("user") or "?", parts.get("host") or "localhost"
    return f"{user}@{host}:{parts.get('port') or 5432}/{parts.get('dbname') or '?'}"


def _unreachable(url: str) -> ConfigError:
    return ConfigError(
        f"cannot connect to PostgreSQL at {describe_postgres_url(url)}: "
        "check LIBRARIAN_POSTGRES_URL and that the server is running"
    )


# --- SQLite (embedded default)


# Write-ahead log, synced at checkpoints rather than on every commit: a graph commits several
# checkpoints per document, and a full sync each cost most of the per-file overhead of ingesting small
# files. A crashed process still loses nothing committed; only a power cut can drop the latest commits,
# and the ingest graph is built to be re-run.
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")


def _sqlite_connection(settings: Settings) -> sqlite3.Connection:
    path = settings.sqlite_path
    path.parent.mkdir(parents=True, exist_ok=True)
    # SqliteSaver serialises access with its own lock, so sharing the connection across threads is safe.
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
    for pragma in SQLITE_PRAGMAS:
        conn.execute(pragma)
    return conn


@contextmanager
def _sqlite_saver(settings: Settings) -> Iterator[BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = _sqlite_connection(settings)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


@asynccontextmanager
async def _async_sqlite_saver(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    settings.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(settings.sqlite_path), timeout=30.0) as conn:
        for pragma in SQLITE_PRAGMAS:
            await conn.execute(pragma)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver


# --- PostgreSQL (production)


@contextmanager
def _migration_lock(url: str) -> Iterator[None]:
    """Hold the migration advisory lock on a side connection while the saver migrates.

    Waiters poll `pg_try_advisory_lock` instead of blocking in `pg_advisory_lock`: a blocked call is
    an open transaction, and the holder's `CREATE INDEX CONCURRENTLY` waits for every open
    transaction to end, which would deadlock (unseen by PostgreSQL, as the cycle runs through us).
    """
    import psycopg

    deadline = time.monotonic() + _MIGRATION_WAIT_S
    with psycopg.connect(url, autocommit=True, connect_timeout=int(_CONNECT_TIMEOUT_S)) as conn:
        while not conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK_KEY,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise _migration_timeout(url)
            time.sleep(_MIGRATION_POLL_S)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))


@asynccontextmanager
async def _async_migration_lock(url: str) -> AsyncIterator[None]:
    """Async twin of `_migration_lock`."""
    import psycopg

    deadline = time.monotonic() + _MIGRATION_WAIT_S
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=int(_CONNECT_TIMEOUT_S)
    )
    async with conn:
        while True:
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK_KEY,))
            row = await cursor.fetchone()
            if row and row[0]:
                break
            if time.monotonic() > deadline:
                raise _migration_timeout(url)
            await asyncio.sleep(_MIGRATION_POLL_S)
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))


def _migration_timeout(url: str) -> ConfigError:
    return ConfigError(
        f"timed out after {_MIGRATION_WAIT_S:.0f} s waiting for another process's checkpoint "
        f"migrations on {describe_postgres_url(url)}"
    )


@contextmanager
def postgres_saver(url: str, *, max_size: int = 10) -> Iterator[BaseCheckpointSaver]:
    """A `PostgresSaver` over a connection pool, schema set up, pool closed on exit."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool, PoolTimeout

    describe_postgres_url(url)  # fail fast, and clearly, on a malformed URL
    pool = ConnectionPool(conninfo=url, kwargs=_pool_kwargs(), min_size=1, max_size=max_size, open=False)
    try:
        try:
            pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except PoolTimeout:
            raise _unreachable(url) from None
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        with _migration_lock(url):
            saver.setup()
        yield saver
    finally:
        pool.close()


@asynccontextmanager
async def async_postgres_saver(url: str, *, max_size: int = 10) -> AsyncIterator[BaseCheckpointSaver]:
    """An `AsyncPostgresSaver` over an async pool, schema set up, pool closed on exit."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    describe_postgres_url(url)
    pool = AsyncConnectionPool(conninfo=url, kwargs=_pool_kwargs(), min_size=1, max_size=max_size, open=False)
    try:
        try:
            await pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except PoolTimeout:
            raise _unreachable(url) from None
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        async with _async_migration_lock(url):
            await saver.setup()
        yield saver
    finally:
        await pool.close()


# --- public factories


@contextmanager
def sync_checkpointer(settings: Settings) -> Iterator[BaseCheckpointSaver]:
    """The configured checkpointer for synchronous graphs (CLI, notebooks, worker threads)."""
    if settings.postgres_url:
        with postgres_saver(settings.postgres_url) as saver:
            yield saver
    else:
        with _sqlite_saver(settings) as saver:
            yield saver


@asynccontextmanager
async def async_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    """The configured checkpointer for async graphs and servers."""
    if settings.postgres_url:
        async with async_postgres_saver(settings.postgres_url) as saver:
            yield saver
    else:
        async with _async_sqlite_saver(settings) as saver:
            yield saver


@asynccontextmanager
async def server_checkpointer() -> AsyncIterator[BaseCheckpointSaver]:
    """Factory for langgraph.json's `"checkpointer"` (`./librarian/checkpoint.py:server_checkpointer`).

    The server's checkpoints are the document statuses, so they must survive a crash on every
    runtime: `langgraph dev`'s own in-memory checkpointer is a pickle saved every 10 s (and, in
    langgraph-runtime-inmem 0.36, not at all after the first state read), so a kill -9 lost them.
    The LangGraph server enters this once per event loop and keeps the saver for its lifetime. It
    takes no arguments, so it reads the settings itself and chooses as the CLI does: PostgreSQL at
    `LIBRARIAN_POSTGRES_URL`, else SQLite at `LIBRARIAN_DATA_DIR/checkpoints.sqlite` (the CLI's file;
    server threads have uuid5 ids, the CLI's `org:path`, so neither reads the other's statuses).
    """
    _save_dev_records_often()
    async with async_checkpointer(Settings()) as saver:
        yield saver


# How often `langgraph dev` saves its thread and run records (its default is every 10 s).
DEV_RECORDS_SAVE_S = 1.0


def _save_dev_records_often() -> None:
    """In `langgraph dev`'s in-memory runtime, save the thread and run records every second.

    The runtime pickles them periodically, so a kill -9 loses what changed since the last save: a run
    whose completion was lost is run again after the restart (same result, but the document reads
    queued and running meanwhile), and a run whose start was lost never happens (its document reads
    `failed`, error `interrupted`: see `ServerRuns.state`). A shorter period narrows that window; the
    cost is pickling the (small, dev-sized) records once a second. The period is a private module
    variable the runtime's save loop reads on every round. Other runtimes keep records in PostgreSQL.
    """
    if os.environ.get("LANGGRAPH_RUNTIME_EDITION") != "inmem":
        return
    try:
        from langgraph_runtime_inmem import _persistence
    except ImportError:
        return
    _persistence._flush_interval = DEV_RECORDS_SAVE_S


async def server_saver() -> BaseCheckpointSaver:
    """The running LangGraph server's own checkpointer; only inside the server process.

    For readers that must not depend on the server's thread record: the dev server saves its thread
    and run records periodically, so a crash can lose the newest, while the checkpoints
    (`server_checkpointer`) are committed as they are written. `get_checkpointer` is langgraph-api's
    (private, 0.16) accessor: the saver the server's own runs and state reads use, per event loop.
    """
    from langgraph_api._checkpointer import get_checkpointer

    return await get_checkpointer()
