"""The gate's routes in-process: admins upload judged questions (validated as the command does, a bad
row refused with its line) and read the gate's state; members and other organizations are refused."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

import server
from librarian.evaluation.gate.store import SqliteGateStore
from tests.unit.test_webapi import get, refused, user, with_user
from webapi import eval_gate

URL = "/orgs/acme/eval/questions"
ROWS = [
    {"question": "Where do visitors park?", "relevant": ["parking.txt"]},
    {"question": "How long do refunds take?", "answer": "14 days"},
]


@pytest.fixture
def client(tmp_path, monkeypatch) -> TestClient:
    store = SqliteGateStore(tmp_path / "eval-gate.sqlite")
    monkeypatch.setattr(eval_gate, "gate_store", lambda: store)
    return TestClient(with_user(server.app), raise_server_exceptions=False)


def test_an_admin_uploads_questions_and_reads_the_gate(client):
    body = "\n".join(json.dumps(r) for r in ROWS)
    stored = get(client, URL + "?filename=q.jsonl", user(role="admin"), method="PUT", content=body)
    assert stored.status_code == 200, stored.text
    assert stored.json()["questions"] == 2 and stored.json()["source"] == "q.jsonl"
    csv = "question,relevant\nWhere is the desk?,docs/desk.md#page=2\n"
    assert get(client, URL, user(role="admin"), "PUT", {"content-type": "text/csv"}, content=csv).json()[
        "questions"
    ] == 1  # fmt: skip
    state = get(client, "/orgs/acme/eval/gate", user(role="admin")).json()
    assert state == {
        "organization_id": "acme",
        "questions": 1,
        "source": "upload",
        "uploaded_at": state["uploaded_at"],
        "accepted": None,
    }


def test_bad_files_and_callers_are_refused(client):
    bad = json.dumps(ROWS[0]) + '\n{"question": "no judgment"}\n'
    message = refused(
        get(client, URL + "?filename=q.jsonl", user(role="admin"), "PUT", content=bad), 400, "bad_questions"
    )
    assert message.startswith("q.jsonl:2: give `relevant` documents")
    assert "UTF-8" in refused(
        get(client, URL, user(role="admin"), "PUT", content=b"\xff\xfe\x00"), 400, "bad_questions"
    )
    big = b"x" * (eval_gate.MAX_QUESTIONS_BYTES + 1)
    refused(get(client, URL, user(role="admin"), "PUT", content=big), 413, "too_large")
    assert "only an organization admin" in refused(
        get(client, URL, user(), "PUT", content="{}"), 403, "forbidden"
    )
    refused(get(client, "/orgs/globex/eval/gate", user(role="admin")), 403, "forbidden")
    refused(get(client, "/orgs/acme/eval/gate"), 401, "unauthenticated")
