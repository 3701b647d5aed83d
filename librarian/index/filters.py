"""Pinecone metadata filters: one validator and three evaluators that must agree.

Filters arrive from tools and API callers, so they are untrusted: `validate_filter` rejects anything
outside Pinecone's language before an evaluator sees it, and `to_sql` renders values only as quoted
literals so a filter can never change the shape of the SQL it becomes.

Semantics (shared by `matches`, `evaluate_mask` and `to_sql`; tests pin them against each other):
- `{"k": v}` is `{"k": {"$eq": v}}`; several keys, or several operators on one key, are AND.
- `{}` (or None) matches everything: it is "no filter", as in Pinecone.
- Numbers compare numerically (1 == 1.0); booleans equal only booleans; strings only strings.
  An operand of another type than the stored value simply does not match (no error).
- A key a record lacks: `$eq $in $gt $gte $lt $lte` do not match, `$ne $nin` do (MongoDB's rule,
  which Pinecone's language follows), `$exists` tells them apart. A key that no record has is
  therefore not an error: it matches nothing under `$eq`, which is what Pinecone does.
- List-valued metadata (list of str): `$eq`/`$in` match if any element matches, `$ne`/`$nin` if no
  element does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from librarian.errors import LibrarianError

COMPARISON_OPS = frozenset({"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"})
LOGICAL_OPS = frozenset({"$and", "$or"})
MAX_DEPTH = 8
MAX_IN_VALUES = 10_000  # Pinecone's own limit for $in / $nin
MAX_KEY_LENGTH = 64
_KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT64_MAX = 2**63 - 1


class InvalidFilterError(LibrarianError, ValueError):
    """A metadata filter is not valid Pinecone filter syntax; the message names the problem."""

    code = "invalid_filter"


class _Missing:
    """Marks a key the record does not have (distinct from any stored value)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# --------------------------------------------------------------------------------------------------
# validation


def validate_filter(filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the filter in canonical form, or raise InvalidFilterError.

    Canonical form: every key condition is an operator dict (`{"k": {"$eq": v}}`), so evaluators
    need not handle the implicit-equality shorthand.
    """
    if filter is None:
        return {}
    return _validate_node(filter, depth=1)


def _validate_node(node: Any, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"filter is nested more than {MAX_DEPTH} levels deep")
    if not isinstance(node, Mapping):
        raise InvalidFilterError(f"a filter must be an object, got {type(node).__name__}")
    out: dict[str, Any] = {}
    for key, condition in node.items():
        if not isinstance(key, str):
            raise InvalidFilterError("filter keys must be strings")
        if key in LOGICAL_OPS:
            if not isinstance(condition, list) or not condition:
                raise InvalidFilterError(f"{key} takes a non-empty list of filters")
            out[key] = [_validate_node(child, depth + 1) for child in condition]
        elif key.startswith("$"):
            raise InvalidFilterError(f"unknown or misplaced operator {key!r}")
        else:
            _check_key(key)
            out[key] = _validate_condition(key, condition)
    return out


def _check_key(key: str) -> None:
    if len(key) > MAX_KEY_LENGTH or not _KEY_PATTERN.fullmatch(key):
        raise InvalidFilterError(
            f"metadata key {key[:MAX_KEY_LENGTH]!r} is not an identifier "
            "(letters, digits and '_', not starting with a digit)"
        )


def _validate_condition(key: str, condition: Any) -> dict[str, Any]:
    if not isinstance(condition, Mapping):
        if not _is_scalar(condition):
            raise InvalidFilterError(
                f"value for {key!r} must be a string, number or boolean (use $in for lists)"
            )
        return {"$eq": _check_scalar(key, condition)}
    if not condition:
        raise InvalidFilterError(f"condition for {key!r} is empty")
    if not any(str(op).startswith("$") for op in condition):
        raise InvalidFilterError(f"metadata is flat: {key!r} cannot be matched against an object")
    out: dict[str, Any] = {}
    for op, operand in condition.items():
        if op not in COMPARISON_OPS:
            raise InvalidFilterError(f"unknown operator {op!r} for {key!r}")
        out[op] = _validate_operand(key, op, operand)
    return out


def _validate_operand(key: str, op: str, operand: Any) -> Any:
    if op in ("$in", "$nin"):
        if not isinstance(operand, list):
            raise InvalidFilterError(f"{op} for {key!r} takes a list")
        if len(operand) > MAX_IN_VALUES:
            raise InvalidFilterError(f"{op} for {key!r} takes at most {MAX_IN_VALUES} values")
        for item in operand:
            if not _is_scalar(item):
                raise InvalidFilterError(f"{op} for {key!r} takes strings, numbers or booleans")
        return [_check_scalar(key, item) for item in operand]
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InvalidFilterError(f"$exists for {key!r} takes true or false")
        return operand
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if not _is_number(operand):
            raise InvalidFilterError(f"{op} for {key!r} takes a number")
        return _check_scalar(key, operand)
    if not _is_scalar(operand):  # $eq, $ne
        raise InvalidFilterError(f"{op} for {key!r} takes a string, number or boolean")
    return _check_scalar(key, operand)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | bool) or _is_number(value)


def _check_scalar(key: str, value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidFilterError(f"value for {key!r} must be a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _INT64_MAX:
        raise InvalidFilterError(f"value for {key!r} is outside the 64-bit integer range")
    if isinstance(value, str) and "\x00" in value:
        raise InvalidFilterError(f"value for {key!r} contains a NUL character")
    return value


# --------------------------------------------------------------------------------------------------
# python evaluation


def matches(filter: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    """Whether one record's metadata satisfies the filter (validated here if it was not already)."""
    return _matches(validate_filter(filter), metadata)


def _matches(node: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    for key, condition in node.items():
        if key == "$and":
            ok = all(_matches(child, metadata) for child in condition)
        elif key == "$or":
            ok = any(_matches(child, metadata) for child in condition)
        else:
            ok = field_matches(condition, metadata.get(key, MISSING))
        if not ok:
            return False
    return True


def field_matches(condition: Mapping[str, Any], value: Any) -> bool:
    """Whether one stored value (or MISSING) satisfies a canonical key condition."""
    return all(_op_matches(op, operand, value) for op, operand in condition.items())


def _op_matches(op: str, operand: Any, value: Any) -> bool:
    if op == "$exists":
        return (value is not MISSING) is operand
    if value is MISSING:
        return op in ("$ne", "$nin")
    items = value if isinstance(value, list | tuple) else (value,)
    if op == "$eq":
        return any(_same(item, operand) for item in items)
    if op == "$ne":
        return not any(_same(item, operand) for item in items)
    if op == "$in":
        return any(_same(item, choice) for item in items for choice in operand)
    if op == "$nin":
        return not any(_same(item, choice) for item in items for choice in operand)
    compare = _ORDER[op]
    return any(_is_number(item) and compare(item, operand) for item in items)


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _same(a: Any, b: Any) -> bool:
    """Equality without Python's True == 1: booleans only equal booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------------------------------
# vectorised evaluation over columns


@dataclass(frozen=True)
class FactorizedColumn:
    """One metadata key over many records: `uniques[codes[i]]` is record i's value (or MISSING).

    Conditions are evaluated once per distinct value rather than once per record, so filtering a
    cached namespace costs a numpy gather, and the semantics stay those of `field_matches`.
    """

    codes: np.ndarray
    uniques: Sequence[Any]


def evaluate_mask(
    filter: Mapping[str, Any] | None, size: int, column: Callable[[str], FactorizedColumn]
) -> np.ndarray:
    """Boolean mask of the `size` records that satisfy the filter."""
    return _mask(validate_filter(filter), size, column)


def _mask(node: Mapping[str, Any], size: int, column: Callable[[str], FactorizedColumn]) -> np.ndarray:
    result = np.ones(size, dtype=bool)
    for key, condition in node.items():
        if key == "$and":
            for child in condition:
                result &= _mask(child, size, column)
        elif key == "$or":
            either = np.zeros(size, dtype=bool)
            for child in condition:
                either |= _mask(child, size, column)
            result &= either
        else:
            col = column(key)
            table = np.fromiter((field_matches(condition, u) for u in col.uniques), dtype=bool)
            result &= table[col.codes] if len(table) else np.zeros(size, dtype=bool)
    return result


# --------------------------------------------------------------------------------------------------
# SQL (LanceDB / DataFusion `where`)

ColumnKind = Literal["string", "int", "float"]


@dataclass(frozen=True)
class SqlColumn:
    """A typed, scalar table column that stores one metadata key (NULL where a record lacks it)."""

    name: str
    kind: ColumnKind


class UnsupportedSqlFilterError(InvalidFilterError):
    """The filter touches a key with no typed column; evaluate it in Python instead."""

    code = "filter_not_sql"


def sql_string(value: str) -> str:
    """A SQL string literal. Doubling quotes is the only escape DataFusion's literals need."""
    if "\x00" in value:
        raise InvalidFilterError("string values must not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def sql_keys(filter: Mapping[str, Any] | None) -> set[str]:
    """Every metadata key a filter mentions (to decide whether SQL can evaluate it)."""
    keys: set[str] = set()

    def walk(node: Mapping[str, Any]) -> None:
        for key, condition in node.items():
            if key in LOGICAL_OPS:
                for child in condition:
                    walk(child)
            else:
                keys.add(key)

    walk(validate_filter(filter))
    return keys


def to_sql(filter: Mapping[str, Any] | None, columns: Mapping[str, SqlColumn]) -> str:
    """Render a filter as a boolean SQL expression over typed columns.

    Raises UnsupportedSqlFilterError for keys outside `columns`. Operands whose type cannot equal
    the column's render as constant TRUE/FALSE, mirroring `matches` instead of raising type errors.
    """
    return _sql_node(validate_filter(filter), columns)


def _sql_node(node: Mapping[str, Any], columns: Mapping[str, SqlColumn]) -> str:
    parts: list[str] = []
    for key, condition in node.items():
        if key in LOGICAL_OPS:
            joiner = " AND " if key == "$and" else " OR "
            parts.append("(" + joiner.join(_sql_node(child, columns) for child in condition) + ")")
            continue
        spec = columns.get(key)
        if spec is None:
            raise UnsupportedSqlFilterError(f"metadata key {key!r} has no column")
        parts.extend(_sql_op(spec, op, operand) for op, operand in condition.items())
    return "(" + " AND ".join(parts) + ")" if parts else "TRUE"


def _sql_op(spec: SqlColumn, op: str, operand: Any) -> str:
    col = f"`{spec.name}`"
    if op == "$exists":
        return f"({col} IS NOT NULL)" if operand else f"({col} IS NULL)"
    if op in ("$in", "$nin"):
        literals = [lit for lit in (_literal(spec, v) for v in operand) if lit is not None]
        if op == "$in":
            return f"({_ref(spec, operand)} IN ({', '.join(literals)}))" if literals else "FALSE"
        if not literals:
            return "TRUE"
        return f"({col} IS NULL OR {_ref(spec, operand)} NOT IN ({', '.join(literals)}))"
    literal = _literal(spec, operand)
    if literal is None:
        return "TRUE" if op == "$ne" else "FALSE"
    ref = _ref(spec, [operand])
    if op == "$ne":
        return f"({col} IS NULL OR {ref} <> {literal})"
    sql_op = {"$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    return f"({ref} {sql_op} {literal})"


def _literal(spec: SqlColumn, value: Any) -> str | None:
    """The literal for `value` compared with this column, or None if they can never be equal."""
    if spec.kind == "string":
        return sql_string(value) if isinstance(value, str) else None
    if not _is_number(value):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _INT64_MAX:
        value = int(value)
    return repr(value) if isinstance(value, int) else repr(float(value))


def _ref(spec: SqlColumn, operands: Sequence[Any]) -> str:
    """The column reference; integer columns are cast when compared with fractional numbers.

    DataFusion refuses to coerce 1.5 to Int64 rather than comparing numerically, so the cast keeps
    SQL in step with Python's 2 > 1.5.
    """
    col = f"`{spec.name}`"
    fractional = any(isinstance(v, float) and not v.is_integer() for v in operands if _is_number(v))
    return f"CAST({col} AS DOUBLE)" if spec.kind == "int" and fractional else col
