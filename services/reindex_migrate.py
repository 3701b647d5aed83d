"""Migrate the embedded index to the configured embedding contract (`librarian reindex --migrate`).

An index built with other embedders (a new sparse model id after an upgrade, another
LIBRARIAN_DENSE_EMBEDDER) is refused on open, and `reindex --org` cannot help because it opens the
index under the configured contract. This re-embeds every document the old index holds, of every
organization, into a new index beside it (`librarian.index.lance_migration`) and swaps it in only
when all of them are done; until then the old index stays where it was, readable by a process
configured with the old embedders, and a rerun resumes where the last attempt stopped.

No embedding code of its own: each document goes through the re-embed graph (cached parse) or, when
its parse cache is missing, the ingest graph (parse the stored file again), both pointed at a copy
of the stack whose index is the new one. They run without a checkpointer, so documents' statuses
(the latest run of their own threads) are left as they were: the migrated index holds the same
chunks they describe.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from filelock import FileLock, Timeout

from graphs.ingest import build_ingest_graph
from graphs.reindex import build_reindex_graph
from librarian.errors import ConfigError
from librarian.index.base import EmbeddingContract
from librarian.index.contract import read_contract
from librarian.index.lance import LanceVectorIndex
from librarian.index.lance_migration import (
    MigrationJournal,
    prepare_staging,
    switch_to_staged,
    tidy,
)
from librarian.parsing.cache import content_hash
from librarian.stack import Stack

logger = logging.getLogger(__name__)

PINECONE_REFUSAL = (
    "--migrate converts the embedded LanceDB index; a Pinecone index cannot be re-embedded in place. "
    "Set LIBRARIAN_PINECONE_INDEX_NAME to a new index name and run `librarian reindex --org ORG` for "
    "each organization (it re-embeds from the cached parses into the new index), then delete the old "
    "index in Pinecone"
)

PGVECTOR_REFUSAL = (
    "--migrate converts the embedded LanceDB index; a pgvector table is re-embedded beside the old one "
    "instead: set LIBRARIAN_PGVECTOR_TABLE to a new table name and run `librarian reindex --org ORG` "
    "for each organization (it re-embeds from the cached parses into the new table), then drop the "
    "old table"
)


@dataclass(frozen=True)
class Outcome:
    """What became of one document: migrated (re-embedded or reparsed), reused, missing, skipped, failed."""

    org: str
    path: str
    result: str
    reason: str | None = None
    chunks: int = 0


@dataclass
class MigrationReport:
    recorded: EmbeddingContract | None
    configured: EmbeddingContract
    outcomes: list[Outcome] = field(default_factory=list)
    switched: bool = False
    backup: Path | None = None  # where the old index was kept after the switch
    moved_aside: list[Path] = field(default_factory=list)  # old indexes a crashed switch left behind

    @property
    def needed(self) -> bool:
        return self.recorded is not None and self.recorded != self.configured

    def having(self, *results: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.result in results]


OnDocument = Callable[[Outcome], None]


def migrate_index(stack: Stack, *, on_document: OnDocument | None = None) -> MigrationReport:
    """Re-embed every document of the live index under `stack`'s contract, then switch to it.

    The switch happens only when no document failed; a document whose file is gone (or that is now
    skipped, e.g. over a limit) is reported and left out, as a re-ingest would leave it out. Failed
    documents keep the old index in place; run again to retry them (finished ones are not redone).
    """
    settings = stack.settings
    if settings.vector_index != "lancedb":
        raise ConfigError(PGVECTOR_REFUSAL if settings.vector_index == "pgvector" else PINECONE_REFUSAL)
    live = settings.lance_dir
    live.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(live.with_name(live.name + ".migrate.lock")), timeout=0):
            return _migrate(stack, live, on_document)
    except Timeout:
        raise ConfigError("another `librarian reindex --migrate` is running on this index") from None


def _migrate(stack: Stack, live: Path, on_document: OnDocument | None) -> MigrationReport:
    settings = stack.settings
    moved = tidy(live)
    report = MigrationReport(read_contract(live), stack.contract, moved_aside=moved)
    if not report.needed:
        return report
    assert report.recorded is not None
    documents = _documents_of(LanceVectorIndex(live, report.recorded))
    staged_dir, moved_now = prepare_staging(live, report.configured)
    report.moved_aside += moved_now
    journal = MigrationJournal(staged_dir)
    done = journal.done()
    staged = copy.copy(stack)  # shares the loaded embedders, parser and files; only the index differs
    staged.__dict__["index"] = LanceVectorIndex(
        staged_dir, report.configured, compact_every=settings.lance_compact_every
    )
    migrator = _Migrator(staged, journal, done)
    with ThreadPoolExecutor(max_workers=max(1, settings.ingest_concurrency)) as pool:
        for outcome in pool.map(lambda doc: migrator.migrate(*doc), documents):
            report.outcomes.append(outcome)
            if on_document:
                on_document(outcome)
    if report.having("failed"):
        return report
    staged.__dict__.pop("index").optimize()  # compacted once, then no handle of ours stays open on it
    report.backup = switch_to_staged(live)
    report.switched = True
    return report


def _documents_of(index: LanceVectorIndex) -> list[tuple[str, str]]:
    """(organization, path) of every document with vectors in the index, in a stable order."""
    found: set[tuple[str, str]] = set()
    for namespace in index.describe_index_stats().namespaces:
        for record in index.list_ids(namespace=namespace):
            found.add((namespace, unquote(record.rpartition(":")[0])))  # ids are `{quoted path}:{n}`
    return sorted(found)


class _Migrator:
    """Runs one document through the re-embed graph, or the ingest graph when its parse is not cached."""

    def __init__(self, stack: Stack, journal: MigrationJournal, done: dict[tuple[str, str], str]) -> None:
        self.stack = stack
        self.journal = journal
        self.done = done
        self.reindex_graph = build_reindex_graph(lambda: stack)
        self.ingest_graph = build_ingest_graph(lambda: stack)

    def migrate(self, org: str, path: str) -> Outcome:
        try:
            data = self.stack.files.read(org, path)
        except FileNotFoundError:
            return Outcome(org, path, "missing", "the file is gone; its old vectors were not carried over")
        except Exception as exc:  # an unreadable path is this document's problem, not the run's
            return Outcome(org, path, "failed", str(exc))
        if self.done.get((org, path)) == content_hash(data):
            return Outcome(org, path, "reused")
        try:
            result, out = "reembedded", self._run(self.reindex_graph, org, path)
            if out.get("error") == "no_cached_parse":
                result, out = "reparsed", self._run(self.ingest_graph, org, path)
        except Exception as exc:
            logger.warning("migrating %s of %s failed: %s", path, org, exc)
            return Outcome(org, path, "failed", f"{type(exc).__name__}: {exc}")
        status = out.get("status")
        if status == "indexed":
            self.journal.record(org, path, str(out.get("contentHash") or ""))
            return Outcome(org, path, result, chunks=int(out.get("chunkCount") or 0))
        if out.get("error") == "file_not_found":
            return Outcome(org, path, "missing", "the file is gone; its old vectors were not carried over")
        kind = "skipped" if status == "skipped" else "failed"
        return Outcome(org, path, kind, out.get("reason") or out.get("error") or str(status))

    @staticmethod
    def _run(graph: Any, org: str, path: str) -> dict[str, Any]:
        return dict(graph.invoke({"path": path}, context={"organization_id": org}) or {})
