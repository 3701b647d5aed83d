"""One real `langgraph dev` for the browser tests, and Debian's chromium driven by Playwright.

Playwright comes from PyPI; its own browser download (`playwright install`) cannot work here, so the
tests launch the system's chromium (`apt-get install -y chromium`, which `.ci/run` does). Where no
chromium is installed the browser tests skip and say so; the HTTP tests of the same module still run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.server_fixtures import DevServer, running_server

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def chromium_path() -> str | None:
    for candidate in (os.environ.get("LIBRARIAN_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("web"), jobs=2) as dev:
        yield dev


@pytest.fixture(scope="package")
def http(server: DevServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium to drive: install Debian's `chromium` (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the `playwright` package is not installed")
    # A shared 2-core machine: the first page render also starts the renderer process (about 3 s).
    sync_api.expect.set_options(timeout=30_000)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()
