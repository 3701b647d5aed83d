"""Uploads, deletes and cancels of one path racing each other: on a real `langgraph dev` server, and
interleaved at random over `DocumentOps` and `ServerRuns` with a stand-in for the server.

Server: two members and an admin send 100 mixed requests for `conc.md` at once. Every answer must be a 2xx
or a clear refusal (404 for a document already deleted, 409 for a cancel with nothing to cancel),
never a 500, and the document must end as the last successful operation left it. "Last" is read off
the document's thread: every successful operation enqueues one run there (the upload its ingest, a
delete or a cancel its follow-up), and the operations of one path take their turns, so the newest
run on the thread is the last operation's.

Service: `FakePlatform` answers the SDK calls `ServerRuns` makes as the server does (a cancel of a
run that has just ended is a 404, a thread's runs execute one at a time in order), and every call
yields to the event loop, so runs start and end between the steps of the operations. Hypothesis
chooses the operations, when each starts and how long each run lasts.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.server_fixtures import DevServer, bearer, running_server, token, upload

ORG = "racers"
NAME, PATH = "conc.md", "docs/conc.md"
MEMBERS = [token("mia", ORG), token("moe", ORG)]
ADMIN = token("ada", ORG, role="admin")
REQUESTS = 100
WORKERS = 20
SEED = 24
# what each operation may answer: success, or a clear refusal of a race it lost
ALLOWED = {"upload": {202}, "delete": {200, 404}, "cancel": {202, 404, 409}}
FINAL = {"upload": "indexed", "delete": "deleted", "cancel": "cancelled"}


@dataclass
class Outcome:
    op: str
    status: int
    body: dict[str, Any]
    content_hash: str | None = None


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    # no graph builds: they are not what races here, and they would only slow the ingests down
    env = {"LIBRARIAN_GRAPH_AUTO_BUILD": "false"}
    with running_server(tmp_path_factory.mktemp("races"), env) as srv:
        yield srv


def content(i: int) -> bytes:
    return (
        f"# Concurrency notes {i}\n\nRevision {i} of the notes. The racing marker is RACE-{i}-MARK and "
        f"the notes describe revision {i} only.\n\n## Details\n\nRevision {i} changes the deploy steps.\n"
    ).encode()


def plan(seed: int) -> list[tuple[str, str, int]]:
    """(operation, token, index) for each request: half uploads, the rest deletes and cancels."""
    rng = random.Random(seed)
    ops = []
    for i in range(REQUESTS):
        op = rng.choices(["upload", "delete", "cancel"], weights=[5, 3, 2])[0]
        who = ADMIN if op == "cancel" else rng.choice([*MEMBERS, ADMIN])
        ops.append((op, who, i))
    return ops


def send(url: str, op: str, tok: str, i: int) -> Outcome:
    with httpx.Client(base_url=url, timeout=120) as http:
        if op == "upload":
            data = content(i)
            response = upload(http, ORG, tok, NAME, data)
            digest: str | None = hashlib.sha256(data).hexdigest()
        elif op == "delete":
            response = http.delete(f"/orgs/{ORG}/documents/{PATH}", headers=bearer(tok))
            digest = None
        else:
            response = http.post(f"/orgs/{ORG}/documents/{PATH}/cancel", headers=bearer(tok))
            digest = None
    try:
        body = response.json()
    except ValueError:
        body = {"raw": response.text[:200]}
    return Outcome(op, response.status_code, body, digest)


def thread_runs(http: httpx.Client, thread: str) -> list[dict[str, Any]]:
    response = http.get(f"/threads/{thread}/runs", params={"limit": 1000}, headers=bearer(ADMIN))
    assert response.status_code == 200, response.text
    return response.json()


def job_of(run: dict[str, Any]) -> str | None:
    return (run.get("metadata") or {}).get("job_id")


def settle(http: httpx.Client, thread: str, deadline_s: float = 300) -> list[dict[str, Any]]:
    """Wait until no run of the thread is queued or running; its runs, newest first."""
    deadline = time.monotonic() + deadline_s
    while True:
        runs = thread_runs(http, thread)
        if not any(r["status"] in ("pending", "running") for r in runs):
            return runs
        assert time.monotonic() < deadline, f"runs still active: {Counter(r['status'] for r in runs)}"
        time.sleep(0.5)


def read_meanwhile(url: str, stop: threading.Event) -> Counter[int]:
    """A member reading the document and the listing while the writes race: answers by status code."""
    answers: Counter[int] = Counter()
    with httpx.Client(base_url=url, timeout=120) as http:
        while not stop.is_set():
            for route in (f"/orgs/{ORG}/documents/{PATH}", f"/orgs/{ORG}/documents"):
                answers[http.get(route, headers=bearer(MEMBERS[1])).status_code] += 1
    return answers


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_racing_uploads_deletes_and_cancels_of_one_path_never_answer_500(server):
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=WORKERS + 1) as pool:
        reader = pool.submit(read_meanwhile, server.url, stop)
        futures = [pool.submit(send, server.url, op, tok, i) for op, tok, i in plan(SEED)]
        outcomes = [f.result() for f in futures]
        stop.set()
        reads = reader.result()

    tally = Counter((o.op, o.status) for o in outcomes)
    print(f"write races: {REQUESTS} requests, answers {dict(sorted(tally.items()))}")
    print(f"reads meanwhile: {dict(reads)}")
    errors = [o for o in outcomes if o.status >= 500]
    assert not errors, f"{len(errors)} of {REQUESTS} answered 5xx: {errors[:3]}\n{server.log_tail(60)}"
    assert set(reads) <= {200, 404}, reads  # 404: read before the first upload, or after a delete
    assert "unhandled error" not in server.log()
    unexpected = [o for o in outcomes if o.status not in ALLOWED[o.op]]
    assert not unexpected, unexpected[:5]
    assert all("error" in o.body for o in outcomes if o.status >= 400)  # clear refusals, one shape

    succeeded = {o.body["run_id"]: o for o in outcomes if o.status < 300}
    thread = next(iter(succeeded.values())).body["thread_id"]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        runs = settle(http, thread)
        # Every run on the thread is a successful operation's. An operation answers with its run's id,
        # or, when its run had to wait for admission (services/run_admission.py), with the waiting
        # job's id, which the run carries in its metadata once admitted (a newer operation's job may
        # replace one still waiting: that one never runs, which the newest run never is).
        ops = [succeeded.get(r["run_id"]) or succeeded.get(job_of(r)) for r in runs]
        assert all(ops) and len(ops) == len({id(o) for o in ops}), runs
        last = ops[0]
        assert last is not None
        final = http.get(f"/orgs/{ORG}/documents/{PATH}", headers=bearer(MEMBERS[0]))
        assert final.status_code == 200, final.text
        status = final.json()
    print(f"last successful operation: {last.op}; final status: {status['status']}")
    assert status["status"] == FINAL[last.op], (last, status)
    stored = server.workdir.parent / "data" / "files" / "orgs" / ORG / PATH
    assert stored.is_file() == (last.op != "delete")  # a cancel keeps the file, a delete does not
    if last.op == "upload":
        assert status["contentHash"] == last.content_hash and status["chunkCount"] >= 1


# --- the same races at the service level, interleaved by hypothesis ----------------------------------


class FakeFiles:
    def __init__(self) -> None:
        self.data: dict[tuple[str, str], bytes] = {}

    def write(self, org: str, path: str, data: bytes) -> None:
        self.data[(org, path)] = data

    def stat(self, org: str, path: str) -> Any:
        data = self.data.get((org, path))
        return None if data is None else SimpleNamespace(size=len(data))

    def exists(self, org: str, path: str) -> bool:
        return (org, path) in self.data

    def delete(self, org: str, path: str) -> None:
        self.data.pop((org, path), None)

    def list(self, org: str) -> list[Any]:
        return [SimpleNamespace(path=p) for (o, p) in self.data if o == org]


def fake_stack(files: FakeFiles) -> Any:
    settings = SimpleNamespace(max_filename_length=200, max_upload_bytes=1 << 20)
    no_cache = SimpleNamespace(forget=lambda org, path: None)  # page images: none in this test
    return SimpleNamespace(
        settings=settings,
        files=files,
        index=SimpleNamespace(delete=lambda **_: None),
        memo=lambda name, make: no_cache,
    )


def not_found(message: str, *, sdk: bool = True) -> Exception:
    """A 404 as the in-process client raises it: the SDK's `NotFoundError`, or for a cancel with
    `wait` (a streamed request) plain `httpx.HTTPStatusError`."""
    from langgraph_sdk.errors import NotFoundError

    request = httpx.Request("POST", "http://api/")
    response = httpx.Response(404, request=request, json={"detail": message})
    if sdk:
        return NotFoundError(message, response=response, body={"detail": message})
    return httpx.HTTPStatusError(message, request=request, response=response)


class FakePlatform:
    """The server's runs as `ServerRuns` sees them, through `client.runs` and `client.threads`.

    Runs of a thread execute one at a time, oldest first; each lasts a few turns of the event loop
    (`durations`). An ingest ends `indexed` with the hash of the file it read (`failed` without one), a
    follow-up ends with its cleanup status; a cancelled run writes nothing. Every call first yields,
    as a request to the server would.
    """

    def __init__(self, files: FakeFiles, durations: random.Random) -> None:
        self.files = files
        self.durations = durations
        self.values: dict[str, dict[str, Any]] = {}  # thread -> state values
        self.thread_runs: dict[str, list[dict[str, Any]]] = {}  # thread -> runs, oldest first
        self.executing: dict[str, asyncio.Event] = {}  # run id -> set when it stops executing
        self.workers: set[asyncio.Task[None]] = set()
        self.runs = SimpleNamespace(create=self.create, list=self.list, cancel=self.cancel)
        self.threads = SimpleNamespace(update=self.update, get_state=self.get_state, get=self.get)

    def _known(self, thread: str) -> None:
        if thread not in self.thread_runs:
            raise not_found(f"Thread {thread} not found")

    async def create(self, thread: str, graph: str, *, input: dict, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        if thread not in self.thread_runs:
            assert kwargs.get("if_not_exists") == "create"
            self.thread_runs[thread] = []
        run = {"run_id": str(uuid.uuid4()), "status": "pending", "input": input, "graph": graph}
        self.thread_runs[thread].append(run)
        if not any(r["status"] == "running" for r in self.thread_runs[thread]):
            worker = asyncio.create_task(self._work(thread))
            self.workers.add(worker)
            worker.add_done_callback(self.workers.discard)
        return {"run_id": run["run_id"], "thread_id": thread, "status": "pending"}

    async def _work(self, thread: str) -> None:
        while pending := [r for r in self.thread_runs[thread] if r["status"] == "pending"]:
            if any(r["status"] == "running" for r in self.thread_runs[thread]):
                return  # another worker has the thread
            run = pending[0]
            run["status"] = "running"
            stopped = self.executing[run["run_id"]] = asyncio.Event()
            for _ in range(self.durations.randint(0, 8)):
                await asyncio.sleep(0)
            if run["status"] == "running":
                self.values[thread] = self._outcome(run["input"])
                run["status"] = "success"
            stopped.set()

    def _outcome(self, run_input: dict[str, Any]) -> dict[str, Any]:
        if run_input.get("cleanup"):
            return {"status": run_input["cleanup"], "chunkCount": 0}
        data = self.files.data.get((ORG, run_input["path"]))
        if data is None:
            return {"status": "failed", "error": "file_not_found"}
        return {"status": "indexed", "chunkCount": 1, "contentHash": hashlib.sha256(data).hexdigest()}

    async def list(self, thread: str, limit: int = 10, **_: Any) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        self._known(thread)
        return [dict(r) for r in reversed(self.thread_runs[thread])][:limit]

    async def cancel(self, thread: str, run_id: str, *, wait: bool = False, **_: Any) -> None:
        await asyncio.sleep(0)
        self._known(thread)
        run = next((r for r in self.thread_runs[thread] if r["run_id"] == run_id), None)
        if run is None or run["status"] not in ("pending", "running"):
            raise not_found("No matching runs to cancel.", sdk=not wait)
        was_running, run["status"] = run["status"] == "running", "interrupted"
        if wait and was_running:
            await self.executing[run_id].wait()

    async def update(self, thread: str, **_: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        self._known(thread)
        return {"thread_id": thread}

    async def get(self, thread: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        self._known(thread)
        return {"thread_id": thread, "metadata": {}}

    async def get_state(self, thread: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        self._known(thread)
        return {"values": dict(self.values.get(thread, {})), "next": [], "tasks": []}

    async def idle(self) -> None:
        while self.workers:
            await asyncio.gather(*self.workers)


def server_runs(platform: FakePlatform) -> Any:
    """`ServerRuns` over the stand-in, every run admitted at once (`LIBRARIAN_RUN_ADMISSION=false`)."""
    from services.document_runs import ServerRuns
    from services.run_admission import RunAdmission

    class StandInRuns(ServerRuns):
        async def _checkpointed_state(self, thread: str) -> Any:
            return None  # the stand-in has no checkpointer of its own

    admission = RunAdmission(platform, settings=SimpleNamespace(run_admission=False))  # type: ignore[arg-type]
    return StandInRuns(platform, admission=admission)


async def race(ops: list[tuple[str, int]], seed: int) -> None:
    from services.documents import DocumentNotFoundError, DocumentOps, NoActiveIngestError

    files = FakeFiles()
    platform = FakePlatform(files, random.Random(seed))
    docs = DocumentOps(fake_stack(files), server_runs(platform))

    async def one(i: int, op: str, delay: int) -> tuple[str, Any]:
        for _ in range(delay):
            await asyncio.sleep(0)
        if op == "upload":
            return op, await docs.upload_and_ingest(ORG, NAME, content(i), owner="mia")
        if op == "delete":
            return op, (PATH, await docs.delete(ORG, PATH, owner="moe"))
        return op, (PATH, await docs.cancel(ORG, PATH, owner="ada"))

    answers = await asyncio.gather(*(one(i, op, d) for i, (op, d) in enumerate(ops)), return_exceptions=True)
    refused = (DocumentNotFoundError, NoActiveIngestError)
    for (op, _), answer in zip(ops, answers, strict=True):
        if isinstance(answer, BaseException):
            assert isinstance(answer, refused) and op != "upload", repr(answer)
    await platform.idle()
    done = {a[1][1].run_id: (i, a[0]) for i, a in enumerate(answers) if not isinstance(a, BaseException)}
    thread = platform.thread_runs.get(docs.runs.thread_of(ORG, PATH), [])
    assert {r["run_id"] for r in thread} == set(done)  # one run per successful operation, no other
    if not done:
        return
    last_i, last_op = done[thread[-1]["run_id"]]
    status = await docs.status(ORG, PATH)
    assert status.status == FINAL[last_op], (last_op, status)
    if last_op == "upload":
        assert status.contentHash == hashlib.sha256(content(last_i)).hexdigest()
    assert files.exists(ORG, PATH) == (last_op != "delete")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(st.tuples(st.sampled_from(list(FINAL)), st.integers(0, 12)), min_size=1, max_size=24),
    seed=st.integers(0, 2**32 - 1),
)
def test_interleaved_writes_of_one_path_end_as_the_last_one_left_it(ops, seed):
    asyncio.run(race(ops, seed))
