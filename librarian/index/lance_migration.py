"""A LanceDB index built beside the live one and swapped in whole (`librarian reindex --migrate`).

Why beside and not in place: re-embedding under a new contract takes as long as the corpus is big, and
until the last document is done the new index is incomplete. Building it in a second directory keeps
the live one untouched, so a crash or a failed document leaves the old index in use and the migration
can simply be run again. The journal records each finished document (with the hash of the bytes it
was embedded from), so a rerun skips them. The switch is one atomic `renameat2(RENAME_EXCHANGE)` of the
two directories: any reader sees the whole old index or the whole new one.

Layout beside `lancedb/` (the live index):

    lancedb.migrating/                 the index being built, under the configured contract
    lancedb.migrating/migrated.jsonl   its journal: {"org", "path", "contentHash"} per finished document
    lancedb.before-migration-<time>/   the old index after the switch, kept until the user deletes it

A staging directory always holds its journal (created before the index is opened); a directory at
the staging name without one is an old index left there by a crash between the exchange and its
rename to a backup name, and is moved to a backup name rather than deleted.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

from librarian.index.base import EmbeddingContract
from librarian.index.contract import read_contract

STAGING_SUFFIX = ".migrating"
JOURNAL = "migrated.jsonl"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def staging_dir(live: Path) -> Path:
    return live.with_name(live.name + STAGING_SUFFIX)


def _backup_dir(live: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return live.with_name(f"{live.name}.before-migration-{stamp}")


class MigrationJournal:
    """Documents already re-embedded into the staged index: (org, path) -> content hash."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / JOURNAL
        self._lock = threading.Lock()

    def done(self) -> dict[tuple[str, str], str]:
        """Finished documents; a line torn by a crash is ignored (that document is simply redone)."""
        found: dict[tuple[str, str], str] = {}
        with contextlib.suppress(FileNotFoundError), self.path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                    found[(str(entry["org"]), str(entry["path"]))] = str(entry["contentHash"])
                except (ValueError, KeyError, TypeError):
                    continue
        return found

    def record(self, org: str, path: str, content_hash: str) -> None:
        """Append one finished document, durably: it is never re-embedded after a crash."""
        line = json.dumps({"org": org, "path": path, "contentHash": content_hash}) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def prepare_staging(live: Path, contract: EmbeddingContract) -> tuple[Path, list[Path]]:
    """The staging directory for `contract`, ready to open; also any old index moved aside.

    A staging directory built for another contract (the configuration changed between attempts) is
    partial derived data and is removed; an old index found at the staging name is kept under a
    backup name (returned, so the caller can tell the user).
    """
    staged = staging_dir(live)
    moved = tidy(live)
    if staged.exists() and read_contract_or_none(staged) not in (None, contract):
        shutil.rmtree(staged)
    staged.mkdir(parents=True, exist_ok=True)
    (staged / JOURNAL).touch()  # before the index is opened: this marks the directory as a staging one
    return staged, moved


def tidy(live: Path) -> list[Path]:
    """Finish a switch that a crash interrupted after the exchange; return backups it made."""
    staged = staging_dir(live)
    moved: list[Path] = []
    if staged.is_dir() and not (staged / JOURNAL).exists():
        if read_contract_or_none(staged) is None and not any(staged.iterdir()):
            staged.rmdir()  # made just before a crash, nothing in it yet
        else:
            backup = _backup_dir(live)
            staged.rename(backup)
            moved.append(backup)
    if read_contract_or_none(live) is not None:
        (live / JOURNAL).unlink(missing_ok=True)
    return moved


def read_contract_or_none(directory: Path) -> EmbeddingContract | None:
    """The recorded contract, treating an unreadable one as absent (the caller decides what that means)."""
    from librarian.errors import ContractMismatchError

    try:
        return read_contract(directory)
    except ContractMismatchError:
        return None


def switch_to_staged(live: Path) -> Path:
    """Make the staged index the live one in one step; returns where the old index now is.

    The exchange is atomic, so a reader (or a crash) sees the old index or the new one, never none.
    Where the platform cannot exchange two directories it falls back to two renames, with a short
    window in which `live` does not exist.
    """
    staged = staging_dir(live)
    backup = _backup_dir(live)
    try:
        _exchange(staged, live)
    except OSError:
        live.rename(backup)
        staged.rename(live)
    else:
        staged.rename(backup)  # the old index, now at the staging name
    (live / JOURNAL).unlink(missing_ok=True)
    _fsync_dir(live.parent)
    return backup


def _exchange(a: Path, b: Path) -> None:
    """Swap two directory entries atomically (Linux `renameat2`); OSError where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError) as exc:
        raise OSError("renameat2 is not available") from exc
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), str(a))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
