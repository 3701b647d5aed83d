"""Librarian's HTTP layer, assembled into the served app by `server.py`.

One module per resource: `documents`, `pages` (page images), `graph` (with its views in `graph_view`)
and `webapp` (the browser app at `/`). What the routes share: `access` (who may do what), `params`
(path and query parameters with their checks), `models` (response bodies), `routing` (the route class
that answers refusals), `errors` (the error shape), `guard` (Platform API input checks) and `openapi`
(the generated document's route).
"""
