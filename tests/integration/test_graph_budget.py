"""A per-organization token budget stops a graph build at a stage boundary (issue 30 §3).

Every model is the OpenAI wire server; the build stops `stopped` with error `budget` and the figures,
its building version is dropped, and the published graph (version and content) stays as it was.
"""

from __future__ import annotations

import pytest

from graphs.graph_index_estimate import estimate_extraction
from tests.integration.cost_helpers import CAROL, FEZZIWIG, Library, model_stack
from tests.wire.openai_server import TextReply

LONG_JUNK = TextReply(" ".join(["unusable"] * 400))  # not JSON: retried once, then the local fallback


@pytest.fixture
def library(settings, openai_server, monkeypatch) -> Library:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return Library(model_stack(settings, openai_server))


def with_budget(library: Library, settings: dict) -> Library:
    """The same data directory and stores, read with other budget settings."""
    from librarian.stack import Stack

    again = Library(Stack(library.stack.settings.model_copy(update=settings)), library.org)
    again.graphs = type(library.graphs)(again.stack, library.graphs.graph.checkpointer)
    return again


def test_a_budget_below_the_estimate_stops_the_build_before_any_model_call(library, openai_server):
    library.add("carol.txt", CAROL)
    first = library.build()
    assert first["lastBuild"]["status"] == "published" and first["version"] == 1
    library.add("fezziwig.txt", FEZZIWIG)
    estimate = estimate_extraction(library.stack, library.org)
    assert [e["path"] for e in estimate["stale"]] == ["docs/fezziwig.txt"] and estimate["tokens"] > 10
    served = len(openai_server.requests)

    tight = with_budget(library, {"graph_build_token_budgets": f"{library.org}=10"})
    report = tight.build()

    last = report["lastBuild"]
    assert last["status"] == "stopped" and last["error"] == "budget"
    assert last["budget"] == {"limit": 10, "spent": 0, "estimated": estimate["tokens"], "stage": "extract"}
    assert "stopped: budget" in last["reason"] and "published graph is unchanged" in last["reason"]
    assert len(openai_server.requests) == served  # stopped on the estimate: no model call at all
    assert report["version"] == 1 and report["staleDocuments"] == ["docs/fezziwig.txt"]
    graph = library.stack.graph_store.scope(library.org)
    assert [v.status for v in graph.versions()] == ["published"]  # nothing half-built left behind


def test_spending_past_the_budget_stops_the_build_at_the_next_boundary(library, openai_server):
    library.add("carol.txt", CAROL)
    assert library.build()["version"] == 1
    graph = library.stack.graph_store.scope(library.org)
    entities_before = sorted(e.name for e in graph.entities())
    library.add("fezziwig.txt", FEZZIWIG)
    estimate = estimate_extraction(library.stack, library.org)["tokens"]
    openai_server.default_reply = LONG_JUNK  # each reply is ~400 tokens: far past the estimate
    chats_before = len(openai_server.chat_requests)
    served_before = openai_server.tokens_served["prompt"] + openai_server.tokens_served["completion"]

    budget = estimate + 1  # the estimate passes; what extraction really spends does not
    report = with_budget(library, {"graph_build_token_budget": budget}).build()

    last = report["lastBuild"]
    assert last["status"] == "stopped" and last["error"] == "budget", last
    figures = last["budget"]
    assert figures["stage"] == "merge" and figures["limit"] == budget and figures["spent"] > budget
    assert len(openai_server.chat_requests) - chats_before == 2  # one window, asked twice; no summaries
    assert report["version"] == 1 and sorted(e.name for e in graph.entities()) == entities_before
    assert [v.status for v in graph.versions()] == ["published"]
    served = openai_server.tokens_served
    spent_by_build = served["prompt"] + served["completion"] - served_before
    assert last["buildTokens"] == figures["spent"] == spent_by_build  # the ledger counted what was served


def test_an_unlimited_budget_and_a_generous_one_publish(library):
    library.add("carol.txt", CAROL)
    report = with_budget(library, {"graph_build_token_budget": 10_000_000}).build()
    assert report["lastBuild"]["status"] == "published" and report["lastBuild"]["buildTokens"] > 0
    assert "budget" not in report["lastBuild"]


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys, openai_server):
    """`librarian` in this process, its chat model the wire server, every build budgeted at 5 tokens."""
    import os

    from librarian.settings import get_settings
    from librarian_cli import main

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    env = {
        "LIBRARIAN_DATA_DIR": str(tmp_path / "data"),
        "LIBRARIAN_GRAPH_EXTRACTOR": "llm",
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "LIBRARIAN_GRAPH_BUILD_TOKEN_BUDGET": "5",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "carol.txt").write_bytes(CAROL)

    def run(*argv: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(argv))
        return code, capsys.readouterr().out

    run.folder = str(tmp_path / "in")  # type: ignore[attr-defined]
    yield run
    get_settings.cache_clear()


def test_the_cli_dry_run_calls_no_model_and_a_budgeted_build_stops(cli, openai_server):
    import json

    assert cli("ingest", cli.folder, "--org", "acme", "--quiet")[0] == 0
    code, out = cli("graph", "build", "--org", "acme", "--dry-run", "--json")
    estimate = json.loads(out)
    assert code == 0 and openai_server.requests == []  # an estimate, not a call
    assert [e["path"] for e in estimate["stale"]] == ["docs/carol.txt"] and estimate["calls"] == 1
    assert estimate["budget"] == 5 and estimate["tokens"] > 5 and estimate["withinBudget"] is False
    code, out = cli("graph", "build", "--org", "acme", "--dry-run")
    assert code == 0 and "OVER it: the build would stop" in out and openai_server.requests == []

    code, out = cli("graph", "build", "--org", "acme", "--json")
    report = json.loads(out)
    assert code == 1 and report["lastBuild"]["status"] == "stopped" and report["version"] is None
    assert report["lastBuild"]["budget"]["stage"] == "extract" and openai_server.requests == []
    code, out = cli("graph", "status", "--org", "acme")
    assert code == 0 and "stopped" in out and "stopped: budget" in " ".join(out.split())
    assert "no model-backed calls (offline defaults)" in out
