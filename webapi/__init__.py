"""HTTP helpers for `server.py`: the error shape and the OpenAPI document of the document routes."""
