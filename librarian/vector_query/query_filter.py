"""Metadata filters from models, run overrides and Chroma's `where`: validated, never tenant-selecting."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from librarian.index.filters import LOGICAL_OPS, InvalidFilterError, validate_filter
from librarian.vector_query.tenant_keys import is_tenant_key

# Chroma's `where` language is Pinecone's without `$exists`.
CHROMA_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"}) | LOGICAL_OPS


class TenantFilterError(InvalidFilterError):
    """A filter names a tenant key: isolation is the namespace's job, never a filter's."""

    code = "tenant_filter"


def _tenant_keys_in_filter(node: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, condition in node.items():
        if key in LOGICAL_OPS:
            for child in condition:
                found.extend(_tenant_keys_in_filter(child))
        elif is_tenant_key(key):
            found.append(key)
    return found


def _operators(node: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for key, condition in node.items():
        if key in LOGICAL_OPS:
            found.add(key)
            for child in condition:
                found |= _operators(child)
        elif isinstance(condition, Mapping):
            found |= {op for op in condition if str(op).startswith("$")}
    return found


def check_query_filter(raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Parse (JSON text allowed, as models often send it), validate and refuse tenant keys.

    Returns the canonical filter (`{}` for none). Raises InvalidFilterError or TenantFilterError
    with a message the model can act on.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidFilterError(f"the filter is not valid JSON: {exc.msg}") from exc
    if not isinstance(raw, Mapping):
        raise InvalidFilterError(f"a filter must be an object, got {type(raw).__name__}")
    canonical = validate_filter(raw)
    tenant = _tenant_keys_in_filter(canonical)
    if tenant:
        raise TenantFilterError(
            f"filters cannot select an organization (found {', '.join(sorted(set(tenant)))}); "
            "the search always covers the current organization's documents only"
        )
    return canonical


def check_chroma_where(raw: Any, where: str) -> dict[str, Any]:
    """Chroma's `where` as a Librarian metadata filter: the same language, minus `$exists`."""
    try:
        canonical = check_query_filter(raw)
    except InvalidFilterError as exc:
        raise type(exc)(f"{where}: {exc}") from exc
    foreign = _operators(canonical) - CHROMA_OPERATORS
    if foreign:
        raise InvalidFilterError(
            f"{where}: {', '.join(sorted(foreign))} is not in Chroma's where language "
            f"(it has {' '.join(sorted(CHROMA_OPERATORS))}); put it in `filter` instead"
        )
    return canonical
