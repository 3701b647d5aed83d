"""Retry-After headers, backoff and job outcomes: provider data of unknown shape never breaks the wait."""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from types import SimpleNamespace

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.errors import CorruptFileError, DocumentError, UnsupportedFileError
from librarian.parsing.job_wait import acall_rate_limited, call_rate_limited
from librarian.parsing.jobs import JobPolicy, ParseJobFailedError, RateLimitedError, RateLimitExhaustedError
from librarian.parsing.reducto_jobs import _failed, retry_after_seconds

header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@given(value=header_text, millis=st.one_of(st.none(), header_text))
@settings(max_examples=300, deadline=None)
def test_any_retry_after_header_gives_none_or_a_finite_wait(value: str, millis: str | None) -> None:
    headers = httpx.Headers(
        {"retry-after": value, **({"retry-after-ms": millis} if millis is not None else {})}
    )
    seconds = retry_after_seconds(headers)
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0)
    wait = JobPolicy().backoff(1, seconds)
    assert math.isfinite(wait) and 0 <= wait <= JobPolicy().max_retry_after


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(httpx.Headers(headers)) == expected


def test_retry_after_as_an_http_date() -> None:
    ahead = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_seconds(httpx.Headers({"retry-after": ahead})) or 0) <= 31


@given(attempt=st.integers(min_value=-5, max_value=10_000), retry_after=st.one_of(st.none(), st.floats()))
def test_backoff_is_bounded_for_any_attempt_and_header(attempt: int, retry_after: float | None) -> None:
    policy = JobPolicy()
    wait = policy.backoff(attempt, retry_after)
    assert math.isfinite(wait) and 0 <= wait <= max(60.0, policy.max_retry_after)
    if retry_after is not None and math.isfinite(retry_after) and 0 <= retry_after <= policy.max_retry_after:
        assert wait == retry_after  # the provider's own wait, honoured as given


@given(
    status=st.text(max_size=12),
    name=st.one_of(st.none(), st.text(max_size=30)),
    reason=st.one_of(st.none(), st.text(max_size=60)),
)
def test_any_failed_job_becomes_a_document_error_with_a_message(status, name, reason) -> None:
    error = None if name is None else SimpleNamespace(name=name, message="detail")
    failure = _failed(SimpleNamespace(status=status, error=error, reason=reason), "job-1", "a.pdf")
    assert isinstance(failure, DocumentError) and "a.pdf" in str(failure)


def test_document_failures_keep_their_statuses() -> None:
    def job(name: str) -> SimpleNamespace:
        return SimpleNamespace(status="Failed", error=SimpleNamespace(name=name, message="m"), reason="r")

    assert isinstance(_failed(job("DOCUMENT_CORRUPT"), "j", "a.pdf"), CorruptFileError)
    assert isinstance(_failed(job("DOCUMENT_UNSUPPORTED"), "j", "a.pdf"), UnsupportedFileError)
    assert type(_failed(job("QUEUE_FULL"), "j", "a.pdf")) is ParseJobFailedError


def test_rate_limit_attempts_are_bounded_and_checked_each_time() -> None:
    calls, checks = [], []

    def limited() -> str:
        calls.append(1)
        raise RateLimitedError("429", retry_after=0)

    with pytest.raises(RateLimitExhaustedError, match="3 attempts"):
        call_rate_limited("x", limited, JobPolicy(rate_limit_attempts=3), lambda: checks.append(1))
    assert len(calls) == 3 and len(checks) == 3


def test_a_cancelled_check_stops_the_async_retry_before_another_call() -> None:
    calls = []

    async def limited() -> str:
        calls.append(1)
        raise RateLimitedError("429", retry_after=0)

    async def check() -> None:
        if calls:
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        asyncio.run(acall_rate_limited("x", limited, JobPolicy(rate_limit_attempts=5), check))
    assert len(calls) == 1
