"""Where the organization of a run comes from: the one function every caller uses.

The organization is the namespace, so it must come from something the model and the client cannot
set: the authenticated user on the LangGraph server (`langgraph_auth_user`), or, in plain Python and
notebooks, a trusted `organization_id` in the run's context / `configurable`. Never a tool argument,
never a default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from librarian.errors import TenantError

if TYPE_CHECKING:  # imported lazily at run time: the CLI checks organization ids without langgraph
    from langgraph.prebuilt.tool_node import ToolRuntime
    from langgraph.runtime import Runtime

ORG_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def validate_organization_id(value: object) -> str:
    """Return `value` if it is a usable organization id, else raise TenantError.

    Ids double as namespaces and directory names, so only a conservative charset is allowed.
    """
    if not isinstance(value, str) or not ORG_ID_PATTERN.fullmatch(value):
        raise TenantError(
            "organization id must be 1-63 characters of letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return value


def _user_field(user: Any, *names: str) -> Any:
    """Read a field from a LangGraph auth user, which may be a mapping or an object."""
    for name in names:
        if isinstance(user, Mapping) and user.get(name):
            return user[name]
        value = getattr(user, name, None)
        if value:
            return value
    return None


def organization_from_user(user: Any) -> str:
    """The active organization of an authenticated LangGraph user."""
    org = _user_field(user, "organization_id", "org_id", "active_organization")
    if not org:
        raise TenantError("the authenticated user has no active organization")
    return validate_organization_id(org)


def resolve_organization(config: Mapping[str, Any] | None, context: Any = None) -> str:
    """Return the organization of the current run, from trusted sources only.

    Order: the authenticated server user wins; a trusted `organization_id` in the run context or
    `configurable` is used when no user is authenticated (plain Python, notebooks, in-process server
    client after the route checked membership). If both exist and disagree, that is an attack or a
    bug, and we refuse rather than pick one.
    """
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    user = configurable.get("langgraph_auth_user")
    from_context = None
    if context is not None:
        from_context = (
            context.get("organization_id")
            if isinstance(context, Mapping)
            else getattr(context, "organization_id", None)
        )
    from_configurable = configurable.get("organization_id")
    if from_context and from_configurable and from_context != from_configurable:
        raise TenantError("the run context and configurable name different organizations")
    trusted = from_context or from_configurable
    if user is not None and _user_field(user, "identity", "sub") is not None:
        org = organization_from_user(user)
        if trusted and trusted != org:
            raise TenantError("run organization does not match the authenticated user's organization")
        return org
    if not trusted:
        raise TenantError(
            "no organization for this run: pass organization_id in the run context "
            "(plain Python) or authenticate (server); there is no default namespace"
        )
    return validate_organization_id(trusted)


def organization_of(
    config: Mapping[str, Any] | None, runtime: Runtime[Any] | ToolRuntime | None = None
) -> str:
    """The organization of a graph node's or a tool's run: the one accessor both use.

    A node passes the `Runtime[LibrarianContext]` LangGraph gives it, a tool its injected `ToolRuntime`
    (whose config is the run's). Only runtimes LangGraph made are read: any other object passed as
    `runtime` (a plain-Python caller's `{"runtime": {...}}` tool argument, say) is ignored, so it
    cannot name an organization.
    """
    from langgraph.prebuilt.tool_node import ToolRuntime
    from langgraph.runtime import Runtime

    if isinstance(runtime, ToolRuntime):
        return resolve_organization(runtime.config, runtime.context)
    return resolve_organization(config, runtime.context if isinstance(runtime, Runtime) else None)
