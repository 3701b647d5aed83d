"""OpenAPI 3.1 description of the document routes, written by hand.

The routes are plain Starlette, so nothing generates this; keeping it beside the error shape means
the fuzz tests read the same contract clients do. The Platform API (threads, runs, assistants) has
its own document at `/openapi.json`.
"""

from __future__ import annotations

from typing import Any

_ERROR = {"$ref": "#/components/schemas/Error"}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR}}}


_ORG = {
    "name": "org",
    "in": "path",
    "required": True,
    "description": "Organization id; must be one of the caller's memberships.",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"},
}
_PATH = {
    "name": "path",
    "in": "path",
    "required": True,
    "description": "Document path, `docs/<file name>` (URL-encoded).",
    "schema": {"type": "string", "pattern": "^docs/.+$"},
}
_COMMON_ERRORS = {
    "400": _error("Bad input (path, name, body)."),
    "401": _error("Missing, invalid or expired bearer token."),
    "403": _error("Not a member of the organization, or the role cannot write."),
}

_STATUS = {
    "type": "object",
    "required": ["path", "status", "chunkCount"],
    "properties": {
        "path": {"type": "string"},
        "status": {
            "type": "string",
            "enum": ["indexed", "skipped", "failed", "running", "queued", "deleted", "not_ingested"],
        },
        "chunkCount": {"type": "integer"},
        "reason": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"]},
        "contentHash": {"type": ["string", "null"]},
        "parser": {"type": ["string", "null"]},
        "updatedAt": {"type": ["string", "null"]},
        "sizeBytes": {"type": ["integer", "null"]},
        "threadId": {"type": "string", "format": "uuid"},
        "queuedRuns": {"type": "integer"},
    },
}


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Librarian documents",
            "version": "0.1.0",
            "description": "Upload, list, inspect and delete an organization's documents.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                        }
                    },
                },
                "DocumentStatus": _STATUS,
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/orgs/{org}/documents": {
                "parameters": [_ORG],
                "post": {
                    "operationId": "uploadDocument",
                    "summary": "Upload a document (same name replaces) and enqueue its ingest.",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "required": ["file"],
                                    "properties": {"file": {"type": "string", "format": "binary"}},
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": {
                            "description": "Stored; ingest enqueued.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["path", "thread_id", "run_id"],
                                        "properties": {
                                            "path": {"type": "string"},
                                            "thread_id": {"type": "string", "format": "uuid"},
                                            "run_id": {"type": "string", "format": "uuid"},
                                            "size_bytes": {"type": "integer"},
                                        },
                                    }
                                }
                            },
                        },
                        **_COMMON_ERRORS,
                        "413": _error(
                            "The file is larger than LIBRARIAN_MAX_UPLOAD_BYTES; nothing was written."
                        ),
                    },
                },
                "get": {
                    "operationId": "listDocuments",
                    "summary": "Every file of the organization with its latest ingest status.",
                    "responses": {
                        "200": {
                            "description": "Documents.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "organization_id": {"type": "string"},
                                            "documents": {
                                                "type": "array",
                                                "items": {"$ref": "#/components/schemas/DocumentStatus"},
                                            },
                                        },
                                    }
                                }
                            },
                        },
                        **_COMMON_ERRORS,
                    },
                },
            },
            "/orgs/{org}/documents/{path}": {
                "parameters": [_ORG, _PATH],
                "get": {
                    "operationId": "getDocument",
                    "summary": "One document's latest ingest status.",
                    "responses": {
                        "200": {
                            "description": "Status.",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/DocumentStatus"}
                                }
                            },
                        },
                        **_COMMON_ERRORS,
                        "404": _error("No such document."),
                    },
                },
                "delete": {
                    "operationId": "deleteDocument",
                    "summary": "Delete the document's vectors, then its file.",
                    "responses": {
                        "200": {"description": "Deleted."},
                        **_COMMON_ERRORS,
                        "404": _error("No such document (any vectors of the path were still removed)."),
                    },
                },
            },
        },
    }
