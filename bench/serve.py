"""Serving overhead and fairness: uploads and chats through `langgraph dev` vs in-process, as ratios.

    python bench/serve.py                     # starts its own dev server on a free port
    python bench/serve.py --url http://127.0.0.1:8123 --secret "$LIBRARIAN_AUTH_SECRET"
    python bench/serve.py --fairness-only --compare-inline   # fairness, with and without the worker

Phase 1 uploads N documents concurrently over HTTP and times until every one is indexed; phase 2
runs M concurrent extractive chat turns through the Platform API and reports p50/p95. The same work
then runs in-process (`DocumentService` + `graphs.agent.build_agent`) on a fresh data directory,
and the ratios say what the server costs: HTTP, the run queue (about 1 s per run in the in-memory
runtime) and its job limit.

Fairness (issue 14, goal <= 2x): organization B's agent p50 while the server is idle, then while
organization A ingests large documents (more than its `LIBRARIAN_INGEST_CONCURRENCY_PER_ORG`), in
the same server. `--compare-inline` repeats it on a server with `LIBRARIAN_INGEST_OFFLOAD=false`
(parse and embed in the server process, as before the worker), the baseline the ratio improves on.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

DOCS = REPO_DIR.parent / "shared" / "data" / "docs"
SOURCES = [
    DOCS / "md" / "docling-docs" / "concepts_chunking.md",
    DOCS / "md" / "docling-tests" / "mixed.md",
    DOCS / "docx" / "word_sample.docx",
    DOCS / "docx" / "word_tables.docx",
    DOCS / "pdf" / "docling" / "multi_page.pdf",
    DOCS / "pdf" / "docling" / "2305.03393v1-pg9.pdf",
]
QUESTIONS = [
    "Which word processing software was popular among legal professionals?",
    "What does a chunker return?",
    "What could a respectful duck eat?",
    "What is Scrooge McDuck called in German?",
]


def documents(n: int) -> list[tuple[str, bytes]]:
    """N distinct documents (distinct names, so each is parsed and indexed on its own)."""
    return [
        (f"{i:02d}-{SOURCES[i % len(SOURCES)].name}", SOURCES[i % len(SOURCES)].read_bytes())
        for i in range(n)
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- through the server ---------------------------------------------------------------------------


async def server_ingest(url: str, tok: str, org: str, docs: list[tuple[str, bytes]]) -> float:
    headers = {"Authorization": f"Bearer {tok}"}
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as http:
        responses = await asyncio.gather(
            *(http.post(f"/orgs/{org}/documents", files={"file": (name, data)}) for name, data in docs)
        )
        paths = {r.json()["path"] for r in responses if r.status_code == 202}
        assert len(paths) == len(docs), [r.text for r in responses if r.status_code != 202]
        pending = set(paths)
        while pending:
            listing = (await http.get(f"/orgs/{org}/documents")).json()["documents"]
            pending = {
                d["path"]
                for d in listing
                if d["path"] in paths and d["status"] not in ("indexed", "skipped", "failed")
            }
            if pending:
                await asyncio.sleep(0.2)
    return time.perf_counter() - started


async def server_chats(url: str, tok: str, m: int) -> list[float]:
    from langgraph_sdk import get_client

    client = get_client(url=url, headers={"Authorization": f"Bearer {tok}"}, timeout=300)

    async def one(i: int) -> float:
        started = time.perf_counter()
        thread = await client.threads.create()
        state = await client.runs.wait(
            thread["thread_id"],
            "agent",
            input={"messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]},
        )
        assert state.get("sources"), state
        return time.perf_counter() - started

    return list(await asyncio.gather(*(one(i) for i in range(m))))


# --- in-process --------------------------------------------------------------------------------------


def inprocess(docs: list[tuple[str, bytes]], m: int, jobs: int) -> tuple[float, list[float]]:
    from langgraph.checkpoint.memory import InMemorySaver

    from graphs.agent import build_agent
    from librarian.settings import Settings
    from librarian.stack import Stack
    from services.documents import DocumentService

    org = "bench"
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Settings(data_dir=Path(tmp)))
        service = DocumentService(stack, InMemorySaver())
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            paths = [service.upload(org, name, data) for name, data in docs]
            statuses = list(pool.map(lambda p: service.ingest(org, p), paths))
        ingest_s = time.perf_counter() - started
        assert all(s.status in ("indexed", "skipped", "failed") for s in statuses)
        agent = build_agent(lambda: stack, checkpointer=InMemorySaver())

        def one(i: int) -> float:
            t0 = time.perf_counter()
            state = agent.invoke(
                {"messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]},
                {"configurable": {"thread_id": str(uuid.uuid4())}},
                context={"organization_id": org},
            )
            assert state.get("sources")
            return time.perf_counter() - t0

        with ThreadPoolExecutor(max_workers=m) as pool:
            latencies = list(pool.map(one, range(m)))
    return ingest_s, latencies


# --- driver ----------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--secret", help="its LIBRARIAN_AUTH_SECRET (with --url)")
    parser.add_argument("--docs", type=int, default=8, help="documents to upload (N)")
    parser.add_argument("--chats", type=int, default=8, help="concurrent chat runs (M)")
    parser.add_argument("--jobs", type=int, default=4, help="--n-jobs-per-worker of a started server")
    parser.add_argument("--fairness-only", action="store_true", help="only the fairness phase")
    parser.add_argument("--compare-inline", action="store_true", help="fairness also without the worker")
    parser.add_argument("--fair-chats", type=int, default=8, help="org B's sequential questions per phase")
    parser.add_argument("--large-docs", type=int, default=3, help="org A's large documents")
    parser.add_argument("--large-chunks", type=int, default=600, help="chunks per large document")
    args = parser.parse_args()

    from librarian.auth import mint_token
    from tests.devserver import DevServer, server_env

    if args.fairness_only:
        return fairness_main(args)

    docs = documents(args.docs)
    org = f"bench{int(time.time())}"
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if args.url:
            url, secret = args.url, args.secret or ""
        else:
            work = Path(tmp) / "server"
            work.mkdir()
            secret = secrets.token_urlsafe(48)
            server = DevServer(work, server_env(Path(tmp) / "data", secret), jobs=args.jobs).start()
            url = server.url
            print(f"server started in {server.startup_s:.1f}s at {url}")
        try:
            tok = mint_token(secret, "bench", org)
            server_ingest_s = asyncio.run(server_ingest(url, tok, org, docs))
            asyncio.run(server_chats(url, tok, 1))  # warm-up: first-run model loads are not the metric
            server_lat = asyncio.run(server_chats(url, tok, args.chats))
        finally:
            if server is not None:
                server.stop()
    local_ingest_s, local_lat = inprocess(docs, args.chats, args.jobs)

    def summary(lat: list[float]) -> str:
        return f"p50 {statistics.median(lat):.2f}s p95 {percentile(lat, 0.95):.2f}s"

    print(f"N={args.docs} documents, M={args.chats} concurrent chats, {args.jobs} jobs")
    print(
        f"ingest to all-indexed: server {server_ingest_s:.1f}s, in-process {local_ingest_s:.1f}s, "
        f"ratio {server_ingest_s / local_ingest_s:.2f}"
    )
    print(
        f"chat: server {summary(server_lat)}; in-process {summary(local_lat)}; "
        f"p50 ratio {statistics.median(server_lat) / statistics.median(local_lat):.2f}"
    )
    return fairness_main(args)


# --- fairness: one organization's questions while another ingests ---------------------------------


def large_document(chunks: int, seed: int) -> bytes:
    """About `chunks` chunks of distinct text (no parse-cache hits across documents)."""
    return "\n\n".join(
        f"# Section {seed}-{i}\n\n"
        + f"Maintenance record {seed}-{i}: the pump and the valve were checked. " * 14
        for i in range(chunks)
    ).encode()


async def org_b_latencies(url: str, tok: str, n: int) -> list[float]:
    """Sequential agent turns (one at a time, so each measures service time, not queueing)."""
    latencies = []
    for i in range(n):
        latencies.extend(await server_chats_one(url, tok, i))
    return latencies


async def server_chats_one(url: str, tok: str, i: int) -> list[float]:
    from langgraph_sdk import get_client

    client = get_client(url=url, headers={"Authorization": f"Bearer {tok}"}, timeout=300)
    started = time.perf_counter()
    thread = await client.threads.create()
    state = await client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]},
    )
    assert state.get("sources"), state
    return [time.perf_counter() - started]


async def statuses(http: httpx.AsyncClient, org: str) -> dict[str, str]:
    listing = (await http.get(f"/orgs/{org}/documents")).json()["documents"]
    return {d["path"]: d["status"] for d in listing}


async def fairness_phase(url: str, secret: str, args: argparse.Namespace) -> tuple[float, float, str]:
    """(idle p50, p50 during org A's ingest, note) for org B on one server."""
    from librarian.auth import mint_token

    stamp = int(time.time())
    org_a, org_b = f"fairA{stamp}", f"fairB{stamp}"
    tok_a, tok_b = mint_token(secret, "alice", org_a), mint_token(secret, "bob", org_b)
    await server_ingest(url, tok_b, org_b, documents(len(SOURCES)))
    await org_b_latencies(url, tok_b, 2)  # warm-up: model loads are not the metric
    idle = await org_b_latencies(url, tok_b, args.fair_chats)
    print(f"  org B idle: {[round(x, 2) for x in idle]}", flush=True)
    async with httpx.AsyncClient(
        base_url=url, timeout=300, headers={"Authorization": f"Bearer {tok_a}"}
    ) as http:
        for n in range(args.large_docs):
            response = await http.post(
                f"/orgs/{org_a}/documents",
                files={"file": (f"large-{n}.md", large_document(args.large_chunks, n))},
            )
            assert response.status_code == 202, response.text
        deadline = time.monotonic() + 300
        while "running" not in (await statuses(http, org_a)).values():
            assert time.monotonic() < deadline, "org A's ingest never started"
            await asyncio.sleep(0.2)
        during = await org_b_latencies(url, tok_b, args.fair_chats)
        states = await statuses(http, org_a)
    print(f"  org B during org A's ingest: {[round(x, 2) for x in during]}", flush=True)
    busy = sum(s in ("running", "queued") for s in states.values())
    note = f"org A still ingesting {busy}/{len(states)} documents when org B's last answer came"
    return statistics.median(idle), statistics.median(during), note


def fairness_main(args: argparse.Namespace) -> int:
    from tests.devserver import DevServer, server_env

    configs = [("worker (default)", {})]
    if args.compare_inline:
        configs.append(("inline (LIBRARIAN_INGEST_OFFLOAD=false)", {"LIBRARIAN_INGEST_OFFLOAD": "false"}))
    results = []
    for label, extra in configs:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "server"
            work.mkdir()
            secret = secrets.token_urlsafe(48)
            server = DevServer(work, server_env(Path(tmp) / "data", secret, extra), jobs=args.jobs).start()
            print(f"{label}: server up in {server.startup_s:.1f}s", flush=True)
            try:
                idle, during, note = asyncio.run(fairness_phase(server.url, secret, args))
            finally:
                server.stop()
        results.append((label, idle, during, note))
    print(
        f"fairness: org B {args.fair_chats} sequential agent turns idle, then during org A's ingest of "
        f"{args.large_docs} x ~{args.large_chunks} chunks ({args.jobs} jobs)"
    )
    for label, idle, during, note in results:
        verdict = "ok" if during / idle <= 2.0 else "over the 2x goal"
        print(
            f"  {label}: p50 idle {idle:.2f}s, during ingest {during:.2f}s, "
            f"ratio {during / idle:.2f} ({verdict}); {note}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
