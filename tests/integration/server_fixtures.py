"""A real `langgraph dev` server for integration tests, plus the few helpers every server test needs.

The server process itself is `tests.devserver` (shared with `bench/serve.py`); this module signs
it with a fixed test secret so helpers can mint tokens, and keeps the two-organization world.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from librarian.auth import mint_token
from tests import devserver
from tests.conftest import DOCS_DIR
from tests.devserver import (  # noqa: F401 - the names server tests import from here
    READY_DEADLINE_S,
    REPO_DIR,
    TAKEN_PORTS,
    DevServer,
    config_for,
    free_port,
)

SECRET = "test-secret-" + "x" * 40  # >= 32 bytes, fixed so helpers can mint tokens


def server_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a test server (signed with the tests' SECRET)."""
    return devserver.server_env(data_dir, SECRET, extra)


@contextmanager
def running_server(
    tmp_dir: Path, extra_env: Mapping[str, str] | None = None, jobs: int = 4
) -> Iterator[DevServer]:
    with devserver.running_server(tmp_dir, SECRET, extra_env, jobs=jobs) as server:
        yield server


# --- tokens and calls ------------------------------------------------------------------------------


def token(
    user: str, org: str, *, orgs: list[str] | None = None, role: str = "member", ttl_s: int = 3600
) -> str:
    return mint_token(SECRET, user, org, orgs=orgs, role=role, ttl_s=ttl_s)


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


def random_secret() -> str:
    return secrets.token_urlsafe(48)


def upload(
    http: httpx.Client,
    org: str,
    tok: str,
    name: str,
    data: bytes,
    content_type: str = "application/octet-stream",
) -> httpx.Response:
    return http.post(
        f"/orgs/{org}/documents", files={"file": (name, data, content_type)}, headers=bearer(tok)
    )


def wait_for_status(
    http: httpx.Client,
    org: str,
    tok: str,
    path: str,
    *,
    done: tuple[str, ...] = ("indexed", "skipped", "failed"),
    deadline_s: float = 180.0,
    content_hash: str | None = None,
) -> dict[str, Any]:
    """Poll a document's status until it is final (and, if given, for the expected content)."""
    deadline = time.monotonic() + deadline_s
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        response = http.get(f"/orgs/{org}/documents/{path}", headers=bearer(tok))
        if response.status_code == 200:
            last = response.json()
            hash_ok = content_hash is None or last.get("contentHash") == content_hash
            if last.get("status") in done and hash_ok:
                return last
        time.sleep(0.25)
    raise TimeoutError(f"{path} did not reach {done} in {deadline_s}s; last status: {last}")


# --- a two-organization world ----------------------------------------------------------------------

DOCS = DOCS_DIR  # honours LIBRARIAN_SHARED_DIR
ORG_A, ORG_B = "acme", "globex"
A_CANARY = "ALPHA-CANARY-93731"
B_CANARY = "BETA-CANARY-11873"
A_SECRET_DOC = (
    "# Project Bluebird\n\n"
    f"The launch code of Project Bluebird is {A_CANARY}. Only Acme knows that the Bluebird launch "
    "happens at dawn from pier seven, and that the budget of Project Bluebird is four million.\n\n"
    "## Bluebird crew\n\nThe Bluebird crew is led by captain Ada Quill, who reports to the Acme board.\n"
).encode()
B_NOTES_DOC = (
    "# Globex notes on Project Bluebird\n\n"
    f"Globex's own Project Bluebird is a garden bird census; its reference is {B_CANARY}. The census "
    "counts bluebirds in the park every spring.\n\n"
    "## Census volunteers\n\nVolunteers meet at the park gate at eight in the morning with binoculars.\n"
).encode()
A_FILES = {
    "concepts_chunking.md": DOCS / "md" / "docling-docs" / "concepts_chunking.md",
    "word_sample.docx": DOCS / "docx" / "word_sample.docx",
    "multi_page.pdf": DOCS / "pdf" / "docling" / "multi_page.pdf",
}
A_PATHS = {f"docs/{name}" for name in [*A_FILES, "alpha-secret.md"]}
LEGAL_QUESTION = "Which word processing software was popular among legal professionals?"


def seed_org_a(http: httpx.Client) -> dict[str, dict[str, Any]]:
    """Upload Acme's documents (three real ones and the canary) over HTTP and wait until indexed."""
    tok = token("alice", ORG_A)
    uploads = [(name, path.read_bytes()) for name, path in A_FILES.items()]
    uploads.append(("alpha-secret.md", A_SECRET_DOC))
    accepted = {}
    for name, data in uploads:
        response = upload(http, ORG_A, tok, name, data)
        assert response.status_code == 202, response.text
        accepted[response.json()["path"]] = response.json()
    return {path: wait_for_status(http, ORG_A, tok, path) | accepted[path] for path in accepted}


def seed_org_b(http: httpx.Client) -> dict[str, Any]:
    tok = token("bob", ORG_B)
    response = upload(http, ORG_B, tok, "beta-notes.md", B_NOTES_DOC)
    assert response.status_code == 202, response.text
    return wait_for_status(http, ORG_B, tok, response.json()["path"])


def ask(url: str, tok: str, question: str, **run_kwargs: Any) -> dict[str, Any]:
    """One agent turn through the Platform API as the token's user: the final thread state."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url, headers=bearer(tok), timeout=120)
    thread = client.threads.create()
    return client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"messages": [{"role": "user", "content": question}]},
        raise_error=False,
        **run_kwargs,
    )


def answer_text(state: dict[str, Any]) -> str:
    messages = state.get("messages") or []
    return str(messages[-1]["content"]) if messages else ""
