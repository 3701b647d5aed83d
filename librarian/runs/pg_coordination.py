"""Coordination of document runs across processes, in PostgreSQL (see `librarian.runs.coordination`).

Locks are session-level advisory locks on `hashtextextended(name, 0)`, one name space per purpose
(`run:`, `fence:`, `turn:`, `slot:`), so a process holding a path's run lock can still take its fence.
A lock held for longer than a statement (a run's lock, a turn, a quota slot) owns a connection of its
own, so it is freed exactly when the holder releases it or its process dies; short checks (epochs,
fences, "is this lock held") borrow a pooled connection. Everything here is blocking psycopg, usable
from any thread and any event loop (async callers go through `asyncio.to_thread`).

The two tables name organizations' document paths, so they carry row-level security keyed by
`organization_id` (`librarian.pg_tenancy`): every statement on them runs in a transaction bound to
its organization (`_organization`), never in a bare autocommit statement, where the setting would
not reach it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from librarian.pg_tenancy import bind_organization, guard_table, warn_if_unguarded

logger = logging.getLogger(__name__)

# One lock names the schema set-up, so replicas starting together do not race on CREATE TABLE.
_SETUP_LOCK = "librarian:coordination:setup"
_ORGANIZATION_TABLES = ("librarian_path_epochs", "librarian_graph_requests")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS librarian_path_epochs (
    organization_id text NOT NULL,
    path text NOT NULL,
    epoch bigint NOT NULL,
    PRIMARY KEY (organization_id, path)
);
CREATE TABLE IF NOT EXISTS librarian_graph_requests (
    organization_id text PRIMARY KEY,
    requested bigint NOT NULL DEFAULT 0,
    started bigint NOT NULL DEFAULT 0,
    queued_by text,
    queued_job text
);
ALTER TABLE librarian_graph_requests ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false
"""
# A 64-bit advisory key is shown in pg_locks as classid (high 32 bits) and objid (low 32 bits).
_HELD = """
SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND classid::bigint = ((hashtextextended(%(name)s, 0) >> 32) & 4294967295)
      AND objid::bigint = (hashtextextended(%(name)s, 0) & 4294967295)
)
"""
POLL_FIRST_S, POLL_MAX_S = 0.01, 0.2  # waiting for a lock another process holds


def _name(kind: str, org: str, key: str) -> str:
    return f"librarian:{kind}:{org}:{key}"


class HeldLock:
    """A session advisory lock on a connection of its own; closing the connection frees it."""

    def __init__(self, conn: Any) -> None:
        self._conn: Any = conn
        self._guard = threading.Lock()

    def share(self, name: str) -> None:
        """Also hold `name` in shared mode on this connection (released with the lock)."""
        with self._guard:
            if self._conn is not None:
                self._conn.execute("SELECT pg_advisory_lock_shared(hashtextextended(%s, 0))", (name,))

    def release(self) -> None:
        with self._guard:
            conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            # Unlock first: a closed connection's backend exits a moment later, and the lock with it.
            conn.execute("SELECT pg_advisory_unlock_all()")
        except Exception:  # already broken: the lock went with the connection
            logger.debug("unlocking on a lock connection failed", exc_info=True)
        finally:
            conn.close()


class PostgresCoordination:
    """The rules of `Coordination`, held by PostgreSQL for every process that uses the same database."""

    shared = True

    def __init__(self, url: str, *, pool_size: int = 8) -> None:
        from psycopg_pool import ConnectionPool

        from librarian.checkpoint import describe_postgres_url

        self._where = describe_postgres_url(url)  # a malformed URL is a clear ConfigError, not a retry loop
        self._url = url
        self._process = f"librarian:process:{uuid.uuid4()}"  # held while this process lives
        self._alive: HeldLock | None = None
        self._alive_guard = threading.Lock()
        self._pool = ConnectionPool(
            url, min_size=0, max_size=pool_size, kwargs={"autocommit": True}, open=True, name="coordination"
        )
        self._setup()

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self._url, autocommit=True)

    def _setup(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_SETUP_LOCK,))
            conn.execute(_SCHEMA)
            for table in _ORGANIZATION_TABLES:
                guard_table(conn, table, "organization_id")
            warn_if_unguarded(conn, self._where)

    @contextmanager
    def _organization(self, org: str) -> Iterator[Any]:
        """A pooled connection in a transaction that row-level security binds to `org`."""
        with self._pool.connection() as conn, conn.transaction():
            bind_organization(conn, org)
            yield conn

    def close(self) -> None:
        with self._alive_guard:
            alive, self._alive = self._alive, None
        if alive is not None:
            alive.release()
        self._pool.close()

    def _announce(self) -> str:
        """This process's liveness lock (taken once): what it queues is void once it has died."""
        with self._alive_guard:
            if self._alive is None:
                self._alive = self._try(self._process)
            return self._process

    # --- graph builds ---------------------------------------------------------------------------------

    def request_graph_build(self, org: str, job_id: str) -> tuple[int, str | None]:
        """Ask for a build of `org`'s graph: (this request's number, None), or (0, the queued job's id)
        when a build queued by a live process has not started yet, since it will see this change."""
        process = self._announce()
        with self._organization(org) as conn:
            conn.execute(
                "INSERT INTO librarian_graph_requests (organization_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (org,),
            )
            requested, started, queued_by, queued_job = conn.execute(
                "SELECT requested, started, queued_by, queued_job FROM librarian_graph_requests "
                "WHERE organization_id = %s FOR UPDATE",
                (org,),
            ).fetchone()
            if requested > started and queued_by and queued_job and self.held(queued_by):
                return 0, str(queued_job)
            conn.execute(
                "UPDATE librarian_graph_requests SET requested = %s, queued_by = %s, queued_job = %s "
                "WHERE organization_id = %s",
                (requested + 1, process, job_id, org),
            )
            return requested + 1, None

    def start_graph_build(self, org: str, request: int) -> bool:
        """A build of request `request` starts: it covers every request made so far. False when a
        build that started since covered it (the job is void)."""
        with self._organization(org) as conn:
            row = conn.execute(
                "UPDATE librarian_graph_requests "
                "SET started = requested, queued_by = NULL, queued_job = NULL, cancel_requested = false "
                "WHERE organization_id = %s AND started < %s RETURNING 1",
                (org, request),
            ).fetchone()
        return row is not None

    # --- epochs ---------------------------------------------------------------------------------------

    def bump(self, org: str, path: str) -> int:
        with self._organization(org) as conn:
            row = conn.execute(
                "INSERT INTO librarian_path_epochs (organization_id, path, epoch) VALUES (%s, %s, 1) "
                "ON CONFLICT (organization_id, path) DO UPDATE "
                "SET epoch = librarian_path_epochs.epoch + 1 RETURNING epoch",
                (org, path),
            ).fetchone()
        return int(row[0])

    def epoch(self, org: str, path: str) -> int:
        with self._organization(org) as conn:
            row = conn.execute(
                "SELECT epoch FROM librarian_path_epochs WHERE organization_id = %s AND path = %s",
                (org, path),
            ).fetchone()
        return int(row[0]) if row else 0

    def superseded(self, org: str, path: str, epoch: int | None) -> bool:
        return epoch is not None and self.epoch(org, path) != epoch

    def cancel_graph_build(self, org: str) -> tuple[bool, str | None]:
        """An admin's cancel, from any process: (a build runs on some process and was asked to stop,
        the id of the queued build it voided)."""
        running = self.held(_name("graph", org, ""))
        with self._organization(org) as conn:
            row = conn.execute(
                "SELECT requested, started, queued_job FROM librarian_graph_requests "
                "WHERE organization_id = %s FOR UPDATE",
                (org,),
            ).fetchone()
            if row is None:
                return running, None
            requested, started, queued_job = row
            conn.execute(
                "UPDATE librarian_graph_requests SET started = requested, queued_by = NULL, "
                "queued_job = NULL, cancel_requested = %s WHERE organization_id = %s",
                (running, org),
            )
        return running, (str(queued_job) if requested > started and queued_job else None)

    def graph_cancel_requested(self, org: str) -> bool:
        with self._organization(org) as conn:
            row = conn.execute(
                "SELECT cancel_requested FROM librarian_graph_requests WHERE organization_id = %s", (org,)
            ).fetchone()
        return bool(row and row[0])

    # --- locks ----------------------------------------------------------------------------------------

    def _try(self, *names: str) -> HeldLock | None:
        """The first of `names` that is free, held on a new connection; None if all are taken."""
        conn = self._connect()
        try:
            if self._try_on(conn, names):
                return HeldLock(conn)
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None

    @staticmethod
    def _try_on(conn: Any, names: tuple[str, ...]) -> bool:
        for name in names:
            got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (name,)).fetchone()
            if got and got[0]:
                return True
        return False

    def _wait(self, name: str) -> HeldLock:
        conn = self._connect()
        try:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
        except BaseException:
            conn.close()
            raise
        return HeldLock(conn)

    async def _await(self, *names: str) -> HeldLock:
        """Wait for any of `names` without holding a thread: try on one connection, back off, again
        (a lock here is held for a step, so waits are short and a poll costs one round trip)."""
        conn = await asyncio.to_thread(self._connect)
        pause = POLL_FIRST_S
        try:
            while not await asyncio.to_thread(self._try_on, conn, names):
                await asyncio.sleep(pause)
                pause = min(pause * 2, POLL_MAX_S)
        except BaseException:
            await asyncio.to_thread(conn.close)
            raise
        return HeldLock(conn)

    def held(self, name: str) -> bool:
        with self._pool.connection() as conn:
            row = conn.execute(_HELD, {"name": name}).fetchone()
        return bool(row and row[0])

    def try_run_lock(self, org: str, path: str) -> HeldLock | None:
        held = self._try(_name("run", org, path))
        if held is not None:
            held.share(_name("ingests", org, ""))
        return held

    @contextmanager
    def run_lock(self, org: str, path: str) -> Iterator[HeldLock]:
        held = self._wait(_name("run", org, path))
        try:
            held.share(_name("ingests", org, ""))
            yield held
        finally:
            held.release()

    def ingests_running(self, org: str) -> bool:
        """Whether a run of any of the organization's documents is live on any process: each holds
        the organization's `ingests` lock in shared mode beside its path's run lock."""
        return self.held(_name("ingests", org, ""))

    def try_graph_lock(self, org: str) -> HeldLock | None:
        return self._try(_name("graph", org, ""))

    def run_lock_held(self, org: str, path: str) -> bool:
        return self.held(_name("run", org, path))

    @contextmanager
    def fence(self, org: str, path: str) -> Iterator[None]:
        """A transaction-level lock: held while the block runs, freed at commit (or when the
        connection dies), so a run's epoch check and its vector write are one step for every process."""
        with self._pool.connection() as conn, conn.transaction():
            name = _name("fence", org, path)
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))
            yield

    @asynccontextmanager
    async def turn(self, org: str, path: str) -> AsyncIterator[None]:
        held = await self._await(_name("turn", org, path))
        try:
            yield
        finally:
            await asyncio.to_thread(held.release)

    @asynccontextmanager
    async def org_slot(self, org: str, slots: int) -> AsyncIterator[None]:
        """One of the organization's `slots` slots, whichever process asks."""
        held = await self._await(*(_name("slot", org, str(index)) for index in range(max(1, slots))))
        try:
            yield
        finally:
            await asyncio.to_thread(held.release)
