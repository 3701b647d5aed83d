"""Trace metadata: whose run it is (organization, user), and never what the documents say.

Tracing is LangChain's own: with `LANGSMITH_TRACING=true` (and `LANGSMITH_API_KEY`, optionally
`LANGSMITH_ENDPOINT` and `LANGSMITH_PROJECT`) every graph run, node, tool and model call goes to
LangSmith, nested as it ran. Two things are Librarian's:

1. **Who.** Every run Librarian starts carries `organization_id` and, where a person started it,
   `user_id` in its metadata (`run_metadata`), which LangChain hands down to every child run, so a
   trace can be filtered by tenant. Runs started through the server carry it in their run metadata
   (the auth handler stamps agent runs; the document routes stamp ingest, reindex and graph builds);
   plain-Python runs put it in their config (`LocalRuns`) or open a `trace_scope` (the CLI).
2. **Not what.** Questions, chunk text and answers are inputs and outputs of runs, which is what a
   trace is for (`LANGSMITH_HIDE_INPUTS` / `LANGSMITH_HIDE_OUTPUTS` hide them). Metadata and tags are
   indexed, filterable and shown in every list, so they must hold identifiers only. LangChain copies
   every scalar of `configurable` into trace metadata, and the LangGraph server mirrors a run's
   `context` into `configurable`, so a string put there (an attachment's text, say) would land in
   metadata. `identifier_metadata` is the LangSmith client's `hide_metadata` hook
   (`install_metadata_guard`): known identifier keys pass, any other string passes only if it is
   shaped like an identifier, everything else is dropped before it leaves the process.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from librarian.tenancy import validate_organization_id

logger = logging.getLogger(__name__)

ORGANIZATION_KEY = "organization_id"
USER_KEY = "user_id"

#: Metadata keys whose values are identifiers by construction (set by Librarian, LangGraph, the
#: LangGraph server or LangChain's model integrations), kept whatever their shape.
IDENTIFIER_KEYS = frozenset(
    {
        ORGANIZATION_KEY,
        USER_KEY,
        "owner",
        "kind",
        "job_id",
        "admission",
        "document_key",
        "graph_key",
        "thread_id",
        "run_id",
        "assistant_id",
        "graph_id",
        "checkpoint_id",
        "checkpoint_ns",
        "run_attempt",
        "revision_id",
        "x-request-id",
    }
)
IDENTIFIER_PREFIXES = ("langgraph_", "ls_", "lc_")
#: Any other string value is kept only if it looks like an id: ASCII, no spaces, at most 128 chars.
IDENTIFIER_VALUE = re.compile(r"[A-Za-z0-9_.:@/+=#-]{1,128}", re.ASCII)


def run_metadata(organization_id: str, user_id: str | None = None) -> dict[str, str]:
    """The metadata every run Librarian starts carries: its organization and, if any, its user.

    No default organization: a missing or malformed one is a `TenantError`, as everywhere else.
    """
    metadata = {ORGANIZATION_KEY: validate_organization_id(organization_id)}
    if user_id:
        metadata[USER_KEY] = str(user_id)
    return metadata


def traced_config(
    config: Mapping[str, Any], organization_id: str, user_id: str | None = None
) -> dict[str, Any]:
    """`config` with `run_metadata` merged into its metadata (the identity wins over what was there)."""
    merged = dict(config)
    merged["metadata"] = {**(config.get("metadata") or {}), **run_metadata(organization_id, user_id)}
    return merged


def _is_identifier(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and IDENTIFIER_VALUE.fullmatch(value) is not None


def identifier_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What of `metadata` may leave the process: identifier keys, and other keys with id-shaped values.

    A sentence (spaces), a paragraph (newlines), non-ASCII text, a long string, a list or a mapping
    under a key not known to hold identifiers is dropped, so document text cannot reach trace metadata
    whichever path put it into a run's configuration.
    """
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        name = str(key)
        if name in IDENTIFIER_KEYS or name.startswith(IDENTIFIER_PREFIXES) or _is_identifier(value):
            kept[name] = value
    return kept


_guard_lock = threading.Lock()


_TRACING_VARIABLES = (
    "LANGSMITH_TRACING_V2",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_TRACING",
)


def tracing_enabled() -> bool:
    """Whether LangSmith tracing is on in this context (`LANGSMITH_TRACING`, or `tracing_context`).

    Without a tracing variable and with `langsmith` not loaded yet nothing can have turned it on, and
    the answer costs no import (the CLI asks on every command, `status` included).
    """
    if "langsmith" not in sys.modules and not any(
        os.environ.get(name, "").strip().lower() == "true" for name in _TRACING_VARIABLES
    ):
        return False
    from langsmith import utils as ls_utils

    return bool(ls_utils.tracing_is_enabled())


def install_metadata_guard() -> bool:
    """Make the process's LangSmith client pass run metadata through `identifier_metadata`.

    LangChain's tracer sends through the process-wide client (`langsmith.run_trees.get_cached_client`),
    so the guard is that client's `hide_metadata` hook: a client made from the same environment as the
    default one, plus the hook. Idempotent: a guarded client for the current endpoint is kept (a test
    may point tracing elsewhere, or reset the client). `LANGSMITH_HIDE_METADATA=true` still hides all
    metadata. Returns whether tracing is on (nothing is installed when it is off).
    """
    if not tracing_enabled():
        return False
    from langsmith import Client, run_trees
    from langsmith import utils as ls_utils

    hide_all = ls_utils.get_env_var("HIDE_METADATA") == "true"
    hook = True if hide_all else identifier_metadata
    with _guard_lock:
        current = run_trees._CLIENT  # what `get_cached_client` returns; None until first use
        guarded = getattr(current, "_hide_metadata", None) is hook  # the SDK keeps the hook here
        if not (guarded and current.api_url == ls_utils.get_api_url(None)):
            run_trees.configure(client=Client(hide_metadata=hook))
    return True


@contextmanager
def trace_scope(
    organization_id: str, user_id: str | None = None, *, name: str | None = None, inputs: Any = None
) -> Iterator[None]:
    """Runs started inside carry `run_metadata`; with `name`, under one root run of that name.

    For plain-Python entry points (the CLI) whose runs start in code that takes no config. With
    tracing off it only checks the organization.
    """
    metadata = run_metadata(organization_id, user_id)
    if not install_metadata_guard():
        yield
        return
    import langsmith

    with langsmith.tracing_context(metadata=metadata):
        if name is None:
            yield
            return
        with langsmith.trace(name, run_type="chain", inputs=inputs, metadata=metadata):
            yield


def flush() -> None:
    """Send every finished run now (before a CLI exits, or a test reads the trace)."""
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
