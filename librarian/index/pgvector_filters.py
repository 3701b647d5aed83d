"""Pinecone metadata filters as one SQL/JSON path predicate over the `metadata` jsonb column.

The whole filter becomes a single `jsonb_path_exists(metadata, <path>, <vars>)` call. The path text
and every operand travel as bound parameters (operands in the `vars` jsonb, referenced as `$v0`,
`$v1` ...), so a filter can never change the shape of the SQL; keys are already validated
identifiers (`filters.validate_filter`) and are written double-quoted inside the path.

Why SQL/JSON paths map Pinecone's semantics (`filters.matches`) one to one:
- lax mode's `@."k"[*]` reads a scalar as a one-element list and a missing key as an empty one, so
  "any element matches" (`$eq`, `$in`, ranges) and "no element matches" (`$ne`, `$nin`, via `!`) hold
  for scalars, lists and missing keys alike;
- comparisons across types (a string with a number, a boolean with a number) are *unknown*, which a
  filter step treats as no match: booleans equal only booleans, numbers compare numerically (1 == 1.0);
- every atom is wrapped in `exists(...)`, which is always true or false, so `!`, `&&` and `||` follow
  ordinary two-valued logic.

Numbers are compared as PostgreSQL `numeric`: exact for integers and for the shortest decimal of a
float, so they agree with Python's comparisons except between an integer and a float both beyond
2**53, where Python compares the float's binary value and PostgreSQL its shortest decimal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from librarian.index.filters import LOGICAL_OPS, validate_filter

_ALWAYS = "exists(@)"  # the metadata object itself: always there
_NEVER = "!exists(@)"


@dataclass(frozen=True)
class PathPredicate:
    """A filter as a JSON path (`$ ? (...)`) plus the variables it references."""

    path: str
    variables: dict[str, Any]


def filter_predicate(filter: Mapping[str, Any] | None) -> PathPredicate | None:
    """The predicate for `filter`, or None when it is empty (no filter: everything matches)."""
    canonical = validate_filter(filter)
    if not canonical:
        return None
    variables: dict[str, Any] = {}
    return PathPredicate(path=f"$ ? ({_node(canonical, variables)})", variables=variables)


def _node(node: Mapping[str, Any], variables: dict[str, Any]) -> str:
    parts: list[str] = []
    for key, condition in node.items():
        if key in LOGICAL_OPS:
            joiner = " && " if key == "$and" else " || "
            parts.append("(" + joiner.join(_node(child, variables) for child in condition) + ")")
        else:
            parts.extend(_atom(key, op, operand, variables) for op, operand in condition.items())
    if not parts:
        return _ALWAYS  # `{}` inside $and / $or matches everything, as in `filters.matches`
    return "(" + " && ".join(parts) + ")"


def _atom(key: str, op: str, operand: Any, variables: dict[str, Any]) -> str:
    field = f'@."{key}"'  # key is an identifier ([A-Za-z_][A-Za-z0-9_]*): nothing to escape
    if op == "$exists":
        return f"exists({field})" if operand else f"!exists({field})"
    name = f"v{len(variables)}"
    variables[name] = operand
    if op in ("$in", "$nin"):
        if not operand:
            return _NEVER if op == "$in" else _ALWAYS
        test = f"exists({field}[*] ? (@ == ${name}[*]))"
        return test if op == "$in" else f"!{test}"
    if op in ("$eq", "$ne"):
        test = f"exists({field}[*] ? (@ == ${name}))"
        return test if op == "$eq" else f"!{test}"
    comparison = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    return f"exists({field}[*] ? (@ {comparison} ${name}))"


def path_values(filter: Mapping[str, Any] | None) -> list[str] | None:
    """The `path` strings a filter is restricted to, when its top level pins `path` ($eq / $in).

    The ingest graph deletes a document's vectors by `{"path": ...}` before every upsert; with this
    the delete can use the `(ns, metadata->>'path')` index instead of reading the whole namespace.
    `path` is a typed string key (`lance_schema.KNOWN_COLUMNS`, enforced on upsert), so for it
    `metadata->>'path' = value` is exactly `$eq`. None: no such restriction (the path predicate
    alone decides).
    """
    condition = validate_filter(filter).get("path")
    if not condition:
        return None
    if "$eq" in condition:
        value = condition["$eq"]
        return [value] if isinstance(value, str) else []
    if "$in" in condition:
        return [v for v in condition["$in"] if isinstance(v, str)]
    return None
