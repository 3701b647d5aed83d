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
