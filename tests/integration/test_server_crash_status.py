"""Document statuses survive a kill -9 of the server on the embedded default (issue 24, finding 5).

`langgraph dev`'s in-memory runtime keeps threads, runs and (without a configured checkpointer)
checkpoints in pickles that a background thread saves every 10 s; and from the first state read on,
its checkpoints were not saved at all (`docs/deployment.md`, "After a crash"). So after a kill -9,
documents indexed before it read `not_ingested` (or ran again) though their vectors were searchable.

`langgraph.json` now configures `server_checkpointer` (SQLite in the data directory when
`LIBRARIAN_POSTGRES_URL` is unset): every checkpoint is committed as it is written. The server's
thread and run records (now saved every second) may still lose their last second, so
`ServerRuns.state` reads a thread the server does not know straight from the checkpointer, and
calls a half-written ingest whose run the server does not know `failed` with error `interrupted`:
no run will ever finish it, upload again.

The server tests kill the whole process group mid-ingest and restart on the same working and data
directories, once with the records as the server saved them and once with its records file deleted
(every thread and run record lost: the worst a crash can do to them).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    server_env,
    token,
    upload,
    wait_for_status,
)

ORG = "crashco"
MEMBER = token("mia", ORG)
FIRST = {
    "alpha.md": b"# Alpha\n\nThe alpha pump is primed before the morning shift.\n\n"
    + b"## Alpha checks\n\n"
    + b"Check the alpha seals every week. " * 30,
    "beta.md": b"# Beta\n\nThe beta valve stays closed during the night.\n",
}
LONG_PARTS = 300
FINAL = ("indexed", "skipped", "failed", "deleted", "cancelled", "not_ingested")


def long_document(parts: int) -> bytes:
    """About one chunk per part, embedded two at a time: an ingest that runs for many seconds."""
    return "\n\n".join(
        f"# Part {i}\n\n" + f"The crane {i} procedure is done step by step with care. " * 16
        for i in range(parts)
    ).encode()


def view(status: dict[str, Any]) -> tuple[Any, ...]:
    return status.get("status"), status.get("chunkCount"), status.get("contentHash")


def read(http: httpx.Client, path: str) -> dict[str, Any]:
    response = http.get(f"/orgs/{ORG}/documents/{path}", headers=bearer(MEMBER))
    assert response.status_code == 200, response.text
    return response.json()


def wait_for_records_saved(workdir: Path, since: float, deadline_s: float = 30.0) -> None:
    """Until the dev server has saved its thread and run records (a pickle) after `since`."""
    records = workdir / ".langgraph_api" / ".langgraph_ops.pckl"
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if records.exists() and records.stat().st_mtime > since:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the server did not save {records} within {deadline_s}s")


def index_ids(data_dir: Path, path: str) -> set[str]:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    stack = Stack(load_settings(data_dir=data_dir))
    return {i for i in stack.index.list_ids(namespace=ORG) if i.startswith(f"{path}:")}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("records", ["as saved", "lost"])
def test_statuses_survive_a_server_kill_during_an_ingest(tmp_path, records):
    workdir, data = tmp_path / "server", tmp_path / "data"
    workdir.mkdir()
    server = DevServer(workdir, server_env(data, {"LIBRARIAN_UPSERT_BATCH_SIZE": "2"})).start()
    try:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            paths = []
            for name, body in FIRST.items():
                response = upload(http, ORG, MEMBER, name, body)
                assert response.status_code == 202, response.text
                paths.append(response.json()["path"])
            before = {path: view(wait_for_status(http, ORG, MEMBER, path)) for path in paths}
            assert all(v[0] == "indexed" and v[1] >= 1 and v[2] for v in before.values()), before
            if records == "as saved":  # a run finished since the last save would run again
                wait_for_records_saved(workdir, since=time.time())
            response = upload(http, ORG, MEMBER, "crane.md", long_document(LONG_PARTS))
            assert response.status_code == 202, response.text
            third = response.json()["path"]
            running = wait_for_status(http, ORG, MEMBER, third, done=("running",), deadline_s=120)
            assert running["chunkCount"] < LONG_PARTS, "the ingest must still be running at the kill"
        server.kill()
        if records == "lost":
            (workdir / ".langgraph_api" / ".langgraph_ops.pckl").unlink(missing_ok=True)
        server.restart()
        with httpx.Client(base_url=server.url, timeout=120) as http:
            assert {path: view(read(http, path)) for path in before} == before
            listed = http.get(f"/orgs/{ORG}/documents", headers=bearer(MEMBER)).json()["documents"]
            assert {d["path"]: view(d) for d in listed if d["path"] in before} == before
            later = wait_for_status(http, ORG, MEMBER, third, done=FINAL, deadline_s=600)
            if later["status"] != "indexed":  # the crash came before the server saved the run
                assert (later["status"], later.get("error")) in {
                    ("failed", "interrupted"),
                    ("not_ingested", None),
                }, later
                response = upload(http, ORG, MEMBER, "crane.md", long_document(LONG_PARTS))
                assert response.status_code == 202, response.text
                later = wait_for_status(http, ORG, MEMBER, third, done=FINAL, deadline_s=600)
            assert later["status"] == "indexed", later
            assert later["chunkCount"] >= LONG_PARTS
            assert {path: view(read(http, path)) for path in before} == before
        assert index_ids(data, third) == {f"{third}:{n}" for n in range(later["chunkCount"])}
    finally:
        server.stop()


# --- the pieces, without a server ----------------------------------------------------------------------


def _not_found() -> Exception:
    from langgraph_sdk.errors import NotFoundError

    request = httpx.Request("GET", "http://server/threads")
    return NotFoundError("not found", response=httpx.Response(404, request=request), body=None)


class FakeServer:
    """The in-process SDK client's few calls `ServerRuns.state` makes."""

    def __init__(self, state: dict[str, Any] | None, runs: list[dict[str, Any]]) -> None:
        self.state, self.run_list = state, runs
        self.threads = SimpleNamespace(get_state=self._get_state, get=self._get_thread)
        self.runs = SimpleNamespace(list=self._list, get=self._get)

    async def _get_state(self, thread: str) -> dict[str, Any]:
        if self.state is None:
            raise _not_found()
        return self.state

    async def _get_thread(self, thread: str) -> dict[str, Any]:
        if self.state is None:
            raise _not_found()
        return {"thread_id": thread, "metadata": {"kind": "document"}}

    async def _list(self, thread: str, limit: int = 10) -> list[dict[str, Any]]:
        if self.state is None:
            raise _not_found()
        return self.run_list

    async def _get(self, thread: str, run_id: str) -> dict[str, Any]:
        for run in self.run_list:
            if run["run_id"] == run_id:
                return run
        raise _not_found()


def _pending(run_id: str) -> dict[str, Any]:
    values = {"path": "docs/x.md", "status": "running", "contentHash": "abc", "indexedCount": 4}
    task = {"id": "t1", "name": "upsert_batch", "error": None, "interrupts": []}
    return {"values": values, "next": ["upsert_batch"], "tasks": [task], "metadata": {"run_id": run_id}}


async def _status(client: Any) -> Any:
    from services.document_runs import ServerRuns
    from services.document_status import document_status

    snapshot, runs = await ServerRuns(client).state(ORG, "docs/x.md")
    return document_status("docs/x.md", snapshot, runs)


async def test_a_half_written_ingest_whose_run_the_server_lost_reads_failed_interrupted():
    """The thread is known (an earlier ingest), but the run that wrote its last checkpoint is not."""
    status = await _status(FakeServer(_pending("lost"), [{"run_id": "earlier", "status": "success"}]))
    assert (status.status, status.error, status.chunkCount) == ("failed", "interrupted", 0)
    assert "upload the file again" in status.reason


async def test_a_half_written_ingest_whose_run_the_server_knows_is_not_interrupted():
    running = await _status(FakeServer(_pending("r1"), [{"run_id": "r1", "status": "running"}]))
    assert (running.status, running.error) == ("running", None)
    # Read just before its run ended: the run is known, so the next read tells; never "interrupted".
    ended = await _status(FakeServer(_pending("r1"), [{"run_id": "r1", "status": "success"}]))
    assert (ended.status, ended.error) == ("running", None)


def _ingest_graph(settings, saver):
    from graphs.ingest import build_ingest_graph
    from librarian.stack import Stack

    stack = Stack(settings)
    return build_ingest_graph(lambda: stack, saver)


async def _saver_with(settings, thread: str, run_input: dict[str, Any], **stream: Any):
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    graph = _ingest_graph(settings, saver)
    config = {"configurable": {"thread_id": thread}}
    await graph.ainvoke(run_input, config, context={"organization_id": ORG}, **stream)
    return saver


async def test_a_thread_the_server_lost_is_read_from_the_checkpointer(settings, monkeypatch):
    from librarian.runs.threads import server_thread_id

    thread = server_thread_id(ORG, "docs/x.md")
    saver = await _saver_with(settings, thread, {"path": "docs/x.md", "cleanup": "deleted"})

    async def server_saver():
        return saver

    monkeypatch.setattr("librarian.checkpoint.server_saver", server_saver)
    status = await _status(FakeServer(None, []))
    assert (status.status, status.error) == ("deleted", "deleted")


async def test_a_started_ingest_the_server_lost_reads_failed_interrupted(settings, monkeypatch):
    from librarian.runs.threads import server_thread_id

    thread = server_thread_id(ORG, "docs/x.md")
    saver = await _saver_with(settings, thread, {"path": "docs/x.md"}, interrupt_before=["load_file"])

    async def server_saver():
        return saver

    monkeypatch.setattr("librarian.checkpoint.server_saver", server_saver)
    status = await _status(FakeServer(None, []))
    assert (status.status, status.error) == ("failed", "interrupted")


async def test_no_checkpoint_and_no_record_reads_not_ingested(settings, monkeypatch):
    from langgraph.checkpoint.memory import InMemorySaver

    async def server_saver():
        return InMemorySaver()

    monkeypatch.setattr("librarian.checkpoint.server_saver", server_saver)
    assert (await _status(FakeServer(None, []))).status == "not_ingested"


async def test_server_checkpointer_without_a_postgres_url_is_sqlite_in_the_data_dir(settings, monkeypatch):
    from librarian.checkpoint import server_checkpointer

    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(settings.data_dir))
    async with server_checkpointer() as saver:
        assert type(saver).__name__ == "AsyncSqliteSaver"
    assert settings.sqlite_path.is_file()


def test_both_configs_serve_the_durable_checkpointer():
    import json

    from tests.devserver import REPO_DIR

    for name in ("langgraph.json", "langgraph.postgres.json"):
        config = json.loads((REPO_DIR / name).read_text())
        assert config["checkpointer"] == {"path": "./librarian/checkpoint.py:server_checkpointer"}, name
