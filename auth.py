"""LangGraph server auth: who is calling (bearer JWT) and which organization's resources they see.

`langgraph.json` points `"auth"` here. Two jobs:

1. `authenticate` turns the JWT from `Authorization: Bearer` (or `X-Api-Key`, which the stock Agent
   Chat UI sends) into the user dict the server keeps for the request and hands to runs as
   `langgraph_auth_user` (that is where the search tool reads the organization from). No token, a bad
   one, two different ones, or Studio's `x-auth-scheme: langsmith` header without one is a 401
   (`disable_studio_auth` is set, so Studio gets no bypass).
2. The `@auth.on` handlers stamp `organization_id` and `owner` on everything a caller creates and
   return a filter on everything they read, update or delete, so what is not theirs simply does
   not exist for them (404, or absent from a listing, with totals counted after the filter):
   - conversations (chat threads, their runs, state, history, streams and copies, and crons) belong
     to the user who started them: `{"organization_id": org, "owner": user}`. Every other user, of
     any role, the organization's admins included, gets what another organization's caller gets.
     Admins erase a colleague's conversations (retention) through
     `DELETE /orgs/{org}/members/{user}/conversations`, which deletes without reading;
   - document status threads (`kind=document`) are the organization's: every member may read them,
     nobody may write them through the Platform API;
   - assistants are the organization's configuration, shared by its members.
3. Only the `agent` graph is a client's to use (an allow-list, so a new graph is closed by default):
   assistants may be created or re-pointed only on it, and runs and crons only on its assistants.
   Ingest, reindex and index builds run only through the document routes.

The server imports this module while it builds its middleware, before it listens, so start-up
checks live here: a bad configuration stops the server with one line naming what to fix.
"""

from __future__ import annotations

import functools
import sys
from typing import Any
from uuid import UUID, uuid5

from langgraph_sdk import Auth, get_client
from langgraph_sdk.errors import NotFoundError

from librarian.auth import AuthenticationError, TokenVerifier, presented_token, verifier_from_settings
from librarian.errors import ConfigError, ContractMismatchError
from librarian.ownership import own_conversations_filter, owned_filter, readable_threads_filter
from librarian.settings import get_settings
from librarian.stack import get_stack
from librarian.tracing import USER_KEY, install_metadata_guard
from webapi.chat_attachments import receive_chat_attachments

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
install_metadata_guard()  # with tracing on, trace metadata carries identifiers only (librarian.tracing)
auth = Auth()


def _unauthorized(message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=message, headers={"WWW-Authenticate": 'Bearer realm="librarian"'}
    )


@functools.cache
def _loopback() -> Any:
    """The in-process client (no auth): handlers use it to look up what they must decide on."""
    return get_client()


def _forbidden(message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=403, detail=message)


def _bad_request(message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=400, detail=message)


@auth.authenticate
async def authenticate(authorization: str | None, headers: dict[bytes, bytes]) -> dict[str, Any]:
    """Verify the token; the returned dict is the request's user (and the runs' user)."""
    raw_key = headers.get(b"x-api-key")
    api_key = raw_key.decode("utf-8", "replace") if isinstance(raw_key, bytes) else raw_key
    try:
        principal = VERIFIER.verify(presented_token(authorization, api_key))
    except AuthenticationError as exc:
        raise _unauthorized(str(exc)) from None
    return principal.as_user()


# --- helpers ---------------------------------------------------------------------------------------


def _org(ctx: Auth.types.AuthContext) -> str:
    org = ctx.user.get("organization_id") if hasattr(ctx.user, "get") else None
    if not org:  # cannot happen for users made by `authenticate`; refuse rather than widen
        raise Auth.exceptions.HTTPException(status_code=403, detail="no active organization")
    return str(org)


def _owned(ctx: Auth.types.AuthContext) -> dict[str, str]:
    return owned_filter(_org(ctx), str(ctx.user.identity))


def _own_conversations(ctx: Auth.types.AuthContext) -> dict[str, str]:
    return own_conversations_filter(_org(ctx), str(ctx.user.identity))


def _readable_threads(ctx: Auth.types.AuthContext) -> dict[str, Any]:
    return readable_threads_filter(_org(ctx), str(ctx.user.identity))


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


_NOT_RUNNABLE = "only the agent graph can be run directly; upload documents instead"


async def _require_runnable(org: str, assistant_id: Any) -> None:
    """Refuse unless the assistant runs a client graph (an allow-list: `CLIENT_GRAPHS`).

    A graph's default assistant has the uuid5 of its name, so any other uuid5 (ingest, reindex, the
    graph index build, graphs added later) is refused without a lookup. Any other id is an assistant
    someone created: its graph is looked up, because assistants made before creation was limited to
    the agent graph may still point elsewhere. An unknown id, or another organization's assistant,
    passes here and the server answers 404 as for any id the caller cannot see, so this check reveals
    nothing about other organizations.
    """
    text = str(assistant_id or "")
    if text in _CLIENT_ASSISTANT_IDS:
        return
    if _uuid_version(text) in (None, 5):
        raise _forbidden(_NOT_RUNNABLE)
    try:
        assistant = await _loopback().assistants.get(text)
    except NotFoundError:
        return
    if (assistant.get("metadata") or {}).get("organization_id") != org:
        return
    if assistant.get("graph_id") not in CLIENT_GRAPHS:
        raise _forbidden(_NOT_RUNNABLE)


def _require_client_graph(graph_id: Any) -> None:
    if graph_id not in CLIENT_GRAPHS:
        raise _forbidden(f"assistants can only be made for the {', '.join(sorted(CLIENT_GRAPHS))} graph")


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
    """A run goes on the caller's own conversation, or on a new one it creates, stamped as theirs.

    Creating (`if_not_exists: "create"`) is how A2A starts a new context: its in-process call names
    a fresh, server-made id. Over HTTP, `webapi.thread_gate` lets such a run name only the caller's
    own thread (another answer for a taken id than for a fresh one would be an existence oracle);
    the guessable ids (uuid5, the document threads') are refused here for everyone.
    """
    _refuse_document_thread_ids(value)
    await _require_runnable(_org(ctx), value.get("assistant_id"))
    # the run's metadata is its trace's root metadata: organization and user, as every run carries
    _stamp(ctx, value, kind="chat", **{USER_KEY: str(ctx.user.identity)})
    # files attached to the input go to the library now, so the run (and its checkpoints) keeps
    # only references to them (webapi/chat_attachments.py)
    await receive_chat_attachments(ctx.user, value)
    return _own_conversations(ctx)


@auth.on.threads.read
async def on_thread_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    return _readable_threads(ctx)


@auth.on.threads.search
async def on_thread_search(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """The caller's own conversations (a count, too, counts only those); a `values` filter is refused.

    Document status threads stay readable by id but are not listed: a user's thread list is their
    conversations. (The same action lists a thread's runs, with the thread's `thread_id`.)

    The in-memory runtime crashes (500) comparing a `values` filter with a thread that has no values
    yet, and chat clients do not filter by values, so it is refused up front rather than half-served.
    """
    if value.get("values"):
        raise _bad_request("searching threads by values is not supported; filter by metadata instead")
    if value.get("thread_id"):  # listing one thread's runs: as readable as the thread itself
        return _readable_threads(ctx)
    return _own_conversations(ctx)


@auth.on.threads.update
async def on_thread_update(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.update.value):
    """Rename, change state, cancel a run: the owner's conversations only."""
    if value.get("metadata") is not None:
        _stamp(ctx, value, kind="chat")
    return _own_conversations(ctx)


@auth.on.threads.delete
async def on_thread_delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    return _own_conversations(ctx)


# --- crons -----------------------------------------------------------------------------------------


@auth.on.crons.create
async def on_cron_create(ctx: Auth.types.AuthContext, value: Auth.types.on.crons.create.value):
    """A cron is a run on a timer: the same allow-list as runs, and a schedule that is a string.

    The server would otherwise crash (500) on a missing schedule; a malformed string it refuses itself.
    """
    _refuse_document_thread_ids(value)
    schedule = value.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        raise _bad_request("a cron needs a schedule, e.g. '0 9 * * 1'")
    payload = value.get("payload") or {}
    assistant_id = payload.get("assistant_id") if isinstance(payload, dict) else None
    if not isinstance(assistant_id, str) or not assistant_id:
        raise _bad_request("a cron needs an assistant_id")
    await _require_runnable(_org(ctx), assistant_id)  # a graph name or an assistant id
    return {"organization_id": _stamp(ctx, value, kind="chat")}


@auth.on.crons.update
async def on_cron_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if value.get("metadata") is not None:
        _stamp(ctx, value, kind="chat")
    return _owned(ctx)


@auth.on.crons.read
@auth.on.crons.delete
@auth.on.crons.search
async def on_cron_access(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A cron is a conversation on a timer: its creator's alone, like the thread it runs on."""
    return _owned(ctx)


# --- assistants ------------------------------------------------------------------------------------


@auth.on.assistants.create
async def on_assistant_create(ctx: Auth.types.AuthContext, value: Auth.types.on.assistants.create.value):
    _require_client_graph(value.get("graph_id"))
    return {"organization_id": _stamp(ctx, value)}


@auth.on.assistants.read
@auth.on.assistants.search
async def on_assistant_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Own assistants plus the graphs' default ones (created by the server, shared by design)."""
    return {"$or": [{"organization_id": _org(ctx)}, {"created_by": "system"}]}


@auth.on.assistants.update
async def on_assistant_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if value.get("graph_id") is not None:
        _require_client_graph(value.get("graph_id"))
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
