"""Row-level security as the second tenancy guard, on the real PostgreSQL servers.

Each test drops the first guard on purpose (a raw statement without its organization filter inside a
store's organization-scoped transaction, or the filter builder patched away) and checks that the
database itself still returns and changes nothing of another organization; the same rows are shown
to be there through a superuser connection, which row-level security never applies to.

The guarded statements run as `librarian_rls_app`, a role that is neither superuser nor BYPASSRLS, as
the application must (PostgreSQL exempts both, whatever the table says). The graph store and the
coordination tables live in a schema of their own per test in the `test` database, owned by that
role, so the role owns the tables it creates, as an application does (`FORCE ROW LEVEL SECURITY` is
what makes the policies apply to the owner). pgvector runs on the embedded server of
`tests.pg_embedded` (Debian's server has no pgvector), a fresh database per test.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from librarian.graph.schema import ALL_TABLES
from librarian.index.base import EmbeddingContract
from librarian.pg_tenancy import (
    ALL_ORGANIZATIONS_POLICY,
    ORGANIZATION_POLICY,
    bind_organization,
    guard_table,
    read_all_organizations,
    role_bypasses_guard,
)
from tests.conftest import POSTGRES_URL, require_postgres
from tests.graph_fixtures import build_fixture_graph
from tests.pg_embedded import pg_server, pgvector_url  # noqa: F401  (pytest fixtures)

APP_ROLE = "librarian_rls_app"
DIM = 8
CONTRACT = EmbeddingContract(dense_model="test-dense", dimension=DIM, sparse_model="test-sparse")
RLS_REFUSED = "row-level security"
_TEXT = st.characters(codec="utf-8", exclude_characters="\x00")  # what PostgreSQL text can hold


def _ensure_app_role(superuser_url: str) -> None:
    """The unprivileged application role (roles are per cluster; creating it twice is harmless)."""
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(
            f"DO $$ BEGIN CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        )


def _as_role(url: str, role: str, schema: str | None = None) -> str:
    extra = {"options": f"-c search_path={schema}"} if schema else {}
    return make_conninfo(url, user=role, **extra)


@dataclass
class Schema:
    """One test's schema in the `test` database: `app` connects as the guarded role, `admin` as superuser."""

    app: str
    admin: str


@pytest.fixture
def schema() -> Iterator[Schema]:
    require_postgres()
    _ensure_app_role(POSTGRES_URL)
    name = f"rls_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(
                sql.Identifier(name), sql.Identifier(APP_ROLE)
            )
        )
    superuser = conninfo_to_dict(POSTGRES_URL).get("user") or "postgres"
    try:
        yield Schema(
            app=_as_role(POSTGRES_URL, APP_ROLE, name), admin=_as_role(POSTGRES_URL, str(superuser), name)
        )
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


@contextmanager
def _scoped(url: str, organization_id: str | None) -> Iterator[psycopg.Connection]:
    """A transaction bound to `organization_id` as the stores bind theirs (None: every one, read-only)."""
    with psycopg.connect(url) as conn, conn.transaction():
        if organization_id is None:
            read_all_organizations(conn)
        else:
            bind_organization(conn, organization_id)
        yield conn


def _orgs_in(url: str, table: str, column: str = "org") -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT DISTINCT {} FROM {}").format(sql.Identifier(column), sql.Identifier(table))
        )
        return {row[0] for row in rows.fetchall()}


# ------------------------------------------------------------------------------------------------
# graph store


@pytest.fixture
def graph(schema: Schema) -> Iterator[tuple[object, Schema]]:
    from librarian.graph.store_postgres import PostgresGraphStore

    store = PostgresGraphStore(schema.app)
    build_fixture_graph(store, "org-a")
    build_fixture_graph(store, "org-b", name_prefix="[B] ")
    try:
        yield store, schema
    finally:
        store.close()


@pytest.mark.postgres
def test_graph_rows_of_another_org_stay_hidden_when_the_filter_is_forgotten(graph) -> None:
    store, schema = graph
    for table in ALL_TABLES:
        if table == "graph_extractions" or table == "graph_chunk_extractions":
            continue  # the fixture graph writes no extraction cache
        assert _orgs_in(schema.admin, table) == {"org-a", "org-b"}, table  # both are there
        with store.scope("org-a")._tx() as tx:
            seen = {row[0] for row in tx._cursor.execute(f"SELECT org FROM {table}", {})}
        assert seen == {"org-a"}, table


@pytest.mark.postgres
def test_graph_writes_for_another_org_are_refused_or_miss(graph) -> None:
    store, schema = graph
    g = store.scope("org-a")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=RLS_REFUSED), g._tx() as tx:
        tx._cursor.execute("INSERT INTO graph_published (org, version) VALUES ('org-c', 1)", {})
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=RLS_REFUSED), g._tx() as tx:
        tx._cursor.execute("UPDATE graph_entities SET org = 'org-b' WHERE org = 'org-a'", {})
    with g._tx() as tx:
        tx._cursor.execute("UPDATE graph_entities SET description = 'overwritten'", {})
        tx._cursor.execute("DELETE FROM graph_edges", {})
    with psycopg.connect(schema.admin) as conn:
        descriptions = dict(
            conn.execute(
                "SELECT org, bool_and(description = 'overwritten') FROM graph_entities GROUP BY org"
            ).fetchall()
        )
        edges = dict(conn.execute("SELECT org, count(*) FROM graph_edges GROUP BY org").fetchall())
        assert conn.execute("SELECT org FROM graph_published WHERE org = 'org-c'").fetchall() == []
    assert descriptions == {"org-a": True, "org-b": False}
    assert edges == {"org-b": 5}


@pytest.mark.postgres
def test_graph_store_works_unchanged_under_the_guard(graph) -> None:
    store, _ = graph
    a, b = store.scope("org-a"), store.scope("org-b")
    assert a.published_version().entities == b.published_version().entities == 6
    assert [c.summary.startswith("[B] ") for c in b.communities()] == [True] * 3
    assert not any(c.summary.startswith("[B] ") for c in a.communities())
    a.drop_all()
    assert a.published_version() is None and b.published_version() is not None


@pytest.mark.postgres
def test_a_transaction_without_an_organization_sees_no_rows(graph) -> None:
    _, schema = graph
    with psycopg.connect(schema.app) as conn:
        assert conn.execute("SELECT count(*) FROM graph_entities").fetchone()[0] == 0
    with psycopg.connect(schema.admin) as conn:
        assert conn.execute("SELECT count(*) FROM graph_entities").fetchone()[0] == 12


@pytest.mark.postgres
def test_every_graph_table_is_forced_and_reopening_changes_nothing(graph) -> None:
    from librarian.graph.store_postgres import PostgresGraphStore

    _, schema = graph

    def catalogue() -> list[tuple]:
        with psycopg.connect(schema.admin) as conn:
            return conn.execute(
                "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
                "array_agg(p.polname::text ORDER BY p.polname) "
                "FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
                "GROUP BY c.oid ORDER BY c.relname"
            ).fetchall()

    before = catalogue()
    assert [row[0] for row in before] == sorted(ALL_TABLES)
    policies = sorted([ALL_ORGANIZATIONS_POLICY, ORGANIZATION_POLICY])
    assert all(row[1:] == (True, True, policies) for row in before)
    PostgresGraphStore(schema.app).close()
    assert catalogue() == before


# ------------------------------------------------------------------------------------------------
# roles and set-up


@pytest.mark.postgres
def test_superusers_are_reported_and_the_app_role_is_not(schema: Schema) -> None:
    with psycopg.connect(schema.admin) as conn:
        assert "superuser" in (role_bypasses_guard(conn) or "")
    with psycopg.connect(schema.app) as conn:
        assert role_bypasses_guard(conn) is None


@pytest.mark.postgres
def test_a_role_that_does_not_own_an_unguarded_table_warns_and_changes_nothing(
    schema: Schema, caplog
) -> None:
    with psycopg.connect(schema.admin) as conn:
        conn.execute("CREATE TABLE foreign_owned (org text NOT NULL)")
        conn.execute(f"GRANT SELECT ON foreign_owned TO {APP_ROLE}")
    with caplog.at_level(logging.WARNING, logger="librarian.pg_tenancy"), psycopg.connect(schema.app) as conn:
        assert guard_table(conn, "foreign_owned", "org") is False
    assert "does not own it" in caplog.text
    with psycopg.connect(schema.admin) as conn:
        row = conn.execute(
            "SELECT relrowsecurity FROM pg_class WHERE oid = 'foreign_owned'::regclass"
        ).fetchone()
        assert row == (False,)


# ------------------------------------------------------------------------------------------------
# coordination tables


@pytest.fixture
def coordination(schema: Schema) -> Iterator[tuple[object, Schema]]:
    from librarian.runs.pg_coordination import PostgresCoordination

    found = PostgresCoordination(schema.app)
    try:
        yield found, schema
    finally:
        found.close()


@pytest.mark.postgres
def test_coordination_rows_of_another_org_stay_hidden(coordination) -> None:
    found, schema = coordination
    assert found.bump("org-a", "docs/a.md") == 1 and found.bump("org-b", "docs/b.md") == 1
    assert found.request_graph_build("org-a", "job-a")[0] == 1
    assert found.request_graph_build("org-b", "job-b")[0] == 1
    for table in ("librarian_path_epochs", "librarian_graph_requests"):
        assert _orgs_in(schema.admin, table, "organization_id") == {"org-a", "org-b"}
        with _scoped(schema.app, "org-a") as conn:
            seen = {row[0] for row in conn.execute(f"SELECT organization_id FROM {table}").fetchall()}
        assert seen == {"org-a"}, table
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match=RLS_REFUSED),
        _scoped(schema.app, "org-a") as conn,
    ):
        conn.execute("INSERT INTO librarian_path_epochs VALUES ('org-b', 'docs/x.md', 7)")
    assert found.epoch("org-b", "docs/x.md") == 0
    assert found.start_graph_build("org-b", 1) and not found.graph_cancel_requested("org-b")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    org=st.text(alphabet=_TEXT, min_size=1, max_size=40),
    other=st.text(alphabet=_TEXT, min_size=1, max_size=40),
    path=st.text(alphabet=_TEXT, min_size=1, max_size=80),
)
@pytest.mark.postgres
def test_epochs_of_any_org_name_are_seen_by_that_org_only(coordination, org, other, path) -> None:
    found, _ = coordination
    before_other = found.epoch(other, path)
    bumped = found.bump(org, path)
    assert found.epoch(org, path) == bumped >= 1
    assert found.epoch(other, path) == (bumped if other == org else before_other)


# ------------------------------------------------------------------------------------------------
# pgvector (embedded server)


def _records(prefix: str, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        {
            "id": f"{prefix}:{i}",
            "values": vectors[i].tolist(),
            "sparse_values": {"indices": [1, 2 + i], "values": [0.5, 1.0]},
            "metadata": {"path": f"docs/{prefix}.md", "chunkIndex": i, "text": f"{prefix} chunk {i}"},
        }
        for i in range(n)
    ]


@pytest.fixture
def vectors(pgvector_url: str) -> Iterator[tuple[object, str]]:  # noqa: F811
    from librarian.index.pgvector import PgVectorIndex

    _ensure_app_role(pgvector_url)
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {APP_ROLE}")
    index = PgVectorIndex(_as_role(pgvector_url, APP_ROLE), CONTRACT)
    index.upsert(_records("a", 6, 1), namespace="org-a")
    index.upsert(_records("b", 4, 2), namespace="org-b")
    try:
        yield index, pgvector_url
    finally:
        index.close()


def _no_namespace_filter(monkeypatch) -> None:
    """The first guard removed: the index's WHERE keeps the filter but loses `ns = ...`."""
    import librarian.index.pgvector as pgvector
    from librarian.index.pgvector_sql import namespace_where

    def forgetful(namespace, filter):
        where = namespace_where(namespace, filter)
        return type(where)(
            where.clauses[1:] or [sql.SQL("TRUE")], {k: v for k, v in where.params.items() if k != "ns"}
        )

    monkeypatch.setattr(pgvector, "namespace_where", forgetful)


def test_pgvector_query_without_namespace_filter_returns_only_the_namespace(vectors, monkeypatch) -> None:
    index, admin = vectors
    assert _orgs_in(admin, "librarian_chunks", "ns") == {"org-a", "org-b"}
    _no_namespace_filter(monkeypatch)
    q = _records("q", 1, 3)[0]
    found = index.query(namespace="org-a", vector=q["values"], sparse_vector=q["sparse_values"], top_k=20)
    assert sorted(m.id for m in found) == [f"a:{i}" for i in range(6)]


def test_pgvector_delete_without_namespace_filter_keeps_other_namespaces(vectors, monkeypatch) -> None:
    index, admin = vectors
    _no_namespace_filter(monkeypatch)
    index.delete(namespace="org-a", delete_all=True)
    with psycopg.connect(admin) as conn:
        counts = dict(conn.execute("SELECT ns, count(*) FROM librarian_chunks GROUP BY ns").fetchall())
    assert counts == {"org-b": 4}


def test_pgvector_writes_for_another_namespace_are_refused(vectors) -> None:
    _, admin = vectors
    app = _as_role(admin, APP_ROLE)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match=RLS_REFUSED),
        _scoped(app, "org-a") as conn,
    ):
        conn.execute("UPDATE librarian_chunks SET ns = 'org-b' WHERE ns = 'org-a'")
    with _scoped(app, "org-a") as conn:
        assert (
            conn.execute("UPDATE librarian_chunks SET metadata = '{}'::jsonb WHERE ns = 'org-b'").rowcount
            == 0
        )
    with _scoped(app, None) as conn:  # the cross-organization flag admits reads only
        assert conn.execute("SELECT count(*) FROM librarian_chunks").fetchone()[0] == 10
        assert conn.execute("DELETE FROM librarian_chunks").rowcount == 0
        assert conn.execute("UPDATE librarian_chunks SET ns = 'org-c'").rowcount == 0
    with psycopg.connect(admin) as conn:
        counts = dict(conn.execute("SELECT ns, count(*) FROM librarian_chunks GROUP BY ns").fetchall())
    assert counts == {"org-a": 6, "org-b": 4}


def test_pgvector_cross_namespace_stats_still_count_every_namespace(vectors) -> None:
    index, admin = vectors
    stats = index.describe_index_stats()
    assert {ns: s.vector_count for ns, s in stats.namespaces.items()} == {"org-a": 6, "org-b": 4}
    assert index.list_ids(namespace="org-b") == [f"b:{i}" for i in range(4)]
    with psycopg.connect(_as_role(admin, APP_ROLE)) as conn:
        assert conn.execute("SELECT count(*) FROM librarian_chunks").fetchone()[0] == 0
