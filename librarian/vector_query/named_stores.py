"""Stores a run may pick by name (Mastra's `vectorStoreName`), configured by the server only.

`LIBRARIAN_VECTOR_STORES` lists `name=kind:location` pairs beside the configured index, which is
always `default`. Each store is opened with the embedding contract it recorded (so an archive built
with another embedder can be queried with that embedder, and with no other), once per stack. The
namespace is not part of a store: every store is queried in the run's organization's namespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from librarian.errors import ConfigError
from librarian.index.base import EmbeddingContract, VectorIndex
from librarian.stack import Stack
from librarian.vector_query.errors import UnknownVectorStoreError

DEFAULT_STORE = "default"
STORE_KINDS = ("lancedb", "pgvector", "pinecone")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class StoreSpec:
    """One configured store: its name, its engine and where its data lives (directory, table, index)."""

    name: str
    kind: str
    location: str


def parse_store_specs(text: str) -> dict[str, StoreSpec]:
    """`archive=lancedb:archive, pg=pgvector:old_chunks` by name; a malformed entry is a ConfigError."""
    specs: dict[str, StoreSpec] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, _, target = (s.strip() for s in entry.partition("="))
        kind, _, location = (s.strip() for s in target.partition(":"))
        problem = None
        if not _NAME.fullmatch(name):
            problem = "a name of letters, digits, '_', '.' or '-'"
        elif name == DEFAULT_STORE:
            problem = f"a name other than {DEFAULT_STORE!r} (the configured index)"
        elif name in specs:
            problem = "each name once"
        elif kind not in STORE_KINDS or not location:
            problem = f"name=kind:location with kind one of {', '.join(STORE_KINDS)}"
        if problem:
            raise ConfigError(f"LIBRARIAN_VECTOR_STORES entry {entry!r} is invalid: it needs {problem}")
        specs[name] = StoreSpec(name, kind, location)
    return specs


def store_names(stack: Stack) -> list[str]:
    return [DEFAULT_STORE, *parse_store_specs(stack.settings.vector_stores)]


def named_store(stack: Stack, name: str) -> VectorIndex:
    """The store called `name`, opened once per stack; an unknown name lists the known ones."""
    if name == DEFAULT_STORE:
        return stack.index
    spec = parse_store_specs(stack.settings.vector_stores).get(name)
    if spec is None:
        raise UnknownVectorStoreError(
            f"no vector store named {name!r}; this server has "
            + ", ".join(repr(n) for n in store_names(stack))
        )
    return stack.memo(f"vector_query.store.{name}", lambda: _open(stack, spec))


def _open(stack: Stack, spec: StoreSpec) -> VectorIndex:
    s = stack.settings
    if spec.kind == "lancedb":
        from librarian.index.contract import read_contract
        from librarian.index.lance import LanceVectorIndex

        path = s.data_dir / Path(spec.location)
        contract = read_contract(path) or stack.contract
        return LanceVectorIndex(path, contract=contract, compact_every=s.lance_compact_every)
    if spec.kind == "pgvector":
        from librarian.index.pgvector import PgVectorIndex

        if not s.postgres_url:
            raise ConfigError(
                f"vector store {spec.name!r} is a pgvector table, but LIBRARIAN_POSTGRES_URL is not set"
            )
        contract = _pg_contract(s.postgres_url, spec.location) or stack.contract
        return PgVectorIndex(
            s.postgres_url, contract=contract, table=spec.location, exact_limit=s.pgvector_exact_limit
        )
    from librarian.index.pinecone import PineconeVectorIndex

    if not s.pinecone_api_key:
        raise ConfigError(f"vector store {spec.name!r} is a Pinecone index, but PINECONE_API_KEY is not set")
    # Pinecone keeps the contract in the index's tags and refuses a mismatch itself.
    return PineconeVectorIndex(
        api_key=s.pinecone_api_key,
        index_name=spec.location,
        contract=stack.contract,
        host=s.pinecone_host,
        cloud=s.pinecone_cloud,
        region=s.pinecone_region,
        batch_size=s.upsert_batch_size,
        max_request_bytes=s.pinecone_upsert_max_bytes,
        score_breakdown=s.pinecone_score_breakdown,
    )


def _pg_contract(url: str, table: str) -> EmbeddingContract | None:
    """The contract recorded for `table` (None for a table not created yet)."""
    import psycopg

    from librarian.index.pgvector_schema import check_table_name, read_contract

    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor:
        return read_contract(cursor, check_table_name(table))
