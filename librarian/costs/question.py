"""Question-time costs: the model calls that answer a question, recorded per organization.

An answer's entry points (`run_local`, `run_global`, `run_drift`, the agent's model calls) open the
`answer` scope; engines inside switch to their own phase (`map`, `reduce`, `judge`) with
`cost_phase`. A scope a caller opened already is kept, so nested entry points never count a call
twice or move it to another organization.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from librarian.costs.ledger import ledger_of
from librarian.costs.scope import Phase, cost_scope, current_scope

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def question_scope(stack: Any, org: str, phase: Phase = "answer") -> Iterator[None]:
    """Record the block's model calls against `org` as `phase`, unless a scope is already open."""
    if current_scope() is not None:
        yield
        return
    with cost_scope(ledger_of(stack), org, phase):
        yield


def records_question_costs(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorate `async def f(stack, org, ...)`: its model calls are the organization's `answer` costs."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        stack, org = args[0], args[1]
        with question_scope(stack, str(org)):
            return await fn(*args, **kwargs)

    return wrapper
