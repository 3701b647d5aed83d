"""Delete receipts kept per organization, so an admin can prove a deletion long after it happened.

Where: the stack's own database, as the graph store chooses it (`librarian.graph.store`): PostgreSQL
when `LIBRARIAN_POSTGRES_URL` is set (the table guarded by row-level security on `org`,
`librarian.pg_tenancy`), else SQLite at `{data_dir}/receipts.sqlite`. A receipt is written once and
never changed; every read names the organization, so one organization never sees another's receipts.

Blocking: call it in a worker thread from async code.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from librarian.receipts.model import Receipt
from librarian.settings import Settings
from librarian.tenancy import validate_organization_id

TABLE = "librarian_delete_receipts"
SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (org TEXT NOT NULL, id TEXT NOT NULL, path TEXT NOT NULL, "
    "deleted_at TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (org, id))"
)
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class ReceiptStore(Protocol):
    def put(self, receipt: Receipt) -> None: ...

    def list(self, org: str, *, path: str | None = None, limit: int = DEFAULT_LIMIT) -> list[Receipt]: ...


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


def _encode(receipt: Receipt) -> dict[str, Any]:
    org = validate_organization_id(receipt.organization_id)
    body = json.dumps(receipt.as_dict(), ensure_ascii=False, sort_keys=True)
    return {
        "org": org,
        "id": receipt.id,
        "path": receipt.path,
        "deleted_at": receipt.deleted_at,
        "body": body,
    }


class SqliteReceiptStore:
    """The embedded default: one SQLite file in the data directory (WAL, so the CLI and a server share it)."""

    def __init__(self, file: Path) -> None:
        self.file = Path(file)
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.file, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def put(self, receipt: Receipt) -> None:
        row = _encode(receipt)
        with self._lock, self._connect() as db:
            db.execute(
                f"INSERT INTO {TABLE} (org, id, path, deleted_at, body) "
                "VALUES (:org, :id, :path, :deleted_at, :body)",
                row,
            )

    def list(self, org: str, *, path: str | None = None, limit: int = DEFAULT_LIMIT) -> list[Receipt]:
        """The organization's receipts, newest first (of one path when `path` is given)."""
        params = {"org": validate_organization_id(org), "path": path, "limit": _limit(limit)}
        where = "org = :org" + (" AND path = :path" if path is not None else "")
        with self._connect() as db:
            rows = db.execute(
                f"SELECT body FROM {TABLE} WHERE {where} ORDER BY deleted_at DESC, id DESC LIMIT :limit",
                params,
            ).fetchall()
        return [Receipt.from_dict(json.loads(body)) for (body,) in rows]


class PostgresReceiptStore:
    """The production store: the same table in `LIBRARIAN_POSTGRES_URL`'s database, guarded by RLS."""

    def __init__(self, url: str) -> None:
        import psycopg

        from librarian.pg_tenancy import guard_table

        self.url = url
        with psycopg.connect(url) as db, db.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (0x4C49_4252_5243_0001,))  # "LIBRRC"
            cursor.execute(SCHEMA)
            guard_table(cursor, TABLE, "org")

    @contextmanager
    def _scoped(self, org: str) -> Iterator[Any]:
        import psycopg

        from librarian.pg_tenancy import bind_organization

        with psycopg.connect(self.url) as db, db.transaction(), db.cursor() as cursor:
            bind_organization(cursor, org)
            yield cursor

    def put(self, receipt: Receipt) -> None:
        row = _encode(receipt)
        with self._scoped(row["org"]) as cursor:
            cursor.execute(
                f"INSERT INTO {TABLE} (org, id, path, deleted_at, body) "
                "VALUES (%(org)s, %(id)s, %(path)s, %(deleted_at)s, %(body)s)",
                row,
            )

    def list(self, org: str, *, path: str | None = None, limit: int = DEFAULT_LIMIT) -> list[Receipt]:
        """The organization's receipts, newest first (of one path when `path` is given)."""
        params = {"org": validate_organization_id(org), "path": path, "limit": _limit(limit)}
        where = "org = %(org)s" + (" AND path = %(path)s" if path is not None else "")
        with self._scoped(params["org"]) as cursor:
            rows = cursor.execute(
                f"SELECT body FROM {TABLE} WHERE {where} ORDER BY deleted_at DESC, id DESC LIMIT %(limit)s",
                params,
            ).fetchall()
        return [Receipt.from_dict(json.loads(body)) for (body,) in rows]


def receipt_store(settings: Settings) -> ReceiptStore:
    """PostgreSQL when `LIBRARIAN_POSTGRES_URL` is set, else SQLite at `{data_dir}/receipts.sqlite`."""
    if settings.postgres_url:
        return PostgresReceiptStore(settings.postgres_url)
    return SqliteReceiptStore(settings.data_dir / "receipts.sqlite")
