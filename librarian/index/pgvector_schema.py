"""The pgvector index's tables, and its embedding contract recorded in the database itself.

One table holds every namespace's chunks, one row per record: the dense `vector`, the sparse vector
(see `pgvector_sparse`), and the metadata as `jsonb`. A second table, shared by every index in the
database, records the contract each chunks table was built with; a table is never created without
its contract row, in the same transaction.

Opening an index runs under a transaction-scoped advisory lock, so processes that open the same
index at once create it exactly once, and the loser checks the winner's contract. A mismatch raises
before anything is created or changed (the transaction is rolled back), naming both contracts.

The chunks table is guarded by row-level security on `ns` (`librarian.pg_tenancy`), added to a new
table at creation and to an older one the first time its owner opens it; the contracts table holds
no organization's data and has none.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

from psycopg import sql

from librarian.errors import ConfigError, ContractMismatchError
from librarian.index.base import EmbeddingContract
from librarian.index.contract import contract_from_json
from librarian.index.pgvector_sparse import BUCKETS, SPARSE_DIMENSIONS
from librarian.pg_tenancy import guard_table

CONTRACTS_TABLE = "librarian_index_contracts"
DEFAULT_TABLE = "librarian_chunks"
MIN_PGVECTOR = (0, 8, 0)  # sparsevec (0.7) and HNSW iterative scans (0.8)
_TABLE_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,47}$")
# "LIBRPV": one lock for every pgvector schema change (the contracts table is shared by all indexes)
SCHEMA_LOCK_KEY = 0x4C49_4252_5056_0001


def check_table_name(name: str) -> str:
    """A table name that needs no quoting surprises (lower-case identifier, short enough for suffixes)."""
    if not isinstance(name, str) or not _TABLE_PATTERN.fullmatch(name):
        raise ConfigError(
            f"pgvector table name {name!r} must be 1-48 lower-case letters, digits or '_', "
            "not starting with a digit"
        )
    return name


def ensure_schema(cursor: Any, table: str, contract: EmbeddingContract) -> None:
    """Check the recorded contract, creating the tables (and recording it) for a new index.

    Runs inside the caller's transaction; raising rolls back everything this call did.
    """
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
    _ensure_extension(cursor)
    recorded = read_contract(cursor, table)
    if recorded is not None and recorded != contract:
        raise ContractMismatchError(
            f"the pgvector table {table!r} was built with {recorded.describe()}, but the configured "
            f"embedders are {contract.describe()}; set LIBRARIAN_PGVECTOR_TABLE to a new table name "
            "and run `librarian reindex --org ORG` for each organization (it re-embeds from the cached "
            "parses; the old table stays until you drop it), or configure the embedders the table "
            "was built with"
        )
    exists = _table_exists(cursor, table)
    if recorded is None and exists:
        raise ContractMismatchError(
            f"the pgvector table {table!r} has data but no recorded embedding contract; "
            f"cannot tell whether it matches {contract.describe()}"
        )
    if recorded is None:
        _create(cursor, table, contract)
    else:
        _check_dimension(cursor, table, contract)
    guard_table(cursor, table, "ns")


def read_contract(cursor: Any, table: str) -> EmbeddingContract | None:
    """The contract recorded for `table`, or None (no contracts table, or no row for it)."""
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (CONTRACTS_TABLE,))
    if not cursor.fetchone()[0]:
        return None
    cursor.execute(
        sql.SQL("SELECT contract::text FROM {} WHERE table_name = %s").format(
            sql.Identifier(CONTRACTS_TABLE)
        ),
        (table,),
    )
    row = cursor.fetchone()
    return None if row is None else contract_from_json(row[0])


def _ensure_extension(cursor: Any) -> None:
    cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = cursor.fetchone()
    if row is None:
        try:
            cursor.execute("SAVEPOINT librarian_vector")
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor.execute("RELEASE SAVEPOINT librarian_vector")
        except Exception as exc:
            cursor.execute("ROLLBACK TO SAVEPOINT librarian_vector")
            raise ConfigError(
                "LIBRARIAN_VECTOR_INDEX=pgvector needs the pgvector extension in this database, and it "
                f"could not be created ({exc}); run `CREATE EXTENSION vector` as a superuser"
            ) from None
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    version = tuple(int(p) for p in re.findall(r"\d+", row[0])[:3])
    if version < MIN_PGVECTOR:
        raise ConfigError(
            f"pgvector {row[0]} is installed; LIBRARIAN_VECTOR_INDEX=pgvector needs "
            f"{'.'.join(map(str, MIN_PGVECTOR))} or later (ALTER EXTENSION vector UPDATE)"
        )


def _table_exists(cursor: Any, table: str) -> bool:
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
    return bool(cursor.fetchone()[0])


def _check_dimension(cursor: Any, table: str, contract: EmbeddingContract) -> None:
    """The dense column's declared dimension must be the contract's (as LanceDB's check does)."""
    cursor.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'dense'",
        (table,),
    )
    row = cursor.fetchone()
    found = row[0] if row else None
    if found != contract.dimension:
        raise ContractMismatchError(
            f"the pgvector table {table!r} stores {found if found is not None else 'no'}-dimensional "
            f"vectors, but the configured contract is {contract.describe()}"
        )


def _create(cursor: Any, table: str, contract: EmbeddingContract) -> None:
    """Tables and indexes of a new index, and its contract row, in the caller's transaction.

    Storage: `dense` is PLAIN (never compressed or moved out of the row) and the sparse buckets
    MAIN (kept in the row when possible), so the scoring columns are read with the heap page; the
    metadata, which holds the chunk's text, may move to TOAST and is only read for the rows
    returned (or for a filter). Measured on 100k rows: an exact scan with an out-of-line dense
    column cost 5x the in-row one.
    """
    t = sql.Identifier(table)
    buckets = sql.SQL(", ").join(
        sql.SQL("{} sparsevec({}) NOT NULL").format(sql.Identifier(f"sp{b}"), sql.Literal(SPARSE_DIMENSIONS))
        for b in range(BUCKETS)
    )
    statements = [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {contracts} (table_name text PRIMARY KEY, contract jsonb NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT now())"
        ).format(contracts=sql.Identifier(CONTRACTS_TABLE)),
        sql.SQL(
            "CREATE TABLE {t} (ns text NOT NULL, id text NOT NULL, dense vector({dim}) NOT NULL, "
            "{buckets}, terms bigint[] NOT NULL, weights real[] NOT NULL, metadata jsonb NOT NULL, "
            "PRIMARY KEY (ns, id))"
        ).format(t=t, dim=sql.Literal(contract.dimension), buckets=buckets),
        sql.SQL("ALTER TABLE {t} ALTER COLUMN dense SET STORAGE PLAIN").format(t=t),
        *(
            sql.SQL("ALTER TABLE {t} ALTER COLUMN {c} SET STORAGE MAIN").format(
                t=t, c=sql.Identifier(f"sp{b}")
            )
            for b in range(BUCKETS)
        ),
        sql.SQL("CREATE INDEX {i} ON {t} USING hnsw (dense vector_ip_ops)").format(
            i=sql.Identifier(f"{table}_dense_hnsw"), t=t
        ),
        sql.SQL("CREATE INDEX {i} ON {t} USING gin (terms)").format(
            i=sql.Identifier(f"{table}_terms_gin"), t=t
        ),
        sql.SQL("CREATE INDEX {i} ON {t} (ns, (metadata->>'path'))").format(
            i=sql.Identifier(f"{table}_path"), t=t
        ),
        sql.SQL("INSERT INTO {contracts} (table_name, contract) VALUES (%s, %s::jsonb)").format(
            contracts=sql.Identifier(CONTRACTS_TABLE)
        ),
    ]
    for statement in statements[:-1]:
        cursor.execute(statement)
    cursor.execute(statements[-1], (table, json.dumps(asdict(contract))))
