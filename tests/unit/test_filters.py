"""Pinecone filter language: validation, and agreement of the Python, mask and SQL evaluators.

The SQL side runs on a real LanceDB table, so "agree" means the engine returns the same ids that
`matches` selects, and injection attempts are checked by what the engine actually deletes.
"""

from __future__ import annotations

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from librarian.errors import LibrarianError
from librarian.index.filters import (
    MISSING,
    FactorizedColumn,
    InvalidFilterError,
    SqlColumn,
    UnsupportedSqlFilterError,
    evaluate_mask,
    matches,
    sql_string,
    to_sql,
    validate_filter,
)

COLUMNS = {
    "path": SqlColumn("path", "string"),
    "page": SqlColumn("page", "int"),
    "score": SqlColumn("score", "float"),
    "blockType": SqlColumn("blockType", "string"),
}

RECORDS = [
    {"id": "a", "path": "docs/a.pdf", "page": 1, "score": 0.5, "blockType": "Text"},
    {"id": "b", "path": "docs/a.pdf", "page": 2, "score": 1.5, "blockType": "Table"},
    {"id": "c", "path": "docs/b.pdf", "page": 3, "score": 2.0},
    {"id": "d", "path": "docs/b.pdf", "blockType": "Title"},
    {"id": "e", "path": "it's \\ tricky'; --", "page": 10, "score": -1.0, "blockType": "Text"},
]

FILTERS = [
    {},
    {"path": "docs/a.pdf"},
    {"path": {"$eq": "docs/b.pdf"}},
    {"path": {"$ne": "docs/a.pdf"}},
    {"page": {"$ne": 2}},
    {"page": {"$in": [1, 3]}},
    {"page": {"$nin": [1, 3]}},
    {"blockType": {"$nin": ["Text"]}},
    {"page": {"$gt": 1}},
    {"page": {"$gte": 2}},
    {"page": {"$lt": 3}},
    {"page": {"$lte": 2}},
    {"page": {"$gt": 1.5}},
    {"page": {"$lt": 2.5, "$gte": 1}},
    {"page": 2.0},
    {"page": {"$in": [1.5, 3]}},
    {"score": {"$gte": 1}},
    {"score": 2},
    {"page": "2"},
    {"path": 1},
    {"path": {"$ne": 1}},
    {"page": {"$nin": ["x"]}},
    {"page": True},
    {"blockType": {"$exists": True}},
    {"blockType": {"$exists": False}},
    {"path": "docs/a.pdf", "page": {"$gt": 1}},
    {"$or": [{"page": 1}, {"blockType": "Title"}]},
    {"$and": [{"path": "docs/b.pdf"}, {"$or": [{"page": 3}, {"page": {"$exists": False}}]}]},
    {"path": "it's \\ tricky'; --"},
    {"path": {"$in": ["it's \\ tricky'; --", "docs/b.pdf"]}},
]


def _meta(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "id"}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    db = lancedb.connect(tmp_path_factory.mktemp("filters"))
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("path", pa.string()),
            ("page", pa.int64()),
            ("score", pa.float64()),
            ("blockType", pa.string()),
        ]
    )
    rows = [{name: r.get(name) for name in schema.names} for r in RECORDS]
    return db.create_table("t", data=pa.Table.from_pylist(rows, schema=schema))


def _sql_ids(table, where: str) -> set[str]:
    return {r["id"] for r in table.search().where(where).select(["id"]).limit(None).to_list()}


def _column(key: str) -> FactorizedColumn:
    values = [r.get(key, MISSING) for r in RECORDS]
    uniques = list(dict.fromkeys((type(v) is bool, v) for v in values))
    codes = np.array([uniques.index((type(v) is bool, v)) for v in values])
    return FactorizedColumn(codes=codes, uniques=[u[1] for u in uniques])


@pytest.mark.parametrize("flt", FILTERS, ids=[str(f) for f in FILTERS])
def test_python_mask_and_sql_agree(table, flt):
    expected = {r["id"] for r in RECORDS if matches(flt, _meta(r))}
    mask = evaluate_mask(flt, len(RECORDS), _column)
    assert {RECORDS[i]["id"] for i in np.flatnonzero(mask)} == expected
    assert _sql_ids(table, to_sql(flt, COLUMNS)) == expected


def test_expected_selections():
    def ids(flt):
        return sorted(r["id"] for r in RECORDS if matches(flt, _meta(r)))

    assert ids({"path": "docs/a.pdf"}) == ["a", "b"]
    assert ids({"page": {"$ne": 2}}) == ["a", "c", "d", "e"]  # missing key counts as "not equal"
    assert ids({"page": {"$gt": 1.5}}) == ["b", "c", "e"]
    assert ids({"page": 2.0}) == ["b"]
    assert ids({"page": "2"}) == []  # no cross-type equality
    assert ids({"blockType": {"$exists": False}}) == ["c"]
    assert ids({"nobody_has_this": "x"}) == []
    assert ids({"nobody_has_this": {"$ne": "x"}}) == ["a", "b", "c", "d", "e"]


def test_list_valued_metadata():
    meta = {"tags": ["red", "blue"], "flag": True, "n": 1}
    assert matches({"tags": {"$in": ["blue", "green"]}}, meta)
    assert matches({"tags": "red"}, meta)
    assert not matches({"tags": {"$in": ["green"]}}, meta)
    assert not matches({"tags": {"$nin": ["red"]}}, meta)
    assert matches({"tags": {"$nin": ["green"]}}, meta)
    assert not matches({"tags": {"$ne": "blue"}}, meta)
    assert matches({"flag": True}, meta)
    assert not matches({"flag": 1}, meta)  # True is not 1
    assert not matches({"n": True}, meta)


@pytest.mark.parametrize(
    ("flt", "fragment"),
    [
        ({"page": {"$regex": "x"}}, "unknown operator"),
        ({"$not": {"page": 1}}, "unknown or misplaced"),
        ({"page": {"$gt": "3"}}, "takes a number"),
        ({"page": {"$gt": True}}, "takes a number"),
        ({"page": {"$in": "abc"}}, "takes a list"),
        ({"page": {"$in": [[1]]}}, "strings, numbers or booleans"),
        ({"page": {"$exists": 1}}, "true or false"),
        ({"page": {"$eq": None}}, "string, number or boolean"),
        ({"page": {"$eq": float("nan")}}, "finite"),
        ({"page": 2**70}, "64-bit"),
        ({"meta": {"nested": "x"}}, "metadata is flat"),
        ({"tags": ["a", "b"]}, "use $in"),
        ({"page": {}}, "empty"),
        ({"$or": []}, "non-empty list"),
        ({"$and": {"page": 1}}, "non-empty list"),
        ({"path'; DROP": "x"}, "not an identifier"),
        ({"1abc": "x"}, "not an identifier"),
        ({"a.b": "x"}, "not an identifier"),
        ({"path": "a\x00b"}, "NUL"),
        ("page = 1", "must be an object"),
        ({"$or": ["page"]}, "must be an object"),
    ],
)
def test_invalid_filters_rejected(flt, fragment):
    with pytest.raises(InvalidFilterError) as info:
        validate_filter(flt)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, LibrarianError)
    assert info.value.code == "invalid_filter"


def test_nesting_limit():
    flt: dict = {"page": 1}
    for _ in range(7):
        flt = {"$and": [flt]}
    validate_filter(flt)  # 8 levels: allowed
    with pytest.raises(InvalidFilterError, match="nested"):
        validate_filter({"$or": [flt]})


def test_canonical_form_and_none():
    assert validate_filter(None) == {}
    assert validate_filter({"path": "x", "page": {"$gt": 1}}) == {
        "path": {"$eq": "x"},
        "page": {"$gt": 1},
    }


def test_sql_rejects_keys_without_columns():
    with pytest.raises(UnsupportedSqlFilterError):
        to_sql({"$or": [{"path": "x"}, {"custom": 1}]}, COLUMNS)


INJECTIONS = [
    "x' OR '1'='1",
    "x') OR (TRUE",
    "x'; DELETE FROM t; --",
    "\\' OR 1=1 --",
    "x`) OR (`path` IS NOT NULL",
    'x" OR "1"="1',
    "line\nbreak' OR 'a'='a",
]


@pytest.mark.parametrize("payload", INJECTIONS)
def test_sql_injection_through_values_is_inert(tmp_path, payload):
    db = lancedb.connect(tmp_path)
    rows = [{"id": "keep", "path": "docs/a.pdf"}, {"id": "target", "path": payload}]
    table = db.create_table("t", data=rows)
    where = to_sql({"path": payload}, {"path": SqlColumn("path", "string")})
    assert _sql_ids(table, where) == {"target"}
    table.delete(to_sql({"path": {"$in": [payload]}}, {"path": SqlColumn("path", "string")}))
    assert _sql_ids(table, "TRUE") == {"keep"}


def test_sql_string_literal_quoting():
    assert sql_string("it's") == "'it''s'"
    with pytest.raises(InvalidFilterError):
        sql_string("a\x00")
