"""LangGraph server auth: who is calling (bearer JWT) and which organization's resources they see.

`langgraph.json` points `"auth"` here. Two jobs:

1. `authenticate` turns the `Authorization: Bearer` JWT into the user dict the server keeps for the
   request and hands to runs as `langgraph_auth_user` (that is where the search tool reads the
   organization from). No token, a bad one, or Studio's `x-auth-scheme: langsmith` header without one
   is a 401 (`disable_studio_auth` is set, so Studio gets no bypass).
2. The `@auth.on` handlers stamp `organization_id` and `owner` on everything a caller creates and
   return `{"organization_id": org}` as a filter on everything they read, update or delete, so
   another organization's threads, runs, crons and assistants simply do not exist for them.

The server imports this module while it builds its middleware, before it listens, so start-up
checks live here: a bad configuration stops the server with one line naming what to fix.
"""

from __future__ import annotations

import sys
from typing import Any
from uuid import UUID, uuid5

from langgraph_sdk import Auth

from librarian.auth import AuthenticationError, TokenVerifier, verifier_from_settings
from librarian.errors import ConfigError, ContractMismatchError
from librarian.settings import get_settings
from librarian.stack import get_stack

# The server derives a graph's default assistant id like this (langgraph_api.graph.NAMESPACE_GRAPH).
_NAMESPACE_GRAPH = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
#: Graphs clients may run directly. Ingest and reindex only run through the document routes, which
#: check the size, name and membership before anything is written.
CLIENT_GRAPHS = frozenset({"agent"})
_CLIENT_ASSISTANT_IDS = frozenset(
    {*CLIENT_GRAPHS, *(str(uuid5(_NAMESPACE_GRAPH, graph)) for graph in CLIENT_GRAPHS)}
)


def startup_checks() -> TokenVerifier:
    """Refuse to serve with a weak secret, a cloud provider without its key, or a foreign index.

    Each failure prints one line and exits: a traceback would bury the variable to fix.
    """
    try:
        settings = get_settings()  # validates providers (missing keys name their variable)
        verifier = verifier_from_settings(settings)  # secret length / JWKS URL
        get_stack(settings).index  # opening the index checks the recorded embedding contract  # noqa: B018
    except (ConfigError, ContractMismatchError) as exc:
        print(f"librarian: refusing to start: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    return verifier


VERIFIER = startup_checks()
auth = Auth()


def _unauthorized(message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=message, headers={"WWW-Authenticate": 'Bearer realm="librarian"'}
    )


@auth.authenticate
async def authenticate(authorization: str | None) -> dict[str, Any]:
    """Verify the bearer token; the returned dict is the request's user (and the runs' user)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("a bearer token is required")
    try:
        principal = VERIFIER.verify(token.strip())
    except AuthenticationError as exc:
        raise _unauthorized(str(exc)) from None
    return principal.as_user()


# --- helpers ---------------------------------------------------------------------------------------


def _org(ctx: Auth.types.AuthContext) -> str:
    org = ctx.user.get("organization_id") if hasattr(ctx.user, "get") else None
    if not org:  # cannot happen for users made by `authenticate`; refuse rather than widen
        raise Auth.exceptions.HTTPException(status_code=403, detail="no active organization")
    return str(org)


def _stamp(ctx: Auth.types.AuthContext, value: dict[str, Any], **extra: str) -> str:
    """Write the caller's organization (and owner) into the resource's metadata, in place.

    In place because the server keeps its own reference to `value["metadata"]`: replacing the dict
    silently drops the stamp. A client-supplied organization, owner, kind or system marker is
    overwritten, so metadata can never move a resource into another organization's view.
    """
    org = _org(ctx)
    metadata = value.get("metadata")
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata.pop("created_by", None)  # "system" would make an assistant visible to every org
    metadata.update(organization_id=org, owner=ctx.user.identity, **extra)
    return org


def _uuid_version(text: str) -> int | None:
    try:
        return UUID(text).version
    except ValueError:
        return None


def _refuse_document_thread_ids(value: dict[str, Any]) -> None:
    """Clients may not name a thread with a uuid5 id: those are the document threads' ids.

    Document thread ids are derived from `org:path`, so anyone can compute another organization's.
    The read filters hide such a thread, but "create with this id" would still answer 409 for an
    existing one and so reveal that org A has a file of that name. Refusing every uuid5 id up front
    answers the same whether or not the thread exists.
    """
    thread_id = value.get("thread_id")
    if thread_id and _uuid_version(str(thread_id)) == 5:
        raise Auth.exceptions.HTTPException(status_code=403, detail="this thread id is reserved")


def _runnable_assistant(assistant_id: str) -> bool:
    """The agent graph, or an assistant the caller's org created (the server checks its org).

    The ingest and reindex graphs run only through the document routes, which check size, name and
    membership before anything is written; their default assistants have fixed uuid5 ids.
    """
    if assistant_id in _CLIENT_ASSISTANT_IDS:
        return True
    return _uuid_version(assistant_id) not in (None, 5)


# --- threads and runs ------------------------------------------------------------------------------
# Chat threads carry kind=chat. Document threads (kind=document) are created by the routes through
# the in-process client, which skips these handlers; members may read them (they are the status of
# their documents) but never write to them: their latest checkpoint is the document's status.


@auth.on.threads.create
async def on_thread_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create.value):
    _refuse_document_thread_ids(value)
    return {"organization_id": _stamp(ctx, value, kind="chat")}


@auth.on.threads.create_run
async def on_run_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create_run.value):
    _refuse_document_thread_ids(value)
    if not _runnable_assistant(str(value.get("assistant_id") or "")):
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="only the agent graph can be run directly; upload documents instead"
        )
    return {"organization_id": _stamp(ctx, value, kind="chat"), "kind": "chat"}


@auth.on.threads.read
@auth.on.threads.search
async def on_thread_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return {"organization_id": _org(ctx)}


@auth.on.threads.update
async def on_thread_update(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.update.value):
    if value.get("metadata") is not None:
        _stamp(ctx, value, kind="chat")
    return {"organization_id": _org(ctx), "kind": "chat"}


@auth.on.threads.delete
async def on_thread_delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return {"organization_id": _org(ctx), "kind": "chat"}


# --- crons -----------------------------------------------------------------------------------------


@auth.on.crons.create
async def on_cron_create(ctx: Auth.types.AuthContext, value: Auth.types.on.crons.create.value):
    _refuse_document_thread_ids(value)
    return {"organization_id": _stamp(ctx, value, kind="chat")}


@auth.on.crons.update
async def on_cron_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if value.get("metadata") is not None:
        _stamp(ctx, value, kind="chat")
    return {"organization_id": _org(ctx)}


@auth.on.crons.read
@auth.on.crons.delete
@auth.on.crons.search
async def on_cron_access(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return {"organization_id": _org(ctx)}


# --- assistants ------------------------------------------------------------------------------------


@auth.on.assistants.create
async def on_assistant_create(ctx: Auth.types.AuthContext, value: Auth.types.on.assistants.create.value):
    return {"organization_id": _stamp(ctx, value)}


@auth.on.assistants.read
@auth.on.assistants.search
async def on_assistant_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Own assistants plus the graphs' default ones (created by the server, shared by design)."""
    return {"$or": [{"organization_id": _org(ctx)}, {"created_by": "system"}]}


@auth.on.assistants.update
async def on_assistant_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if value.get("metadata") is not None:
        _stamp(ctx, value)
    return {"organization_id": _org(ctx)}


@auth.on.assistants.delete
async def on_assistant_delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return {"organization_id": _org(ctx)}


# --- everything else -------------------------------------------------------------------------------


@auth.on.store
async def on_store(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The long-term store is not part of Librarian's API; deny it rather than scope it."""
    raise Auth.exceptions.HTTPException(status_code=403, detail="the store is not available")


@auth.on
async def deny_everything_else(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Any resource or action without a handler above is refused (new server features included)."""
    raise Auth.exceptions.HTTPException(status_code=403, detail="forbidden")
