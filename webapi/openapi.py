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

_GRAPH_STATUS = {
    "type": "object",
    "required": ["organization_id", "version", "communitiesPerLevel", "lastBuild", "staleDocuments"],
    "properties": {
        "organization_id": {"type": "string"},
        "version": {
            "type": ["integer", "null"],
            "description": "Published version; null before the first build.",
        },
        "publishedAt": {"type": ["string", "null"], "format": "date-time"},
        "documents": {"type": "integer"},
        "entities": {"type": "integer"},
        "edges": {"type": "integer"},
        "claims": {"type": "integer"},
        "communitiesPerLevel": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "description": "Communities per level; level 0 is the root (coarsest).",
        },
        "extractor": {"type": ["string", "null"]},
        "summarizer": {"type": ["string", "null"]},
        "lastBuild": {
            "type": "object",
            "required": ["status"],
            "properties": {
                "status": {"type": "string", "enum": ["never", "queued", "running", "published", "failed"]},
                "startedAt": {"type": ["string", "null"]},
                "updatedAt": {"type": ["string", "null"]},
                "extracted": {"type": "array", "items": {"type": "string"}},
                "failedDocuments": {"type": "array", "items": {"type": "object"}},
                "summariesReused": {"type": "integer"},
                "summariesWritten": {"type": "integer"},
                "timings": {"type": "object", "additionalProperties": {"type": "number"}},
            },
        },
        "staleDocuments": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Indexed documents the published version does not reflect (new or changed).",
        },
        "removedDocuments": {"type": "array", "items": {"type": "string"}},
        "upToDate": {"type": "boolean"},
    },
}

_STATUS = {
    "type": "object",
    "required": ["path", "status", "chunkCount"],
    "properties": {
        "path": {"type": "string"},
        "status": {
            "type": "string",
            "enum": [
                "indexed",
                "skipped",
                "failed",
                "running",
                "queued",
                "deleted",
                "cancelled",
                "not_ingested",
            ],
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
                    "summary": "Cancel its ingest, delete its vectors, then its file (status `deleted`).",
                    "responses": {
                        "200": {"description": "Deleted."},
                        **_COMMON_ERRORS,
                        "404": _error("No such document (never uploaded, or already deleted)."),
                    },
                },
            },
            "/orgs/{org}/documents/{path}/cancel": {
                "parameters": [_ORG, _PATH],
                "post": {
                    "operationId": "cancelDocumentIngest",
                    "summary": "Organization admins: cancel the document's queued or running ingest.",
                    "description": "The run ends cancelled and a follow-up run removes every vector it "
                    "wrote; the document's status becomes `cancelled`.",
                    "responses": {
                        "202": {
                            "description": "Cancelled; the follow-up run is enqueued.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["path", "cancelled", "thread_id", "run_id"],
                                        "properties": {
                                            "path": {"type": "string"},
                                            "cancelled": {"type": "boolean"},
                                            "thread_id": {"type": "string", "format": "uuid"},
                                            "run_id": {"type": "string", "format": "uuid"},
                                        },
                                    }
                                }
                            },
                        },
                        **_COMMON_ERRORS,
                        "403": _error("Not an admin of the organization."),
                        "404": _error("No such document."),
                        "409": _error("The document has no queued or running ingest."),
                    },
                },
            },
            "/orgs/{org}/documents/{path}/pages/{page}.png": {
                "parameters": [
                    _ORG,
                    _PATH,
                    {
                        "name": "page",
                        "in": "path",
                        "required": True,
                        "description": "1-based page number (a source's `page`).",
                        "schema": {"type": "integer", "minimum": 1},
                    },
                    {
                        "name": "width",
                        "in": "query",
                        "required": False,
                        "description": "Image width in pixels (a very tall page comes out narrower).",
                        "schema": {"type": "integer", "minimum": 200, "maximum": 2000, "default": 1000},
                    },
                ],
                "get": {
                    "operationId": "getDocumentPage",
                    "summary": "A PDF page as PNG; draw a source's bbox (page fractions) on it.",
                    "responses": {
                        "200": {"description": "The page.", "content": {"image/png": {}}},
                        **_COMMON_ERRORS,
                        "404": _error("No such document or page, or the document is not a PDF."),
                        "422": _error("The PDF could not be rendered."),
                    },
                },
            },
            "/orgs/{org}/graph": {
                "parameters": [_ORG],
                "post": {
                    "operationId": "rebuildGraph",
                    "summary": "Organization admins: schedule a rebuild of the GraphRAG index.",
                    "description": "Coalesced: when a build is already queued (not started), that one is "
                    "returned instead of queueing another, so at most one build runs and one waits. Uploads "
                    "and deletes schedule one too.",
                    "responses": {
                        "202": {
                            "description": "Scheduled (or already queued: `coalesced`).",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["organization_id", "thread_id", "run_id", "coalesced"],
                                        "properties": {
                                            "organization_id": {"type": "string"},
                                            "thread_id": {"type": "string", "format": "uuid"},
                                            "run_id": {"type": "string", "format": "uuid"},
                                            "coalesced": {"type": "boolean"},
                                        },
                                    }
                                }
                            },
                        },
                        **_COMMON_ERRORS,
                        "403": _error("Not an admin of the organization."),
                    },
                },
                "get": {
                    "operationId": "getGraphStatus",
                    "summary": "The GraphRAG index: published version, counts per level, last build, stale "
                    "documents.",
                    "responses": {
                        "200": {
                            "description": "Status of the organization's graph index.",
                            "content": {"application/json": {"schema": _GRAPH_STATUS}},
                        },
                        **_COMMON_ERRORS,
                    },
                },
            },
            "/orgs/{org}/graph/communities": {
                "parameters": [_ORG],
                "get": {
                    "operationId": "getGraphCommunities",
                    "summary": "The published graph's communities (level, title, summary, first members).",
                    "responses": {
                        "200": {
                            "description": "Communities, coarsest level first.",
                            "content": {"application/json": {}},
                        },
                        **_COMMON_ERRORS,
                        "404": _error("No published graph yet."),
                    },
                },
            },
            "/orgs/{org}/graph/neighbourhood": {
                "parameters": [
                    _ORG,
                    {
                        "name": "entity",
                        "in": "query",
                        "required": True,
                        "description": "An entity name or alias (1 to 200 characters).",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                    },
                ],
                "get": {
                    "operationId": "getEntityNeighbourhood",
                    "summary": "One entity of the published graph, its strongest neighbours and their edges.",
                    "responses": {
                        "200": {"description": "Nodes and edges.", "content": {"application/json": {}}},
                        **_COMMON_ERRORS,
                        "404": _error("No published graph, or no such entity."),
                    },
                },
            },
            "/orgs/{org}/graph/local": {
                "parameters": [
                    _ORG,
                    {
                        "name": "q",
                        "in": "query",
                        "required": True,
                        "description": "The question, naming its entities (1 to 1000 characters).",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 1000},
                    },
                ],
                "get": {
                    "operationId": "getGraphLocalAnswer",
                    "summary": "Local GraphRAG retrieval: matched entities, evidence with numbered sources "
                    "(path, page, bbox, text) and the matched entities' neighbourhood.",
                    "responses": {
                        "200": {"description": "Local retrieval.", "content": {"application/json": {}}},
                        **_COMMON_ERRORS,
                        "404": _error("No published graph yet (`no_graph`)."),
                    },
                },
            },
        },
    }
