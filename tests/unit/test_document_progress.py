"""A running ingest's stage and chunk progress, and a queued one's place in line (issue 29).

The web app shows queued → parsing → embedding → indexing → done per document; the stage comes from
the checkpoint's next nodes, the progress from `indexedCount` out of the parsed chunks, and a
waiting document's place in line from when its run was enqueued.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from services.document_status import STAGE_OF_NODE, document_status, status_from_snapshot


def _pending(next_nodes: list[str], **values: Any) -> SimpleNamespace:
    return SimpleNamespace(values={"path": "docs/a.pdf", **values}, next=next_nodes, tasks=[])


def test_a_parsing_ingest_says_so() -> None:
    status = status_from_snapshot("docs/a.pdf", _pending(["parse"]))
    assert (status.status, status.stage, status.chunkTotal) == ("running", "parsing", None)


def test_an_embedding_ingest_counts_its_chunks() -> None:
    chunks = [{"chunkIndex": i} for i in range(40)]
    snapshot = _pending(["upsert_batch", "upsert_batch"], chunks=chunks, indexedCount=16)
    body = status_from_snapshot("docs/a.pdf", snapshot).as_dict()
    assert (body["status"], body["stage"], body["chunkCount"], body["chunkTotal"]) == (
        "running",
        "embedding",
        16,
        40,
    )


def test_the_furthest_next_node_is_the_stage() -> None:
    status = status_from_snapshot("docs/a.pdf", _pending(["upsert_batch", "finalize"], chunks=[]))
    assert status.stage == "indexing"


def test_a_final_status_has_no_stage_keys() -> None:
    done = SimpleNamespace(values={"status": "indexed", "chunkCount": 3}, next=[], tasks=[])
    body = status_from_snapshot("docs/a.pdf", done).as_dict()
    assert body["status"] == "indexed"
    assert not {"stage", "chunkTotal", "queuedSince"} & set(body)


def test_a_waiting_run_is_queued_with_its_enqueue_time_not_the_old_stage() -> None:
    old = _pending(["upsert_batch"], chunks=[{}], indexedCount=0)
    runs = [
        {"status": "pending", "created_at": "2026-12-07T10:00:05+00:00"},
        {"status": "pending", "created_at": "2026-12-07T10:00:01+00:00"},
    ]
    status = document_status("docs/a.pdf", old, runs)
    assert (status.status, status.stage, status.chunkTotal) == ("queued", None, None)
    assert status.queuedSince == "2026-12-07T10:00:01+00:00"


@given(
    st.lists(st.one_of(st.sampled_from(sorted(STAGE_OF_NODE)), st.text(max_size=12)), max_size=6),
    st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.none(), max_size=5)),
)
def test_any_pending_checkpoint_reads_as_running(next_nodes: list[str], chunks: Any) -> None:
    status = status_from_snapshot("docs/a.pdf", _pending(next_nodes or ["x"], chunks=chunks))
    assert status.status == "running"
    assert status.stage in (None, "parsing", "embedding", "indexing")
    assert status.chunkTotal is None or status.chunkTotal == len(chunks)
