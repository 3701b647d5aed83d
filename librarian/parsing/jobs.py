"""Parsing as a job: submit once, then poll until the provider is done (Reducto's async API, seed 001).

A synchronous parse holds its caller for as long as the provider takes, and a slow or rate-limited
provider then holds a server worker with it. A job parser instead hands back a job id at once; the
ingest graph records that id in its checkpoint and polls it from a separate step, sleeping between
polls without a thread or the ingest worker, so a restarted run polls the same job instead of paying
for a second parse.

This module holds what is provider-neutral: the protocol a job parser implements, what a poll can
answer, the document errors a job ends with, and the policy (poll interval, how long to wait, how
often a rate limit is retried). `librarian.parsing.job_wait` drives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from librarian.errors import DocumentError, TransientProviderError
from librarian.parsing.types import ParseResult


@dataclass(frozen=True)
class JobPending:
    """The provider is still working; `progress` is its own estimate (0-1) when it gives one."""

    progress: float | None = None


@dataclass(frozen=True)
class JobDone:
    result: ParseResult


JobPoll = JobPending | JobDone


class RateLimitedError(TransientProviderError):
    """The provider answered 429; `retry_after` is the wait it asked for, in seconds, if it said."""

    code = "provider_rate_limited"

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimitExhaustedError(DocumentError):
    """Still rate limited after every allowed attempt: the run fails with this reason (re-upload later)."""

    code = "rate_limited"
    status = "failed"


class ParseJobFailedError(DocumentError):
    """The provider ran the job and reports it failed for a reason that is not the document's fault."""

    code = "parse_job_failed"
    status = "failed"


class ParseJobTimeoutError(DocumentError):
    """The job was still pending when the configured maximum wait ran out."""

    code = "parse_timeout"
    status = "failed"


class ParseJobClient(Protocol):
    """One provider's job API, in a blocking form (plain Python) and an awaitable one (the server).

    Both raise `RateLimitedError` on a 429 without retrying it themselves: the caller's wait loop
    retries it, so it can check for cancellation and record the attempts.
    """

    def submit(self, data: bytes, filename: str, media_type: str) -> str: ...

    def poll(self, job_id: str, filename: str) -> JobPoll: ...

    async def asubmit(self, data: bytes, filename: str, media_type: str) -> str: ...

    async def apoll(self, job_id: str, filename: str) -> JobPoll: ...


@runtime_checkable
class SupportsParseJobs(Protocol):
    """A parser that can also run as a job (Reducto); the local parser does not and stays synchronous."""

    def jobs(self) -> ParseJobClient: ...


@dataclass(frozen=True)
class JobPolicy:
    """How the wait behaves; from settings (`LIBRARIAN_REDUCTO_*`)."""

    poll_interval: float = 2.0  # seconds between polls of a pending job
    max_wait: float = 3600.0  # seconds from submission before a pending job fails the run
    rate_limit_attempts: int = 5  # calls per request when the provider keeps answering 429
    rate_limit_backoff: float = 1.0  # first wait when a 429 names none (then doubled, at most 60 s)
    # The longest Retry-After honoured as given; a longer one (or a date far ahead) waits this long,
    # so one odd header cannot park a run for days.
    max_retry_after: float = 300.0

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """The wait before attempt `attempt + 1`: the provider's Retry-After when it gave one."""
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        return min(60.0, self.rate_limit_backoff * 2 ** max(0, min(attempt - 1, 16)))
