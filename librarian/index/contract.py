"""The embedding contract on disk: recorded once when an index is created, checked on every open.

Vectors from different models live in different spaces, so mixing them returns confident nonsense
rather than an error. Checking the recorded contract before any read or write turns that silent
failure into a message naming both contracts.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from librarian.errors import ContractMismatchError
from librarian.index.base import EmbeddingContract

CONTRACT_FILE = "contract.json"
MIGRATE_COMMAND = "librarian reindex --migrate"


def check_contract(recorded: EmbeddingContract | None, configured: EmbeddingContract) -> None:
    """Raise ContractMismatchError unless the index's contract equals the configured one.

    `recorded=None` means a new, empty index: anything may be configured for it.
    """
    if recorded is None or recorded == configured:
        return
    raise ContractMismatchError(
        f"the index was built with {recorded.describe()}, but the configured embedders are "
        f"{configured.describe()}; run `{MIGRATE_COMMAND}` to re-embed every document into a new "
        "index under the configured embedders (the old one stays in place until it is done), or "
        "configure the embedders the index was built with"
    )


def contract_to_json(contract: EmbeddingContract) -> str:
    return json.dumps(asdict(contract), sort_keys=True, indent=2)


def contract_from_json(text: str) -> EmbeddingContract:
    """Parse a recorded contract; a damaged file is a mismatch, never a silent pass."""
    try:
        data: Any = json.loads(text)
        return EmbeddingContract(
            dense_model=str(data["dense_model"]),
            dimension=int(data["dimension"]),
            sparse_model=str(data["sparse_model"]),
            metric=str(data.get("metric", "dotproduct")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ContractMismatchError(f"the index's recorded embedding contract is unreadable: {exc}") from exc


def read_contract(directory: Path) -> EmbeddingContract | None:
    """The contract recorded in `directory`, or None if none was recorded yet."""
    try:
        text = (directory / CONTRACT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return contract_from_json(text)


def record_contract(directory: Path, contract: EmbeddingContract) -> EmbeddingContract:
    """Record `contract` unless one is already recorded; return whichever is recorded now.

    Several processes may create the same index at once. The file is written aside and hard-linked
    into place, which fails if another process got there first, so exactly one contract wins and
    the loser compares against it instead of overwriting it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / CONTRACT_FILE
    fd, tmp_name = tempfile.mkstemp(prefix=".contract-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(contract_to_json(contract))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process recorded one first
            os.link(tmp_name, target)
    finally:
        os.unlink(tmp_name)
    recorded = read_contract(directory)
    if recorded is None:  # pragma: no cover - only if someone deletes the file in between
        raise ContractMismatchError(f"could not record the embedding contract in {directory}")
    return recorded
