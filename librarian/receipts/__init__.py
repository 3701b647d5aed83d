"""Delete receipts: what a document's delete removed or left pending, measured, checked and kept.

    model      the receipt's shape (places with before/after counts, pending graph contributions,
               post-condition probes) and its JSON form
    counting   measures every place a document lives (file, vectors, sparse statistics, parse cache,
               page images, graph contributions), so counts come from the stores, never assumed
    store      keeps receipts per organization (SQLite in the data directory, or PostgreSQL when
               `LIBRARIAN_POSTGRES_URL` is set), so an admin can prove a deletion later

The probes that query every retrieval channel live in `services.receipt_probes`: they call tools,
which this engine layer must not import.
"""
