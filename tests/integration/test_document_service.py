"""The document operations in plain Python: one outcome per case, limits per document, cancellation.

These are the outcomes the CLI and the server share (`services.documents.DocumentOps`): a path that
never existed is `DocumentNotFoundError`, a deleted document reads `deleted`, a document over a limit
ends `skipped` naming the limit, and a cancelled or replaced ingest leaves nothing in the index.
"""

from __future__ import annotations

import threading
import time

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.page_cache import page_cache
from librarian.runs import cancellation
from librarian.stack import Stack
from services.documents import DocumentNotFoundError, DocumentService, NoActiveIngestError

ORG = "svc-org"
SECTIONS = "\n\n".join(f"# Part {i}\n\n" + f"Valve {i} procedure, step by step. " * 30 for i in range(12))


def _ids(stack: Stack, path: str) -> set[str]:
    return {i for i in stack.index.list_ids(namespace=ORG) if i.startswith(f"{path}:")}


def _service(settings, **overrides) -> tuple[DocumentService, Stack]:
    stack = Stack(settings.model_copy(update=overrides))
    return DocumentService(stack, InMemorySaver()), stack


def _wait(condition, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.01)


# --- one outcome per case -------------------------------------------------------------------------


def test_a_path_that_never_existed_is_not_found(service):
    with pytest.raises(DocumentNotFoundError):
        service.delete(ORG, "docs/never-uploaded.md")
    with pytest.raises(DocumentNotFoundError):
        service.status(ORG, "docs/never-uploaded.md")
    with pytest.raises(DocumentNotFoundError):
        service.cancel(ORG, "docs/never-uploaded.md")


def test_delete_reads_deleted_and_a_second_delete_is_not_found(service, stack):
    path = service.upload(ORG, "bye.md", b"# Bye\n\nVectors go first, then the file.")
    assert service.ingest(ORG, path).status == "indexed"
    cache = page_cache(stack)
    cache.put(ORG, path, "1-1000.png", b"png")  # a page image the viewer cached
    status = service.delete(ORG, path)
    assert cache.get(ORG, path, "1-1000.png") is None  # page images go with the document
    assert (status.status, status.error, status.chunkCount) == ("deleted", "deleted", 0)
    assert service.status(ORG, path).status == "deleted"
    assert _ids(stack, path) == set() and not stack.files.exists(ORG, path)
    assert service.list(ORG) == []
    with pytest.raises(DocumentNotFoundError):
        service.delete(ORG, path)


def test_cancel_without_a_running_ingest_is_refused(service):
    path = service.upload(ORG, "idle.md", b"# Idle\n\nNothing runs here.")
    service.ingest(ORG, path)
    with pytest.raises(NoActiveIngestError):
        service.cancel(ORG, path)


# --- limits per document ---------------------------------------------------------------------------


def test_too_many_chunks_is_skipped_before_embedding(settings):
    service, stack = _service(settings, max_chunks_per_document=3)
    embedded: list[int] = []
    real = stack.dense.embed_documents
    stack.dense.embed_documents = lambda texts: embedded.append(len(texts)) or real(texts)
    path = service.upload(ORG, "long.md", SECTIONS.encode())
    status = service.ingest(ORG, path)
    assert (status.status, status.error) == ("skipped", "too_many_chunks")
    assert "LIBRARIAN_MAX_CHUNKS_PER_DOCUMENT" in status.reason and "is 3" in status.reason
    assert embedded == [] and _ids(stack, path) == set()


def test_too_many_pages_is_skipped_before_parsing(settings, docs_dir):
    service, stack = _service(settings, max_pages_per_document=1)
    parsed: list[str] = []
    real = stack.parser.parse
    stack.parser.parse = lambda data, name, media: parsed.append(name) or real(data, name, media)
    pdf = (docs_dir / "pdf" / "docling" / "multi_page.pdf").read_bytes()
    path = service.upload(ORG, "multi_page.pdf", pdf)
    status = service.ingest(ORG, path)
    assert (status.status, status.error) == ("skipped", "too_many_pages")
    assert "LIBRARIAN_MAX_PAGES_PER_DOCUMENT is 1" in status.reason
    assert parsed == [] and _ids(stack, path) == set()


def test_a_limit_met_exactly_still_indexes(settings):
    service, _ = _service(settings, max_chunks_per_document=1)
    path = service.upload(ORG, "short.md", b"# Short\n\nOne chunk only.")
    status = service.ingest(ORG, path)
    assert (status.status, status.chunkCount) == ("indexed", 1)


# --- cancellation ------------------------------------------------------------------------------------


class _HeldUpsert:
    """Holds the first upsert of a run until released, so a test can act while an ingest runs."""

    def __init__(self, stack: Stack) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self._real = stack.index.upsert
        stack.index.upsert = self

    def __call__(self, records, *, namespace):
        self.calls += 1
        written = self._real(records, namespace=namespace)
        if self.calls == 1:
            self.started.set()
            assert self.release.wait(60), "the test never released the held upsert"
        return written


def _ingest_in_background(service: DocumentService, path: str) -> threading.Thread:
    worker = threading.Thread(target=service.ingest, args=(ORG, path), daemon=True)
    worker.start()
    return worker


def _act_while_held(held: _HeldUpsert, action) -> object:
    """Run `action` in a thread once the ingest is held; release the ingest once it was cancelled."""
    assert held.started.wait(60)
    result: dict[str, object] = {}
    actor = threading.Thread(target=lambda: result.update(value=action()), daemon=True)
    actor.start()
    _wait(lambda: bool(cancellation._cancelled))  # the running ingest has been told to stop
    held.release.set()
    actor.join(60)
    assert not actor.is_alive()
    return result.get("value")


def test_cancel_stops_the_ingest_and_leaves_nothing(settings):
    service, stack = _service(settings, upsert_batch_size=2)
    path = service.upload(ORG, "long.md", SECTIONS.encode())
    held = _HeldUpsert(stack)
    worker = _ingest_in_background(service, path)
    status = _act_while_held(held, lambda: service.cancel(ORG, path))
    worker.join(60)
    assert (status.status, status.error) == ("cancelled", "cancelled")
    assert held.calls == 1, "no batch may be written after the cancel"
    assert _ids(stack, path) == set(), "the batch written before the cancel must be gone too"
    assert service.status(ORG, path).status == "cancelled"


def test_delete_cancels_the_running_ingest(settings):
    service, stack = _service(settings, upsert_batch_size=2)
    path = service.upload(ORG, "long.md", SECTIONS.encode())
    held = _HeldUpsert(stack)
    worker = _ingest_in_background(service, path)
    status = _act_while_held(held, lambda: service.delete(ORG, path))
    worker.join(60)
    assert status.status == "deleted"
    assert held.calls == 1 and _ids(stack, path) == set()


def test_reupload_cancels_the_running_ingest_and_the_new_version_wins(settings):
    service, stack = _service(settings, upsert_batch_size=2)
    path = service.upload(ORG, "long.md", SECTIONS.encode())
    held = _HeldUpsert(stack)
    worker = _ingest_in_background(service, path)
    _act_while_held(held, lambda: service.upload(ORG, "long.md", b"# New\n\nThe replacement text."))
    worker.join(60)
    assert held.calls == 1
    status = service.ingest(ORG, path)
    assert (status.status, status.chunkCount) == ("indexed", 1)
    records = stack.index.fetch(sorted(_ids(stack, path)), namespace=ORG)
    texts = [r["metadata"]["text"] for r in records.values()]
    assert len(texts) == 1 and "The replacement text." in texts[0] and "Valve" not in texts[0]
