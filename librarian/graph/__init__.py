"""GraphRAG: graph index (model, store, build) and its query-side helpers (DESIGN §10)."""
