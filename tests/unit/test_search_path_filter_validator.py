"""`librarian.retrieval.path_filter`: which strings name a library document, and the filter they make."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.files.paths import DOCS_PREFIX, InvalidPathError, validate_document_path
from librarian.index.filters import matches, validate_filter
from librarian.retrieval.path_filter import (
    MAX_SEARCH_PATHS,
    SearchPathError,
    normalise_search_path,
    normalise_search_paths,
    requested_paths,
    restricted_filter,
    unknown_paths,
)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("handbook.pdf", "docs/handbook.pdf"),
        ("docs/handbook.pdf", "docs/handbook.pdf"),
        ("Cafe\u0301.md", "docs/Café.md"),
    ],
)
def test_bare_names_and_document_paths_become_canonical(raw, canonical):
    assert normalise_search_path(raw) == canonical


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "../x.md",
        "/etc/passwd",
        "docs/../x.md",
        "docs/",
        "a/b.md",
        "docs/a/b.md",
        "x\x00.md",
        3,
        None,
    ],
)
def test_path_tricks_and_non_strings_are_refused_with_a_message(raw):
    with pytest.raises(SearchPathError) as refused:
        normalise_search_path(raw)
    assert str(refused.value)


@given(st.text(max_size=60))
def test_any_accepted_path_is_a_canonical_document_path_with_no_directory(raw):
    try:
        path = normalise_search_path(raw)
    except SearchPathError:
        return
    assert path.startswith(DOCS_PREFIX) and "/" not in path[len(DOCS_PREFIX) :]
    assert validate_document_path(path) == path  # canonical: validating again changes nothing
    assert normalise_search_path(path) == path


@given(st.text(max_size=60))
def test_the_validator_never_raises_anything_but_its_own_error(raw):
    try:
        normalise_search_path(raw)
    except SearchPathError as exc:
        assert not isinstance(exc, InvalidPathError) and str(exc)


def test_lists_are_deduplicated_in_order_and_bounded():
    assert normalise_search_paths(["b.md", "docs/a.md", "docs/b.md"]) == ["docs/b.md", "docs/a.md"]
    assert normalise_search_paths([]) is None and normalise_search_paths(None) is None
    with pytest.raises(SearchPathError, match="list"):
        normalise_search_paths("docs/a.md")  # a string is not a list of paths
    with pytest.raises(SearchPathError, match=f"at most {MAX_SEARCH_PATHS}"):
        normalise_search_paths([f"{n}.md" for n in range(MAX_SEARCH_PATHS + 1)])


@given(
    st.lists(st.sampled_from(["docs/a.md", "docs/b.md", "docs/c.md"]), min_size=1),
    st.sampled_from(["a", "b", "c", "d"]),
)
def test_the_filter_matches_exactly_the_named_paths_and_keeps_the_callers_filter(paths, name):
    record = {"path": f"docs/{name}.md", "page": 2}
    only = restricted_filter(None, paths)
    assert validate_filter(only) == only
    assert matches(only, record) == (record["path"] in paths)
    both = restricted_filter({"page": {"$gte": 3}}, paths)
    assert not matches(both, record)  # the caller's own filter still applies


def test_no_paths_means_no_restriction():
    assert restricted_filter(None, None) is None
    assert restricted_filter({"page": 1}, []) == {"page": 1}


def test_unknown_paths_asks_the_organizations_own_files():
    class Files:
        def exists(self, org: str, path: str) -> bool:
            return (org, path) == ("acme", "docs/a.md")

    assert unknown_paths(Files(), "acme", ["docs/a.md", "docs/b.md"]) == ["docs/b.md"]
    assert unknown_paths(Files(), "globex", ["docs/a.md"]) == ["docs/a.md"]


def test_the_run_context_paths_are_validated():
    assert requested_paths({"paths": ["a.md"]}) == ["docs/a.md"]
    assert requested_paths({"organization_id": "acme"}) is None
    with pytest.raises(SearchPathError):
        requested_paths({"paths": ["../globex/a.md"]})
