"""Which organization and phase a model call belongs to, carried by a context variable.

A phase's entry point opens `cost_scope(ledger, org, phase)`; every model call made inside it (in this
thread, or in a task or `asyncio.to_thread` started from it, which copy the context; a thread pool
does not, so open the scope inside the pooled function) is recorded
against that organization and phase by whoever sees the provider's usage: the chat models' callback
handler, the OpenAI embedder. Embedding calls are always the `embed` phase, whatever scope they run in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

log = logging.getLogger(__name__)

Phase = Literal["extract", "summarise", "map", "reduce", "answer", "judge", "embed"]
PHASES: tuple[Phase, ...] = get_args(Phase)


class UsageSink(Protocol):
    """Where usage goes (the ledger); `build` groups a build's calls for its budget ('' otherwise)."""

    def record(
        self,
        org: str,
        phase: Phase,
        *,
        calls: int,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
        build: str,
    ) -> None: ...


@dataclass(frozen=True)
class CostScope:
    sink: UsageSink
    org: str
    phase: Phase
    build: str = ""


_scope: ContextVar[CostScope | None] = ContextVar("librarian_cost_scope", default=None)


def current_scope() -> CostScope | None:
    """The scope model calls made here are recorded in, or None (nothing is recorded)."""
    return _scope.get()


@contextmanager
def cost_scope(sink: UsageSink, org: str, phase: Phase, *, build: str = "") -> Iterator[CostScope]:
    """Record the model calls made inside the block against (`org`, `phase`) in `sink`."""
    if phase not in PHASES:
        raise ValueError(f"unknown cost phase {phase!r}; one of {', '.join(PHASES)}")
    token = _scope.set(CostScope(sink, org, phase, build))
    try:
        yield _scope.get()  # type: ignore[misc]
    finally:
        _scope.reset(token)


@contextmanager
def cost_phase(phase: Phase) -> Iterator[CostScope | None]:
    """Within an open scope, record the block's calls as `phase` (e.g. an engine's `map` inside the
    `answer` scope its caller opened); without one it does nothing, so engines may use it freely."""
    scope = _scope.get()
    if scope is None:
        yield None
        return
    with cost_scope(scope.sink, scope.org, phase, build=scope.build) as inner:
        yield inner


def record_usage(
    input_tokens: int, output_tokens: int, seconds: float, *, phase: Phase | None = None, calls: int = 1
) -> bool:
    """Record one call's usage in the current scope (under `phase` if given); False outside a scope."""
    scope = _scope.get()
    if scope is None:
        return False
    try:
        scope.sink.record(
            scope.org,
            phase or scope.phase,
            calls=calls,
            input_tokens=max(0, int(input_tokens)),
            output_tokens=max(0, int(output_tokens)),
            seconds=max(0.0, float(seconds)),
            build=scope.build,
        )
    except Exception:  # the call itself succeeded: a ledger that cannot write must not undo its work
        log.exception("the cost ledger could not record a %s call of %s", phase or scope.phase, scope.org)
        return False
    return True
