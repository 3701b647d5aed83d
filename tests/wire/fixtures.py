"""Pytest fixtures that start the wire servers; load them as a plugin where they are needed.

    pytest_plugins = ["tests.wire.fixtures"]  # in a test module, or once in tests/conftest.py

Each test gets fresh servers on free ports, so state never leaks between tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.wire.openai_server import OpenAIWireServer
from tests.wire.pinecone_server import PineconeWireServer


@pytest.fixture
def pinecone_server() -> Iterator[PineconeWireServer]:
    with PineconeWireServer() as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture
def instant_pinecone_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """No-op the Pinecone SDK's retry backoff sleeps (the SDK's documented test seam).

    The data-plane client retries 5xx/429 with jittered backoff of at least 0.25 s and offers no
    knob to change it, so failure tests would otherwise spend seconds sleeping.
    """
    import pinecone._internal.http_client as http_client

    monkeypatch.setattr(http_client, "_retry_sleep", lambda _seconds: None)
