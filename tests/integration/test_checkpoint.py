"""Checkpointer factories: a real graph run is durable across saver instances, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import operator
import threading
import uuid
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from librarian.checkpoint import (
    async_checkpointer,
    server_checkpointer,
    sync_checkpointer,
)
from librarian.errors import ConfigError
from tests.conftest import POSTGRES_URL, require_postgres


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def build_graph(checkpointer):
    """Two nodes so the thread gets several checkpoints; the reducer shows state was read back."""
    builder = StateGraph(State)
    builder.add_node("first", lambda state: {"items": ["first"]})
    builder.add_node("second", lambda state: {"items": ["second"]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=checkpointer)


def thread(name: str) -> dict:
    return {"configurable": {"thread_id": f"test-{name}-{uuid.uuid4()}"}}


@pytest.fixture
def pg_settings(settings):
    """Settings pointing at the test PostgreSQL; skipped, visibly, if unreachable (failed under CI)."""
    require_postgres()
    return settings.model_copy(update={"postgres_url": POSTGRES_URL})


# --- SQLite (default)


def test_sqlite_is_the_default_and_is_durable(settings):
    assert settings.postgres_url is None
    config = thread("sqlite")
    with sync_checkpointer(settings) as saver:
        assert type(saver).__name__ == "SqliteSaver"
        result = build_graph(saver).invoke({"items": ["input"]}, config)
        assert result["items"] == ["input", "first", "second"]
    assert settings.sqlite_path.is_file()  # parent directory was created
    with sync_checkpointer(settings) as reopened:
        state = build_graph(reopened).get_state(config)
        assert state.values["items"] == ["input", "first", "second"]
        assert state.next == ()
        # A second run on the thread continues from the stored state (reducer appends).
        again = build_graph(reopened).invoke({"items": ["more"]}, config)
        assert again["items"] == ["input", "first", "second", "more", "first", "second"]


def test_sqlite_uses_a_write_ahead_log(settings):
    """A full sync on every commit made checkpoints most of a small file's ingest overhead."""
    with sync_checkpointer(settings) as saver:
        assert saver.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert saver.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_sqlite_saver_is_usable_from_several_threads(settings):
    configs = [thread(f"sqlite-mt-{i}") for i in range(6)]
    errors: list[BaseException] = []
    with sync_checkpointer(settings) as saver:
        graph = build_graph(saver)

        def run(config):
            try:
                for _ in range(3):
                    graph.invoke({"items": ["x"]}, config)
            except BaseException as error:
                errors.append(error)

        workers = [threading.Thread(target=run, args=(c,)) for c in configs]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
    assert not errors
    with sync_checkpointer(settings) as reopened:
        graph = build_graph(reopened)
        for config in configs:
            assert graph.get_state(config).values["items"] == ["x", "first", "second"] * 3


async def test_async_sqlite_is_durable(settings):
    config = thread("async-sqlite")
    async with async_checkpointer(settings) as saver:
        assert type(saver).__name__ == "AsyncSqliteSaver"
        result = await build_graph(saver).ainvoke({"items": ["input"]}, config)
        assert result["items"] == ["input", "first", "second"]
    async with async_checkpointer(settings) as reopened:
        state = await build_graph(reopened).aget_state(config)
        assert state.values["items"] == ["input", "first", "second"]
    # Both flavours share one file, so the sync saver sees the async run too.
    with sync_checkpointer(settings) as sync_saver:
        assert build_graph(sync_saver).get_state(config).values["items"] == ["input", "first", "second"]


# --- PostgreSQL


@pytest.mark.postgres
def test_postgres_sync_is_durable(pg_settings):
    config = thread("pg-sync")
    with sync_checkpointer(pg_settings) as saver:
        assert type(saver).__name__ == "PostgresSaver"
        result = build_graph(saver).invoke({"items": ["input"]}, config)
        assert result["items"] == ["input", "first", "second"]
    with sync_checkpointer(pg_settings) as reopened:
        state = build_graph(reopened).get_state(config)
        assert state.values["items"] == ["input", "first", "second"]
        history = list(build_graph(reopened).get_state_history(config))
        assert len(history) >= 3  # input, first, second: every step was checkpointed


@pytest.mark.postgres
def test_postgres_sync_saver_is_usable_from_several_threads(pg_settings):
    configs = [thread(f"pg-mt-{i}") for i in range(4)]
    errors: list[BaseException] = []
    with sync_checkpointer(pg_settings) as saver:
        graph = build_graph(saver)

        def run(config):
            try:
                graph.invoke({"items": ["x"]}, config)
            except BaseException as error:
                errors.append(error)

        workers = [threading.Thread(target=run, args=(c,)) for c in configs]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert not errors
        for config in configs:
            assert graph.get_state(config).values["items"] == ["x", "first", "second"]


@pytest.mark.postgres
async def test_postgres_async_is_durable_and_shared_with_sync(pg_settings):
    config = thread("pg-async")
    async with async_checkpointer(pg_settings) as saver:
        assert type(saver).__name__ == "AsyncPostgresSaver"
        result = await build_graph(saver).ainvoke({"items": ["input"]}, config)
        assert result["items"] == ["input", "first", "second"]
    async with async_checkpointer(pg_settings) as reopened:
        state = await build_graph(reopened).aget_state(config)
        assert state.values["items"] == ["input", "first", "second"]
    with sync_checkpointer(pg_settings) as sync_saver:
        assert build_graph(sync_saver).get_state(config).values["items"] == ["input", "first", "second"]


@pytest.fixture
def fresh_schema_settings(pg_settings):
    """Settings whose connections see an empty schema, so migrations really run from scratch."""
    import psycopg

    schema = f"librarian_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    yield pg_settings.model_copy(update={"postgres_url": url})
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.mark.postgres
async def test_concurrent_setup_on_a_fresh_database_is_serialised(fresh_schema_settings):
    """Server workers, the CLI and tests all run migrations at start-up; none may fail."""

    async def open_and_use(i: int) -> list[str]:
        config = thread(f"pg-setup-{i}")
        async with async_checkpointer(fresh_schema_settings) as saver:
            result = await build_graph(saver).ainvoke({"items": [str(i)]}, config)
            return result["items"]

    def open_sync() -> None:
        with sync_checkpointer(fresh_schema_settings):
            pass

    outcomes = await asyncio.gather(
        *(open_and_use(i) for i in range(4)),
        *(asyncio.to_thread(open_sync) for _ in range(2)),
        return_exceptions=True,
    )
    assert outcomes[:4] == [[str(i), "first", "second"] for i in range(4)]
    assert outcomes[4:] == [None, None]


@pytest.mark.postgres
async def test_server_checkpointer_reads_the_postgres_url(pg_settings, monkeypatch):
    monkeypatch.setenv("LIBRARIAN_POSTGRES_URL", POSTGRES_URL)
    config = thread("pg-server")
    async with server_checkpointer() as saver:
        assert type(saver).__name__ == "AsyncPostgresSaver"
        await build_graph(saver).ainvoke({"items": ["input"]}, config)
    async with async_checkpointer(pg_settings) as reopened:
        state = await build_graph(reopened).aget_state(config)
        assert state.values["items"] == ["input", "first", "second"]


def test_unreachable_postgres_is_a_config_error_without_the_password(settings, monkeypatch):
    monkeypatch.setattr("librarian.checkpoint._CONNECT_TIMEOUT_S", 1.0)
    # Port 1 on loopback refuses connections immediately.
    url = "postgresql://someone:hunter2@127.0.0.1:1/nowhere?connect_timeout=1"
    unreachable = settings.model_copy(update={"postgres_url": url})
    with (
        pytest.raises(ConfigError, match=r"someone@127\.0\.0\.1:1/nowhere") as info,
        sync_checkpointer(unreachable),
    ):
        pass
    assert "hunter2" not in str(info.value)


def test_malformed_postgres_url_is_a_config_error(settings):
    malformed = settings.model_copy(update={"postgres_url": "host=foo =bar"})
    with pytest.raises(ConfigError, match="not a valid PostgreSQL"), sync_checkpointer(malformed):
        pass
