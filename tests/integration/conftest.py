"""Fixtures for write-path integration tests: a real embedded stack in a temporary directory."""

from __future__ import annotations

import pytest


@pytest.fixture
def stack(settings):
    from librarian.stack import Stack

    return Stack(settings)


@pytest.fixture
def service(stack):
    from langgraph.checkpoint.memory import InMemorySaver

    from services.documents import DocumentService

    return DocumentService(stack, InMemorySaver())
