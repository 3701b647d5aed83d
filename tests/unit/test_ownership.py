"""The ownership rule's two forms agree: the filters `auth.py` gives the platform, as the platform's own
matcher applies them to thread metadata, and the predicates `webapi.thread_gate` applies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.ownership import (
    can_read,
    can_write,
    own_conversations_filter,
    readable_threads_filter,
)

inmem = pytest.importorskip("langgraph_runtime_inmem.ops")

NAMES = st.sampled_from(["acme", "globex", "alice", "bob", "", "chat", "document"])
METADATA = st.dictionaries(st.sampled_from(["organization_id", "owner", "kind", "title"]), NAMES)


@given(metadata=METADATA, org=st.sampled_from(["acme", "globex"]), user=st.sampled_from(["alice", "bob"]))
def test_predicates_match_the_platforms_reading_of_the_filters(metadata, org, user):
    match = inmem._check_filter_match
    assert can_read(metadata, org, user) == match(metadata, readable_threads_filter(org, user))
    assert can_write(metadata, org, user) == match(metadata, own_conversations_filter(org, user))


def test_a_colleagues_conversation_is_neither_readable_nor_writable():
    alices = {"organization_id": "acme", "owner": "alice", "kind": "chat"}
    assert can_read(alices, "acme", "alice") and can_write(alices, "acme", "alice")
    assert not can_read(alices, "acme", "bob") and not can_write(alices, "acme", "bob")
    assert not can_read(alices, "globex", "alice")


def test_document_threads_are_read_by_every_member_and_written_by_none():
    status = {"organization_id": "acme", "owner": "alice", "kind": "document"}
    assert can_read(status, "acme", "bob") and not can_write(status, "acme", "alice")
    assert not can_read(status, "globex", "bob")
