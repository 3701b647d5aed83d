"""The `librarian` command on the embedded stack: what it says, what it exits with, what it loads.

One folder is ingested once per module (organization `cli`); tests that change documents use their
own organization in the same data directory. Latency is checked as behaviour (which modules a
command imports, in a fresh process), never as a timing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from librarian_cli import main
from tests.conftest import REPO_DIR

ORG = "cli"
ALPACA = "# Alpacas\n\nAlpacas graze on the high plains of the Andes and are shorn once a year."
BEES = "Bees make honey from the nectar of flowers and store it in wax combs."
HEAVY = ("langgraph.graph", "langchain_core.tracers", "lancedb", "onnxruntime", "tokenizers", "torch")


def clean_env(data_dir: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("LIBRARIAN_") or k == "LIBRARIAN_SHARED_DIR"
    }
    return {**env, "LIBRARIAN_DATA_DIR": str(data_dir), "COLUMNS": "80", "PYTHONPATH": str(REPO_DIR)}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data directory with organization `cli` ingested: two documents, one empty file."""
    from librarian.settings import get_settings

    root = tmp_path_factory.mktemp("cli")
    folder = root / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "alpacas.md").write_text(ALPACA)
    (folder / "sub" / "bees.txt").write_text(BEES)
    (folder / "empty.txt").write_bytes(b"")
    (folder / ".hidden").write_text("not a document")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
                mp.delenv(name)
        mp.setenv("LIBRARIAN_DATA_DIR", str(root / "data"))
        get_settings.cache_clear()
        assert main(["ingest", str(folder), "--org", ORG, "--quiet"]) == 0
        yield root / "data"
    get_settings.cache_clear()


@pytest.fixture
def cli(data_dir, monkeypatch, capsys):
    """Run `main` in this process against the module's data directory; returns (exit, out, err)."""
    from librarian.settings import get_settings

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(data_dir))
    get_settings.cache_clear()

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run
    get_settings.cache_clear()


def run_fresh(data_dir: Path, *argv: str) -> tuple[int, str, str, list[str]]:
    """Run the CLI in a new interpreter; also return which heavy modules it imported."""
    probe = (
        "import sys, librarian_cli\n"
        "try:\n"
        "    code = librarian_cli.main(sys.argv[1:])\n"
        "except SystemExit as exc:  # argparse's usage errors\n"
        "    code = exc.code\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({HEAVY!r}))\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(data_dir),
        cwd=REPO_DIR,
    )
    err, _, heavy = done.stderr.rpartition("HEAVY=")
    return done.returncode, done.stdout, err, [m for m in heavy.strip().split(",") if m]


# --- ingest, status, delete, reindex ----------------------------------------------------------


def test_status_lists_every_document_once(cli):
    code, out, _ = cli("status", "--org", ORG)
    assert code == 0
    assert out.count("Documents") == 1
    for path in ("docs/alpacas.md", "docs/bees.txt", "docs/empty.txt"):
        assert out.count(path) == 1
    assert ".hidden" not in out
    assert out.count("indexed") == 2 and out.count("skipped") == 1


def test_status_json_is_the_document_service_list(cli, data_dir):
    from librarian.checkpoint import sync_checkpointer
    from librarian.settings import get_settings
    from librarian.stack import Stack
    from services.documents import DocumentService

    code, out, _ = cli("status", "--org", ORG, "--json")
    assert code == 0
    documents = json.loads(out)["documents"]
    settings = get_settings()
    with sync_checkpointer(settings) as checkpointer:
        expected = DocumentService(Stack(settings), checkpointer).list(ORG)
    keys = (
        "path",
        "status",
        "chunkCount",
        "reason",
        "error",
        "contentHash",
        "parser",
        "updatedAt",
        "sizeBytes",
    )
    assert [{k: d[k] for k in keys} for d in documents] == [
        {k: getattr(s, k) for k in keys} for s in expected
    ]
    assert {d["path"]: d["status"] for d in documents} == {
        "docs/alpacas.md": "indexed",
        "docs/bees.txt": "indexed",
        "docs/empty.txt": "skipped",
    }


def test_ingest_reports_problems_and_counts_without_repeating_the_status_table(cli, tmp_path):
    (tmp_path / "ok.md").write_text(ALPACA)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    code, out, _ = cli("ingest", str(tmp_path), "--org", "cli-report", "--quiet")
    assert code == 1  # a failed document
    assert "Documents" not in out and "docs/ok.md" not in out  # only what needs attention
    assert "docs/broken.pdf" in out and "docs/empty.txt" in out
    assert re.search(r"3 files ingested into cli-report: 1 indexed, 1 skipped, 1 failed", out)


def test_same_name_in_two_folders_keeps_the_later_and_says_so(cli, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "notes.md").write_text(ALPACA)
    (tmp_path / "b" / "notes.md").write_text(BEES)
    code, out, err = cli("ingest", str(tmp_path), "--org", "cli-same", "--quiet")
    assert code == 0
    flat = " ".join(err.split())
    assert f"{tmp_path / 'a' / 'notes.md'} is not ingested: {tmp_path / 'b' / 'notes.md'}" in flat
    assert "1 file ingested" in out and "1 replaced by a same-named file" in out
    code, out, _ = cli("ingest", str(tmp_path), "--org", "cli-same", "--json")
    report = json.loads(out)
    assert report["replaced"] == [
        {"file": str(tmp_path / "a" / "notes.md"), "replacedBy": str(tmp_path / "b" / "notes.md")}
    ]
    from librarian.settings import get_settings
    from librarian.stack import get_stack

    assert get_stack(get_settings()).files.read("cli-same", "docs/notes.md") == BEES.encode()


def test_prefix_keeps_same_named_files_of_two_folders_apart(cli, tmp_path):
    for folder, text in (("a", ALPACA), ("b", BEES)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(text)
        code, _, _ = cli("ingest", str(tmp_path / folder), "--org", "cli-prefix", "--prefix", f"{folder}-")
        assert code == 0
    code, out, _ = cli("status", "--org", "cli-prefix", "--json")
    assert [d["path"] for d in json.loads(out)["documents"]] == ["docs/a-notes.md", "docs/b-notes.md"]


def test_delete_then_status_and_delete_again(cli, tmp_path):
    from librarian.checkpoint import sync_checkpointer
    from librarian.settings import get_settings
    from librarian.stack import Stack
    from services.documents import DocumentService

    (tmp_path / "gone.md").write_text(ALPACA)
    (tmp_path / "kept.md").write_text(BEES)
    assert cli("ingest", str(tmp_path), "--org", "cli-del", "--quiet")[0] == 0
    code, out, _ = cli("delete", "gone.md", "--org", "cli-del")
    assert code == 0 and "docs/gone.md: deleted" in out
    # The service's answer for the same path, as the server gives it: `deleted`, not `skipped`.
    settings = get_settings()
    with sync_checkpointer(settings) as checkpointer:
        assert (
            DocumentService(Stack(settings), checkpointer).status("cli-del", "docs/gone.md").status
            == "deleted"
        )
    code, out, _ = cli("status", "--org", "cli-del", "--json")
    assert [d["path"] for d in json.loads(out)["documents"]] == ["docs/kept.md"]
    code, _, err = cli("delete", "docs/gone.md", "--org", "cli-del")
    assert code == 1 and "no such document: docs/gone.md" in err


def test_reindex_re_embeds_every_indexed_document(cli, tmp_path):
    """Vectors overwritten behind the CLI's back come back as the embedder's: reindex embeds again."""
    import numpy as np

    from librarian.settings import get_settings
    from librarian.stack import get_stack

    (tmp_path / "alpacas.md").write_text(ALPACA)
    (tmp_path / "bees.txt").write_text(BEES)
    assert cli("ingest", str(tmp_path), "--org", "cli-re", "--quiet")[0] == 0
    index = get_stack(get_settings()).index
    ids = sorted(index.list_ids(namespace="cli-re"))
    before = index.fetch(ids, namespace="cli-re")
    stale = np.zeros(384)
    stale[0] = 1.0
    index.upsert([{**r, "values": stale.tolist()} for r in before.values()], namespace="cli-re")
    assert all(r["values"][0] == 1.0 for r in index.fetch(ids, namespace="cli-re").values())

    code, out, _ = cli("reindex", "--org", "cli-re")
    assert code == 0 and out.count("indexed") == 2
    after = index.fetch(sorted(index.list_ids(namespace="cli-re")), namespace="cli-re")
    assert sorted(after) == ids
    for rid in ids:
        np.testing.assert_allclose(after[rid]["values"], before[rid]["values"], atol=1e-4)


# --- search and ask ---------------------------------------------------------------------------


def test_search_ranks_the_matching_document_first(cli):
    code, out, _ = cli("search", "where do alpacas graze", "--org", ORG, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["sources"][0]["path"] == "docs/alpacas.md"
    assert result["query"] == "where do alpacas graze"
    code, out, _ = cli("search", "honey from nectar", "--org", ORG, "--top-k", "1")
    assert code == 0 and "Sources" in out and "bees.txt" in out and "alpacas.md" not in out


def test_ask_answers_with_citations_to_the_right_document(cli):
    code, out, _ = cli("ask", "What do bees make honey from?", "--org", ORG, "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["citations"], answer["answer"]
    assert "docs/bees.txt" in {c.get("path") for c in answer["citations"]}
    assert "nectar" in answer["answer"]
    code, out, _ = cli("ask", "What do bees make honey from?", "--org", ORG)
    assert code == 0 and "Citations" in out and "docs/bees.txt" in out


# --- refusals: clear message, exit 1 (2 for bad arguments), nothing heavy loaded ---------------


@pytest.mark.parametrize("command", [["status"], ["search", "alpacas"], ["ask", "what do alpacas eat?"]])
def test_an_organization_without_documents_is_an_error(cli, command):
    code, out, err = cli(*command, "--org", "Cli")  # a typo of `cli`: ids are case-sensitive
    assert code == 1 and out == ""
    assert "organization Cli has no documents" in err


@pytest.mark.parametrize("command", [["search", ""], ["ask", "   "]])
def test_an_empty_query_is_an_error(cli, command):
    code, out, err = cli(*command, "--org", ORG)
    assert code == 2 and out == ""
    assert "the query is empty" in err


def test_deleting_a_document_that_never_existed_is_an_error(data_dir):
    code, out, err, heavy = run_fresh(data_dir, "delete", "docs/missing.pdf", "--org", ORG)
    assert code == 1 and out == ""
    assert "no such document: docs/missing.pdf" in err
    assert heavy == []  # refused before the graphs are built


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "/no/such/folder", "--org", ORG], "no such file or folder: /no/such/folder"),
        (["status", "--org", "../etc"], "organization id must be"),
        (["search", " ", "--org", ORG], "the query is empty"),
        (["delete", "docs/../x", "--org", ORG], "must not contain '/'"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_loaded(data_dir, argv, message):
    code, out, err, heavy = run_fresh(data_dir, *argv)
    assert code == 2 and out == ""  # a usage error, like argparse's
    assert message in " ".join(err.split()) and "Traceback" not in err
    assert heavy == []


def test_usage_errors_exit_2_without_loading_anything(data_dir):
    code, _, err, heavy = run_fresh(data_dir, "search", "x", "--org", ORG, "--top-k", "0")
    assert code == 2 and "must be at least 1" in err
    assert heavy == []


def test_status_loads_no_graph_index_or_model(data_dir):
    code, out, _, heavy = run_fresh(data_dir, "status", "--org", ORG, "--json")
    assert code == 0 and len(json.loads(out)["documents"]) == 3
    assert heavy == []


def test_status_table_wraps_long_names_and_reasons_at_80_columns(cli, tmp_path, data_dir):
    name = "a-rather-long-document-name-that-does-not-fit-in-its-column-at-eighty-columns.pdf"
    (tmp_path / name).write_bytes(b"%PDF-1.4 truncated, so the reason is a long sentence too")
    assert cli("ingest", str(tmp_path), "--org", "cli-wide", "--quiet")[0] == 1
    code, out, _, _ = run_fresh(data_dir, "status", "--org", "cli-wide")
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out
    cells = [line.split("│") for line in lines if line.startswith("│")]
    assert "".join(row[1].strip() for row in cells) == f"docs/{name}"
    reason = " ".join(row[4].strip() for row in cells)
    assert "the PDF cannot be read" in reason and reason.rstrip().endswith("damaged?")


def test_token_lifetime_is_checked_against_what_the_server_accepts(cli, monkeypatch):
    """A dev token the server would refuse (longer than the lifetime cap) is not minted."""
    monkeypatch.setenv("LIBRARIAN_AUTH_SECRET", "s" * 40)
    monkeypatch.setenv("LIBRARIAN_AUTH_MAX_TOKEN_LIFETIME_S", "7200")
    code, out, err = cli("token", "--user", "alice", "--org", "acme", "--ttl", "7201")
    assert code == 1 and not out.strip()
    assert "--ttl must be between 1 and 7200 seconds" in err
    code, out, _ = cli("token", "--user", "alice", "--org", "acme", "--ttl", "7200")
    assert code == 0 and out.count(".") == 2  # a JWT
