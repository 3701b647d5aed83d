"""The graph store's public entry: the interface (`GraphStore`, `OrgGraph`) and the factory for an engine.

The interface itself lives in `librarian.graph.store_interface` so that the shared SQL and both engines
can implement it without importing this module: only the factory knows the engines, and nothing they
import comes back here, so there is no import circle. Callers import from this module.
"""

from __future__ import annotations

from librarian.graph.store_interface import GraphStore, OrgGraph
from librarian.settings import Settings

__all__ = ["GraphStore", "OrgGraph", "open_graph_store"]


def open_graph_store(settings: Settings) -> GraphStore:
    """PostgreSQL when `LIBRARIAN_POSTGRES_URL` is set, else SQLite at `{data_dir}/graph.sqlite`.

    Engines are imported on demand, so only the chosen one is loaded.
    """
    if settings.postgres_url:
        from librarian.graph.store_postgres import PostgresGraphStore

        return PostgresGraphStore(settings.postgres_url)
    from librarian.graph.store_sqlite import SqliteGraphStore

    return SqliteGraphStore(settings.data_dir / "graph.sqlite")
