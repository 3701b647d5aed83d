"""The wait loop of a parse job: rate-limit retries and polling, with a cancellation check each turn.

Two forms of the same loop. The awaitable one is the server's: it sleeps with `asyncio.sleep`, so a
waiting document holds neither a thread nor the ingest worker, and cancelling the run's task stops
it at once. The blocking one is plain Python's, whose runs already own a thread; there a cancel is
seen at the next check, within one poll interval.

`check` is called before every request; it raises to stop the wait (the ingest graph passes its
`raise_if_cancelled`). `started_at` is the submission time (epoch seconds) taken from the checkpoint,
so a resumed run keeps the budget it had instead of starting a new one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from librarian.parsing.jobs import (
    JobDone,
    JobPolicy,
    JobPoll,
    ParseJobTimeoutError,
    RateLimitedError,
    RateLimitExhaustedError,
)
from librarian.parsing.types import ParseResult

T = TypeVar("T")


def _exhausted(what: str, policy: JobPolicy, exc: RateLimitedError) -> RateLimitExhaustedError:
    return RateLimitExhaustedError(
        f"the parser kept answering 429 (rate limited) to {what} after {policy.rate_limit_attempts} "
        f"attempts; upload the document again later ({exc})"
    )


def _timed_out(policy: JobPolicy) -> ParseJobTimeoutError:
    return ParseJobTimeoutError(
        f"the parse job was still pending after {policy.max_wait:g} s "
        "(LIBRARIAN_REDUCTO_JOB_MAX_WAIT_S); upload the document again to retry"
    )


def call_rate_limited(what: str, call: Callable[[], T], policy: JobPolicy, check: Callable[[], None]) -> T:
    """`call()`, retried on 429 after the provider's Retry-After, at most `rate_limit_attempts` times."""
    for attempt in range(1, policy.rate_limit_attempts + 1):
        check()
        try:
            return call()
        except RateLimitedError as exc:
            if attempt == policy.rate_limit_attempts:
                raise _exhausted(what, policy, exc) from exc
            time.sleep(policy.backoff(attempt, exc.retry_after))
    raise AssertionError("unreachable: rate_limit_attempts is at least 1")


async def acall_rate_limited(
    what: str, call: Callable[[], Awaitable[T]], policy: JobPolicy, check: Callable[[], Awaitable[None]]
) -> T:
    """`call_rate_limited` for the event loop: the backoff is an `asyncio.sleep`."""
    for attempt in range(1, policy.rate_limit_attempts + 1):
        await check()
        try:
            return await call()
        except RateLimitedError as exc:
            if attempt == policy.rate_limit_attempts:
                raise _exhausted(what, policy, exc) from exc
            await asyncio.sleep(policy.backoff(attempt, exc.retry_after))
    raise AssertionError("unreachable: rate_limit_attempts is at least 1")


def wait_for_job(
    poll: Callable[[], JobPoll], policy: JobPolicy, check: Callable[[], None], started_at: float
) -> ParseResult:
    """Poll until the job is done; its document errors (failed job, timeout, rate limit) propagate."""
    while True:
        status = call_rate_limited("a job poll", poll, policy, check)
        if isinstance(status, JobDone):
            return status.result
        if time.time() - started_at >= policy.max_wait:
            raise _timed_out(policy)
        time.sleep(policy.poll_interval)


async def await_job(
    poll: Callable[[], Awaitable[JobPoll]],
    policy: JobPolicy,
    check: Callable[[], Awaitable[None]],
    started_at: float,
) -> ParseResult:
    """`wait_for_job` for the event loop: between polls the run awaits and holds nothing."""
    while True:
        status = await acall_rate_limited("a job poll", poll, policy, check)
        if isinstance(status, JobDone):
            return status.result
        if time.time() - started_at >= policy.max_wait:
            raise _timed_out(policy)
        await asyncio.sleep(policy.poll_interval)
