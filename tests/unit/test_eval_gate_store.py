"""The gate's store on both engines (SQLite in the data dir, PostgreSQL when configured): questions
replaced per organization, accepted runs appended with their configuration, organizations apart."""

from __future__ import annotations

import uuid

import pytest

from librarian.errors import TenantError
from librarian.evaluation.gate.questions import JudgedQuestion, Relevant
from librarian.evaluation.gate.store import GateStore, open_gate_store
from librarian.settings import Settings
from tests.conftest import POSTGRES_URL, require_postgres


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path) -> GateStore:
    if request.param == "postgres":
        require_postgres()
        return open_gate_store(Settings(data_dir=tmp_path, postgres_url=POSTGRES_URL))
    return open_gate_store(Settings(data_dir=tmp_path))


def test_questions_and_accepted_runs_per_organization(store):
    acme, globex = f"acme-{uuid.uuid4().hex[:8]}", f"globex-{uuid.uuid4().hex[:8]}"
    first = [JudgedQuestion("1", "Where?", (Relevant("docs/a.md", 2),), ("north",))]
    second = [JudgedQuestion("q", "When?", (), ("Monday",))]
    assert store.load_questions(acme) is None and store.last_accepted(acme) is None
    store.save_questions(acme, first, "q.jsonl")
    store.save_questions(acme, second, "q2.csv")  # an upload replaces the organization's questions
    stored = store.load_questions(acme)
    assert stored is not None and stored.questions == second and stored.source == "q2.csv"
    assert store.load_questions(globex) is None

    one = store.accept(acme, {"metrics": {"retrieval recall": 1.0}, "fingerprint": {"digest": "d1"}})
    two = store.accept(acme, {"metrics": {"retrieval recall": 0.5}, "fingerprint": {"digest": "d2"}})
    assert two.id > one.id
    latest = store.last_accepted(acme)
    assert latest is not None and latest.id == two.id and latest.record["fingerprint"]["digest"] == "d2"
    assert store.last_accepted(globex) is None
    with pytest.raises(TenantError):
        store.last_accepted("")
