"""The ingest graph end to end on the embedded stack: statuses, overwrite, skip-with-delete, bad input."""

from __future__ import annotations

import threading

import pytest

from graphs.ingest import build_ingest_graph
from librarian.errors import InvalidPathError, TenantError
from librarian.index.base import record_id_prefix

ORG = "acme"


def _ids(stack, org: str = ORG, path: str | None = None) -> set[str]:
    return set(stack.index.list_ids(namespace=org, prefix=record_id_prefix(path) if path else None))


def test_every_example_document_gets_a_clear_status(service, stack, docs_dir):
    files = [
        p for p in sorted(docs_dir.rglob("*")) if p.is_file() and p.suffix != ".txt" and p.name != "README.md"
    ]
    assert len(files) >= 10
    paths = {f.name: service.upload(ORG, f.name, f.read_bytes()) for f in files}
    statuses = {name: service.ingest(ORG, path) for name, path in paths.items()}
    for name, status in statuses.items():
        if name == "ocr_test_scanned.pdf":
            # Either OCR'd (tesseract installed) or skipped with a reason that says why.
            assert status.status in {"indexed", "skipped"}, status
            if status.status == "skipped":
                assert "text layer" in (status.reason or "")
            continue
        assert status.status == "indexed", (name, status)
        assert status.chunkCount > 0
        assert status.chunkCount == len(_ids(stack, path=paths[name]))
    pdf = stack.index.query(
        namespace=ORG,
        vector=stack.dense.embed_query("Filesystem Hierarchy Standard"),
        top_k=5,
        filter={"path": paths["fhs-3.0.pdf"]},
    )
    assert pdf and all(m.metadata["page"] >= 1 for m in pdf)
    assert all("bbox_left" in m.metadata for m in pdf)


def test_reupload_with_fewer_chunks_leaves_no_old_ids(service, stack):
    long_text = "\n\n".join(f"Paragraph {i}. " + "The quick brown fox jumps. " * 30 for i in range(12))
    path = service.upload(ORG, "notes.txt", long_text.encode())
    first = service.ingest(ORG, path)
    assert first.status == "indexed" and first.chunkCount > 3
    path = service.upload(ORG, "notes.txt", b"Just one short paragraph now.")
    second = service.ingest(ORG, path)
    assert second.status == "indexed" and second.chunkCount == 1
    assert _ids(stack, path=path) == {f"{path}:0"}


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_deleted_or_emptied_file_leaves_no_vectors(service, stack, how):
    path = service.upload(ORG, "gone.md", b"# Title\n\nSome text about llamas and alpacas.")
    assert service.ingest(ORG, path).status == "indexed"
    assert _ids(stack, path=path)
    if how == "deleted":
        stack.files.delete(ORG, path)  # the file vanishes behind our back; a re-run must clean up
    else:
        stack.files.write(ORG, path, b"")
    status = service.ingest(ORG, path)
    assert status.status == "skipped"
    assert status.error in {"file_not_found", "empty_document"}
    assert _ids(stack, path=path) == set()


def test_delete_removes_vectors_then_file(service, stack):
    path = service.upload(ORG, "bye.txt", b"Vectors must go before the file goes.")
    service.ingest(ORG, path)
    assert service.delete(ORG, path).status == "deleted"
    assert _ids(stack, path=path) == set()
    assert not stack.files.exists(ORG, path)
    assert service.status(ORG, path).status == "deleted"


@pytest.mark.parametrize(
    "name",
    ["../evil.txt", "/etc/passwd", "a/b.txt", "nul\x00.txt", "bell\x07.txt", "x" * 300 + ".txt", "..", ""],
)
def test_file_name_attacks_are_rejected_and_nothing_is_written(service, stack, name):
    with pytest.raises(InvalidPathError):
        service.upload(ORG, name, b"payload")
    assert stack.files.list(ORG) == []
    data_files = [p for p in stack.settings.data_dir.rglob("*") if p.is_file()]
    assert data_files == []


def test_bad_files_end_with_clear_status_and_others_still_index(service, stack, docs_dir):
    pdf = (docs_dir / "pdf" / "docling" / "multi_page.pdf").read_bytes()
    bad = {
        "empty.txt": b"",
        "truncated.pdf": pdf[: len(pdf) // 2],
        "renamed.docx": pdf,
        "blob.bin": bytes(range(256)) * 40,
    }
    paths = {name: service.upload(ORG, name, data) for name, data in bad.items()}
    good = service.upload(ORG, "good.md", b"# Good\n\nThis one is fine and mentions zebras.")
    for name, path in paths.items():
        status = service.ingest(ORG, path)
        assert status.status in {"skipped", "failed"}, (name, status)
        assert status.reason, name
        assert _ids(stack, path=path) == set()
    assert service.ingest(ORG, good).status == "indexed"


def test_concurrent_reuploads_of_one_path_end_with_the_last(service, stack):
    versions = [
        "\n\n".join(f"Version {v} paragraph {i}. " + f"Token{v} " * 150 for i in range(v + 1))
        for v in range(6)
    ]
    order_lock = threading.Lock()
    last = {"version": None}

    def upload_and_ingest(version: int) -> None:
        with order_lock:  # uploads race, but we must know which one landed last
            path = service.upload(ORG, "race.txt", versions[version].encode())
            last["version"] = version
        service.ingest(ORG, path)

    threads = [threading.Thread(target=upload_and_ingest, args=(v,)) for v in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    path = "docs/race.txt"
    status = service.status(ORG, path)
    assert status.status == "indexed"
    ids = _ids(stack, path=path)
    assert len(ids) == status.chunkCount
    records = stack.index.fetch(sorted(ids), namespace=ORG)
    texts = " ".join(r["metadata"]["text"] for r in records.values())
    assert f"Token{last['version']}" in texts
    assert all(f"Token{v}" not in texts for v in range(6) if v != last["version"])


def test_run_without_organization_is_refused(stack):
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_ingest_graph(lambda: stack, InMemorySaver())
    with pytest.raises(TenantError):
        graph.invoke({"path": "docs/a.txt"}, {"configurable": {"thread_id": "x"}})


def test_parse_cache_hit_on_second_run(service, stack):
    path = service.upload(ORG, "cached.md", b"# Cache\n\nParse me once only.")
    service.ingest(ORG, path)
    calls = []
    original = stack.parser.parse
    stack.parser.parse = lambda *a, **k: calls.append(1) or original(*a, **k)  # count, don't fake
    status = service.ingest(ORG, path)
    assert status.status == "indexed"
    assert calls == []
    snapshot = service.ingest_graph.get_state(service.config(ORG, path))
    assert snapshot.values["parseCacheHit"] is True


def test_upsert_fan_out_runs_at_most_upsert_workers_batches_at_once(stack):
    """Every batch is written, but never more than UPSERT_WORKERS at a time (bounded peak memory)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graphs.ingest import UPSERT_WORKERS
    from services.documents import DocumentService

    small = stack.__class__(stack.settings.model_copy(update={"upsert_batch_size": 2}))
    service = DocumentService(small, InMemorySaver())
    lock, running, most = threading.Lock(), [0], [0]
    original = small.dense.embed_documents

    def counting(texts):  # count batches in flight around the real embedder, don't fake it
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return original(texts)
        finally:
            with lock:
                running[0] -= 1

    small.dense.embed_documents = counting
    body = "\n\n".join(f"## Part {i}\n\n" + f"Sentence {i} about topic {i}. " * 60 for i in range(12))
    path = service.upload(ORG, "many-batches.md", body.encode())
    status = service.ingest(ORG, path)
    assert status.status == "indexed"
    assert status.chunkCount >= 4 * UPSERT_WORKERS
    assert len(_ids(small, ORG, path)) == status.chunkCount
    assert 1 <= most[0] <= UPSERT_WORKERS
