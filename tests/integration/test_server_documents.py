"""The document routes and the extractive agent, end to end through a real `langgraph dev` server.

One server for the module (it takes seconds to start); tests that change documents use their own
organization or file names so they do not disturb Acme's seeded library.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.server_fixtures import (
    A_PATHS,
    DOCS,
    LEGAL_QUESTION,
    ORG_A,
    ORG_B,
    DevServer,
    answer_text,
    ask,
    bearer,
    running_server,
    seed_org_a,
    seed_org_b,
    token,
    upload,
    wait_for_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
MAX_UPLOAD = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    if not DOCS.is_dir():
        pytest.skip(f"example documents not found at {DOCS}")
    tmp = tmp_path_factory.mktemp("docserver")
    with running_server(tmp, {"LIBRARIAN_MAX_UPLOAD_BYTES": str(MAX_UPLOAD)}) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def seeded(http) -> dict:
    a = seed_org_a(http)
    b = seed_org_b(http)
    return {"a": a, "b": b}


A = token("alice", ORG_A)
B = token("bob", ORG_B)


def files_on_disk(server: DevServer, org: str) -> list[str]:
    root = server.workdir.parent / "data" / "files" / "orgs" / org / "docs"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


# --- start-up and the happy path -----------------------------------------------------------------


def test_server_starts_without_an_env_file(server):
    assert not (server.workdir / ".env").exists()
    assert httpx.get(f"{server.url}/ok").status_code == 200
    print(f"server start-up: {server.startup_s:.1f}s")


def test_three_documents_upload_and_index(seeded):
    statuses = seeded["a"]
    assert set(statuses) == A_PATHS
    for status in statuses.values():
        assert status["status"] == "indexed", status
        assert status["chunkCount"] >= 1
        assert status["thread_id"] == status["threadId"]
    assert statuses["docs/multi_page.pdf"]["chunkCount"] >= 3


def test_listing_shows_each_organizations_own_files_only(http, seeded):
    a = http.get(f"/orgs/{ORG_A}/documents", headers=bearer(A)).json()
    b = http.get(f"/orgs/{ORG_B}/documents", headers=bearer(B)).json()
    assert {d["path"] for d in a["documents"]} == A_PATHS
    assert {d["path"] for d in b["documents"]} == {"docs/beta-notes.md"}
    assert all(d["status"] == "indexed" for d in a["documents"] + b["documents"])


def test_extractive_answer_cites_acme_documents_with_pages(server, seeded):
    state = ask(server.url, A, LEGAL_QUESTION)
    sources = state.get("sources") or []
    assert sources, state
    assert {s["path"] for s in sources} <= A_PATHS
    top = sources[0]
    assert top["path"] == "docs/multi_page.pdf", top
    assert "WordPerfect" in top["text"]
    # The chunk starts on page 1 and runs into page 2, where WordPerfect is named.
    assert top["page"] in (1, 2) and top["bbox"] is not None
    text = answer_text(state)
    assert "Extractive answer" in text and "[1]" in text and f"[1] multi_page.pdf, page {top['page']}" in text


def test_same_question_as_globex_returns_none_of_acme_sources(server, seeded):
    state = ask(server.url, B, LEGAL_QUESTION)
    assert not ({s["path"] for s in state.get("sources") or []} & A_PATHS)
    assert "WordPerfect" not in answer_text(state)


def test_openapi_document_lists_the_routes(http):
    spec = http.get("/openapi-librarian.json", headers=bearer(A)).json()
    operations = {
        op["operationId"] for item in spec["paths"].values() for op in item.values() if "operationId" in op
    }
    assert operations >= {
        "uploadDocument",
        "listDocuments",
        "getDocument",
        "deleteDocument",
        "cancelDocumentIngest",
    }


# --- delete -------------------------------------------------------------------------------------


def test_delete_removes_the_files_sources_from_search(server, http, seeded):
    tok = token("carol", "initech")
    response = upload(
        http, "initech", tok, "multi_page.pdf", (DOCS / "pdf/docling/multi_page.pdf").read_bytes()
    )
    path = response.json()["path"]
    wait_for_status(http, "initech", tok, path)
    upload(http, "initech", tok, "word_sample.docx", (DOCS / "docx/word_sample.docx").read_bytes())
    wait_for_status(http, "initech", tok, "docs/word_sample.docx")
    before = ask(server.url, tok, LEGAL_QUESTION)
    assert path in {s["path"] for s in before["sources"]}

    deleted = http.delete(f"/orgs/initech/documents/{path}", headers=bearer(tok))

    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    after = ask(server.url, tok, LEGAL_QUESTION)
    assert path not in {s["path"] for s in after.get("sources") or []}
    # the same outcome as `DocumentService.delete` (CLI): status `deleted`, a second delete is 404
    assert wait_for_status(http, "initech", tok, path, done=("deleted",))["chunkCount"] == 0
    assert http.delete(f"/orgs/initech/documents/{path}", headers=bearer(tok)).status_code == 404
    assert "multi_page.pdf" not in files_on_disk(server, "initech")


# --- concurrency -------------------------------------------------------------------------------------


def index_records(server: DevServer, org: str, path: str) -> list[dict]:
    """Every vector of `path` in the server's index, read from this process (LanceDB allows that)."""
    from librarian.settings import Settings
    from librarian.stack import Stack

    stack = Stack(Settings(data_dir=server.workdir.parent / "data"))
    vector = stack.dense.embed_query("release")
    matches = stack.index.query(namespace=org, vector=vector, top_k=1000, filter={"path": path})
    return [m.metadata for m in matches]


def test_five_quick_reuploads_of_one_path_end_with_the_last_version(server, http):
    tok = token("dora", "umbrella")
    companion = b"# Cafeteria\n\nThe cafeteria serves soup on Fridays and salad on Tuesdays.\n"
    assert upload(http, "umbrella", tok, "cafeteria.md", companion).status_code == 202
    versions = [
        f"# Release notes\n\nThe release codename is VERSION-{i}-MARKER. It ships features for the "
        f"quarter, version {i}, and nothing else.\n\n## Details\n\nVersion {i} fixes the login page.\n"
        for i in range(1, 6)
    ]
    for text in versions:
        assert upload(http, "umbrella", tok, "notes.md", text.encode()).status_code == 202
    last_hash = hashlib.sha256(versions[-1].encode()).hexdigest()

    status = wait_for_status(
        http, "umbrella", tok, "docs/notes.md", content_hash=last_hash, done=("indexed",)
    )

    assert "queuedRuns" not in status
    records = index_records(server, "umbrella", "docs/notes.md")
    assert len(records) == status["chunkCount"] >= 1
    assert {r["contentHash"] for r in records} == {last_hash}
    wait_for_status(http, "umbrella", tok, "docs/cafeteria.md")
    state = ask(server.url, tok, "What is the release codename?")
    texts = " ".join(s["text"] for s in state["sources"])
    assert "VERSION-5-MARKER" in texts
    assert not any(f"VERSION-{i}-MARKER" in texts for i in range(1, 5)), texts


def test_chat_completes_while_a_large_ingest_runs(server, http, seeded):
    tok = token("erin", "hooli")
    # The document the chat needs is indexed first: ingests of one organization queue behind each
    # other (LIBRARIAN_INGEST_CONCURRENCY_PER_ORG), so uploading it after the large one would make it
    # wait for that ingest and the chat would start after it.
    alpha = b"# Alpha\n\nThe hooli alpha team meets on Mondays.\n"
    assert upload(http, "hooli", tok, "alpha.md", alpha).status_code == 202
    wait_for_status(http, "hooli", tok, "docs/alpha.md")
    big = (DOCS / "pdf" / "fhs-3.0.pdf").read_bytes()
    assert upload(http, "hooli", tok, "fhs-3.0.pdf", big).status_code == 202
    # The large ingest is going when the chat starts (checked here, not after the chat: on a loaded
    # machine the chat may outlast the ingest, which would not make the chat wrong).
    before = http.get("/orgs/hooli/documents/docs/fhs-3.0.pdf", headers=bearer(tok)).json()
    assert before["status"] in ("running", "queued"), before
    started = time.monotonic()

    state = ask(server.url, tok, "When does the alpha team meet?")
    chat_s = time.monotonic() - started

    assert "__error__" not in state and state["messages"][-1]["type"] == "ai"
    assert "Mondays" in state["messages"][-1]["content"]
    final = wait_for_status(http, "hooli", tok, "docs/fhs-3.0.pdf", deadline_s=600)
    print(f"chat during ingest: {chat_s:.2f}s; fhs-3.0.pdf: {final['chunkCount']} chunks")
    assert final["status"] == "indexed" and final["chunkCount"] > 50


def test_concurrent_uploads_of_different_documents_all_index(http):
    tok = token("fay", "stark")
    results: list[httpx.Response] = []

    def send(i: int) -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as own:
            results.append(
                upload(own, "stark", tok, f"doc-{i}.md", f"# Doc {i}\n\nDocument {i} body text.\n".encode())
            )

    workers = [threading.Thread(target=send, args=(i,)) for i in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(r.status_code for r in results) == [202] * 6
    for i in range(6):
        assert wait_for_status(http, "stark", tok, f"docs/doc-{i}.md")["status"] == "indexed"


# --- bad input ----------------------------------------------------------------------------------------


def test_oversized_upload_is_refused_and_nothing_is_written(server, http):
    tok = token("gus", "wayne")
    big = b"x" * (MAX_UPLOAD + 1)

    response = upload(http, "wayne", tok, "big.txt", big)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert files_on_disk(server, "wayne") == []
    assert http.get("/orgs/wayne/documents", headers=bearer(tok)).json()["documents"] == []


def test_oversized_upload_without_content_length_is_cut_off_while_streaming(server, http):
    tok = token("gus", "wayne")
    boundary = "b0undary"

    def body() -> Iterator[bytes]:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.txt"\r\n\r\n'
        yield head.encode()
        for _ in range(40):
            yield b"y" * 65536  # 2.5 MiB in total, more than the 1 MiB limit
        yield f"\r\n--{boundary}--\r\n".encode()

    response = http.post(
        "/orgs/wayne/documents",
        content=body(),
        headers={**bearer(tok), "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )

    assert response.status_code == 413, response.text
    assert files_on_disk(server, "wayne") == []


@pytest.mark.parametrize(
    "name",
    [
        "../escape.md",
        "..",
        "a/b.md",
        "a\\b.md",
        "nul\x00.md",
        "%2e%2e%2fetc.md",
        "C:evil.md",
        " lead.md",
        "\u202etxt.md",
    ],
)
def test_unsafe_names_are_rejected(server, http, name):
    tok = token("hal", "cyberdyne")
    response = upload(http, "cyberdyne", tok, name, b"# hi\n\nsome text here\n")
    assert response.status_code == 400, (name, response.text)
    assert response.json()["error"]["code"] == "invalid_path"
    assert files_on_disk(server, "cyberdyne") == []


@pytest.mark.parametrize(
    ("name", "data", "error"),
    [
        ("empty.md", b"", "empty_document"),
        ("program.exe", b"MZ\x90\x00" + bytes(range(256)) * 4, "unsupported_file"),
    ],
)
def test_empty_and_unsupported_files_get_a_clear_status(http, name, data, error):
    tok = token("ivy", "tyrell")
    assert upload(http, "tyrell", tok, name, data).status_code == 202
    status = wait_for_status(http, "tyrell", tok, f"docs/{name}")
    assert status["status"] == "skipped" and status["error"] == error, status
    assert status["reason"]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b'{"file": "x"}'),
        ("multipart/form-data", b"--x\r\n"),
        (
            "multipart/form-data; boundary=zz",
            b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n\r\nabc',
        ),
        (
            "multipart/form-data; boundary=zz",
            b'--zz\r\nContent-Disposition: form-data; name="other"\r\n\r\nabc\r\n--zz--\r\n',
        ),
        (
            "multipart/form-data; boundary=zz",
            b'--zz\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc\r\n--zz--\r\n',
        ),
        ("multipart/form-data; boundary=zz", b"garbage without any boundary at all"),
        (
            "multipart/form-data; boundary=zz",
            b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n\r\na\r\n'
            b'--zz\r\nContent-Disposition: form-data; name="file"; filename="b.md"\r\n\r\nb\r\n--zz--\r\n',
        ),
    ],
    ids=["json", "no-boundary", "truncated", "no-file-field", "file-without-name", "garbage", "two-files"],
)
def test_malformed_multipart_is_a_400(server, http, content_type, body):
    tok = token("jay", "soylent")
    response = http.post(
        "/orgs/soylent/documents", content=body, headers={**bearer(tok), "Content-Type": content_type}
    )
    assert response.status_code == 400, response.text
    assert set(response.json()["error"]) == {"code", "message"}
    assert files_on_disk(server, "soylent") == []


def test_readers_cannot_upload_or_delete(http, seeded):
    reader = token("kim", ORG_A, role="reader")
    assert upload(http, ORG_A, reader, "r.md", b"# r\n").status_code == 403
    assert (
        http.delete(f"/orgs/{ORG_A}/documents/docs/alpha-secret.md", headers=bearer(reader)).status_code
        == 403
    )
    assert http.get(f"/orgs/{ORG_A}/documents", headers=bearer(reader)).status_code == 200


# --- property-style fuzz over the documented routes ---------------------------------------------
# schemathesis 4 needs a jsonschema-rs that langgraph-api refuses, and schemathesis 3 would downgrade
# pytest and Starlette, so the OpenAPI contract is fuzzed with hypothesis directly.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ_ORG = "fuzzorg"
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_orgs = st.one_of(st.sampled_from([FUZZ_ORG, ORG_A, "", ".", "..", "FUZZORG"]), _text)
_paths = st.one_of(
    st.builds(lambda n: f"docs/{n}", _text), _text, st.sampled_from(["docs/", "docs/..", "docs/%2e%2e%2f"])
)
_content_types = st.one_of(
    st.sampled_from(["multipart/form-data; boundary=zz", "multipart/form-data", "text/plain", ""]),
    st.builds(
        lambda b: f"multipart/form-data; boundary={b}",
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=80),
    ),
)


def _safe_url_part(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="/")


def _assert_error_shape(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    # A client may normalise `..` segments away, and then the request is not for our routes.
    if response.status_code >= 400 and response.request.url.path.startswith("/orgs/"):
        error = response.json()["error"]
        assert set(error) == {"code", "message"} and "Traceback" not in error["message"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "DELETE"]), org=_orgs, path=_paths)
def test_fuzz_document_routes_never_fail(http, method, org, path):
    tok = token("fuzz", FUZZ_ORG)
    url = f"/orgs/{_safe_url_part(org)}/documents/{_safe_url_part(path)}"
    _assert_error_shape(http.request(method, url, headers=bearer(tok)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    org=_orgs,
    content_type=_content_types,
    name=_text,
    field=st.sampled_from(["file", "other", ""]),
    data=st.binary(max_size=2048),
    framing=st.sampled_from(["well-formed", "truncated", "raw"]),
)
def test_fuzz_uploads_never_fail(http, org, content_type, name, field, data, framing):
    tok = token("fuzz", FUZZ_ORG)
    safe_name = name.replace('"', "").replace("\r", "").replace("\n", "")
    head = f'--zz\r\nContent-Disposition: form-data; name="{field}"; filename="{safe_name}"\r\n\r\n'.encode()
    body = {
        "well-formed": head + data + b"\r\n--zz--\r\n",
        "truncated": head + data,
        "raw": data,
    }[framing]
    response = http.post(
        f"/orgs/{_safe_url_part(org)}/documents",
        content=body,
        headers={**bearer(tok), "Content-Type": content_type},
    )
    _assert_error_shape(response)
    if response.status_code == 202:
        assert response.json()["path"].startswith("docs/")
