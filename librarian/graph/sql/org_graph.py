"""The SQL store assembled: one `OrgGraph` made of the per-job mixins, and the `GraphStore` that scopes it.

Both engines subclass `SqlGraphStore` and only supply `engine`, so organization validation happens
here and only here.
"""

from __future__ import annotations

from librarian.graph.schema import ALL_TABLES
from librarian.graph.sql.communities import CommunityReads
from librarian.graph.sql.documents import DocumentContent
from librarian.graph.sql.entities import EntityReads
from librarian.graph.sql.extractions import ExtractionCache
from librarian.graph.sql.relations import RelationReads
from librarian.graph.sql.runner import Engine
from librarian.graph.sql.versions import VersionLifecycle
from librarian.graph.sql.writes import GraphWrites
from librarian.graph.store_interface import GraphStore, OrgGraph
from librarian.tenancy import validate_organization_id


class SqlOrgGraph(
    VersionLifecycle,
    EntityReads,
    RelationReads,
    CommunityReads,
    DocumentContent,
    ExtractionCache,
    GraphWrites,
):
    """`OrgGraph` over either engine. Construct only through `SqlGraphStore.scope`."""

    def drop_all(self) -> None:
        with self._tx() as tx:
            for table in ALL_TABLES:
                tx.run(f"DELETE FROM {table} WHERE org = :org")


class SqlGraphStore(GraphStore):
    """Shared `scope` for both engines: validation of the organization happens here and only here."""

    engine: Engine

    def scope(self, org: str | None) -> OrgGraph:
        organization_id = validate_organization_id(org)
        return SqlOrgGraph(self.engine_for(organization_id), organization_id)

    def engine_for(self, organization_id: str) -> Engine:
        """The engine one organization's scope runs on; an engine with its own tenancy guard (PostgreSQL's
        row-level security) binds each transaction to the organization here."""
        return self.engine

    def close(self) -> None:
        self.engine.close()
