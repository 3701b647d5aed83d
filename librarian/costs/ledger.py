"""The cost ledger's storage: one small table in the graph store's database (SQLite or PostgreSQL).

Rows are running totals per (organization, build, phase): `build` is a graph build's id for the
calls a build made (its budget reads them), '' for everything else (questions). The table is created
idempotently on first use, like the graph schema; on PostgreSQL it gets the same row-level security
keyed by `org` as every graph table. Every statement names the organization.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any

from librarian.costs.scope import PHASES, Phase
from librarian.graph.store_interface import GraphStore
from librarian.tenancy import validate_organization_id

TABLE = "cost_ledger"
_DDL = """CREATE TABLE IF NOT EXISTS cost_ledger (
  org TEXT NOT NULL, build TEXT NOT NULL, phase TEXT NOT NULL,
  calls INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  seconds {REAL} NOT NULL,
  PRIMARY KEY (org, build, phase))"""
_UPSERT = """INSERT INTO cost_ledger (org, build, phase, calls, input_tokens, output_tokens, seconds)
VALUES (:org, :build, :phase, :calls, :input_tokens, :output_tokens, :seconds)
ON CONFLICT (org, build, phase) DO UPDATE SET
  calls = cost_ledger.calls + excluded.calls,
  input_tokens = cost_ledger.input_tokens + excluded.input_tokens,
  output_tokens = cost_ledger.output_tokens + excluded.output_tokens,
  seconds = cost_ledger.seconds + excluded.seconds"""
_ensured: set[int] = set()
_ensure_lock = threading.Lock()


@dataclass
class PhaseCost:
    """What one phase spent: model calls, provider-reported tokens, wall seconds."""

    phase: str
    calls: int = 0
    inputTokens: int = 0
    outputTokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.inputTokens + self.outputTokens


def _is_postgres(store: Any) -> bool:
    return type(store).__name__ == "PostgresGraphStore"


def _ensure_table(store: Any) -> None:
    """Create the table once per store engine (and guard it on PostgreSQL)."""
    key = id(store.engine)
    if key in _ensured:
        return
    with _ensure_lock:
        if key in _ensured:
            return
        postgres = _is_postgres(store)
        with store.engine.transaction() as cursor:
            cursor.execute(_DDL.replace("{REAL}", "DOUBLE PRECISION" if postgres else "REAL"), {})
            if postgres:
                from librarian.pg_tenancy import guard_table

                guard_table(cursor._cursor, TABLE, "org")  # the raw psycopg cursor, as the store's own DDL
        _ensured.add(key)


class CostLedger:
    """Records and reads usage per organization and phase in `store`'s database."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def _engine(self, org: str) -> Any:
        _ensure_table(self._store)
        engine_for = getattr(self._store, "engine_for", None)
        return engine_for(org) if engine_for else self._store.engine  # type: ignore[attr-defined]

    def record(
        self,
        org: str,
        phase: Phase,
        *,
        calls: int,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
        build: str = "",
    ) -> None:
        org = validate_organization_id(org)
        row = {
            "org": org,
            "build": build,
            "phase": phase,
            "calls": calls,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "seconds": seconds,
        }
        with self._engine(org).transaction() as cursor:
            cursor.execute(_UPSERT, row)

    def phases(self, org: str, *, build: str | None = None) -> list[PhaseCost]:
        """Every phase in order, zeros included: all of `org`'s calls, or one build's."""
        org = validate_organization_id(org)
        sql = (
            "SELECT phase, SUM(calls), SUM(input_tokens), SUM(output_tokens), SUM(seconds) "
            "FROM cost_ledger WHERE org = :org"
        )
        params: dict[str, Any] = {"org": org}
        if build is not None:
            sql += " AND build = :build"
            params["build"] = build
        with self._engine(org).transaction(write=False) as cursor:
            rows = cursor.execute(sql + " GROUP BY phase", params)
        found = {r[0]: r for r in rows}
        out = []
        for phase in PHASES:
            row = found.get(phase)
            if row is None:
                out.append(PhaseCost(phase))
            else:
                out.append(PhaseCost(phase, int(row[1]), int(row[2]), int(row[3]), round(float(row[4]), 3)))
        return out

    def build_tokens(self, org: str, build: str) -> int:
        """Input plus output tokens a build has spent so far (for its budget)."""
        return sum(p.tokens for p in self.phases(org, build=build))

    def report(self, org: str) -> dict[str, Any]:
        """GET /orgs/{org}/graph/costs and `librarian graph status`: per-phase totals and their sum."""
        phases = self.phases(org)
        return {
            "organization_id": validate_organization_id(org),
            "phases": [asdict(p) for p in phases],
            "totals": {
                "calls": sum(p.calls for p in phases),
                "inputTokens": sum(p.inputTokens for p in phases),
                "outputTokens": sum(p.outputTokens for p in phases),
                "seconds": round(sum(p.seconds for p in phases), 3),
            },
        }


def ledger_of(stack: Any) -> CostLedger:
    """The ledger in the stack's graph store database."""
    return CostLedger(stack.graph_store)
