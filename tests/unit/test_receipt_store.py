"""The receipt store keeps each receipt exactly as given, per organization, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.errors import LibrarianError
from librarian.receipts.model import NOTHING, PENDING, REMOVED, Place, Probe, Receipt
from librarian.receipts.store import PostgresReceiptStore, ReceiptStore, SqliteReceiptStore
from tests.conftest import POSTGRES_URL, require_postgres

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30)
_places = st.builds(
    Place,
    place=_names,
    unit=_text,
    before=st.integers(0, 10**9),
    after=st.integers(0, 10**9),
    action=st.sampled_from([REMOVED, PENDING, NOTHING]),
    note=_text,
)
_probes = st.builds(Probe, channel=_names, found=st.booleans(), query=_text, detail=_text)
_pending = st.fixed_dictionaries(
    {"place": _names, "count": st.integers(0, 10**6), "removedBy": st.fixed_dictionaries({"runId": _text})}
)


def receipts(org: str) -> st.SearchStrategy[Receipt]:
    return st.builds(
        Receipt,
        id=st.uuids().map(lambda u: u.hex),
        organization_id=st.just(org),
        path=_names.map(lambda n: f"docs/{n}"),
        deleted_at=st.datetimes().map(lambda d: d.isoformat()),
        deleted_by=st.one_of(st.none(), _text),
        places=st.lists(_places, max_size=5),
        pending=st.lists(_pending, max_size=3),
        probes=st.lists(_probes, max_size=4),
    )


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path: Path) -> Iterator[ReceiptStore]:
    if request.param == "sqlite":
        yield SqliteReceiptStore(tmp_path / "receipts.sqlite")
    else:
        require_postgres()
        yield PostgresReceiptStore(POSTGRES_URL)


def unique_org() -> str:
    return f"rc-{uuid.uuid4().hex[:12]}"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_receipt_comes_back_as_it_was_kept(store: ReceiptStore, data) -> None:
    org = unique_org()
    receipt = data.draw(receipts(org))
    store.put(receipt)
    kept = store.list(org)
    assert [r.as_dict() for r in kept] == [receipt.as_dict()]
    assert [r.id for r in store.list(org, path=receipt.path)] == [receipt.id]
    assert store.list(unique_org()) == []  # another organization sees none of it


def test_newest_first_filtered_by_path_and_limited(store: ReceiptStore) -> None:
    org = unique_org()
    made = [
        Receipt(uuid.uuid4().hex, org, f"docs/{n}.md", f"2026-12-0{n}T00:00:00+00:00", "u") for n in (1, 2, 3)
    ]
    for receipt in made:
        store.put(receipt)
    assert [r.path for r in store.list(org)] == ["docs/3.md", "docs/2.md", "docs/1.md"]
    assert [r.path for r in store.list(org, limit=1)] == ["docs/3.md"]
    assert [r.path for r in store.list(org, path="docs/2.md")] == ["docs/2.md"]


@pytest.mark.parametrize("limit", [0, -1, 1001, True])
def test_a_bad_limit_is_a_clear_error(store: ReceiptStore, limit) -> None:
    with pytest.raises(ValueError, match="limit must be"):
        store.list(unique_org(), limit=limit)


@pytest.mark.parametrize("org", ["", " ", "../x", "a/b"])
def test_no_receipt_without_a_valid_organization(store: ReceiptStore, org: str) -> None:
    with pytest.raises(LibrarianError):
        store.list(org)
    with pytest.raises(LibrarianError):
        store.put(Receipt(uuid.uuid4().hex, org, "docs/x.md", "2026-12-07T00:00:00+00:00", None))


def test_verified_needs_probes_and_none_finding_it() -> None:
    base = Receipt("id", "org", "docs/x.md", "2026-12-07T00:00:00+00:00", None)
    assert base.verified is False  # nothing checked: not verified
    base.probes = [Probe("search", False, "q"), Probe("graph_local", False, "q")]
    assert base.verified is True and base.found_in == []
    base.probes.append(Probe("graph_drift", True, "q", "cites 'docs/x.md'"))
    assert base.verified is False and base.found_in == ["graph_drift"]
    assert Receipt.from_dict(base.as_dict()).as_dict() == base.as_dict()
