"""ReductoParser through the real `reductoai` SDK against a local server speaking Reducto's wire format."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from librarian.errors import ConfigError, CorruptFileError, TransientProviderError, UnsupportedFileError
from librarian.parsing.reducto import ReductoParser
from tests.wire.reducto_server import ReductoWireServer

DOC = b"First paragraph about ducks.\n\nSecond paragraph about lakes."


@pytest.fixture
def server() -> Iterator[ReductoWireServer]:
    wire = ReductoWireServer(api_key="test-key").start()
    yield wire
    wire.stop()


@pytest.fixture
def parser(server: ReductoWireServer) -> ReductoParser:
    return ReductoParser(api_key="test-key", base_url=server.base_url, chunk_size=800, max_retries=0)


def test_sdk_uploads_the_file_and_asks_for_variable_chunks(server, parser) -> None:
    parser.parse(DOC, "notes.txt", "text/plain")
    upload = server.requests_to("/upload")[0]
    assert upload.files["file"] == ("notes.txt", DOC, "text/plain")
    assert upload.headers["authorization"] == "Bearer test-key"
    body = server.requests_to("/parse")[0].json
    assert body["input"].startswith("reducto://")
    assert body["retrieval"] == {
        "chunking": {"chunk_mode": "variable", "chunk_size": 800},
        "embedding_optimized": True,
        "filter_blocks": ["Header", "Footer", "Page Number"],
    }


def test_full_result_maps_to_chunks(server, parser) -> None:
    server.num_pages = 3
    result = parser.parse(DOC, "notes.txt", "text/plain")
    assert [c["content"] for c in result["chunks"]] == [
        "First paragraph about ducks.",
        "Second paragraph about lakes.",
    ]
    block = result["chunks"][1]["blocks"][0]
    assert (
        block["type"] == "Text" and block["bbox"]["page"] == 1 and block["bbox"]["top"] == pytest.approx(0.15)
    )
    assert result["pages"] == 3 and result["parser"] == parser.cache_key
    json.dumps(result)  # plain JSON, ready for the parse cache


def test_url_result_is_fetched_from_the_server(server, parser) -> None:
    server.result_type = "url"
    table_block = {
        "type": "Table",
        "bbox": {"page": 2, "left": 0.1, "top": 0.5, "width": 0.8, "height": 0.2},
        "content": "| A |\n| --- |\n| 1 |",
    }
    server.chunker = lambda data, name: [
        {"content": table_block["content"], "embed": "Row 1: A is 1.", "blocks": [table_block]}
    ]
    result = parser.parse(DOC, "t.pdf", "application/pdf")
    assert [r.path.split("/")[1] for r in server.requests if r.method == "GET"] == ["results"]
    chunk = result["chunks"][0]
    assert chunk["embed"] == "Row 1: A is 1." and chunk["content"].startswith("| A |")
    assert chunk["blocks"][0]["bbox"]["page"] == 2


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_statuses_are_transient(server, parser, status) -> None:
    server.fail_next("/parse", status)
    with pytest.raises(TransientProviderError, match=str(status)):
        parser.parse(DOC, "notes.txt", "text/plain")


def test_unreachable_server_is_transient(server) -> None:
    base_url = server.base_url
    server.stop()
    offline = ReductoParser(api_key="test-key", base_url=base_url, max_retries=0, timeout=5)
    with pytest.raises(TransientProviderError, match="unreachable"):
        offline.parse(DOC, "notes.txt", "text/plain")


def test_document_errors_map_to_document_statuses(server, parser) -> None:
    server.fail_next("/parse", 400, {"detail": "Unsupported file type: .xyz"})
    with pytest.raises(UnsupportedFileError, match="Unsupported file type"):
        parser.parse(DOC, "a.xyz", "application/octet-stream")
    server.fail_next("/parse", 422, {"detail": "Could not read PDF: unexpected EOF"})
    with pytest.raises(CorruptFileError, match="unexpected EOF"):
        parser.parse(DOC, "a.pdf", "application/pdf")


def test_a_wrong_api_key_is_a_configuration_error(server) -> None:
    wrong = ReductoParser(api_key="nope", base_url=server.base_url, max_retries=0)
    with pytest.raises(ConfigError, match="REDUCTO_API_KEY"):
        wrong.parse(DOC, "notes.txt", "text/plain")
