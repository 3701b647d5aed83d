"""The one way a statement reaches the database: bound to an organization, batched when it lists values.

Engines only adapt a cursor (`Cursor`) and open transactions (`Engine`); everything above them goes
through `Scoped`, so the organization scope cannot be forgotten or spoofed by a caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

BATCH = 500  # values per IN (...) list: far below SQLite's variable limit


class Cursor(Protocol):
    """The part of a DB-API cursor the runner needs (engines adapt parameter style)."""

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]: ...

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None: ...


class Engine(Protocol):
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Cursor]: ...

    def close(self) -> None: ...


class Scoped:
    """A transaction bound to one organization: the only way statements reach the database."""

    def __init__(self, cursor: Cursor, org: str) -> None:
        self._cursor = cursor
        self._org = org

    @staticmethod
    def _check(sql: str) -> None:
        if ":org" not in sql:
            raise AssertionError("graph store statement without the organization scope")

    def run(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        self._check(sql)
        return self._cursor.execute(sql, {**(params or {}), "org": self._org})

    def many(self, sql: str, rows: Iterable[dict[str, Any]]) -> None:
        self._check(sql)
        bound = [{**row, "org": self._org} for row in rows]
        if bound:
            self._cursor.executemany(sql, bound)


def batches(values: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def in_list(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """`(:p0, :p1, ...)` with the values bound into `params`."""
    names = []
    for i, value in enumerate(values):
        key = f"{prefix}{i}"
        params[key] = value
        names.append(f":{key}")
    return "(" + ", ".join(names) + ")" if names else "(NULL)"
