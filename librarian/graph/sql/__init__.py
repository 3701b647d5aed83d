"""The SQL behind both graph store engines: one schema, one set of statements, one scoping runner.

Statements are written with `:name` parameters; the PostgreSQL engine rewrites them to psycopg's
`%(name)s`. `runner.Scoped.run` is the single place statements are executed: it refuses a statement
that does not name `:org` and always binds `org` itself, so no caller can read or write another
organization's rows or forget the organization.

One module per job, assembled into `org_graph.SqlOrgGraph`:
`runner` (scoping, batching), `codec` (embeddings and timestamps), `base` (transactions, version lookup,
live sources), `versions` (lifecycle), `rows` and `writes` (writing a version), `entities`, `relations`
and `communities` (reads), `documents` (chunks, keyword search, retraction), `extractions` (the cache).
"""
