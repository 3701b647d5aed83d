"""Where an organization's judged questions and accepted gate runs are kept.

Like the graph store: PostgreSQL when `LIBRARIAN_POSTGRES_URL` is set (so every replica of a
deployment gates against the same baseline), else SQLite at `{data_dir}/eval-gate.sqlite`. Both
engines run the same statements; every statement names the organization, and on PostgreSQL
row-level security (`librarian.pg_tenancy`) admits only the bound organization's rows as well.

Accepted runs are never overwritten: accepting appends, and the gate compares with the newest, so
the history of baselines (and the configuration of each) stays readable.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from librarian.evaluation.gate.questions import JudgedQuestion
from librarian.settings import Settings
from librarian.tenancy import validate_organization_id

QUESTIONS_TABLE = "librarian_eval_gate_questions"
RUNS_TABLE = "librarian_eval_gate_runs"
_SCHEMA_LOCK_KEY = 0x4C49_4252_4754_0001  # "LIBRGT": eval gate schema


def _schema(serial: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {QUESTIONS_TABLE} (org TEXT PRIMARY KEY, source TEXT NOT NULL, "
        "uploaded_at TEXT NOT NULL, questions TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {RUNS_TABLE} (id {serial} PRIMARY KEY, org TEXT NOT NULL, "
        "accepted_at TEXT NOT NULL, digest TEXT NOT NULL, record TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {RUNS_TABLE}_org ON {RUNS_TABLE} (org, id)",
    ]


@dataclass(frozen=True)
class StoredQuestions:
    questions: list[JudgedQuestion]
    source: str
    uploaded_at: str


@dataclass(frozen=True)
class AcceptedRun:
    id: int
    accepted_at: str
    record: dict[str, Any]  # metrics, fingerprint, questions digest, per-question results


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class GateStore(ABC):
    """Judged questions (one set per organization, replaced on upload) and accepted runs (appended)."""

    @abstractmethod
    def _run(self, org: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One statement in one transaction scoped to `org`; `%s` placeholders."""

    def save_questions(self, org: str, questions: list[JudgedQuestion], source: str) -> StoredQuestions:
        validate_organization_id(org)
        body = json.dumps([q.to_json() for q in questions], ensure_ascii=False)
        at = now_iso()
        self._run(
            org,
            f"INSERT INTO {QUESTIONS_TABLE} (org, source, uploaded_at, questions) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (org) DO UPDATE SET source = excluded.source, uploaded_at = excluded.uploaded_at, "
            "questions = excluded.questions",
            (org, source, at, body),
        )
        return StoredQuestions(questions, source, at)

    def load_questions(self, org: str) -> StoredQuestions | None:
        validate_organization_id(org)
        rows = self._run(
            org, f"SELECT source, uploaded_at, questions FROM {QUESTIONS_TABLE} WHERE org = %s", (org,)
        )
        if not rows:
            return None
        source, at, body = rows[0]
        return StoredQuestions([JudgedQuestion.from_json(q) for q in json.loads(body)], source, at)

    def accept(self, org: str, record: dict[str, Any]) -> AcceptedRun:
        validate_organization_id(org)
        at = now_iso()
        body = json.dumps(record, ensure_ascii=False, default=str)
        digest = str(record.get("fingerprint", {}).get("digest", ""))
        self._run(
            org,
            f"INSERT INTO {RUNS_TABLE} (org, accepted_at, digest, record) VALUES (%s, %s, %s, %s)",
            (org, at, digest, body),
        )
        accepted = self.last_accepted(org)
        assert accepted is not None  # just written, in this organization's scope
        return accepted

    def last_accepted(self, org: str) -> AcceptedRun | None:
        validate_organization_id(org)
        rows = self._run(
            org,
            f"SELECT id, accepted_at, record FROM {RUNS_TABLE} WHERE org = %s ORDER BY id DESC LIMIT 1",
            (org,),
        )
        return AcceptedRun(int(rows[0][0]), rows[0][1], json.loads(rows[0][2])) if rows else None


class SqliteGateStore(GateStore):
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            for ddl in _schema("INTEGER"):
                conn.execute(ddl)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def _run(self, org: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        conn = self._connect()
        try:
            with conn:
                return conn.execute(sql.replace("%s", "?"), params).fetchall()
        finally:
            conn.close()


class PostgresGateStore(GateStore):
    def __init__(self, url: str) -> None:
        import psycopg

        from librarian.checkpoint import describe_postgres_url
        from librarian.errors import ConfigError
        from librarian.pg_tenancy import guard_table

        self.url = url
        try:
            with psycopg.connect(url, connect_timeout=10) as conn, conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
                for ddl in _schema("BIGSERIAL"):
                    cur.execute(ddl)
                for table in (QUESTIONS_TABLE, RUNS_TABLE):
                    guard_table(cur, table, "org")
        except psycopg.OperationalError:
            raise ConfigError(
                f"cannot connect to PostgreSQL at {describe_postgres_url(url)} for the eval gate: "
                "check LIBRARIAN_POSTGRES_URL and that the server is running"
            ) from None

    def _run(self, org: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        import psycopg

        from librarian.pg_tenancy import bind_organization

        with psycopg.connect(self.url, connect_timeout=10) as conn, conn.transaction(), conn.cursor() as cur:
            bind_organization(cur, org)
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []


def open_gate_store(settings: Settings) -> GateStore:
    """PostgreSQL when `LIBRARIAN_POSTGRES_URL` is set, else SQLite in the data directory."""
    if settings.postgres_url:
        return PostgresGateStore(settings.postgres_url)
    return SqliteGateStore(settings.data_dir / "eval-gate.sqlite")
