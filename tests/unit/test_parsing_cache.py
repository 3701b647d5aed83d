"""ParseCache round-trips through real sidecars of the LocalFileStore."""

from __future__ import annotations

import pytest

from librarian.files.local import LocalFileStore
from librarian.parsing.cache import ParseCache, content_hash, sidecar_name
from librarian.parsing.types import ParseResult

RESULT = ParseResult(
    chunks=[
        {
            "content": "Héllo",
            "embed": "Section: A\nHéllo",
            "blocks": [
                {
                    "type": "Text",
                    "bbox": {"page": 1, "left": 0.1, "top": 0.2, "width": 0.3, "height": 0.4},
                    "content": "Héllo",
                }
            ],
        }
    ],
    parser="local/1:chunk=1000:ocr=auto",
    pages=1,
    notes=["n"],
)


@pytest.fixture
def store(tmp_path) -> LocalFileStore:
    files = LocalFileStore(tmp_path)
    files.write("acme", "docs/a.txt", b"hello")
    return files


def test_content_hash_is_sha256_hex() -> None:
    assert content_hash(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_sidecar_name_encodes_content_hash_and_parser_key() -> None:
    digest = content_hash(b"hello")
    name = sidecar_name(digest, "local/1:chunk=1000:ocr=auto")
    assert digest in name and name.endswith(".json")
    assert name != sidecar_name(digest, "local/1:chunk=500:ocr=auto")
    assert name != sidecar_name(content_hash(b"other"), "local/1:chunk=1000:ocr=auto")


def test_put_then_get_returns_the_same_result(store: LocalFileStore) -> None:
    cache = ParseCache(store)
    digest = content_hash(b"hello")
    assert cache.get("acme", "docs/a.txt", digest, RESULT["parser"]) is None
    cache.put("acme", "docs/a.txt", digest, RESULT["parser"], RESULT)
    assert cache.get("acme", "docs/a.txt", digest, RESULT["parser"]) == RESULT


def test_other_content_parser_or_organization_misses(store: LocalFileStore) -> None:
    cache = ParseCache(store)
    digest = content_hash(b"hello")
    cache.put("acme", "docs/a.txt", digest, RESULT["parser"], RESULT)
    assert cache.get("acme", "docs/a.txt", content_hash(b"new upload"), RESULT["parser"]) is None
    assert cache.get("acme", "docs/a.txt", digest, "reducto/1:chunk=1000") is None
    assert cache.get("globex", "docs/a.txt", digest, RESULT["parser"]) is None


def test_an_unreadable_entry_is_a_miss_not_a_crash(store: LocalFileStore) -> None:
    digest = content_hash(b"hello")
    store.write_sidecar("acme", "docs/a.txt", sidecar_name(digest, RESULT["parser"]), b"{not json")
    assert ParseCache(store).get("acme", "docs/a.txt", digest, RESULT["parser"]) is None
