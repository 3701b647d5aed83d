"""The vector query tool's option engine: what a run may choose, checked before anything is queried.

`tools/vector_query.py` is the tool; this package parses and bounds what its creator and each run
may set (Mastra's `createVectorQueryTool` options, seed 003): per-store `database_config`, named
stores, per-run embedder, reranker and top_k within the server's limits, and embedding
`provider_options`. One rule runs through all of it: nothing here can choose the namespace, which is
always the run's organization.
"""
