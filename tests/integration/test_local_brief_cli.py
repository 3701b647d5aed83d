"""`librarian ask --mode local` answers briefly; `--details` adds what the answer stands on.

The hand-made graph of `tests.graph_vectors` (Scrooge, the Cratchits) through the real SQLite store
and MiniLM; the CLI runs in this process on that data directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from librarian.answers.local_brief import BRIEF_MAX_SENTENCES
from librarian.settings import Settings, get_settings
from librarian.stack import Stack
from librarian_cli import main
from tests.graph_vectors import build_marked_graph

ORG = "org-a"
QUESTION = "Who employs Bob Cratchit?"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(tmp_path_factory.mktemp("brief-cli")) / "data"
    stack = Stack(Settings(data_dir=root))
    build_marked_graph(stack, ORG, "[A]")
    stack.files.write(ORG, "docs/carol.md", b"Scrooge employs Bob Cratchit.")  # the CLI wants a document
    return root


def ask(data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *flags: str) -> dict:
    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(data_dir))
    get_settings.cache_clear()
    capsys.readouterr()
    assert main(["ask", QUESTION, "--org", ORG, "--mode", "local", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_local_answer_is_brief_and_details_come_on_request(data_dir, monkeypatch, capsys) -> None:
    plain = ask(data_dir, monkeypatch, capsys)
    assert "details" not in plain
    bullets = [line for line in plain["answer"].splitlines() if line.startswith('- "')]
    assert 1 <= len(bullets) <= BRIEF_MAX_SENTENCES, plain["answer"]
    assert plain["verification"] and all(r["supported"] for r in plain["verification"] if r["markers"])

    detailed = ask(data_dir, monkeypatch, capsys, "--details")
    details = detailed["details"]
    assert details["evidence"] and details["matchedEntities"]
    assert any("cratchit" in e["name"].lower() for e in details["matchedEntities"])
    assert detailed["answer"] == plain["answer"]  # the details add to the answer, never change it
