"""Pinecone helpers: upsert batches within the count and byte budgets; the score breakdown's algebra.

The planner is exercised on generated records (ids, widths, sparse terms and metadata of any size,
non-ASCII text included) and checked against the request body the Pinecone SDK itself encodes.
"""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.index.base import QueryMatch
from librarian.index.pinecone_batches import (
    RecordTooLargeError,
    as_sent,
    byte_bounded_batches,
    record_size,
    request_sizes,
)
from librarian.index.pinecone_scores import ids_per_fetch, solve_from_dense
from librarian.settings import SettingsError, load_settings

metadata_values = st.one_of(
    st.text(max_size=3000),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(st.text(max_size=20), max_size=5),
)


@st.composite
def wire_records(draw: st.DrawFn) -> list[dict]:
    count = draw(st.integers(0, 20))
    dimension = draw(st.integers(1, 64))
    records = []
    for i in range(count):
        record: dict = {
            "id": f"{draw(st.text(min_size=1, max_size=40))}:{i}",
            "values": draw(st.lists(st.floats(-1, 1, width=32), min_size=dimension, max_size=dimension)),
        }
        if draw(st.booleans()):
            terms = draw(st.lists(st.integers(0, 2**32 - 1), unique=True, min_size=1, max_size=50))
            record["sparse_values"] = {"indices": terms, "values": [0.5] * len(terms)}
        if draw(st.booleans()):
            record["metadata"] = draw(st.dictionaries(st.text(min_size=1, max_size=12), metadata_values))
        records.append(record)
    return records


@settings(max_examples=80, deadline=None)
@given(
    records=wire_records(),
    max_count=st.integers(1, 40),
    max_bytes=st.integers(100, 20_000),
    namespace=st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True),
)
def test_batches_respect_both_budgets_keep_order_and_are_filled(records, max_count, max_bytes, namespace):
    envelope = len(orjson.dumps({"vectors": [], "namespace": namespace}))
    too_large = [r for r in records if envelope + record_size(r) > max_bytes]
    if too_large:
        with pytest.raises(RecordTooLargeError) as err:
            byte_bounded_batches(records, namespace=namespace, max_count=max_count, max_bytes=max_bytes)
        assert repr(too_large[0]["id"]) in str(err.value)
        return

    batches = byte_bounded_batches(records, namespace=namespace, max_count=max_count, max_bytes=max_bytes)

    assert [r for batch in batches for r in batch] == records
    sizes = list(request_sizes(batches, namespace))
    bodies = [orjson.dumps({"vectors": [as_sent(r) for r in b], "namespace": namespace}) for b in batches]
    assert sizes == [len(body) for body in bodies]
    assert all(0 < len(b) <= max_count for b in batches)
    assert all(size <= max_bytes for size in sizes)
    for batch, following in itertools.pairwise(batches):  # greedy: the next record did not fit
        grown = len(
            orjson.dumps({"vectors": [as_sent(r) for r in [*batch, following[0]]], "namespace": namespace})
        )
        assert len(batch) == max_count or grown > max_bytes


def test_an_oversized_record_names_itself_and_its_largest_metadata_field():
    records = [
        {"id": "small", "values": [0.1] * 8},
        {
            "id": "docs/big.pdf:7",
            "values": [0.1] * 8,
            "metadata": {"path": "docs/big.pdf", "text": "é" * 5000},
        },
    ]

    with pytest.raises(RecordTooLargeError) as err:
        byte_bounded_batches(records, namespace="org", max_count=100, max_bytes=5_000)

    message = str(err.value)
    assert "'docs/big.pdf:7'" in message and "'text'" in message and "5,000-byte budget" in message
    assert err.value.code == "record_too_large"


def test_sparse_values_are_measured_under_the_name_the_sdk_sends():
    record = {"id": "a", "values": [1.0], "sparse_values": {"indices": [3], "values": [0.5]}}
    assert record_size(record) == len(
        b'{"id":"a","values":[1.0],"sparseValues":{"indices":[3],"values":[0.5]}}'
    )


@pytest.mark.parametrize("value", [0, 2_000_001])
def test_the_byte_budget_setting_must_fit_pinecones_cap(value, tmp_path):
    with pytest.raises(SettingsError, match="PINECONE_UPSERT_MAX_BYTES"):
        load_settings(data_dir=tmp_path, pinecone_upsert_max_bytes=value)
    assert load_settings(data_dir=tmp_path).pinecone_upsert_max_bytes == 1_900_000


# ----------------------------------------------------------------------------- score breakdown algebra


@settings(max_examples=200, deadline=None)
@given(
    dense=st.floats(-10, 10),
    sparse=st.floats(0, 50),
    alpha=st.floats(0, 0.95),
)
def test_the_sparse_score_solved_from_the_fused_one_is_the_sparse_score(dense, sparse, alpha):
    match = QueryMatch(id="a", score=alpha * dense + (1 - alpha) * sparse)

    missing = solve_from_dense([match, QueryMatch(id="b", score=1.0)], {"a": dense}, alpha)

    assert [m.id for m in missing] == ["b"]
    assert match.dense_score == dense
    assert match.sparse_score == pytest.approx(sparse, abs=1e-9)


def test_fetches_for_the_breakdown_stay_far_below_the_4mb_result_cap():
    assert ids_per_fetch(3072, 100) == 50
    assert ids_per_fetch(384, 100) == 100
    assert ids_per_fetch(20_000, 100) == 7
