"""Start-up refusals of the real dev server, the committed `langgraph.json`, and token verification."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jwt
import pytest

from librarian.auth import AuthenticationError, TokenVerifier, mint_token
from librarian.errors import ConfigError
from librarian.index.base import EmbeddingContract
from librarian.index.contract import contract_to_json
from tests.integration.server_fixtures import REPO_DIR, SECRET, DevServer, server_env

EXIT_DEADLINE_S = 90.0


def test_committed_config_serves_the_graphs_routes_and_auth():
    config = json.loads((REPO_DIR / "langgraph.json").read_text())
    assert config["graphs"] == {
        "ingest": "./graphs/ingest.py:graph",
        "reindex": "./graphs/reindex.py:graph",
        "agent": {"path": "./graphs/agent.py:graph", "description": config["graphs"]["agent"]["description"]},
        "graph_index": "./graphs/graph_index.py:graph",
    }
    assert config["http"] == {
        "app": "./server.py:app",
        "enable_custom_route_auth": True,
        # no long-term store, generative UI or webhooks (server-side calls to client-chosen URLs)
        "disable_store": True,
        "disable_ui": True,
        "disable_webhooks": True,
    }
    assert config["auth"] == {"path": "./auth.py:auth", "disable_studio_auth": True}
    assert config["dependencies"] == ["."]
    # durable checkpoints (document statuses) on every runtime: SQLite, or PostgreSQL when configured
    assert config["checkpointer"] == {"path": "./librarian/checkpoint.py:server_checkpointer"}
    # kept for the commands that name it: the default now chooses PostgreSQL by itself
    assert json.loads((REPO_DIR / "langgraph.postgres.json").read_text()) == config


# --- refusing to start ---------------------------------------------------------------------------------


def _foreign_contract(data_dir: Path) -> None:
    lance = data_dir / "lancedb"
    lance.mkdir(parents=True)
    other = EmbeddingContract(dense_model="openai/text-embedding-3-small", dimension=1536, sparse_model="x")
    (lance / "contract.json").write_text(contract_to_json(other))


CASES = {
    "short-secret": ({"LIBRARIAN_AUTH_SECRET": "too-short"}, None, "LIBRARIAN_AUTH_SECRET is 9 bytes"),
    "no-secret": ({"LIBRARIAN_AUTH_SECRET": ""}, None, "LIBRARIAN_AUTH_SECRET (or LIBRARIAN_AUTH_JWKS_URL)"),
    "cloud-without-key": ({"LIBRARIAN_VECTOR_INDEX": "pinecone"}, None, "PINECONE_API_KEY is not set"),
    "contract-mismatch": ({}, _foreign_contract, "the index was built with"),
}


def _refused(tmp: Path, name: str) -> tuple[int | None, str, float]:
    env_extra, prepare, _ = CASES[name]
    workdir, data = tmp / name / "work", tmp / name / "data"
    workdir.mkdir(parents=True)
    if prepare:
        prepare(data)
    server = DevServer(workdir, server_env(data, env_extra))
    started = time.monotonic()
    try:
        server.start(deadline_s=EXIT_DEADLINE_S)
    except RuntimeError:
        pass  # exited during start-up: what we want
    else:
        server.stop()
        return 0, server.log(), time.monotonic() - started
    return server.process.returncode if server.process else None, server.log(), time.monotonic() - started


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_server_refuses_to_start_with_a_one_line_reason(tmp_path):
    with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
        outcomes = dict(zip(CASES, pool.map(lambda n: _refused(tmp_path, n), CASES), strict=True))
    for name, (code, log, seconds) in outcomes.items():
        expected = CASES[name][2]
        reasons = [line for line in log.splitlines() if line.startswith("librarian: refusing to start:")]
        assert code not in (0, None), (name, log[-2000:])
        assert len(reasons) == 1 and expected in reasons[0], (name, reasons, log[-2000:])
        print(f"{name}: exited {code} after {seconds:.1f}s: {reasons[0]}")


# --- tokens ------------------------------------------------------------------------------------------


def test_minted_tokens_verify_with_memberships_and_role():
    verifier = TokenVerifier(secret=SECRET)
    principal = verifier.verify(mint_token(SECRET, "alice", "acme", orgs=["beta"], role="reader"))
    assert (principal.user_id, principal.organization_id, principal.organizations) == (
        "alice",
        "acme",
        ("acme", "beta"),
    )
    assert principal.role == "reader" and "documents:write" not in principal.permissions
    user = principal.as_user()
    assert (
        user["identity"] == "alice" and user["organization_id"] == "acme" and user["orgs"] == ["acme", "beta"]
    )


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda c: jwt.encode(c, None, algorithm="none"), "invalid"),
        (lambda c: jwt.encode(c, "x" * 40, algorithm="HS256"), "invalid"),
        (lambda c: jwt.encode(c, SECRET, algorithm="HS512"), "invalid"),
        (lambda c: jwt.encode({**c, "exp": int(time.time()) - 60}, SECRET, algorithm="HS256"), "expired"),
        (lambda c: jwt.encode({**c, "orgs": ["beta"]}, SECRET, algorithm="HS256"), "memberships"),
        (lambda c: jwt.encode({**c, "org": "../x"}, SECRET, algorithm="HS256"), "invalid organization"),
        (lambda c: jwt.encode({**c, "role": "root"}, SECRET, algorithm="HS256"), "role"),
        (
            lambda c: jwt.encode({k: v for k, v in c.items() if k != "exp"}, SECRET, algorithm="HS256"),
            "invalid",
        ),
        (lambda c: "", "missing"),
    ],
    ids=["alg-none", "forged", "hs512", "expired", "not-member", "bad-org", "bad-role", "no-exp", "empty"],
)
def test_bad_tokens_are_rejected(make, message):
    claims = {"sub": "alice", "org": "acme", "orgs": ["acme"], "exp": int(time.time()) + 60}
    with pytest.raises(AuthenticationError, match=message):
        TokenVerifier(secret=SECRET).verify(make(claims))


def test_short_or_missing_secrets_are_config_errors():
    for secret in (None, "", "x" * 31):
        with pytest.raises(ConfigError):
            TokenVerifier(secret=secret)
    with pytest.raises(ConfigError):
        mint_token("short", "alice", "acme")


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_postgres_config_writes_document_checkpoints_to_postgres(tmp_path):
    """`langgraph.postgres.json` serves with the Postgres checkpointer: a document's status is there.

    Only checkpoints move: the dev server still keeps its thread and run records in its own pickles,
    so a fresh working directory forgets the threads even though their checkpoints survive.
    """
    import httpx
    import psycopg

    from tests.conftest import POSTGRES_URL, require_postgres
    from tests.integration.server_fixtures import token, upload, wait_for_status

    require_postgres()
    org = f"pg{int(time.time() * 1000)}"  # a fresh org: the database outlives test runs
    env = server_env(tmp_path / "data", {"LIBRARIAN_POSTGRES_URL": POSTGRES_URL})
    tok = token("alice", org)
    (tmp_path / "work").mkdir()
    server = DevServer(tmp_path / "work", env, config="langgraph.postgres.json").start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            assert upload(http, org, tok, "note.md", b"# Note\n\nPostgres keeps this.\n").status_code == 202
            status = wait_for_status(http, org, tok, "docs/note.md")
    finally:
        server.stop()
    assert status["status"] == "indexed"
    with psycopg.connect(POSTGRES_URL) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (status["threadId"],)
        ).fetchone()
    assert rows[0] >= 3  # one per superstep of the ingest run
