"""Librarian's HTTP layer, assembled into the served app by `server.py`.

One module per resource: `documents`, `pages` (page images, rendered by `page_workers` with
`page_render`), `graph` (with its views in `graph_view`),
`conversations` (an admin's retention erase) and `webapp` (the browser app at `/`). The standard
clients' protocols: `mcp` (with its tools in `mcp_tools`) and `openai_compat` (`/v1`), both running the
agent as the caller through `agent_client`. What the routes share: `access` (who may do what), `params`
(path and query parameters with their checks), `models` (response bodies), `routing` (the route class
that answers refusals), `errors` (the error shape), `guard` (Platform API input checks), `thread_gate`
(the ownership check of the thread routes the platform leaves unchecked) and `openapi` (the generated
document's route).
"""
