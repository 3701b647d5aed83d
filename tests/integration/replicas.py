"""Two `langgraph dev` replicas over one PostgreSQL database and one data directory (issue 25).

What a multi-replica deployment shares, and nothing more: both processes get the same
`LIBRARIAN_POSTGRES_URL` (a database made fresh for the test module, which also makes the server's
checkpointer PostgreSQL, `librarian/checkpoint.py`) and the same `LIBRARIAN_DATA_DIR` (the file
store and the embedded LanceDB index on a shared disk). Each process keeps its own working
directory, because the dev server's own thread and run records (`.langgraph_api`) belong to one
process, as a replica's memory does.

The helpers speak only the public HTTP API (document routes, `/mcp`'s `search_documents`, the
Platform API's run listing), so the race tests written on them describe behaviour, not the
coordination that is to provide it. Reading the stored file and the index straight from the shared
data directory is the one exception: it is the ground truth the API's answers are checked against.
Every wait polls with a deadline; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import hashlib
import itertools
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from librarian.runs.threads import server_thread_id
from tests.conftest import POSTGRES_URL, require_postgres
from tests.integration.server_fixtures import DevServer, bearer, server_env, token, upload

ACTIVE = ("queued", "running")  # document statuses of an ingest still to finish
ACTIVE_RUNS = ("pending", "running")  # Platform API run statuses of a run still to finish
POLL_S = 0.25
HTTP_TIMEOUT_S = 120.0


# --- a fresh PostgreSQL database ------------------------------------------------------------------


@contextmanager
def fresh_database(base_url: str = POSTGRES_URL, prefix: str = "librarian_replicas") -> Iterator[str]:
    """A new, empty database on the test server for the duration of the block; its URL.

    A fresh one per module, because the replicas' checkpoints (the document statuses) must start
    empty and must not mix with other test runs that share `LIBRARIAN_TEST_POSTGRES_URL`'s database.
    It is dropped at the end, after its sessions are terminated (a killed replica may leave some).
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    require_postgres()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin_url = make_conninfo(base_url, dbname="postgres")
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(base_url, dbname=name)
    finally:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# --- the pair of servers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Search:
    """One `search_documents` call: its results and how long the HTTP round trip took."""

    results: list[dict[str, Any]]
    seconds: float

    def of_path(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.results if r.get("path") == path]


@dataclass
class Replicas:
    """The replicas, their shared data directory and database, and the calls tests make on them."""

    servers: list[DevServer]
    data_dir: Path
    postgres_url: str
    _turn: Iterator[int] = field(default_factory=itertools.count)
    _turn_lock: threading.Lock = field(default_factory=threading.Lock)

    # --- choosing a replica

    def next(self) -> DevServer:
        """The next replica, round-robin (thread-safe: concurrent senders spread evenly)."""
        with self._turn_lock:
            return self.servers[next(self._turn) % len(self.servers)]

    def name(self, server: DevServer) -> str:
        return "AB"[self.servers.index(server)] if server in self.servers else server.url

    # --- document routes

    def upload(self, server: DevServer, org: str, tok: str, name: str, data: bytes) -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            return upload(http, org, tok, name, data)

    def delete(self, server: DevServer, org: str, tok: str, path: str) -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            return http.delete(f"/orgs/{org}/documents/{path}", headers=bearer(tok))

    def cancel(self, server: DevServer, org: str, tok: str, path: str) -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            return http.post(f"/orgs/{org}/documents/{path}/cancel", headers=bearer(tok))

    def status(self, server: DevServer, org: str, tok: str, path: str) -> dict[str, Any]:
        """The document's status on that replica; `{"status": "<http code>"}` for a non-200 answer."""
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            response = http.get(f"/orgs/{org}/documents/{path}", headers=bearer(tok))
        if response.status_code != 200:
            return {"status": f"http {response.status_code}", "body": response.text[:300]}
        return response.json()

    def statuses(self, org: str, tok: str, path: str) -> list[dict[str, Any]]:
        """The document's status on every replica, in replica order."""
        return [self.status(server, org, tok, path) for server in self.servers]

    def wait_status(
        self,
        server: DevServer,
        org: str,
        tok: str,
        path: str,
        accept: Callable[[dict[str, Any]], bool],
        *,
        deadline_s: float = 180.0,
        what: str = "the expected status",
    ) -> dict[str, Any]:
        """Poll one replica's status until `accept` holds; a TimeoutError with the last status."""
        deadline = time.monotonic() + deadline_s
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.status(server, org, tok, path)
            if accept(last):
                return last
            time.sleep(POLL_S)
        raise TimeoutError(f"{path} on {self.name(server)}: no {what} in {deadline_s:.0f}s; last: {last}")

    # --- runs (Platform API) and settling

    def thread_runs(self, server: DevServer, tok: str, org: str, path: str) -> list[dict[str, Any]]:
        """The runs that replica knows on the document's thread, newest first; none if it has no record."""
        thread = server_thread_id(org, path)
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            response = http.get(f"/threads/{thread}/runs", params={"limit": 1000}, headers=bearer(tok))
        if response.status_code == 404:
            return []
        assert response.status_code == 200, (self.name(server), response.status_code, response.text[:300])
        return response.json()

    def settle(self, org: str, tok: str, path: str, *, deadline_s: float = 300.0) -> list[dict[str, Any]]:
        """Wait until no replica has a run of the path still to finish and none reads it queued or
        running, all in one round; the statuses of that round, in replica order.

        Both are needed: a replica's status alone may read final while the other replica still runs
        the path's ingest (it does not know that run), and a run list alone misses a job still
        waiting for admission (which reads `queued`).
        """
        deadline = time.monotonic() + deadline_s
        last: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            busy = [
                r["status"]
                for server in self.servers
                for r in self.thread_runs(server, tok, org, path)
                if r["status"] in ACTIVE_RUNS
            ]
            last = self.statuses(org, tok, path)
            if not busy and not any(s.get("status") in ACTIVE for s in last):
                return last
            time.sleep(POLL_S)
        raise TimeoutError(f"{path} did not settle in {deadline_s:.0f}s; last statuses: {last}")

    # --- search (/mcp search_documents: the cheap, deterministic read of the index)

    def search(self, server: DevServer, tok: str, query: str, *, top_k: int = 20) -> Search:
        """The organization's excerpts for `query` (the token's organization), through that replica."""
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_documents", "arguments": {"query": query, "top_k": top_k}},
        }
        started = time.perf_counter()
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT_S) as http:
            response = http.post("/mcp", json=call, headers=bearer(tok))
        seconds = time.perf_counter() - started
        assert response.status_code == 200, (self.name(server), response.status_code, response.text[:300])
        body = response.json()
        assert "result" in body and not body["result"].get("isError"), (self.name(server), body)
        return Search(body["result"]["structuredContent"]["results"], seconds)

    def hits_on(self, server: DevServer, tok: str, word: str, path: str) -> list[str]:
        """The excerpts of `path` that contain `word` (a marker) among that replica's search results.

        The text is checked, not just the path: the dense half of the hybrid search returns the
        nearest chunks whether or not they hold the word.
        """
        texts = [r["text"] for r in self.search(server, tok, word).of_path(path)]
        return [t for t in texts if word.lower() in t.lower()]

    def hits(self, tok: str, word: str, path: str) -> dict[str, list[str]]:
        """Per replica, `hits_on` that replica."""
        return {self.name(server): self.hits_on(server, tok, word, path) for server in self.servers}

    # --- ground truth on the shared disk

    def stored_file(self, org: str, path: str) -> Path:
        return self.data_dir / "files" / "orgs" / org / path

    def index_records(self, org: str, path: str) -> dict[str, dict[str, Any]]:
        """The path's records in the shared index, id -> metadata (read from disk, not the API)."""
        from librarian.index.base import record_id_prefix
        from librarian.settings import load_settings
        from librarian.stack import Stack

        index = Stack(load_settings(data_dir=self.data_dir)).index
        ids = index.list_ids(namespace=org, prefix=record_id_prefix(path))
        return {i: dict(r["metadata"]) for i, r in index.fetch(ids, namespace=org).items()}

    # --- one clean ingest, for comparison

    def clean_ingest(self, server: DevServer, org: str, name: str, data: bytes) -> dict[str, Any]:
        """Ingest `data` as `name` into `org` (a fresh organization, nothing racing): its status."""
        tok = token("clean", org)
        response = self.upload(server, org, tok, name, data)
        assert response.status_code == 202, response.text
        path = response.json()["path"]
        digest = content_digest(data)
        return self.wait_status(
            server,
            org,
            tok,
            path,
            lambda s: s.get("status") in ("indexed", "failed", "skipped") and s.get("contentHash") == digest,
            what="final status of the clean ingest",
        )

    # --- crash and restart

    def kill(self, server: DevServer) -> None:
        """SIGKILL the replica's whole process group (server and ingest workers): a crash."""
        server.kill()

    def restart(self, server: DevServer) -> None:
        """Start a killed replica again on its own working directory and the shared data directory."""
        server.restart()


def content_digest(data: bytes) -> str:
    """A document version's identity as statuses report it (`contentHash`: sha256 of the bytes)."""
    return hashlib.sha256(data).hexdigest()


def view(status: Mapping[str, Any]) -> tuple[Any, ...]:
    """What two replicas must agree on about a document."""
    return status.get("status"), status.get("chunkCount"), status.get("contentHash")


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


@contextmanager
def running_replicas(
    tmp_dir: Path, extra_env: Mapping[str, str] | None = None, *, count: int = 2, jobs: int = 4
) -> Iterator[Replicas]:
    """`count` dev servers over a fresh database and one data directory, started side by side.

    They start at the same time on purpose: a rolling deploy starts replicas together, and each
    runs the checkpointer's migrations at start-up (serialised by its advisory lock).
    """
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database())
        data_dir = tmp_dir / "data"
        env = server_env(data_dir, {"LIBRARIAN_POSTGRES_URL": url, **(extra_env or {})})
        servers = []
        for n in range(count):
            workdir = tmp_dir / f"replica-{n}"
            workdir.mkdir(parents=True)
            servers.append(DevServer(workdir, env, jobs=jobs))
            stack.callback(servers[-1].stop)  # stopped before the database is dropped
        with ThreadPoolExecutor(max_workers=count) as pool:
            for started in [pool.submit(server.start) for server in servers]:
                started.result()
        yield Replicas(servers, data_dir, url)
