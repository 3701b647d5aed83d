"""`librarian.tracing`: the identity every run carries, and the metadata guard's rule on any input."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.errors import TenantError
from librarian.tracing import (
    IDENTIFIER_KEYS,
    IDENTIFIER_VALUE,
    identifier_metadata,
    run_metadata,
    traced_config,
)

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False))
VALUES = st.one_of(
    SCALARS,
    st.text(max_size=300),
    st.lists(st.text(max_size=20), max_size=3),
    st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3),
)
KEYS = st.one_of(st.sampled_from(sorted(IDENTIFIER_KEYS)), st.text(min_size=1, max_size=30))


def test_run_metadata_names_the_organization_and_the_user_when_there_is_one():
    assert run_metadata("acme", "ada") == {"organization_id": "acme", "user_id": "ada"}
    assert run_metadata("acme") == {"organization_id": "acme"}
    assert run_metadata("acme", "") == {"organization_id": "acme"}


@pytest.mark.parametrize("bad", [None, "", "../etc", "acme corp", 42])
def test_run_metadata_has_no_default_organization(bad):
    with pytest.raises(TenantError, match="organization id"):
        run_metadata(bad)  # type: ignore[arg-type]


def test_traced_config_keeps_the_callers_metadata_but_not_another_identity():
    config = {"configurable": {"thread_id": "t1"}, "metadata": {"organization_id": "globex", "ticket": "7"}}
    traced = traced_config(config, "acme", "ada")
    assert traced["metadata"] == {"organization_id": "acme", "user_id": "ada", "ticket": "7"}
    assert traced["configurable"] == {"thread_id": "t1"}
    assert config["metadata"]["organization_id"] == "globex"  # the caller's dict is not changed


def test_the_guard_drops_text_and_keeps_identifiers():
    metadata = {
        "organization_id": "acme",
        "langgraph_node": "tools",
        "langgraph_path": ("__pregel_pull", "tools"),
        "ls_stop": ["\n\n"],
        "attachment_id": "att-42",
        "step": 3,
        "attachment_text": "The zephyr lantern protocol needs seventeen brass keys.",
        "note": "第一章 总则",
        "pasted": "line one\nline two",
        "long": "x" * 200,
        "nested": {"text": "hidden"},
    }
    assert identifier_metadata(metadata) == {
        "organization_id": "acme",
        "langgraph_node": "tools",
        "langgraph_path": ("__pregel_pull", "tools"),
        "ls_stop": ["\n\n"],
        "attachment_id": "att-42",
        "step": 3,
    }


@given(st.dictionaries(KEYS, VALUES, max_size=12))
def test_the_guard_only_ever_removes_and_never_lets_text_through(metadata):
    kept = identifier_metadata(metadata)
    assert kept.items() <= metadata.items()
    for key, value in kept.items():
        if key in IDENTIFIER_KEYS or key.startswith(("langgraph_", "ls_", "lc_")):
            continue
        assert not isinstance(value, (list, dict, tuple))
        if isinstance(value, str):
            assert IDENTIFIER_VALUE.fullmatch(value) and not set(value) & set(string.whitespace)
    for key in metadata:
        if key in IDENTIFIER_KEYS:
            assert key in kept
