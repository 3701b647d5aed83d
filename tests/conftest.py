"""Shared fixtures: paths to the shared example data and isolated settings per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["tests.wire.fixtures"]

REPO_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("LIBRARIAN_SHARED_DIR", REPO_DIR.parent / "shared")).resolve()
DOCS_DIR = SHARED_DIR / "data" / "docs"
POSTGRES_URL = os.environ.get("LIBRARIAN_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def docs_dir() -> Path:
    if not DOCS_DIR.is_dir():
        pytest.skip(f"example documents not found at {DOCS_DIR} (set LIBRARIAN_SHARED_DIR)")
    return DOCS_DIR


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """Embedded-default settings rooted in a temporary data directory."""
    from librarian.settings import load_settings

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name not in {
            "LIBRARIAN_SHARED_DIR",
            "LIBRARIAN_TEST_POSTGRES_URL",
        }:
            monkeypatch.delenv(name, raising=False)
    return load_settings(data_dir=tmp_path / "data")


def require_postgres() -> None:
    """Skip a PostgreSQL test when the server is unreachable on a developer machine; fail it under CI.

    CI runners set `CI` (and `.ci/run` exports `CI=true`), where a missing server is a broken setup that
    must not pass as a green run with the durability tests skipped.
    """
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.OperationalError as error:
        message = f"PostgreSQL is not reachable at {POSTGRES_URL}: {error}"
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"{message} (CI is set: PostgreSQL tests must run)", pytrace=False)
        pytest.skip(message)
