"""Keys that could name a tenant, refused wherever a caller's options can reach.

Options come from clients (run context on the LangGraph server) and filters from models, so a key
such as `namespace` or `orgId` anywhere in them is refused rather than ignored: an ignored key makes
its author believe it took effect.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from librarian.errors import TenantError

# Compared after lower-casing and dropping '_', '-', '.' and spaces.
TENANT_KEYS = frozenset(
    {"namespace", "ns", "organization", "organizationid", "org", "orgid", "tenant", "tenantid"}
)
_MAX_DEPTH = 32


def normal_key(key: object) -> str:
    """`organization_id`, `organizationId` and `Organization-ID` all become `organizationid`."""
    return re.sub(r"[_\-.\s]", "", str(key)).lower()


def is_tenant_key(key: object) -> bool:
    """Whether a key could select a tenant (namespace, organization_id, orgId, TENANT ...)."""
    return normal_key(key) in TENANT_KEYS


def refuse_tenant_keys(value: Any, where: str, depth: int = 0) -> None:
    """Raise TenantError if a mapping key at any depth of `value` (lists included) names a tenant.

    Only keys are checked: a value such as a filename may legitimately contain "org".
    """
    if depth > _MAX_DEPTH:
        raise TenantError(f"{where} is nested too deeply to check for tenant keys; it is refused")
    if isinstance(value, Mapping):
        named = [str(k) for k in value if is_tenant_key(k)]
        if named:
            raise TenantError(
                f"{where} cannot set {', '.join(named)}: the namespace is always the run's organization "
                "(authenticated user or trusted organization_id), never configuration"
            )
        for key, child in value.items():
            refuse_tenant_keys(child, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, list | tuple):
        for child in value:
            refuse_tenant_keys(child, where, depth + 1)
