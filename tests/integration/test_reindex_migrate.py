"""`librarian reindex --migrate`: an index built under another embedding contract, converted safely.

Real engines throughout (LanceDB, MiniLM, the bundled E5, the local parser), driven through the CLI
as an operator would: ingest under one configuration, change it, see the index refused with a message
naming the command, migrate, search again. Interrupted migrations must leave the old index readable
(by a process still configured the old way) and resume without redoing finished documents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from librarian_cli import main

DOCS = {
    "acme": {
        "alpacas.md": "# Alpacas\n\nAlpacas graze on the high plains of the Andes and are shorn once a year.",
        "bees.txt": "Bees make honey from the nectar of flowers and store it in wax combs.",
        "comets.txt": "Comets are icy bodies whose tails point away from the sun as they approach it.",
    },
    "globex": {
        "dunes.txt": "Sand dunes migrate downwind as grains hop over the crest and slide down the lee face.",
        "elms.txt": "Elm trees were planted along avenues until Dutch elm disease killed most of them.",
    },
}
KEEP_ENV = {"LIBRARIAN_SHARED_DIR", "LIBRARIAN_TEST_POSTGRES_URL"}


class Crash(BaseException):
    """Stands for the process dying mid-migration: nothing in the migration may catch it."""


@pytest.fixture
def configure(tmp_path, monkeypatch):
    """Point the CLI at a fresh data directory with the given extra environment (None removes it)."""
    from librarian.settings import get_settings

    data_dir = tmp_path / "data"

    def apply(**env: str | None) -> Path:
        for name in list(os.environ):
            if name.startswith("LIBRARIAN_") and name not in KEEP_ENV:
                monkeypatch.delenv(name)
        monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(data_dir))
        for name, value in env.items():
            if value is not None:
                monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        return data_dir

    yield apply
    get_settings.cache_clear()


@pytest.fixture
def cli(capsys):
    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def ingest_all(cli, root: Path) -> None:
    for org, files in DOCS.items():
        folder = root / "in" / org
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        code, _, err = cli("ingest", str(folder), "--org", org, "--quiet")
        assert code == 0, err


def indexed_documents(lance_dir: Path) -> dict[str, dict[str, int]]:
    """{org: {path: chunks}} read straight from an index directory, under its own recorded contract."""
    from librarian.index.contract import read_contract
    from librarian.index.lance import LanceVectorIndex

    contract = read_contract(lance_dir)
    assert contract is not None
    index = LanceVectorIndex(lance_dir, contract)
    found: dict[str, dict[str, int]] = {}
    for namespace in index.describe_index_stats().namespaces:
        for record in index.list_ids(namespace=namespace):
            path = record.rpartition(":")[0]
            found.setdefault(namespace, {}).setdefault(path, 0)
            found[namespace][path] += 1
    return found


def top_source(cli, org: str, query: str) -> str:
    code, out, err = cli("search", query, "--org", org, "--json")
    assert code == 0, err
    return json.loads(out)["sources"][0]["filename"]


def assert_refused_naming_the_command(cli) -> None:
    code, _, err = cli("search", "honey", "--org", "acme")
    assert code == 1
    assert "librarian reindex --migrate" in " ".join(err.split())


def test_a_dense_embedder_switch_is_migrated_across_organizations(configure, cli, tmp_path):
    """Built with E5, configured MiniLM: refused, migrated (reparse and a gone file included), searchable."""
    from librarian.index.contract import read_contract

    data_dir = configure(LIBRARIAN_DENSE_EMBEDDER="e5")
    ingest_all(cli, tmp_path)
    lance_dir = data_dir / "lancedb"
    before = indexed_documents(lance_dir)
    assert {org: sorted(paths) for org, paths in before.items()} == {
        org: sorted(f"docs/{name}" for name in files) for org, files in DOCS.items()
    }
    e5_contract = read_contract(lance_dir)
    # One document lost its parse cache (re-parsed from the file), one its file (reported by name).
    files = data_dir / "files" / "orgs"
    for sidecar in (files / "acme" / "derived" / "docs" / "bees.txt").glob("parse-*.json"):
        sidecar.unlink()
    (files / "globex" / "docs" / "elms.txt").unlink()

    configure()  # the default MiniLM
    assert_refused_naming_the_command(cli)
    code, out, err = cli("reindex", "--migrate")
    text = " ".join(out.split())
    assert code == 0, out + err
    assert "3 reembedded, 1 reparsed, 1 missing" in text
    assert "globex/docs/elms.txt" in text

    after = indexed_documents(lance_dir)
    expected = {org: dict(paths) for org, paths in before.items()}
    del expected["globex"]["docs/elms.txt"]
    assert after == expected  # the same documents with the same chunks, every organization
    assert read_contract(lance_dir).dense_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert top_source(cli, "acme", "where is honey kept") == "bees.txt"
    assert top_source(cli, "acme", "animals shorn in the Andes") == "alpacas.md"
    assert top_source(cli, "globex", "sand grains moving with the wind") == "dunes.txt"

    backups = list(data_dir.glob("lancedb.before-migration-*"))
    assert len(backups) == 1 and str(backups[0]) in text.replace(" ", "")
    assert read_contract(backups[0]) == e5_contract
    assert indexed_documents(backups[0]) == before  # the old index, untouched, kept for the user
    assert not (data_dir / "lancedb.migrating").exists()
    code, out, _ = cli("reindex", "--migrate")
    assert (code, "nothing to migrate" in out) == (0, True)


def test_an_interrupted_migration_leaves_the_old_index_and_resumes(configure, cli, tmp_path, monkeypatch):
    """Sparse v1 index (an earlier release): a crash, then a failing document, then the finished switch."""
    from librarian.embeddings.minilm import MiniLMEmbedder
    from librarian.index.base import EmbeddingContract
    from librarian.index.contract import CONTRACT_FILE
    from librarian.index.lance import LanceVectorIndex
    from librarian.settings import get_settings
    from librarian.stack import Stack

    data_dir = configure(LIBRARIAN_INGEST_CONCURRENCY="1")
    ingest_all(cli, tmp_path)
    lance_dir = data_dir / "lancedb"
    recorded = json.loads((lance_dir / CONTRACT_FILE).read_text())
    recorded["sparse_model"] = "librarian-lexical-bm25-wordfreq-v1"  # what the earlier release recorded
    (lance_dir / CONTRACT_FILE).write_text(json.dumps(recorded))
    configure(LIBRARIAN_INGEST_CONCURRENCY="1")  # a new process: the index is opened afresh
    before = indexed_documents(lance_dir)
    assert_refused_naming_the_command(cli)

    real_embed = MiniLMEmbedder.embed_documents
    calls: list[int] = []

    def failing_on(call: int, error: BaseException):
        def embed(self, texts):
            calls.append(len(texts))
            if len(calls) == call:
                raise error
            return real_embed(self, texts)

        return embed

    # 1. The process dies while embedding the second document: nothing catches it, nothing switches.
    monkeypatch.setattr(MiniLMEmbedder, "embed_documents", failing_on(2, Crash()))
    with pytest.raises(Crash):
        cli("reindex", "--migrate")
    assert indexed_documents(lance_dir) == before
    assert json.loads((lance_dir / CONTRACT_FILE).read_text()) == recorded
    assert_refused_naming_the_command(cli)
    assert (data_dir / "lancedb.migrating").is_dir()

    # 2. A document fails: reported by name, the old index stays in use.
    calls.clear()
    monkeypatch.setattr(MiniLMEmbedder, "embed_documents", failing_on(1, RuntimeError("model exploded")))
    code, out, _ = cli("reindex", "--migrate")
    text = " ".join(out.split())
    assert code == 1
    assert "not switched" in text and "model exploded" in text and "failed acme/docs/" in text
    assert indexed_documents(lance_dir) == before
    assert_refused_naming_the_command(cli)
    # The index stays readable by a process configured with the embedders it was built with.
    monkeypatch.setattr(MiniLMEmbedder, "embed_documents", real_embed)
    old = LanceVectorIndex(lance_dir, EmbeddingContract(**recorded))
    query = Stack(get_settings()).dense.embed_query("where is honey kept")
    assert old.query(namespace="acme", vector=query, top_k=1)[0].metadata["filename"] == "bees.txt"

    # 3. The rerun redoes only the failed document (one at a time: the order is known), then switches.
    code, out, err = cli("reindex", "--migrate")
    text = " ".join(out.split())
    assert code == 0, out + err
    assert "1 reembedded, 4 reused" in text
    assert indexed_documents(lance_dir) == before
    assert top_source(cli, "acme", "where is honey kept") == "bees.txt"
    assert top_source(cli, "globex", "trees along avenues") == "elms.txt"
    assert not (data_dir / "lancedb.migrating").exists()


def test_the_flag_is_exclusive_with_org_and_pinecone_is_refused(configure, cli, monkeypatch):
    with pytest.raises(SystemExit) as missing:
        main(["reindex"])
    with pytest.raises(SystemExit) as both:
        main(["reindex", "--org", "acme", "--migrate"])
    assert missing.value.code == both.value.code == 2
    configure(LIBRARIAN_VECTOR_INDEX="pinecone")
    monkeypatch.setenv("PINECONE_API_KEY", "unused")
    code, _, err = cli("reindex", "--migrate")
    assert code == 1
    assert "LIBRARIAN_PINECONE_INDEX_NAME" in " ".join(err.split())
