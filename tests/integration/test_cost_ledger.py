"""The cost ledger on real parts: SQLite and PostgreSQL storage, a graph build whose models are all the
OpenAI wire server (the ledger's tokens equal what the server served), the offline defaults (zero),
the dry run (no model call) and `GET /orgs/{org}/graph/costs`."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from librarian.chat_model import chat_model_from_settings
from librarian.costs.estimate import MESSAGE_OVERHEAD_TOKENS, window_prompt_tokens
from librarian.costs.ledger import CostLedger, ledger_of
from librarian.costs.scope import PHASES, cost_scope
from librarian.graph.extract.llm import windows
from librarian.stack import Stack
from librarian_cli.graph import graph_dry_run, graph_status, print_costs, print_dry_run
from tests.conftest import POSTGRES_URL, require_postgres
from tests.integration.cost_helpers import CAROL, FEZZIWIG, Library, model_stack
from tests.unit.test_webapi import get, user, with_user


@pytest.fixture
def models(settings, openai_server, monkeypatch) -> Library:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return Library(model_stack(settings, openai_server))


def by_phase(ledger: CostLedger, org: str, build: str | None = None) -> dict[str, tuple[int, int, int]]:
    return {p.phase: (p.calls, p.inputTokens, p.outputTokens) for p in ledger.phases(org, build=build)}


# --- storage --------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger(request, settings):
    if request.param == "sqlite":
        yield CostLedger(Stack(settings).graph_store)
        return
    require_postgres()
    from librarian.graph.store_postgres import PostgresGraphStore

    yield CostLedger(PostgresGraphStore(POSTGRES_URL))


def test_the_ledger_adds_up_per_organization_phase_and_build(ledger):
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    ledger.record(a, "extract", calls=1, input_tokens=100, output_tokens=20, seconds=0.5, build="b1")
    ledger.record(a, "extract", calls=2, input_tokens=50, output_tokens=5, seconds=0.25, build="b1")
    ledger.record(a, "embed", calls=1, input_tokens=7, output_tokens=0, seconds=0.1, build="b2")
    ledger.record(a, "answer", calls=1, input_tokens=30, output_tokens=9, seconds=1.0)
    ledger.record(b, "answer", calls=1, input_tokens=999, output_tokens=999, seconds=9.0)
    assert [p.phase for p in ledger.phases(a)] == list(PHASES)  # every phase, zeros included
    assert by_phase(ledger, a)["extract"] == (3, 150, 25) and by_phase(ledger, a)["answer"] == (1, 30, 9)
    assert ledger.build_tokens(a, "b1") == 175 and ledger.build_tokens(a, "b2") == 7
    assert ledger.build_tokens(a, "nope") == 0
    report = ledger.report(a)
    assert report["totals"] == {"calls": 5, "inputTokens": 187, "outputTokens": 34, "seconds": 1.85}
    assert by_phase(ledger, b)["answer"] == (1, 999, 999)  # another organization's rows stay its own


def test_a_bad_organization_is_refused_not_defaulted(ledger):
    from librarian.errors import TenantError

    with pytest.raises(TenantError):
        ledger.record("", "extract", calls=1, input_tokens=1, output_tokens=1, seconds=0.0)
    with pytest.raises(TenantError):
        ledger.report("../other")


# --- attribution ----------------------------------------------------------------------------------


def test_chat_calls_are_recorded_in_the_open_scope_only(models, openai_server):
    ledger = ledger_of(models.stack)
    model = chat_model_from_settings(models.stack.settings)
    model.invoke("outside any scope")  # nobody to charge: not recorded
    with cost_scope(ledger, "acme", "map"):
        model.invoke("one two three")

    async def answer() -> None:
        with cost_scope(ledger, "acme", "answer"):
            await model.ainvoke("four five")

    asyncio.run(answer())
    served = openai_server.chat_requests
    assert len(served) == 3
    phases = by_phase(ledger, "acme")
    assert phases["map"][0] == 1 and phases["answer"][0] == 1 and phases["extract"] == (0, 0, 0)
    recorded = phases["map"][1] + phases["answer"][1]
    total_prompt = openai_server.tokens_served["prompt"]
    assert recorded == total_prompt - 10  # the first call (10 prompt tokens served) was nobody's
    assert ledger.phases("acme")[PHASES.index("answer")].seconds > 0


# --- a build ----------------------------------------------------------------------------------------


def test_a_model_backed_build_records_exactly_the_tokens_the_server_served(models, openai_server):
    models.add("carol.txt", CAROL)
    models.add("fezziwig.txt", FEZZIWIG)
    before = dict(openai_server.tokens_served)  # ingest embedded the chunks outside any scope
    report = models.build()
    assert report["lastBuild"]["status"] == "published"
    served = {k: openai_server.tokens_served[k] - before[k] for k in before}
    phases = by_phase(ledger_of(models.stack), models.org)
    chat_in = phases["extract"][1] + phases["summarise"][1]
    chat_out = phases["extract"][2] + phases["summarise"][2]
    assert (chat_in, chat_out) == (served["prompt"], served["completion"]) and chat_in > 0
    assert phases["embed"][1] == served["embedding"] > 0 and phases["embed"][2] == 0
    assert phases["extract"][0] >= 2 and phases["summarise"][0] >= 1  # one window per document, at least
    assert report["lastBuild"]["buildTokens"] == chat_in + chat_out + served["embedding"]
    assert by_phase(ledger_of(models.stack), "other") == dict.fromkeys(PHASES, (0, 0, 0))


def test_the_offline_defaults_record_nothing_and_report_zero(settings):
    library = Library(Stack(settings))
    library.add("carol.txt", CAROL)
    built = library.build()
    assert built["lastBuild"]["status"] == "published" and built["lastBuild"]["buildTokens"] == 0
    report = graph_status(library.org, stack=library.stack)  # `librarian graph status`
    assert report["costs"]["totals"] == {"calls": 0, "inputTokens": 0, "outputTokens": 0, "seconds": 0.0}
    console = Console(record=True, width=120)
    print_costs(report["costs"], console)
    assert "no model-backed calls (offline defaults)" in console.export_text()
    dry = graph_dry_run(library.org, force=True, stack=library.stack)
    assert dry["extractor"] == "local" and dry["chunks"] >= 1 and dry["tokens"] == 0


def test_the_dry_run_estimates_the_stale_chunks_without_a_model_call(models, openai_server):
    models.add("carol.txt", CAROL)
    assert models.build()["version"] == 1
    models.add("fezziwig.txt", FEZZIWIG)
    requests = len(openai_server.requests)
    estimate = graph_dry_run(models.org, stack=models.stack)
    assert len(openai_server.requests) == requests  # no model call, no embedding
    assert [e["path"] for e in estimate["stale"]] == ["docs/fezziwig.txt"]  # the cache decided
    from graphs.graph_index_stages import document_chunks, indexed_documents

    documents = {d["path"]: d for d in indexed_documents(models.stack, models.org)[0]}
    chunks = document_chunks(
        models.stack, models.org, "docs/fezziwig.txt", documents["docs/fezziwig.txt"]["contentHash"]
    )
    expected = sum(window_prompt_tokens([c.text for c in w]) for w in windows(chunks))
    assert estimate["inputTokens"] == expected and estimate["calls"] == len(windows(chunks))
    assert expected > MESSAGE_OVERHEAD_TOKENS and estimate["outputTokens"] > 0
    assert estimate["budget"] == 0 and estimate["withinBudget"]
    forced = graph_dry_run(models.org, force=True, stack=models.stack)
    assert {e["path"] for e in forced["stale"]} == {"docs/carol.txt", "docs/fezziwig.txt"}
    console = Console(record=True, width=160)
    print_dry_run(estimate, console)
    text = console.export_text()
    assert "docs/fezziwig.txt" in text and f"{estimate['tokens']} tokens" in text


# --- the route --------------------------------------------------------------------------------------


def test_members_read_the_costs_route_and_strangers_are_refused(models, openai_server, monkeypatch):
    import server
    import webapi.graph_costs

    ledger_of(models.stack).record("acme", "judge", calls=2, input_tokens=40, output_tokens=4, seconds=0.5)
    monkeypatch.setattr(webapi.graph_costs, "get_stack", lambda: models.stack)
    client = TestClient(with_user(server.app), raise_server_exceptions=False)
    response = get(client, "/orgs/acme/graph/costs", user("acme", role="reader"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["organization_id"] == "acme" and [p["phase"] for p in body["phases"]] == list(PHASES)
    judge = body["phases"][PHASES.index("judge")]
    assert judge == {"phase": "judge", "calls": 2, "inputTokens": 40, "outputTokens": 4, "seconds": 0.5}
    assert get(client, "/orgs/acme/graph/costs", user("other")).status_code == 403
    assert get(client, "/orgs/acme/graph/costs").status_code in (401, 403)
