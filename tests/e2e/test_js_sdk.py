"""The stock Agent Chat UI's client code path: the official JS SDK with `apiUrl` + `apiKey`.

`tests/js/agent_chat_ui.mjs` configures `@langchain/langgraph-sdk` exactly as Agent Chat UI does (the
token travels as `X-Api-Key`), streams a run of the `agent` assistant and prints the final state. The
answer's text itself must carry readable citations (file and page), for UIs that ignore `sources`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.pdf import AURORA_QUESTION, aurora_pdf
from tests.integration.server_fixtures import DevServer, token, upload, wait_for_status

JS_DIR = Path(__file__).resolve().parents[1] / "js"
ORG = "initech"  # its own organization: the browser tests' uploads cannot disturb this one


@pytest.fixture(scope="module")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (`node` not on PATH): the JS SDK test needs it")
    if not (JS_DIR / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: install npm to fetch tests/js's locked packages"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"npm ci in tests/js failed:\n{done.stdout}\n{done.stderr}"
    return node


def test_agent_chat_ui_client_streams_an_answer_with_readable_citations(
    node: str, server: DevServer, http: httpx.Client
) -> None:
    tok = token("carol", ORG)
    response = upload(http, ORG, tok, "aurora.pdf", aurora_pdf(), "application/pdf")
    assert response.status_code == 202, response.text
    assert wait_for_status(http, ORG, tok, response.json()["path"], deadline_s=120)["status"] == "indexed"

    env = {**os.environ, "LIBRARIAN_URL": server.url, "LIBRARIAN_TOKEN": tok}
    env["LIBRARIAN_QUESTION"] = AURORA_QUESTION
    done = subprocess.run(
        [node, "agent_chat_ui.mjs"], cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"the JS SDK client failed:\n{done.stderr}\n{done.stdout}"
    result = json.loads(done.stdout.strip().splitlines()[-1])

    assert result["chunkEvents"] >= 1  # the answer arrived as streamed message events
    assert result["lastType"] == "ai"
    answer = result["answer"]
    assert "ninety nights" in answer
    # Readable citations in the text itself: the marker, the file and the page.
    assert re.search(r"\[1\]", answer), answer
    assert re.search(r"aurora\.pdf\W{0,3}\s*(?:p\.|page)\s*2\b", answer), answer
    assert result["sources"][0] == {"filename": "aurora.pdf", "page": 2}
    # What Agent Chat UI shows next: the thread in its list, with its history.
    assert result["threadId"] in result["listedThreads"]
    assert result["historyLength"] >= 1

    # A colleague (a reader) with the same client: carol's conversation is neither listed nor opened.
    env.update(LIBRARIAN_TOKEN=token("dave", ORG, role="reader"), LIBRARIAN_FOREIGN_THREAD=result["threadId"])
    done = subprocess.run(
        [node, "agent_chat_ui.mjs"], cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"the JS SDK client failed:\n{done.stderr}\n{done.stdout}"
    colleague = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["threadId"] not in colleague["listedThreads"]
    assert colleague["listedThreads"] == [colleague["threadId"]]
    assert colleague["foreign"] == {"get": False, "state": False, "history": False}
