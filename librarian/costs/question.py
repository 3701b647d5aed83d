"""Question-time costs: the model calls that answer a question, recorded per organization.

An answer's entry points (`run_local`, `run_global`, `run_drift`, the agent's model calls) open the
`answer` scope; engines inside switch to their own phase (`map`, `reduce`, `judge`) with
`cost_phase`. A scope a caller opened already is kept, so nested entry points never count a call
twice or move it to another organization.

Questions are answered on the server's event loop, and the usage handler runs inline there, so the
ledger is written by one background thread (`BackgroundLedger`): a model call never waits on the
database, and the store is not even opened on the loop. `flush_question_costs` waits for the writes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from librarian.costs.ledger import ledger_of
from librarian.costs.scope import Phase, cost_scope, current_scope

log = logging.getLogger(__name__)
_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cost-ledger")  # in order, off the loop

P = ParamSpec("P")
R = TypeVar("R")


class BackgroundLedger:
    """A `UsageSink` that hands each record to the writer thread and returns at once."""

    def __init__(self, stack: Any) -> None:
        self._stack = stack

    def record(self, org: str, phase: Phase, **usage: Any) -> None:
        _WRITER.submit(self._write, org, phase, usage)

    def _write(self, org: str, phase: Phase, usage: dict[str, Any]) -> None:
        try:
            ledger_of(self._stack).record(org, phase, **usage)
        except Exception:  # the answer is given already: a ledger that cannot write only says so
            log.exception("the cost ledger could not record a %s call of %s", phase, org)


def flush_question_costs(timeout_s: float = 30.0) -> None:
    """Wait until every question-time record handed to the writer so far is written."""
    _WRITER.submit(lambda: None).result(timeout=timeout_s)


@contextmanager
def question_scope(stack: Any, org: str, phase: Phase = "answer") -> Iterator[None]:
    """Record the block's model calls against `org` as `phase`, unless a scope is already open."""
    if current_scope() is not None:
        yield
        return
    with cost_scope(BackgroundLedger(stack), org, phase):
        yield


def records_question_costs(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorate `async def f(stack, org, ...)`: its model calls are the organization's `answer` costs."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        stack, org = args[0], args[1]
        with question_scope(stack, str(org)):
            return await fn(*args, **kwargs)

    return wrapper
